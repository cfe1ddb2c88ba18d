"""bench/gpu_run.sh, run dry (DRY_RUN=1, a fake python that records its calls): which
bench tool each knob runs, with which flags, deadlines and output places."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import uuid
from pathlib import Path


def _dry_gpu_run(tmp_path: Path, fake: str = "", **knobs: str | None) -> list[list[str]]:
    """gpu_run.sh in DRY_RUN with a fake python that records its arguments (then runs the
    shell lines `fake`); its calls (a knob of None unsets that variable)."""
    calls = tmp_path / "calls.txt"
    fake_python = tmp_path / "python"
    fake_python.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> {calls}\necho >> {calls}\n{fake}\n')
    fake_python.chmod(0o755)
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    modes = (
        "TEST_ARGS",
        "PAIRED_ARGS",
        "COLD_ARGS",
        "FEM_ARGS",
        "PROFILE_ARGS",
        "BENCH_ARGS",
        "BENCH_SETS",
    )
    env = {
        **{name: value for name, value in os.environ.items() if name not in modes},
        "DRY_RUN": "1",
        "PYTHON": str(fake_python),
        "OUT": str(tmp_path / "out"),
        "RES_DIR": str(tmp_path / "res"),
        "MODEL_DIR": str(model),
        **{name: value for name, value in knobs.items() if value is not None},
    }
    for name in [name for name, value in knobs.items() if value is None]:
        env.pop(name, None)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        ["bash", "bench/gpu_run.sh"], cwd=root, env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stdout.decode()[-2000:]
    return [line.split("|") for line in calls.read_text().splitlines()]


def test_gpu_run_runs_bench_profile_once_per_flag_set(tmp_path: Path) -> None:
    """PROFILE_ARGS: one bench.profile per ';'-separated set, quoted flags kept whole."""
    calls = _dry_gpu_run(
        tmp_path,
        PROFILE_ARGS="--server gateway --server-args '--api-server-count 1'; --server vllm",
    )
    profiles = [call for call in calls if "bench.profile" in call]
    assert len(profiles) == 2
    first, second = profiles
    assert first[first.index("--server-args") + 1] == "--api-server-count 1"
    assert first[first.index("--out") + 1] == str(tmp_path / "res" / "profile-1")
    assert second[second.index("--server") + 1] == "vllm"
    assert "--server-args" not in second


def test_gpu_run_runs_bench_run_once_per_flag_set(tmp_path: Path) -> None:
    """BENCH_SETS: one bench.run per ';'-separated set, in order, BENCH_ARGS before the set's
    own flags (quoted ones whole); each its own results folder and mirror in $OUT, and an
    equal share of the time left when it starts (the last one all of it)."""
    calls = _dry_gpu_run(
        tmp_path,
        BENCH_BUDGET_S="425",
        BENCH_ARGS="--servers gateway --rounds 1",
        BENCH_SETS="--gateway-args='--api-server-count 4'; --gateway-args='--api-server-count 1'",
        FIRST_SET_EXTRA_S="0",
    )
    runs = [call for call in calls if "bench.run" in call]
    assert len(runs) == 2
    for n, (call, workers) in enumerate(zip(runs, "41", strict=True), start=1):
        assert call[call.index("--results-dir") + 1] == str(tmp_path / "res" / f"set-{n}")
        mirror = tmp_path / "out" / f"results-{n}.json"
        assert call[call.index("--mirror-results") + 1] == str(mirror)
        assert call[call.index("--servers") + 1] == "gateway"
        assert call.index("--rounds") < call.index(f"--gateway-args=--api-server-count {workers}")
    first, second = (float(call[call.index("--deadline-s") + 1]) for call in runs)
    assert 190 <= first <= 200  # (425 - elapsed - 25) / 2
    assert 380 <= second <= 400  # what is left, all of it


def test_gpu_run_gives_the_first_set_more_time_on_a_cold_machine(tmp_path: Path) -> None:
    """Without vLLM's compile cache the first BENCH_SETS set starts cold: it gets 90 s more
    than an equal share, taken from the others; with the cache, equal shares."""
    sets = "--gateway-args=--api-server-count=2; --gateway-args=--api-server-count=4; --x"
    knobs = {"BENCH_BUDGET_S": "325", "BENCH_SETS": sets, "FIRST_SET_EXTRA_S": None}

    def first_deadline(where: Path, cache_root: Path) -> float:
        where.mkdir()
        calls = _dry_gpu_run(where, VLLM_CACHE_ROOT=str(cache_root), **knobs)
        first = next(call for call in calls if "bench.run" in call)
        return float(first[first.index("--deadline-s") + 1])

    cold = first_deadline(tmp_path / "cold", tmp_path / "empty-cache")
    assert 150 <= cold <= 160  # (325 - elapsed - 25 - 90) / 3 + 90
    (tmp_path / "warm-cache" / "torch_compile_cache").mkdir(parents=True)
    warm = first_deadline(tmp_path / "warm", tmp_path / "warm-cache")
    assert 90 <= warm <= 100  # (325 - elapsed - 25) / 3


def test_gpu_run_runs_bench_cold_start_instead_of_the_ab(tmp_path: Path) -> None:
    """COLD_ARGS: one bench.cold_start with those flags (quoted specs whole), no bench.run."""
    calls = _dry_gpu_run(
        tmp_path, COLD_ARGS="--server 'gw=gateway --no-warmup' --server vllm --repeats 2"
    )
    cold = [call for call in calls if "bench.cold_start" in call]
    assert len(cold) == 1 and not [call for call in calls if "bench.run" in call]
    (call,) = cold
    assert [call[i + 1] for i, word in enumerate(call) if word == "--server"] == [
        "gw=gateway --no-warmup",
        "vllm",
    ]
    assert call[call.index("--out") + 1] == str(tmp_path / "out" / "cold")
    assert call[call.index("--repeats") + 1] == "2"


def test_gpu_run_runs_bench_front_end_memory_instead_of_the_ab(tmp_path: Path) -> None:
    """FEM_ARGS: one bench.front_end_memory with those flags on the GPU profile, no bench.run."""
    calls = _dry_gpu_run(
        tmp_path,
        FEM_ARGS="--server 'fork=gateway --api-server-count 4' "
        "--server 'rust=VLLM_USE_RUST_FRONTEND=1 vllm' --repeats 2",
    )
    found = [call for call in calls if "bench.front_end_memory" in call]
    assert len(found) == 1 and not [call for call in calls if "bench.run" in call]
    (call,) = found
    assert [call[i + 1] for i, word in enumerate(call) if word == "--server"] == [
        "fork=gateway --api-server-count 4",
        "rust=VLLM_USE_RUST_FRONTEND=1 vllm",
    ]
    assert call[call.index("--profile") + 1] == "gpu"
    assert call[call.index("--out") + 1] == str(tmp_path / "out" / "fem")


def test_gpu_run_gives_each_call_its_own_results_folder(tmp_path: Path) -> None:
    """Without RES_DIR two calls on one machine write (and pack) separate folders, so a
    call's logs.tar.gz holds only its own runs (session 11's shared /tmp/bench-res did not)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _dry_gpu_run(tmp_path / "a", RES_DIR=None)
    second = _dry_gpu_run(tmp_path / "b", RES_DIR=None)
    dirs = [
        call[call.index("--results-dir") + 1]
        for calls in (first, second)
        for call in calls
        if "bench.run" in call
    ]
    assert len(dirs) == 2 and dirs[0] != dirs[1]
    assert all(d.startswith("/tmp/bench-res-") for d in dirs)


