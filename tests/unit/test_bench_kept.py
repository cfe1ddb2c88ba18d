"""bench.kept: servers left running by one bench.run and taken over by the next, with real
processes in sessions of their own (a tiny HTTP server answering /health and /v1/models)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.kept import SEED_STEP, Keeper, load, main
from bench.procfs import AttachedProc, pid_alive
from bench.servers import ServerProcess, stop_all

HEALTH = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"data": [{"id": "m"}]}' if self.path == "/v1/models" else b"{}"
        self.send_response(200 if self.path in ("/health", "/v1/models") else 404)
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server(tmp_path: Path, name: str, port: int, flag: str = "") -> ServerProcess:
    argv = [sys.executable, "-c", HEALTH, str(port)] + ([flag] if flag else [])
    return ServerProcess(name, argv, port, {}, tmp_path / f"server-{name}.log")


def _up(server: ServerProcess) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", server.port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"{server.name} did not listen")


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    """Servers a test starts; any still running are stopped at its end, kept or not."""
    servers: list[ServerProcess] = []
    yield servers
    stop_all()
    for server in servers:
        if server.proc is not None and server.proc.poll() is None:
            server.stop(grace_s=2.0)


def test_a_kept_server_is_taken_over_by_the_next_call(
    tmp_path: Path, started: list[ServerProcess]
) -> None:
    """The first call starts and keeps its server; the next one attaches to the same
    process (same command line and port), watches it, and moves the prompts' seed on."""
    folder = tmp_path / "kept"
    first = Keeper(folder)
    assert first.calls == 0 and first.seed(5) == 5
    port = _free_port()
    server = _server(folder, "gateway", port)
    started.append(server)
    assert not first.take(server)  # nothing listed: start it
    server.start()
    _up(server)
    first.keep(server)
    stop_all()  # what bench.run does at its exit: a kept server stays up
    assert server.alive()
    assert load(folder)["servers"] == [
        {"name": "gateway", "pid": server.proc.pid, "port": port, "argv": server.argv, "cwd": None}
    ]

    second = Keeper(folder)
    assert second.calls == 1 and second.seed(5) == 5 + SEED_STEP
    again = _server(folder, "gateway", port)
    started.append(again)
    assert second.take(again)
    assert isinstance(again.proc, AttachedProc) and again.proc.pid == server.proc.pid
    assert again.alive() and again.wait_ready(5.0) < 5.0
    assert again.cpu_seconds()[0] is not None  # read from /proc as for one started here
    assert again.stop(grace_s=5.0) == -1  # not our child: the code is unknown
    assert not pid_alive(server.proc.pid)


def test_a_listed_server_with_other_flags_or_not_asked_for_is_stopped(
    tmp_path: Path, started: list[ServerProcess]
) -> None:
    """A listed server whose command line or checkout differs is stopped before its
    replacement starts; one this call does not name at all is stopped by `release`."""
    folder = tmp_path / "kept"
    keeper = Keeper(folder)
    servers = [_server(folder, n, _free_port()) for n in ("vllm", "gateway", "gwb")]
    started.extend(servers)
    for server in servers:
        server.start()
        _up(server)
        keeper.keep(server)
    vllm, gateway, gwb = servers

    later = Keeper(folder)
    assert later.release(["gateway", "gwb"]) == ["vllm"]
    assert vllm.proc is not None and vllm.proc.wait(10) is not None
    assert gateway.alive() and gwb.alive()
    assert not later.take(_server(folder, "gateway", gateway.port, flag="--max-num-seqs=8"))
    assert gateway.proc is not None and gateway.proc.wait(10) is not None
    moved = _server(folder, "gwb", gwb.port)
    moved.cwd = str(tmp_path)  # the same command line from another checkout (--gwb-root)
    assert not later.take(moved)
    assert gwb.proc is not None and gwb.proc.wait(10) is not None


