"""`bench.run --together --keep-servers DIR`: servers kept up from one device call to the next.

In session 54's three calls on one warm H200 the servers were ready after 75-152 s (and
bench.run started 18-78 s into each call): a fifth to a third of each call's 540 s went on
starting what the call before had just stopped. The machine keeps whatever a call leaves
running in a process session of its own until it goes back (30 s idle), and bench.run
starts every server in a session of its own. With `--keep-servers DIR` bench.run leaves
its servers running when it ends and lists them in DIR/servers.json; the next call's
bench.run takes over each one that still runs and answers /health with the same command
line, port and checkout (its log, in DIR, goes on; the first-text probe, made when it
started, is not repeated), stops the listed ones it does not take, and starts the rest.
The listed calls' count is mixed into the prompts' seed, so that a kept server's prefix
cache holds none of the next call's prompts. gpu_run.sh's sweep spares the kept servers' sessions
(`python -m bench.kept sessions DIR` lists them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from bench.http_calls import get_status
from bench.procfs import AttachedProc, pid_alive
from bench.servers import ServerProcess, stop_group

STATE = "servers.json"
SEED_STEP = 7919
"""Added to `--seed` once per earlier call: `bench.client.prompt_seed` mixes the seed with
a crc32 of the run's round and point, so each call's prompts are new to a kept server."""


def load(folder: Path) -> dict[str, Any]:
    """DIR/servers.json: {"calls": how many bench.run calls kept servers here, "servers":
    [{"name", "pid", "port", "argv", "cwd"}, ...]}; empty where there is none or it is
    unreadable."""
    try:
        state = json.loads((folder / STATE).read_text())
    except (OSError, ValueError):
        return {"calls": 0, "servers": []}
    if not isinstance(state, dict) or not isinstance(state.get("servers"), list):
        return {"calls": 0, "servers": []}
    return {"calls": int(state.get("calls") or 0), "servers": state["servers"]}


class Keeper:
    """The servers DIR lists (read once), and those this bench.run leaves there."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        state = load(folder)
        self.calls: int = state["calls"]
        self.listed: list[dict[str, Any]] = state["servers"]
        self.kept: list[ServerProcess] = []

    def seed(self, seed: int) -> int:
        """This call's prompt seed: `seed`, moved on by the calls listed before it."""
        return seed + SEED_STEP * self.calls

    def log_path(self, name: str) -> Path:
        return self.folder / f"server-{name}.log"

    def release(self, names: list[str]) -> list[str]:
        """Stop the listed servers whose names are not in `names` (this call does not ask
        for them; they hold GPU memory); the names stopped."""
        stopped = [e for e in self.listed if e.get("name") not in names]
        for entry in stopped:
            stop_group(AttachedProc(int(entry["pid"])))
        self.listed = [e for e in self.listed if e not in stopped]
        return [str(e.get("name")) for e in stopped]

    def take(self, server: ServerProcess) -> bool:
        """Attach `server` to its listed server where that still runs and answers /health
        with the same command line, port and checkout; a listed one that does not is
        stopped first. False where `server` is to be started."""
        entry = next((e for e in self.listed if e.get("name") == server.name), None)
        if entry is None:
            return False
        self.listed.remove(entry)
        pid = int(entry["pid"])
        wanted = {"argv": server.argv, "port": server.port, "cwd": server.cwd}
        same = all(entry.get(key) == value for key, value in wanted.items())
        if same and pid_alive(pid) and get_status(server.base_url + "/health", 5.0) == 200:
            server.attach(pid)
            return True
        stop_group(AttachedProc(pid))
        return False

    def keep(self, server: ServerProcess) -> None:
        """Leave `server` running when this bench.run ends, listed for the next."""
        server.leave_running()
        if server not in self.kept:
            self.kept.append(server)
        self.save()

    def save(self) -> None:
        """DIR/servers.json with the kept servers that run, this call counted."""
        servers = [
            {"name": s.name, "pid": s.proc.pid, "port": s.port, "argv": s.argv, "cwd": s.cwd}
            for s in self.kept
            if s.proc is not None and s.alive()
        ]
        state = {"calls": self.calls + 1, "servers": servers}
        tmp = self.folder / (STATE + ".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(self.folder / STATE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the servers a --keep-servers folder lists")
    parser.add_argument("what", choices=["sessions"], help="their session ids, one a line")
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    for entry in load(args.folder)["servers"]:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            if pid_alive(int(entry["pid"])):
                print(int(entry["pid"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
