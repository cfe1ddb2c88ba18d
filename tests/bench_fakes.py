"""A stand-in for bench.servers.ServerProcess in the harness's unit tests."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class FakeServer:
    """Alive until told otherwise; records when it was marked under load."""

    name: str
    running: bool = True
    port: int = 0
    load: list[bool] = field(default_factory=list)

    def alive(self) -> bool:
        return self.running

    def set_under_load(self, value: bool) -> None:
        self.load.append(value)

    def cpu_seconds(self) -> tuple[float | None, float | None]:
        return None, None

    def engine_threads(self) -> dict[str, float]:
        return {}

    def worker_cpu(self) -> dict[str, float]:
        return {}
