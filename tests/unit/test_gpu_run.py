"""bench/gpu_run.sh, run dry (DRY_RUN=1, a fake python that records its calls): which
bench tool each knob runs, with which flags, deadlines and output places."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

from tests.gpu_run_dry import dry_gpu_run


def test_gpu_run_runs_bench_profile_once_per_flag_set(tmp_path: Path) -> None:
    """PROFILE_ARGS: one bench.profile per ';'-separated set, quoted flags kept whole."""
    calls = dry_gpu_run(
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
    calls = dry_gpu_run(
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


def test_gpu_run_keeps_a_quoted_flag_string_in_bench_args_whole(tmp_path: Path) -> None:
    """BENCH_ARGS is read with the shell's quoting, as BENCH_SETS is: session 60 wanted
    both servers' memory flags there, and word splitting would have cut the string."""
    flags = "--gpu-memory-utilization 0.4 --kv-cache-memory-bytes 34359738368"
    calls = dry_gpu_run(
        tmp_path, BENCH_ARGS=f"--servers vllm,gateway --vllm-args '{flags}' --rounds 2"
    )
    (run,) = [call for call in calls if "bench.run" in call]
    assert run[run.index("--vllm-args") + 1] == flags
    assert run[run.index("--servers") + 1] == "vllm,gateway"
    assert run[run.index("--rounds") + 1] == "2"


def test_gpu_run_gives_the_first_set_more_time_on_a_cold_machine(tmp_path: Path) -> None:
    """Without vLLM's compile cache the first BENCH_SETS set starts cold: it gets 90 s more
    than an equal share, taken from the others; with the cache, equal shares."""
    sets = "--gateway-args=--api-server-count=2; --gateway-args=--api-server-count=4; --x"
    knobs = {"BENCH_BUDGET_S": "325", "BENCH_SETS": sets, "FIRST_SET_EXTRA_S": None}

    def first_deadline(where: Path, cache_root: Path) -> float:
        where.mkdir()
        calls = dry_gpu_run(where, VLLM_CACHE_ROOT=str(cache_root), **knobs)
        first = next(call for call in calls if "bench.run" in call)
        return float(first[first.index("--deadline-s") + 1])

    cold = first_deadline(tmp_path / "cold", tmp_path / "empty-cache")
    assert 150 <= cold <= 160  # (325 - elapsed - 25 - 90) / 3 + 90
    (tmp_path / "warm-cache" / "torch_compile_cache").mkdir(parents=True)
    warm = first_deadline(tmp_path / "warm", tmp_path / "warm-cache")
    assert 90 <= warm <= 100  # (325 - elapsed - 25) / 3


