"""Models downloaded by `vllm-gateway download` are found again by hub id."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.model_source import (
    default_download_dir,
    find_local,
    local_candidates,
    models_root,
    resolve_model_source,
)
from app.settings import Settings

QWEN = ("Qwen", "Qwen3-0.6B")


def model_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return path


@pytest.fixture(autouse=True)
def no_hub_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODELSCOPE_CACHE", "HF_HOME", "HF_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)


def test_default_store_is_under_the_home(tmp_path: Path) -> None:
    assert models_root(home=tmp_path) == tmp_path / ".cache" / "vllm-gateway" / "models"
    assert models_root("~/m") == Path.home() / "m"
    assert default_download_dir("Qwen/Qwen3-0.6B", str(tmp_path)) == tmp_path.joinpath(*QWEN)


def test_the_gateway_store_comes_first(tmp_path: Path) -> None:
    ours = tmp_path.joinpath(".cache", "vllm-gateway", "models", *QWEN)
    modelscope = tmp_path.joinpath(".cache", "modelscope", "hub", "models", *QWEN)
    assert local_candidates("Qwen/Qwen3-0.6B", home=tmp_path)[:2] == [ours, modelscope]
    model_dir(modelscope)
    assert find_local("Qwen/Qwen3-0.6B", home=tmp_path) == modelscope
    model_dir(ours)
    assert find_local("Qwen/Qwen3-0.6B", home=tmp_path) == ours


def test_a_models_dir_and_a_link_into_it_are_found(tmp_path: Path) -> None:
    elsewhere = model_dir(tmp_path / "disk" / "qwen")
    store = tmp_path / "store"
    (store / "Qwen").mkdir(parents=True)
    (store / "Qwen" / "Qwen3-0.6B").symlink_to(elsewhere, target_is_directory=True)
    found = find_local("Qwen/Qwen3-0.6B", home=tmp_path, models_dir=str(store))
    assert found is not None and found.resolve() == elsewhere.resolve()
    assert find_local("Qwen/Qwen3-8B", home=tmp_path, models_dir=str(store)) is None


def test_serve_resolves_a_hub_id_from_the_store(tmp_path: Path) -> None:
    target = model_dir(tmp_path.joinpath(*QWEN))
    source = resolve_model_source(Settings(model="Qwen/Qwen3-0.6B", models_dir=str(tmp_path)))
    assert source.path == str(target) and source.hub_id == "Qwen/Qwen3-0.6B"
    default = resolve_model_source(Settings(models_dir=str(tmp_path)))
    assert default.path == str(target) and not default.demo
