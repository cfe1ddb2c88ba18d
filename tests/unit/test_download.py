"""`vllm-gateway download`: hub order, fallback, fast failure offline, found again by name."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app import download as dl
from app.model_source import find_local
from app.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when we return


def fake_fetch(calls: list[str], fail: set[str] = frozenset()):  # type: ignore[no-untyped-def,assignment]
    def fetch(hub: dl.Hub, hub_id: str, target: Path) -> Path:
        calls.append(hub.key)
        if hub.key in fail:
            raise RuntimeError(f"{hub.key} is down")
        target.mkdir(parents=True, exist_ok=True)
        (target / "config.json").write_text("{}")
        return target

    return fetch


@pytest.fixture
def hubs_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dl, "_unusable", lambda hub, timeout, environ: None)


def test_modelscope_first_then_hugging_face(
    hubs_up: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(dl, "_fetch", fake_fetch(calls, fail={"modelscope"}))
    notes: list[str] = []
    path = dl.fetch_model("Qwen/Qwen3-0.6B", tmp_path / "m", note=notes.append)
    assert calls == ["modelscope", "huggingface"]
    assert path == tmp_path / "m"
    assert any("ModelScope" in n and "modelscope is down" in n for n in notes)


def test_one_source_only(hubs_up: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[str] = []
    monkeypatch.setattr(dl, "_fetch", fake_fetch(calls))
    dl.fetch_model("Qwen/Qwen3-0.6B", tmp_path, hubs=["huggingface"], note=lambda _: None)
    assert calls == ["huggingface"]


def test_missing_package_and_offline_env_are_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    real = dl.importlib.util.find_spec
    monkeypatch.setattr(
        dl.importlib.util, "find_spec", lambda name: None if name == "modelscope" else real(name)
    )
    reason = dl._unusable(dl.MODELSCOPE, 1.0, {})
    assert reason is not None and "pip install modelscope" in reason
    assert dl._unusable(dl.HUGGINGFACE, 1.0, {"HF_HUB_OFFLINE": "1"}) == "HF_HUB_OFFLINE is set"


def test_probe_goes_to_the_proxy_unless_bypassed() -> None:
    url = "https://huggingface.co"
    assert dl.probe_address(url, {}) == ("huggingface.co", 443)
    proxied = {"HTTPS_PROXY": "http://proxy.local:3128"}
    assert dl.probe_address(url, proxied) == ("proxy.local", 3128)
    assert dl.probe_address(url, {"https_proxy": "proxy.local"}) == ("proxy.local", 80)
    assert dl.probe_address(url, {**proxied, "NO_PROXY": ".huggingface.co"}) == (
        "huggingface.co",
        443,
    )
    assert dl.probe_address("http://127.0.0.1:9/x", {}) == ("127.0.0.1", 9)


def test_mirrors_are_honoured() -> None:
    assert (
        dl.HUGGINGFACE.endpoint({"HF_ENDPOINT": "https://hf-mirror.com"}) == "https://hf-mirror.com"
    )
    assert dl.MODELSCOPE.endpoint({"MODELSCOPE_DOMAIN": "modelscope.cn"}) == "https://modelscope.cn"
    assert dl.MODELSCOPE.endpoint({}) == "https://www.modelscope.cn"


def test_unreachable_hub_is_reported_quickly() -> None:
    start = time.monotonic()
    reason = dl.reachable(f"http://127.0.0.1:{closed_port()}", 2.0, {})
    assert reason is not None and "cannot be reached" in reason
    assert time.monotonic() - start < 2


def offline_env(home: Path) -> dict[str, str]:
    """Both hubs pointed at closed local ports: offline, whatever the machine's network."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(
        HOME=str(home),
        HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}",
        MODELSCOPE_DOMAIN=f"127.0.0.1:{closed_port()}",
        GATEWAY_MODELS_DIR=str(home / "models"),
    )
    env.pop("HF_HUB_OFFLINE", None)
    return env


def run_cli(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "app", "download", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done, time.monotonic() - start


def test_offline_fails_fast_with_what_to_do(tmp_path: Path) -> None:
    done, seconds = run_cli(["Qwen/Qwen3-0.6B"], offline_env(tmp_path))
    assert done.returncode == 1, done.stderr
    assert seconds < 10  # python start-up included; the probes themselves take milliseconds
    assert "Could not download Qwen/Qwen3-0.6B" in done.stderr
    assert "What to do" in done.stderr and "vllm-gateway serve DIR" in done.stderr
    assert done.stdout == ""


def test_offline_on_this_machine_fails_fast(tmp_path: Path) -> None:
    """The real hub addresses: on a machine without internet access (like CI's)."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(HOME=str(tmp_path))
    for name in ("HF_ENDPOINT", "MODELSCOPE_DOMAIN", "HF_HUB_OFFLINE", "GATEWAY_MODELS_DIR"):
        env.pop(name, None)
    if dl.reachable(dl.HUGGINGFACE.endpoint(env), 3.0, env) is None:
        pytest.skip("huggingface.co is reachable from here: not an offline machine")
    done, seconds = run_cli(["--source", "huggingface"], env)
    assert done.returncode == 1
    assert seconds < 15
    assert "huggingface.co:443" in done.stderr and "What to do" in done.stderr


def test_not_a_hub_id(tmp_path: Path) -> None:
    assert dl.main(["/models/qwen"], Settings(models_dir=str(tmp_path))) == 2


def test_dir_download_is_found_by_name(
    hubs_up: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(dl, "_fetch", fake_fetch([]))
    settings = Settings(models_dir=str(tmp_path / "store"))
    target = tmp_path / "disk" / "qwen3"
    assert dl.main(["Qwen/Qwen3-0.6B", "--dir", str(target)], settings) == 0
    out = capsys.readouterr().out
    assert f"Qwen/Qwen3-0.6B is in {target}" in out
    assert f"vllm-gateway serve {target}" in out and "vllm-gateway serve Qwen/Qwen3-0.6B" in out
    found = find_local("Qwen/Qwen3-0.6B", models_dir=settings.models_dir)
    assert found is not None and found.resolve() == target.resolve()


def test_default_dir_and_already_downloaded(
    hubs_up: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(dl, "_fetch", fake_fetch(calls))
    settings = Settings(models_dir=str(tmp_path))
    assert dl.main([], settings) == 0
    assert (tmp_path / "Qwen" / "Qwen3-0.6B" / "config.json").is_file()
    capsys.readouterr()
    assert dl.main(["Qwen/Qwen3-0.6B"], settings) == 0
    assert calls == ["modelscope"]  # the second run downloads nothing
    assert "already downloaded" in capsys.readouterr().out


def test_a_dir_that_already_has_the_model_survives_an_offline_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dl, "_unusable", lambda hub, timeout, environ: "offline")
    target = tmp_path / "qwen"
    target.mkdir()
    (target / "config.json").write_text("{}")
    settings = Settings(models_dir=str(tmp_path / "store"))
    assert dl.main(["Qwen/Qwen3-0.6B", "--dir", str(target)], settings) == 0
    assert f"is in {target}" in capsys.readouterr().out