def test_gpu_run_runs_bench_cold_start_instead_of_the_ab(tmp_path: Path) -> None:
    """COLD_ARGS: one bench.cold_start with those flags (quoted specs whole), no bench.run."""
    calls = dry_gpu_run(
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
    calls = dry_gpu_run(
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
    first = dry_gpu_run(tmp_path / "a", RES_DIR=None)
    second = dry_gpu_run(tmp_path / "b", RES_DIR=None)
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
    calls = dry_gpu_run(tmp_path, TEST_ARGS="tests/integration -k 'chat and not tools'")
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
    calls = dry_gpu_run(tmp_path / "on", SPEED="1", BENCH_ARGS="--servers gateway")
    modules = [call for call in calls if call[:1] == ["-m"]]
    assert [call[1] for call in modules] == [
        "bench.encode_speed",
        "bench.decode_speed",
        "bench.run",
    ]
    for call in modules[:2]:
        assert call[call.index("--model") + 1] == str(tmp_path / "on" / "model")
    (tmp_path / "off").mkdir()
    calls = dry_gpu_run(tmp_path / "off", SPEED=None, BENCH_ARGS="--servers gateway")
    assert [call[1] for call in calls if call[:1] == ["-m"]] == ["bench.run"]
    (tmp_path / "zero").mkdir()  # 0 is off, as unset is
    calls = dry_gpu_run(tmp_path / "zero", SPEED="0", BENCH_ARGS="--servers gateway")
    assert [call[1] for call in calls if call[:1] == ["-m"]] == ["bench.run"]


def test_gpu_run_packs_the_paired_servers_logs(tmp_path: Path) -> None:
    """bench.paired's server logs travel as one paired-logs.tar.gz (a call returns at most
    8 files); its summaries stay as they are."""
    paired = tmp_path / "out" / "paired"
    paired.mkdir(parents=True)
    for name in ("server-rust.log", "server-gateway.log", "summary-1024x128.json"):
        (paired / name).write_text(name)
    calls = dry_gpu_run(tmp_path, PAIRED_ARGS="--server gateway", BENCH_BUDGET_S="400")
    (call,) = [call for call in calls if "bench.paired" in call]
    # the call's time left (budget less its own 25 s so far) is bench.paired's deadline
    assert 360 <= float(call[call.index("--deadline-s") + 1]) <= 375
    assert call[call.index("--server") + 1] == "gateway"
    assert sorted(p.name for p in paired.iterdir()) == ["summary-1024x128.json"]
    with tarfile.open(tmp_path / "out" / "paired-logs.tar.gz") as packed:
        assert sorted(packed.getnames()) == ["server-gateway.log", "server-rust.log"]


def test_gpu_run_traces_every_server_when_asked(tmp_path: Path) -> None:
    """TRACE=1: the servers start with bench.engine_trace's sitecustomize on their path and
    a trace folder, packed into $OUT/trace.tar.gz at the end."""
    record = 'echo "$ENGINE_TRACE_DIR|$PYTHONPATH|${{ENGINE_TRACE_PROBE_MS-none}}" > {seen}; '
    record += 'mkdir -p "$ENGINE_TRACE_DIR"; echo step > "$ENGINE_TRACE_DIR/trace-1.log"'
    seen = tmp_path / "seen.txt"
    dry_gpu_run(tmp_path, record.format(seen=seen), TRACE="1", BENCH_ARGS="--rounds 1")
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
    dry_gpu_run(quiet, record.format(seen=seen), TRACE="1", ENGINE_TRACE_PROBE_MS="0")
    trace_dir, _, probe_ms = seen.read_text().strip().split("|")
    assert probe_ms == "none"  # 0: no probe
    shutil.rmtree(trace_dir)
    off = tmp_path / "off"
    off.mkdir()
    dry_gpu_run(off, BENCH_ARGS="--rounds 1")
    assert not (off / "out" / "trace.tar.gz").exists()  # off by default
    zero = tmp_path / "zero"
    zero.mkdir()
    dry_gpu_run(zero, f'echo "$ENGINE_TRACE_DIR|" > {seen}', TRACE="0", BENCH_ARGS="--rounds 1")
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
    dry_gpu_run(tmp_path, FEM_ARGS="--server gateway --repeats 2")
    assert sorted(p.name for p in fem.iterdir()) == ["summary.json", "table.md"]
    with tarfile.open(tmp_path / "out" / "fem-logs.tar.gz") as packed:
        assert sorted(packed.getnames()) == sorted(names[:3])


MODEL_FAKE = """case "$*" in
  *tiny-model*) echo model-started >> {marks}; sleep 2; echo model-written >> {marks}; {end};;
  -) echo imports >> {marks};;
  *bench.run*) echo bench >> {marks};;
esac"""


def test_gpu_run_writes_the_model_while_it_checks_the_imports(tmp_path: Path) -> None:
    """A missing model is written in the background as the imports are checked, and the
    benchmark starts once it is; one that fails ends the call (6) and leaves no folder
    for the next call to take as a model."""
    marks, model = tmp_path / "marks.txt", tmp_path / "new-model"
    fake = MODEL_FAKE.format(marks=marks, end=f"mkdir -p {model}; echo {{}} > {model}/config.json")
    calls = dry_gpu_run(tmp_path, fake, MODEL_DIR=str(model), BENCH_ARGS="-x")
    seen = marks.read_text().split()  # the imports checked before the model was written
    assert sorted(seen[:2]) == ["imports", "model-started"]
    assert seen[2:] == ["model-written", "bench"]
    assert [c for c in calls if "tiny-model" in c] == [
        ["-m", "app", "tiny-model", str(model), "--preset", "qwen3-0.6b", ""]
    ]
    marks.unlink()
    (tmp_path / "failed").mkdir()
    model = tmp_path / "failed-model"
    fake = MODEL_FAKE.format(marks=marks, end=f"mkdir -p {model}; exit 1")
    dry_gpu_run(tmp_path / "failed", fake, rc=6, MODEL_DIR=str(model), BENCH_ARGS="-x")
    assert marks.read_text().split()[2:] == ["model-written"]  # and no benchmark
    assert not model.exists()