def test_gpu_run_runs_the_tests_instead_of_the_ab(tmp_path: Path) -> None:
    """TEST_ARGS: one pytest with those arguments (quoted ones whole), its junit in $OUT,
    each test gateway on a share of the GPU; no model written, no bench.run."""
    calls = _dry_gpu_run(tmp_path, TEST_ARGS="tests/integration -k 'chat and not tools'")
    tests = [call for call in calls if "pytest" in call]
    assert len(tests) == 1 and not [call for call in calls if "bench.run" in call]
    assert not [call for call in calls if "tiny-model" in call]
    (call,) = tests
    assert call[call.index("-k") + 1] == "chat and not tools"
    assert "tests/integration" in call
    assert f"--junitxml={tmp_path / 'out' / 'junit.xml'}" in call


def test_gpu_run_times_the_tokenizer_work_first_with_speed(tmp_path: Path) -> None:
    """SPEED=1: bench.encode_speed and bench.decode_speed on the model, then the A/B;
    without it, neither."""
    (tmp_path / "on").mkdir()
    calls = _dry_gpu_run(tmp_path / "on", SPEED="1", BENCH_ARGS="--servers gateway")
    modules = [call for call in calls if call[:1] == ["-m"]]
    assert [call[1] for call in modules] == [
        "bench.encode_speed",
        "bench.decode_speed",
        "bench.run",
    ]
    for call in modules[:2]:
        assert call[call.index("--model") + 1] == str(tmp_path / "on" / "model")
    (tmp_path / "off").mkdir()
    calls = _dry_gpu_run(tmp_path / "off", SPEED=None, BENCH_ARGS="--servers gateway")
    assert [call[1] for call in calls if call[:1] == ["-m"]] == ["bench.run"]
    (tmp_path / "zero").mkdir()  # 0 is off, as unset is
    calls = _dry_gpu_run(tmp_path / "zero", SPEED="0", BENCH_ARGS="--servers gateway")
    assert [call[1] for call in calls if call[:1] == ["-m"]] == ["bench.run"]


