"""bench/gpu_run.sh on a warm machine, run dry with a fake python: what an earlier call
left running is ended, but the servers it kept; the imports are checked once."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.gpu_run_dry import dry_gpu_run


def test_gpu_run_ends_an_earlier_calls_leftovers_before_it_starts(tmp_path: Path) -> None:
    """SWEEP: processes matching SWEEP_PATTERN (an earlier call's servers, cut by its
    timeout, holding the GPU) are ended before the work starts; a dry run leaves them
    unless SWEEP is set."""
    marker = f"gpu-run-leftover-{uuid.uuid4().hex}"

    def leftover() -> subprocess.Popen[bytes]:
        return subprocess.Popen(["bash", "-c", f"exec -a '{marker} serve' sleep 60"])

    spared = leftover()
    try:
        (tmp_path / "dry").mkdir()
        dry_gpu_run(tmp_path / "dry", SWEEP=None, SWEEP_PATTERN=marker, BENCH_ARGS="-x")
        assert spared.poll() is None
    finally:
        spared.kill()
        spared.wait()
    swept = leftover()
    try:
        (tmp_path / "swept").mkdir()
        dry_gpu_run(tmp_path / "swept", SWEEP="1", SWEEP_PATTERN=marker, BENCH_ARGS="-x")
        assert swept.wait(10) == -9
        log = (tmp_path / "swept" / "out" / "gpu_run.log").read_text()
        assert f"sweep (start): ending 1 leftover processes: {swept.pid}" in log
        assert "sweep (exit)" not in log  # nothing was left by then
    finally:
        if swept.poll() is None:
            swept.kill()
            swept.wait()


def test_gpu_run_spares_the_kept_servers_and_hands_them_on(tmp_path: Path) -> None:
    """KEEP_DIR: bench.run gets --keep-servers; the sweep ends an earlier call's leftovers
    but the sessions that folder lists (a kept server and what it spawned)."""
    marker = f"gpu-run-kept-{uuid.uuid4().hex}"
    script = f"exec -a '{marker} serve' sleep 60"
    family = f'bash -c "{script}" & {script}'  # a server and a child in its session
    kept = subprocess.Popen(["bash", "-c", family], start_new_session=True)
    stale = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    keep_dir = tmp_path / "kept"
    keep_dir.mkdir()
    (keep_dir / "servers.json").write_text(json.dumps({"servers": [{"pid": kept.pid}]}))
    try:
        time.sleep(0.5)  # the kept server's child, in its session, has started
        calls = dry_gpu_run(
            tmp_path,
            fake=f'if [ "$2" = bench.kept ]; then exec {sys.executable} "$@"; fi',
            SWEEP="1",
            SWEEP_PATTERN=marker,
            KEEP_DIR=str(keep_dir),
            BENCH_ARGS="--together",
        )
        assert stale.wait(10) == -9
        assert kept.poll() is None
        log = (tmp_path / "out" / "gpu_run.log").read_text()
        assert f"sparing the kept servers' sessions: {kept.pid}\n" in log
        assert f"ending 1 leftover processes: {stale.pid}" in log
        (run,) = [call for call in calls if "bench.run" in call]
        assert run[run.index("--keep-servers") + 1] == str(keep_dir)
        assert run.index("--together") < run.index("--keep-servers")
    finally:
        for proc in (kept, stale):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_gpu_run_checks_the_imports_once_per_machine_and_code(tmp_path: Path) -> None:
    """A warm machine's later call with the same code and paths shows the first call's
    imports check instead of importing vLLM again (15-18 s a call in session 54)."""
    seen = tmp_path / "seen"
    seen.mkdir()
    fake = 'if [ "$1" = - ]; then cat > /dev/null; echo "vllm 0.26.0 fastapi x"; fi'
    knobs = {"DRY_RUN": "0", "SKIP_INSTALL": "1", "SWEEP": "0", "IMPORTS_SEEN_DIR": str(seen)}
    log = tmp_path / "out" / "gpu_run.log"
    first = dry_gpu_run(tmp_path, fake=fake, BENCH_ARGS="-x", **knobs)  # the same python
    first_log = log.read_text()
    both = dry_gpu_run(tmp_path, fake=fake, BENCH_ARGS="-x", **knobs)  # calls and log add up
    second_log = log.read_text()[len(first_log) :]
    assert sum(call[:1] == ["-"] for call in first) == 1
    assert sum(call[:1] == ["-"] for call in both) == 1  # not again
    assert "] imports\nvllm 0.26.0 fastapi x\n" in first_log
    assert "] imports (as an earlier call on this machine found them" in second_log
    assert "vllm 0.26.0 fastapi x" in second_log
    assert len(list(seen.iterdir())) == 1
