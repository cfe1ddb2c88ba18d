"""`serve` sets its process up as `vllm serve` does: spawn, and a raised open-files limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app import cli
from app.process_setup import FD_TARGET, raise_fd_limit, use_spawn

VAR = "VLLM_WORKER_MULTIPROC_METHOD"
NOFILE = resource.RLIMIT_NOFILE


@pytest.fixture
def low_soft_limit() -> Iterator[int]:
    """The soft open-files limit lowered to 512 for the test, restored after it."""
    soft, hard = resource.getrlimit(NOFILE)
    resource.setrlimit(NOFILE, (min(512, soft), hard))
    try:
        yield min(512, soft)
    finally:
        resource.setrlimit(NOFILE, (soft, hard))


def _serve_and_see(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """Run `serve` up to where the engine would start: the start method and fd limit then."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    seen: dict[str, Any] = {}

    def run_server(settings: Any, source: Any = None) -> int:
        seen["method"] = os.environ.get(VAR)
        seen["soft"] = resource.getrlimit(NOFILE)[0]
        return 0

    monkeypatch.setattr(cli, "run_server", run_server)
    monkeypatch.setattr(cli, "configure_logging", lambda *args: None)
    assert cli.serve([str(model), "--port", "0"]) == 0
    return seen


def test_serve_spawns_and_raises_the_fd_limit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, low_soft_limit: int
) -> None:
    monkeypatch.setenv(VAR, "unset")  # restored after the test
    monkeypatch.delenv(VAR)
    seen = _serve_and_see(monkeypatch, tmp_path)
    hard = resource.getrlimit(NOFILE)[1]
    assert seen["method"] == "spawn"
    assert seen["soft"] == (FD_TARGET if hard == resource.RLIM_INFINITY else min(FD_TARGET, hard))
    assert seen["soft"] > low_soft_limit or hard <= low_soft_limit


def test_a_users_start_method_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(VAR, "fork")
    assert _serve_and_see(monkeypatch, tmp_path)["method"] == "fork"


def test_use_spawn_only_fills_a_missing_value() -> None:
    environ: dict[str, str] = {}
    use_spawn(environ)
    assert environ == {VAR: "spawn"}
    environ[VAR] = "forkserver"
    use_spawn(environ)
    assert environ == {VAR: "forkserver"}


def _limit_after_raise(shell_limit: str, target: int) -> tuple[int, int]:
    """(soft limit before, after `raise_fd_limit(target)`) in a shell with `ulimit -Sn`."""
    code = (
        "import resource; from app.process_setup import raise_fd_limit; "
        f"before = resource.getrlimit(resource.RLIMIT_NOFILE)[0]; "
        f"raise_fd_limit({target}); "
        "print(before, resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        ["bash", "-c", f'ulimit -Sn {shell_limit} && "$0" -c "$1"', sys.executable, code],
        cwd=root, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    before, after = done.stdout.split()
    return int(before), int(after)


def test_raise_fd_limit_lifts_a_low_soft_limit_up_to_the_hard_one() -> None:
    hard = resource.getrlimit(NOFILE)[1]
    cap = hard if hard != resource.RLIM_INFINITY else 1 << 20
    assert _limit_after_raise("256", 4096) == (256, min(4096, cap))
    assert _limit_after_raise("256", cap + 1 if cap < 1 << 20 else cap) == (256, cap)


def test_raise_fd_limit_never_lowers() -> None:
    assert _limit_after_raise("300", 200) == (300, 300)
    soft = resource.getrlimit(NOFILE)[0]
    assert raise_fd_limit(1) == soft
    assert resource.getrlimit(NOFILE)[0] == soft
