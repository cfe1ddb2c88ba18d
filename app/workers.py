"""`--api-server-count N`: N HTTP worker processes sharing one engine core.

One Python process tops out at what one core can tokenize, detokenize and frame as SSE;
at high concurrency on a GPU that, not the engine, is the limit. With N > 1 the gateway
uses vLLM's own multi-API-server launcher (the one behind `vllm serve --api-server-count
N`): it starts the engine core once, binds the listening socket once and starts N
processes (forked from one fork server by default, `app.worker_start`; vLLM spawns them).
Each of them runs the gateway app here, with an AsyncLLM that is one client of that
engine core. Prometheus runs in multiprocess mode, so `/metrics` answered by any
worker covers all of them.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import multiprocessing
import os
import re
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from app import fast_encode
from app.accept_gate import WorkerLoads, WorkerSlot
from app.cpus import usable_cpus
from app.engine import device_type
from app.model_source import ModelSource
from app.settings import Settings
from app.shared_pending import SharedPending
from app.shared_tokenizer import TokenizerKey
from app.worker_start import worker_start

logger = logging.getLogger(__name__)


def _event() -> Any:
    return multiprocessing.get_context("spawn").Event()


@dataclass(frozen=True)
class WorkerSpec:
    """What every worker needs to build the same app (pickled into each worker process)."""

    settings: Settings
    source: ModelSource
    pending: SharedPending = field(default_factory=SharedPending)  # the admission count
    serving: Any = field(default_factory=_event)  # set once a worker serves
    parent: int = field(default_factory=os.getpid)  # the process that starts the workers
    loads: WorkerLoads | None = None  # `--connections-per-worker`: who takes a connection


MAX_AUTO_WORKERS = 2
"""On the H200 (16 cores) two workers made 1.03-1.12x the output tokens/s of four at
128-in/1024-out@64 in every lease that ran both (sessions 18, 19, 51), with 30% less of
the front end's CPU per token, and about as much at concurrency 256 (0.97-1.02x), where
four bring the first tokens 10-29% sooner (TTFT p50; docs/benchmarks/profiling.md,
sessions 19 and 51)."""
CORES_PER_WORKER = 4


def auto_worker_count(device_type: str, cpu_count: int | None) -> int:
    """One worker on CPU (the engine itself needs the cores); with an accelerator one per
    `CORES_PER_WORKER` cores, at most `MAX_AUTO_WORKERS`."""
    if device_type == "cpu":
        return 1
    return max(1, min(MAX_AUTO_WORKERS, (cpu_count or 1) // CORES_PER_WORKER))


def resolve_worker_count(requested: int) -> int:
    """`--api-server-count`: the user's number, or for 0 the automatic choice."""
    if requested > 0:
        return requested
    device, cores = device_type(), usable_cpus()
    count = auto_worker_count(device, cores)
    logger.info("HTTP workers: %d (auto, %s, %s cores)", count, device, cores)
    return count


def run_workers(settings: Settings, source: ModelSource) -> int:
    """Start the engine core and `settings.api_server_count` HTTP workers; block until
    SIGTERM/SIGINT or a failure; the process exit status."""
    import vllm.v1.utils as vllm_utils
    from vllm.entrypoints.cli import serve as vllm_serve

    from app.main import gateway_engine_args

    engine_args = gateway_engine_args(settings, source)
    args = launcher_args(settings, source, engine_args)
    tokenizer = None
    if settings.worker_start == "forkserver":
        fast = fast_encode.is_wanted(settings.fast_tokenizer, device_type())
        tokenizer = fork_tokenizer(engine_args, fast=fast)
    # vLLM's launcher spawns `run_api_server_worker_proc` per worker; ours serves the
    # gateway app instead of vLLM's (same signature, looked up when workers start).
    vllm_utils.run_api_server_worker_proc = serve_worker
    logger.info("starting %d HTTP workers sharing one engine", settings.api_server_count)
    with signals_seen() as seen, worker_start(settings.worker_start, vllm_utils, tokenizer):
        try:
            vllm_serve.run_multi_api_server(args)
        except SystemExit:  # SIGTERM/SIGINT: the launcher has stopped the workers and engine
            signals, serving = seen(), args.gateway.serving.is_set()
            if signals and not serving:
                logger.warning("%s during start-up: stopping", signal.Signals(signals[0]).name)
            return stop_status(signals, serving=serving)
        except RuntimeError as exc:
            logger.error("stopped: %s", exc)
            return exit_status(str(exc), settings.engine_death_exit_code)
    return 0


