"""bench.front_end_memory's pure parts: each process's role, the totals and the table."""

from __future__ import annotations

from dataclasses import dataclass

from bench.front_end_memory import DEFAULT_SERVERS, role, summarize, table
from bench.mem_map import ProcessMemory
from bench.paired_specs import parse_spec


@dataclass
class Proc:
    pid: int
    words: list[str]

    def cmdline(self) -> list[str]:
        return self.words


def memory(pid: int, rss: int, pss: int, private: int) -> ProcessMemory:
    """KiB figures, as read from smaps."""
    return ProcessMemory(pid, "p", rss, pss, private, private, gpu_device_files=False)


def test_each_front_end_process_gets_its_role() -> None:
    server = ["python3", "-B", "-c", "from multiprocessing.forkserver import main; main(8)"]
    assert role(Proc(10, ["python", "-m", "app", "serve"]), root=10) == "launcher"
    assert role(Proc(11, server), root=10) == "fork server"
    assert role(Proc(12, ["VLLM::APIServer_0"]), root=10) == "worker"
    tracker = ["python3", "-c", "from multiprocessing.resource_tracker import main"]
    assert role(Proc(13, tracker), root=10) == "other"


def test_totals_count_each_page_once_and_a_worker_by_its_median() -> None:
    mib = 1024
    found = [
        ("launcher", memory(1, 600 * mib, 450 * mib, 400 * mib)),
        ("fork server", memory(2, 580 * mib, 160 * mib, 40 * mib)),
        ("worker", memory(3, 670 * mib, 370 * mib, 300 * mib)),
        ("worker", memory(4, 680 * mib, 380 * mib, 310 * mib)),
        ("worker", memory(5, 675 * mib, 372 * mib, 299 * mib)),
    ]
    summary = summarize(found)
    assert summary["total_pss_mib"] == 450 + 160 + 370 + 380 + 372
    assert summary["total_rss_mib"] == 600 + 580 + 670 + 680 + 675
    assert summary["pss_by_role_mib"] == {
        "fork server": 160,
        "launcher": 450,
        "worker": 370 + 380 + 372,
    }
    assert (summary["workers"], summary["worker_pss_mib"]) == (3, 372)
    assert (summary["worker_private_mib"], summary["worker_rss_mib"]) == (300, 675)
    # a server without workers (one process): no worker figures
    alone = summarize([("launcher", memory(1, 600 * mib, 450 * mib, 400 * mib))])
    assert alone["workers"] == 0 and alone["worker_pss_mib"] is None


def test_the_table_has_a_row_per_run_and_says_which_failed() -> None:
    summary = {
        "total_pss_mib": 2100.0,
        "total_rss_mib": 3880.0,
        "pss_by_role_mib": {"launcher": 447.7, "worker": 1490.3},
        "workers": 4,
        "worker_pss_mib": 372.1,
        "worker_private_mib": 299.2,
        "worker_rss_mib": 674.1,
    }
    alone = {
        "total_pss_mib": 860.0,
        "total_rss_mib": 1000.0,
        "pss_by_role_mib": {"launcher": 860.0},
        "workers": 0,
        "worker_pss_mib": None,
        "worker_private_mib": None,
        "worker_rss_mib": None,
    }
    runs = [
        {"label": "spawn", "repeat": 0, "ready_s": 64.0, "summary": summary},
        {"label": "vllm4", "repeat": 0, "error": "ServerError: exited 1"},
        {"label": "one", "repeat": 0, "ready_s": 40.0, "summary": alone},
    ]
    rows = table(runs).splitlines()
    assert len(rows) == 5
    assert rows[2].startswith("| spawn | 0 | 64.0 | 2100.0 | 447.7 | - | 1490.3 (4) |")
    assert "372.1 / 299.2 / 674.1" in rows[2]
    assert rows[3] == "| vllm4 | 0 | ServerError: exited 1 |"
    # one process, no workers: dashes, not None
    assert rows[4] == "| one | 0 | 40.0 | 860.0 | 860.0 | - | - (0) | - / - / - | 1000.0 |"


def test_the_default_servers_differ_only_in_how_workers_start() -> None:
    spawn, fork = (parse_spec(text) for text in DEFAULT_SERVERS)
    assert (spawn.label, fork.label) == ("spawn", "forkserver")
    assert spawn.flags[:2] == fork.flags[:2] == ("--api-server-count", "4")
    assert (spawn.flags[-1], fork.flags[-1]) == ("spawn", "forkserver")
