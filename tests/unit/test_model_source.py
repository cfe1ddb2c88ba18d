"""Where the model comes from: explicit paths, local hub caches, the demo fallback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app import model_source
from app.model_source import (
    DEMO_WARNING,
    ModelUnavailableError,
    find_local,
    resolve_model_source,
)
from app.settings import Settings


def make_model(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("MODELSCOPE_CACHE", "HF_HOME", "HF_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(model_source, "download", lambda *args, **kwargs: None)  # offline
    return tmp_path


def test_modelscope_cache_found_first(home: Path) -> None:
    ms = make_model(home / ".cache/modelscope/hub/models/Qwen/Qwen3-0.6B")
    make_model(home / ".cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/abc")
    assert find_local("Qwen/Qwen3-0.6B", home) == ms


def test_huggingface_snapshot_found(home: Path) -> None:
    snap = make_model(home / ".cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/abc")
    assert find_local("Qwen/Qwen3-0.6B", home) == snap


def test_default_model_from_the_cache(home: Path) -> None:
    ms = make_model(home / ".cache/modelscope/hub/models/qwen/Qwen3-0.6B")
    source = resolve_model_source(Settings(model=None))
    assert source.path == str(ms) and not source.demo
    assert source.hub_id == "Qwen/Qwen3-0.6B"


def test_offline_default_falls_back_to_the_demo_model(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    demo_dir = home / "demo"
    source = resolve_model_source(Settings(model=None, demo_model_dir=str(demo_dir)))
    assert source.demo and Path(source.path) == demo_dir
    assert (demo_dir / "config.json").is_file()
    assert DEMO_WARNING in caplog.text


def test_offline_default_without_fallback_is_an_error(home: Path) -> None:
    with pytest.raises(ModelUnavailableError):
        resolve_model_source(Settings(model=None, allow_demo_fallback=False))


def test_explicit_missing_model_is_an_error(home: Path) -> None:
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        resolve_model_source(Settings(model="/no/such/model"))
    empty = home / "empty"
    empty.mkdir()
    with pytest.raises(ModelUnavailableError, match=r"config\.json"):
        resolve_model_source(Settings(model=str(empty)))


def test_explicit_tilde_path_is_expanded(home: Path) -> None:
    model = make_model(home / "models" / "Qwen3-0.6B")
    source = resolve_model_source(Settings(model="~/models/Qwen3-0.6B/"))
    assert source.path == str(model) and source.requested == "~/models/Qwen3-0.6B/"


def test_cli_exits_non_zero_for_a_model_that_cannot_load(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app", "serve", str(tmp_path / "missing"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "does not exist" in result.stderr