def stop_status(signals: list[int], *, serving: bool) -> int:
    """The exit status after the launcher stopped on a signal, as one process's
    (app.server): 130 for SIGINT, 143 for SIGTERM during start-up, 0 after a SIGTERM
    drain."""
    if signal.SIGINT in signals:
        return 128 + signal.SIGINT
    if signal.SIGTERM in signals and not serving:
        return 128 + signal.SIGTERM
    return 0


@contextmanager
def signals_seen() -> Iterator[Callable[[], list[int]]]:
    """The signals this process gets meanwhile (vLLM's launcher handles them and only
    raises SystemExit), read from Python's signal wake-up fd."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    os.set_blocking(write_end, False)
    previous = signal.set_wakeup_fd(write_end)
    got: list[int] = []

    def seen() -> list[int]:
        with suppress(BlockingIOError):
            got.extend(os.read(read_end, 64))
        return got

    try:
        yield seen
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read_end)
        os.close(write_end)


def fork_tokenizer(engine_args: Any, *, fast: bool = False) -> TokenizerKey | None:
    """The tokenizer the workers' AsyncLLMs will load (and with `fast`, their `fastokens`),
    for the fork server to load once (`app.shared_tokenizer`); None where that can't be
    told (the workers load their own)."""
    try:
        return TokenizerKey.of(engine_args.create_model_config(), fast=fast)
    except Exception:
        logger.warning("the workers will load their own tokenizers", exc_info=True)
        return None


def launcher_args(settings: Settings, source: ModelSource, engine_args: Any = None) -> Any:
    """The `vllm serve` namespace the launcher reads: vLLM's defaults, our engine options
    (`engine_args`, else the settings'), our address, the worker count, and the spec the
    workers build the app from."""
    from vllm.entrypoints.cli import serve as vllm_serve
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from app.main import gateway_engine_args

    if engine_args is None:
        engine_args = gateway_engine_args(settings, source)
    # The launcher SIGTERMs the workers and kills what is left after this long: give
    # each worker its drain time.
    drain = int(settings.drain_timeout) + 10
    if getattr(engine_args, "shutdown_timeout", drain) < drain:
        engine_args.shutdown_timeout = drain
    args = vllm_serve.make_arg_parser(FlexibleArgumentParser()).parse_args([])
    for option in dataclasses.fields(engine_args):
        setattr(args, option.name, getattr(engine_args, option.name))
    args.host = settings.host
    args.port = settings.port
    args.api_server_count = settings.api_server_count
    loads = WorkerLoads(settings.api_server_count) if settings.connections_per_worker else None
    args.gateway = WorkerSpec(settings=settings, source=source, loads=loads)
    return args


def exit_status(message: str, engine_death: int) -> int:
    """A dead worker's own exit status when the launcher names it, else the engine's."""
    found = re.search(r"exit code (-?\d+)", message)
    if found and int(found.group(1)) > 0:
        return int(found.group(1))
    return engine_death


def serve_worker(
    listen_address: str,
    sock: socket.socket,
    args: Any,
    client_config: dict[str, Any] | None = None,
    **_: Any,
) -> None:
    """One HTTP worker (runs in a forked or spawned process): the gateway app on the shared
    socket."""
    from app.cli import configure_logging
    from app.main import create_app
    from app.parent_watch import watch_parent
    from app.server import serve_app

    # Forked from the fork server: keep what it imported out of the collector, whose
    # passes would write to (and so copy) every shared page holding a tracked object.
    gc.freeze()
    spec: WorkerSpec = args.gateway
    configure_logging(spec.settings.log_level, spec.settings.log_format)
    watch_parent(spec.parent)  # a parent killed outright leaves nothing behind
    _set_title(f"APIServer_{(client_config or {}).get('client_index', 0)}")
    logger.info(
        "HTTP worker %s serving %s", (client_config or {}).get("client_index"), listen_address
    )
    app = create_app(
        spec.settings,
        source=spec.source,
        client_config=client_config or {},
        shared_pending=spec.pending,
    )
    slot = None
    if spec.loads is not None:
        index = int((client_config or {}).get("client_index", 0))
        slot = WorkerSlot(index, spec.settings.connections_per_worker, spec.loads)
    try:
        status = serve_app(
            app,
            spec.settings,
            sock,
            on_started=spec.serving.set,
            slot=slot,
            spread=spec.settings.spread_connections,
        )
    except KeyboardInterrupt:  # SIGINT to the whole process group (Ctrl-C): already stopped
        status = 0
    finally:
        sock.close()
    sys.exit(status)


def _set_title(name: str) -> None:
    """`VLLM::APIServer_N` in `ps`, as vLLM names its own API-server workers."""
    try:
        from vllm.utils.system_utils import set_process_title
    except ImportError:
        return
    set_process_title(name)
