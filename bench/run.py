"""`make bench`: the gateway against vLLM's own OpenAI server, same engine, same load.

Each round starts each server on its own (same model, engine flags and environment),
checks it, drives it with `vllm bench serve` at every point and stops it; rounds alternate
the servers' order (`bench.profiles.session_order`) so that a shared machine's drift falls
on both. Results are written after every run; `bench.report` makes the report.

    python -m bench.run                      # CPU default: tiny model, 128 in / 64 out
    python -m bench.run --rounds 3 --concurrency 32,64
    python -m bench.run --profile gpu --model /root/models/q06 --deadline-s 420
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import hashlib
import json
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.affinity import engine_apart
from bench.commands import bench_server, ensure_model, probe, results_header, server_env
from bench.flag_strings import parse
from bench.kept import Keeper
from bench.machine import (
    engine_config_line,
    favoured_client,
    gpu_memory_total_gib,
    loadavg,
    wait_gpu_released,
)
from bench.options import build_parser, server_root
from bench.probe_runner import ProbeRunner
from bench.profiles import (
    ROOT,
    SERVER_NAMES,
    auto_profile,
    pin_order,
    profile_from_args,
    session_order,
)
from bench.servers import ServerError, ServerProcess, stop_all, stop_all_on_exit
from bench.together import memory_flags, run_together


class Runner(ProbeRunner):
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._first_text_prompts: list[str] | None = None
        self._load_prompts: list[str] = []
        name = args.profile or auto_profile()
        self.profile = profile_from_args(name, args)
        self.t0 = time.monotonic()
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.results_dir = Path(
            args.results_dir or ROOT / "bench" / "results" / "tmp" / f"{name}-{stamp}"
        ).resolve()
        self.results_dir.mkdir(parents=True, exist_ok=True)
        self.servers = [s.strip() for s in args.servers.split(",") if s.strip()]
        for s in self.servers:
            if s not in SERVER_NAMES:
                raise SystemExit(f"unknown server {s!r}; choose from {SERVER_NAMES}")
        if "gwb" in self.servers and not args.gwb_root:
            raise SystemExit("--servers names gwb: give its checkout with --gwb-root")
        self.data: dict[str, Any] = {}
        self.harness_nice: int | None = None  # the harness's own session weight
        self.keeper: Keeper | None = None
        if args.keep_servers:
            if not args.together:
                raise SystemExit("--keep-servers keeps the servers of --together")
            self.keeper = Keeper(Path(args.keep_servers).resolve())
            args.seed = self.keeper.seed(args.seed)  # new prompts for kept prefix caches

    def remaining(self) -> float:
        if self.args.deadline_s is None:
            return float("inf")
        return float(self.args.deadline_s) - (time.monotonic() - self.t0)

    def save(self) -> None:
        path = self.results_dir / "results.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, sort_keys=False) + "\n")
        tmp.replace(path)
        if self.args.mirror_results:
            mirror = Path(self.args.mirror_results)
            mirror.parent.mkdir(parents=True, exist_ok=True)
            mirror.write_text(path.read_text())

    def log(self, msg: str) -> None:
        elapsed = time.monotonic() - self.t0
        print(f"[bench {elapsed:7.1f}s load {loadavg()}] {msg}", flush=True)

    def run(self) -> Path:
        args, prof = self.args, self.profile
        model = ensure_model(args, prof)
        env = server_env(prof)
        if (ROOT / ".env").exists():
            self.log("warning: .env exists in the checkout; the gateway reads it")
        self.data = results_header(
            args, prof, model, env, self.servers, {n: self.extra_args(n) for n in self.servers}
        )
        self.data["harness_autogroup_nice"] = self.harness_nice
        self.data["gwb_root"] = str(Path(args.gwb_root).resolve()) if args.gwb_root else None
        self.save()
        self.log(f"profile {prof.name}, model {model}, results in {self.results_dir}")
        if self.keeper is not None:
            self.data["kept_calls_before"] = self.keeper.calls
            for name in self.keeper.release(self.servers):
                self.log(f"stopped {name}, kept by an earlier call and not asked for now")
        if args.together:
            run_together(self, model)
        else:
            self.one_at_a_time(model)
        self.data["finished"] = dt.datetime.now().astimezone().isoformat(timespec="seconds")
        self.data["loadavg_end"] = loadavg()
        self.save()
        return self.results_dir / "results.json"

    def one_at_a_time(self, model: str) -> None:
        """Each round starts, runs and stops each server in turn (`session_order`)."""
        for rnd in range(1, self.profile.rounds + 1):
            for name in session_order(self.servers, rnd):
                if self.remaining() < (self.args.session_estimate_s or 0):
                    self.skip(f"{name}#{rnd}", f"deadline: skipping {name} round {rnd}")
                    continue
                self.session(name, rnd, model)

    def extra_args(self, name: str) -> list[str]:
        """`name`'s own flags (a second gateway's after the gateway's), and with
        `--together` its share of the memory."""
        flags = shlex.split(getattr(self.args, f"{name}_args", "") or "")
        if name == "gwb":
            flags = shlex.split(self.args.gateway_args or "") + flags
        if self.args.together:
            flags += memory_flags(self.profile.name, len(self.servers), flags, self.device_gib)
        return flags

    @functools.cached_property
    def device_gib(self) -> float | None:
        """The GPU's memory (read once: every server's flags are built from it)."""
        return gpu_memory_total_gib() if self.profile.name == "gpu" else None

    def session(self, name: str, rnd: int, model: str) -> None:
        args = self.args
        server, record = self.open_session(name, rnd, model, args.port)
        try:
            if "error" not in record:
                for pinned in pin_order(args.pin_engine_cores, rnd):
                    if not pinned or server.proc is None:
                        self.run_plan(server, name, rnd, model)
                        continue
                    with engine_apart(server.proc.pid, args.pin_engine_cores) as placed:
                        self.data.setdefault("pinning", []).append(placed | {"round": rnd})
                        self.log(f"{name}: engine core on CPUs {placed['engine_cpus']}: {placed}")
                        self.run_plan(server, name, rnd, model, pinned=True)
                self.load_probes(server, record, model)
        except ServerError as exc:
            record["error"] = str(exc)
            self.log(f"error: {exc}")
        finally:
            self.close_session(server, record)

    def open_session(
        self, name: str, rnd: int, model: str, port: int
    ) -> tuple[ServerProcess, dict[str, Any]]:
        """Start `name`, wait for it and probe it: the server and its session record (with
        'error' when it did not come up; close it either way)."""
        server, record = self.launch_session(name, rnd, model, port)
        self.settle_session(server, record, model)
        return server, record

    def launch_session(
        self, name: str, rnd: int, model: str, port: int
    ) -> tuple[ServerProcess, dict[str, Any]]:
        """Start `name` without waiting for it: the server and its session record."""
        args, prof = self.args, self.profile
        log_path = (
            self.keeper.log_path(name)
            if self.keeper
            else self.results_dir / f"server-{name}-r{rnd}.log"
        )
        server = bench_server(
            name, prof, python=args.python, model=model, port=port, log_path=log_path,
            extra=self.extra_args(name), gateway_root=server_root(args, name),
            frontend=args.vllm_frontend,
        )  # fmt: skip
        record: dict[str, Any] = {
            "server": name,
            "round": rnd,
            "argv": server.argv,
            "loadavg_before": loadavg(),
        }
        self.data["sessions"].append(record)
        try:
            if self.keeper is not None and self.keeper.take(server):
                record["taken_over"] = True
                self.log(f"round {rnd}: taking over {name}, kept by an earlier call")
                return server, record
            self.log(f"round {rnd}: starting {name}")
            server.start()
            if self._first_text_soon is None:
                self.make_first_text_prompts(model)  # while it starts
        except ServerError as exc:
            record["error"] = str(exc)
            self.log(f"error: {exc}")
        return server, record

    def settle_session(self, server: ServerProcess, record: dict[str, Any], model: str) -> None:
        """Wait for a launched server and probe it; 'error' in its record when it did not
        come up."""
        if "error" in record:
            return
        name = record["server"]
        try:
            timeout_s = min(self.profile.startup_timeout_s, max(30.0, self.remaining()))
            ready = round(server.wait_ready(timeout_s), 1)
            # a kept server was started, and its first text probed, by an earlier call
            taken = bool(record.get("taken_over"))
            if not taken:
                record["ready_after_s"] = ready
                self.log(f"{name} ready after {ready} s")
            record["probe"] = probe(server, model)
            self.log(f"{name} probe: {record['probe']}")
            if taken:
                return
            record["first_text"] = self.first_text(server, model)
            self.log(f"{name} first-text probe: {record['first_text']}")
        except ServerError as exc:
            record["error"] = str(exc)
            self.log(f"error: {exc}")

    def close_session(
        self, server: ServerProcess, record: dict[str, Any], wait_gpu: bool = True
    ) -> None:
        """Stop the server, or with `--keep-servers` leave it up for the next call, and
        complete its record (memory, exit code or `kept`, engine config)."""
        record["memory"] = server.snapshot_memory()
        if self.keeper is not None and server.alive() and "error" not in record:
            self.keeper.keep(server)  # for the next call; its log copied for this one's
            record["kept"] = True
            shutil.copyfile(server.log_path, self.results_dir / server.log_path.name)
        else:
            record["exit_code"] = server.stop()
            if self.profile.name == "gpu" and wait_gpu:
                record["gpu_mem_after_stop_mib"] = wait_gpu_released()
        record["loadavg_after"] = loadavg()
        record["log"] = server.log_path.name
        config = engine_config_line(server.log_path)
        if config:
            record["engine_config_sha1"] = hashlib.sha1(config.encode()).hexdigest()[:12]
            self.data.setdefault("engine_configs", {})[record["engine_config_sha1"]] = config
        self.save()
        self.log(f"{'kept' if record.get('kept') else 'stopped'} {server.name}: {record['memory']}")


def main(argv: list[str] | None = None) -> int:
    args = parse(build_parser(), argv)
    stop_all_on_exit()
    runner = Runner(args)
    # the harness's own probes (first chunk, first text) are clients too
    with favoured_client() as nice:
        runner.harness_nice = nice
        try:
            results = runner.run()
        finally:
            stop_all()
    print(f"bench: raw results in {results}", flush=True)
    if args.no_report:
        return 0
    from bench.report import write_report

    md = write_report(results, Path(args.docs_dir), runner.data["hardware"])
    print(f"bench: report in {md}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
