"""The harness's own probes of a server beside `vllm bench serve`'s runs: time to first
chunk and to first text at c=1 (`bench.first_text`) and under load
(`bench.first_text_load`). `bench.run`'s Runner is a ProbeRunner."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from bench.plan_runner import PlanRunner
from bench.servers import ServerProcess

FIRST_TEXT_REQUESTS = 20


class ProbeRunner(PlanRunner):
    """A PlanRunner that probes its servers too; the probes' prompts are made once (the
    subclass starts them as None and [])."""

    _first_text_prompts: list[str] | None
    _load_prompts: list[str]
    _first_text_soon: Future[list[str]] | None = None

    def make_first_text_prompts(self, model: str) -> Future[list[str]]:
        """Start making the first-text probe's prompts in a thread, as the first server
        starts: importing transformers and loading the tokenizer for them took 17 s of each
        device call in session 54, after the first server was ready."""
        from bench.first_text import random_prompts

        pool = ThreadPoolExecutor(1, thread_name_prefix="first-text-prompts")
        input_len = self.profile.workloads[0][0]
        args = (model, input_len, FIRST_TEXT_REQUESTS, self.args.seed + 1)
        self._first_text_soon = pool.submit(random_prompts, *args)
        pool.shutdown(wait=False)
        return self._first_text_soon

    def first_text(self, server: ServerProcess, model: str) -> dict[str, Any]:
        """Time to first chunk and to first text at c=1 (see bench/first_text.py)."""
        from bench.first_text import first_text_probe

        prof = self.profile
        try:
            if self._first_text_prompts is None:
                soon = self._first_text_soon or self.make_first_text_prompts(model)
                self._first_text_prompts = soon.result()
            return first_text_probe(server.port, model, self._first_text_prompts, 32, prof.sampling)
        except Exception as exc:  # a probe, not a run: note it and go on
            return {"error": str(exc)}

    def load_probes(self, server: ServerProcess, record: dict[str, Any], model: str) -> None:
        """Time to first chunk and to first text under load, at each of the profile's
        `first_text_load` concurrencies (see bench/first_text_load.py)."""
        from bench.first_text import random_prompts
        from bench.first_text_load import prompt_count, run_probe

        prof = self.profile
        if not prof.first_text_load or not server.alive():
            return
        input_len, out_len = prof.workloads[0]
        most = max(prompt_count(c) for c in prof.first_text_load)
        probes = record.setdefault("first_text_load", [])
        for n, c in enumerate(prof.first_text_load):
            if self.remaining() < 60:  # this one and the rest: one line, no prompts made
                late = prof.first_text_load[n:]
                name = record["server"]
                at = ", ".join(map(str, late))
                tags = [f"{name}#{record['round']}-load@{k}" for k in late]
                self.skip(tags, f"deadline: no first-text load probe of {name} at c={at}")
                return
            if len(self._load_prompts) < most:
                self._load_prompts = random_prompts(model, input_len, most, self.args.seed + 2)
            spec = {
                "port": server.port, "model": model, "out_len": out_len, "concurrency": c,
                "prompts": self._load_prompts[: prompt_count(c)], "sampling": prof.sampling,
            }  # fmt: skip
            path = self.results_dir / f"load-{record['server']}-r{record['round']}-c{c}.json"
            server.set_under_load(True)
            try:
                probes.append(run_probe(self.args.python, spec, path, prof.run_timeout_s))
            finally:
                server.set_under_load(False)
            self.log(f"{record['server']} first-text load probe: {probes[-1]}")
            self.save()