def test_gpu_run_packs_the_paired_servers_logs(tmp_path: Path) -> None:
    """bench.paired's server logs travel as one paired-logs.tar.gz (a call returns at most
    8 files); its summaries stay as they are."""
    paired = tmp_path / "out" / "paired"
    paired.mkdir(parents=True)
    for name in ("server-rust.log", "server-gateway.log", "summary-1024x128.json"):
        (paired / name).write_text(name)
    calls = _dry_gpu_run(tmp_path, PAIRED_ARGS="--server gateway", BENCH_BUDGET_S="400")
    (call,) = [call for call in calls if "bench.paired" in call]
    # the call's time left (budget less its own 25 s so far) is bench.paired's deadline
    assert 360 <= float(call[call.index("--deadline-s") + 1]) <= 375
    assert call[call.index("--server") + 1] == "gateway"
    assert sorted(p.name for p in paired.iterdir()) == ["summary-1024x128.json"]
    with tarfile.open(tmp_path / "out" / "paired-logs.tar.gz") as packed:
        assert sorted(packed.getnames()) == ["server-gateway.log", "server-rust.log"]


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
        _dry_gpu_run(tmp_path / "dry", SWEEP=None, SWEEP_PATTERN=marker, BENCH_ARGS="-x")
        assert spared.poll() is None
    finally:
        spared.kill()
        spared.wait()
    swept = leftover()
    try:
        (tmp_path / "swept").mkdir()
        _dry_gpu_run(tmp_path / "swept", SWEEP="1", SWEEP_PATTERN=marker, BENCH_ARGS="-x")
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
        calls = _dry_gpu_run(
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
    first = _dry_gpu_run(tmp_path, fake=fake, BENCH_ARGS="-x", **knobs)  # the same python
    first_log = log.read_text()
    both = _dry_gpu_run(tmp_path, fake=fake, BENCH_ARGS="-x", **knobs)  # calls and log add up
    second_log = log.read_text()[len(first_log) :]
    assert sum(call[:1] == ["-"] for call in first) == 1
    assert sum(call[:1] == ["-"] for call in both) == 1  # not again
    assert "] imports\nvllm 0.26.0 fastapi x\n" in first_log
    assert "] imports (as an earlier call on this machine found them" in second_log
    assert "vllm 0.26.0 fastapi x" in second_log
    assert len(list(seen.iterdir())) == 1


def test_gpu_run_traces_every_server_when_asked(tmp_path: Path) -> None:
    """TRACE=1: the servers start with bench.engine_trace's sitecustomize on their path and
    a trace folder, packed into $OUT/trace.tar.gz at the end."""
    record = 'echo "$ENGINE_TRACE_DIR|$PYTHONPATH|${{ENGINE_TRACE_PROBE_MS-none}}" > {seen}; '
    record += 'mkdir -p "$ENGINE_TRACE_DIR"; echo step > "$ENGINE_TRACE_DIR/trace-1.log"'
    seen = tmp_path / "seen.txt"
    _dry_gpu_run(tmp_path, record.format(seen=seen), TRACE="1", BENCH_ARGS="--rounds 1")
    trace_dir, path, probe_ms = seen.read_text().strip().split("|")
    root = Path(__file__).resolve().parents[2]
    assert trace_dir.startswith("/tmp/trace-")
    assert probe_ms == "1"  # the lock probe comes with the trace
    assert path.split(":")[0] == str(root / "bench" / "trace_site")
    with tarfile.open(tmp_path / "out" / "trace.tar.gz") as packed:
        assert "./trace-1.log" in packed.getnames()
    shutil.rmtree(trace_dir)
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    _dry_gpu_run(quiet, record.format(seen=seen), TRACE="1", ENGINE_TRACE_PROBE_MS="0")
    trace_dir, _, probe_ms = seen.read_text().strip().split("|")
    assert probe_ms == "none"  # 0: no probe
    shutil.rmtree(trace_dir)
    off = tmp_path / "off"
    off.mkdir()
    _dry_gpu_run(off, BENCH_ARGS="--rounds 1")
    assert not (off / "out" / "trace.tar.gz").exists()  # off by default
    zero = tmp_path / "zero"
    zero.mkdir()
    _dry_gpu_run(zero, f'echo "$ENGINE_TRACE_DIR|" > {seen}', TRACE="0", BENCH_ARGS="--rounds 1")
    assert not (zero / "out" / "trace.tar.gz").exists()  # and with TRACE=0
    assert seen.read_text().strip().split("|")[0] == ""  # no trace folder for the servers


def test_gpu_run_packs_the_front_end_memory_servers_logs(tmp_path: Path) -> None:
    """bench.front_end_memory's log per server and repeat travel as one fem-logs.tar.gz (a
    call returns at most 8 files); its summary and table stay as they are."""
    fem = tmp_path / "out" / "fem"
    fem.mkdir(parents=True)
    names = ("server-fork-0.log", "server-fork-1.log", "server-rust-0.log", "summary.json")
    for name in (*names, "table.md"):
        (fem / name).write_text(name)
    _dry_gpu_run(tmp_path, FEM_ARGS="--server gateway --repeats 2")
    assert sorted(p.name for p in fem.iterdir()) == ["summary.json", "table.md"]
    with tarfile.open(tmp_path / "out" / "fem-logs.tar.gz") as packed:
        assert sorted(packed.getnames()) == sorted(names[:3])
