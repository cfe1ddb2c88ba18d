"""One `vllm bench serve` client process against one or more servers: its plan, run and
collected.

`bench.run`'s Runner is a PlanRunner: `run_plan` writes the plan of every (workload,
concurrency) for a server session, starts `python -m bench.vllm_bench --plan` and turns
the client's events into the results file's runs as they come; `run_plans` does the same
for several sessions' rounds in turn (`bench.run --together`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from bench.client import build_plan, follow, on_end, on_start
from bench.profiles import ROOT, Profile
from bench.report_data import skipped_text
from bench.servers import ServerProcess

Entry = tuple[ServerProcess, str, int]  # a server, its name, the round


class PlanRunner:
    """What run_plan needs of its runner: its arguments, profile, results and clock."""

    args: argparse.Namespace
    profile: Profile
    results_dir: Path
    data: dict[str, Any]

    def remaining(self) -> float:
        raise NotImplementedError

    def save(self) -> None:
        raise NotImplementedError

    def log(self, msg: str) -> None:
        raise NotImplementedError

    def skip(self, tag: str | list[str], why: str) -> None:
        """Note a session or run that did not take place, or several in one line (the
        report lists them)."""
        self.log(why)
        self.data.setdefault("skipped", []).extend([tag] if isinstance(tag, str) else tag)

    def run_plan(
        self, server: ServerProcess, name: str, rnd: int, model: str, pinned: bool = False
    ) -> None:
        """Every (workload, concurrency) against one server, from one client process;
        `pinned` runs (see `bench.affinity`) go to `pinned_runs`, which reports leave out."""
        self.run_plans([(server, name, rnd)], model, pinned=pinned)

    def run_plans(self, entries: list[Entry], model: str, pinned: bool = False) -> None:
        """Every entry's (workload, concurrency) points against its server, in the entries'
        order, from one client process: vLLM is imported once (17-25 s on the H200's host)
        however many servers and rounds the entries hold."""
        args = self.args
        plan, runs, owners = self.plan_of(entries, model, pinned)
        key = "pinned_runs" if pinned else "runs"
        self.data.setdefault(key, [])
        label = f"{entries[0][1]}{'-pin' if pinned else ''}-r{entries[0][2]}"
        if len(entries) > 1:
            label = f"together-{len(entries)}-r{entries[0][2]}-r{entries[-1][2]}"
        plan_path = self.results_dir / f"plan-{label}.json"
        plan_path.write_text(json.dumps(plan, indent=1) + "\n")
        cmd = [args.python, "-m", "bench.vllm_bench", "--plan", str(plan_path)]
        if args.deadline_s is not None:
            cmd += ["--stop-at", f"{time.time() + self.remaining() - 5:.0f}"]
        log_path = self.results_dir / f"client-{label}.log"
        events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
            )  # fmt: skip
            reader = threading.Thread(target=follow, args=(proc, log, events), daemon=True)
            reader.start()
            try:
                self._collect(events, runs, owners, key)
            finally:
                for server in owners.values():
                    server.set_under_load(False)
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(10)
                reader.join(10)
        late = [tag for tag, run in runs.items() if run.get("error") == "skipped: deadline"]
        if late:
            self.log(f"deadline: {len(late)} runs skipped: {skipped_text(late)}")
        for tag, run in runs.items():
            if "metrics" not in run and "error" not in run:
                run["error"] = "not run (deadline or client failure)"
                self.data.setdefault("skipped", []).append(tag)
                self.data[key].append(run)
        self.save()

    def plan_of(
        self, entries: list[Entry], model: str, pinned: bool = False
    ) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, ServerProcess]]:
        """The client's plan for `entries`, an empty run record per tag and each tag's
        server. With several entries every item carries its round as `pair`: the client
        skips a round whole when it would not end by the deadline."""
        plan: list[dict[str, Any]] = []
        runs: dict[str, dict[str, Any]] = {}
        owners: dict[str, ServerProcess] = {}
        for server, name, rnd in entries:
            items, records = build_plan(
                self.profile, name, rnd, python=self.args.python, model=model,
                port=server.port, seed=self.args.seed, results_dir=self.results_dir,
                pinned=pinned,
            )  # fmt: skip
            plan += [item | {"pair": rnd} for item in items] if len(entries) > 1 else items
            runs |= records
            owners |= dict.fromkeys(records, server)
        return plan, runs, owners

    def _collect(
        self,
        events: queue.Queue[dict[str, Any] | None],
        runs: dict[str, dict[str, Any]],
        owners: dict[str, ServerProcess],
        key: str = "runs",
    ) -> None:
        """Turn the client's events into run records until it exits, goes silent, or the
        deadline comes; a server is under load from its run's start to its end. One that
        died is left to the client, which skips the runs of a server that no longer
        listens; the client is stopped when every server has died."""
        prof = self.profile
        # the first event waits for vLLM's import in the client too
        wait_s = prof.run_timeout_s + 120
        while True:
            limit = min(wait_s, max(5.0, self.remaining()))
            try:
                event = events.get(timeout=limit)
            except queue.Empty:
                cause = "deadline reached" if limit < wait_s else "client silent"
                self.log(f"{cause} after {limit:.0f} s without a result: stopping the client")
                return
            if event is None:  # the client exited
                return
            if event["event"] == "client":
                self.data["client_autogroup_nice"] = event.get("autogroup_nice")
                continue
            tag = event.get("tag", "")
            run = runs.get(tag)
            if run is None:
                continue
            server = owners[tag]
            if event["event"] == "start":
                server.set_under_load(True)
                on_start(run, event, server)
                self.log(f"{tag}: {run['num_prompts']} prompts, {run['num_warmups']} warm-ups")
                wait_s = prof.run_timeout_s
            elif event["event"] == "skip":
                run["error"] = "skipped: " + event.get("reason", "")
                if event.get("reason") == "deadline":  # logged together by run_plans
                    self.data.setdefault("skipped", []).append(tag)
                else:
                    self.skip(tag, f"{tag}: skipped ({event.get('reason')})")
                self.data[key].append(run)
            elif event["event"] == "end":
                server.set_under_load(False)
                self.log(on_end(run, event, server, self.results_dir))
                self.data[key].append(run)
                self.save()
                if not server.alive():
                    self.log(f"{server.name} died during {tag}")
                    if not any(s.alive() for s in owners.values()):
                        return