def test_a_dead_or_deaf_listed_server_is_not_taken(
    tmp_path: Path, started: list[ServerProcess]
) -> None:
    """Listed but gone, or running but not answering /health on its port: started anew."""
    folder = tmp_path / "kept"
    port = _free_port()
    argv = [sys.executable, "-c", HEALTH, str(port)]
    folder.mkdir()
    gone = {"name": "vllm", "pid": 2**22 + 7, "port": port, "argv": argv}
    (folder / "servers.json").write_text(json.dumps({"calls": 2, "servers": [gone]}))
    keeper = Keeper(folder)
    assert keeper.calls == 2
    assert not keeper.take(ServerProcess("vllm", argv, port, {}, folder / "x.log"))
    deaf = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        deaf_entry = {"name": "vllm", "pid": deaf.pid, "port": port, "argv": argv}
        (folder / "servers.json").write_text(json.dumps({"servers": [deaf_entry]}))
        assert not Keeper(folder).take(ServerProcess("vllm", argv, port, {}, folder / "x.log"))
        assert deaf.wait(10) is not None  # stopped: it held its share of the GPU for nothing
    finally:
        if deaf.poll() is None:
            deaf.kill()


def test_the_sessions_to_spare_are_the_live_listed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m bench.kept sessions DIR`, for gpu_run.sh's sweep: live pids only; nothing
    for a folder without a list or with a broken one."""
    live = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        (tmp_path / "servers.json").write_text(
            json.dumps({"servers": [{"pid": live.pid}, {"pid": 2**22 + 7}, {"name": "x"}]})
        )
        assert main(["sessions", str(tmp_path)]) == 0
        assert capsys.readouterr().out.split() == [str(live.pid)]
        (tmp_path / "servers.json").write_text("{")
        assert main(["sessions", str(tmp_path)]) == 0
        assert main(["sessions", str(tmp_path / "none")]) == 0
        assert capsys.readouterr().out == ""
    finally:
        live.kill()
        live.wait()


def test_bench_run_keeps_its_servers_and_the_next_run_takes_them_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[ServerProcess]
) -> None:
    """bench.run's sessions with --keep-servers: the first run starts the server and leaves
    it up (its log copied into the run's results); the next run's session takes the same
    process over, with the prompts' seed moved on; both records say so."""
    from bench.options import build_parser
    from bench.run import Runner

    port = _free_port()

    def health_server(name: str, *_: Any, log_path: Path, **__: Any) -> ServerProcess:
        server = _server(log_path.parent, name, port)
        server.log_path = log_path
        started.append(server)
        return server

    monkeypatch.setattr("bench.run.bench_server", health_server)
    monkeypatch.setattr("bench.first_text.random_prompts", lambda *_: ["p"])  # no tokenizer
    keep = tmp_path / "kept"
    flags = ["--profile", "cpu", "--servers", "gateway", "--keep-servers", str(keep)]
    with pytest.raises(SystemExit, match="--together"):
        Runner(build_parser().parse_args(flags))
    records = []
    for n in (1, 2):
        res = tmp_path / f"res{n}"
        runner = Runner(build_parser().parse_args([*flags, "--together", "--seed", "3",
                                                  "--results-dir", str(res)]))  # fmt: skip
        runner.data = {"sessions": []}
        assert runner.args.seed == 3 + SEED_STEP * (n - 1)
        server, record = runner.launch_session("gateway", 1, "m", port)
        if n == 1:
            _up(server)
        runner.close_session(server, record)
        assert server.alive()
        assert (res / "server-gateway.log").exists()  # copied for this call's logs
        records.append(record)
    assert "taken_over" not in records[0] and records[1]["taken_over"]
    assert records[0]["kept"] and records[1]["kept"] and "exit_code" not in records[1]
    first, second = started
    assert second.proc is not None and first.proc is not None
    assert second.proc.pid == first.proc.pid
    assert load(keep)["calls"] == 2
