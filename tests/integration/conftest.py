"""One live gateway per test session: the real vLLM engine on the tiny model, real HTTP."""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = float(os.environ.get("GATEWAY_TEST_STARTUP_TIMEOUT", "420"))


@dataclass(frozen=True)
class LiveGateway:
    base_url: str  # http://127.0.0.1:PORT
    model: str  # the absolute path the server was started with (the seeds' model name)
    home: Path  # the server's HOME (so `~/...` names can be tested)
    log: Path

    @property
    def v1(self) -> str:
        return self.base_url + "/v1"


_HANDED_OUT: set[int] = set()
_PORT_LOCK = threading.Lock()


def free_port() -> int:
    """A free port below the kernel's ephemeral range, never handed out twice.

    A gateway binds its port some 40 s after this check. A port the kernel picked (bind
    to 0) is an ephemeral one, which another process can get meanwhile: a second gateway
    starting beside it (its engine's sockets, its clients) took one in a CI run
    ("address already in use"). Ports below the range are never assigned automatically.
    """
    low = 32768
    with contextlib.suppress(OSError, ValueError):
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    while True:
        port = random.randrange(max(1024, low - 10000), low)
        with _PORT_LOCK:
            if port in _HANDED_OUT:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _HANDED_OUT.add(port)
            return port


def wait_ok(
    url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float, what: str = "gateway"
) -> None:
    """Poll `url` until it answers 200; fail with the log tail if `proc` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{what} not ready after {timeout}s:\n{log.read_text()[-4000:]}")


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    wait_ok(url + "/health", proc, log, timeout)


def server_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        VLLM_CPU_KVCACHE_SPACE=env.get("VLLM_CPU_KVCACHE_SPACE", "1"),
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def start_gateway(
    tmp: Path,
    model_dir: Path,
    home: Path,
    extra: list[str],
    env: dict[str, str],
    nofile: int | None = None,
) -> tuple[subprocess.Popen[bytes], LiveGateway]:
    """A gateway process on the tiny model, once /health answers 200."""
    proc, live = launch_gateway(tmp, model_dir, home, extra, env, nofile)
    try:
        wait_healthy(live.base_url, proc, live.log, STARTUP_TIMEOUT)
    except BaseException:
        stop(proc, timeout=10)
        raise
    return proc, live


def launch_gateway(
    tmp: Path,
    model_dir: Path,
    home: Path,
    extra: list[str],
    env: dict[str, str],
    nofile: int | None = None,
) -> tuple[subprocess.Popen[bytes], LiveGateway]:
    """A gateway process on the tiny model, just launched (still starting); with `nofile`,
    started with that soft open-files limit (as `ulimit -Sn` would)."""
    port = free_port()
    log = tmp / f"gateway-{port}.log"
    cmd = [
        sys.executable, "-m", "app", "serve", str(model_dir),
        "--host", "127.0.0.1", "--port", str(port),
        "--max-model-len", "2048", "--max-num-seqs", "64", "--enforce-eager",
        *extra,
    ]  # fmt: skip
    if nofile is not None:  # the shell execs python: the pid stays the gateway's
        cmd = ["bash", "-c", f'ulimit -Sn {nofile} && exec "$0" "$@"', *cmd]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    return proc, LiveGateway(f"http://127.0.0.1:{port}", str(model_dir), home, log)


def stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """SIGTERM, then SIGKILL if it is still running after `timeout` seconds; then whatever
    it had started and outlived it (a gateway's engine core and HTTP workers, orphaned
    when the parent was killed) is killed too, so a fixture leaves nothing behind even
    when the test that stops its server gracefully did not run (`pytest -k`)."""
    family: list[psutil.Process] = []
    if proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            family = psutil.Process(proc.pid).children(recursive=True)
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    _, alive = psutil.wait_procs(family, timeout=min(timeout, 30))
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=10)


@pytest.fixture(scope="session")
def test_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="session")
def tiny_model_dir(test_home: Path) -> Path:
    """The tiny model where ModelScope would have put Qwen3-0.6B (`~/.cache/...`)."""
    target = test_home / ".cache" / "modelscope" / "hub" / "models" / "Qwen" / "Qwen3-0.6B"
    if os.environ.get("GATEWAY_TEST_UNTRAINED"):  # quicker runs while developing
        from app.tiny_model import write_tiny_model

        write_tiny_model(target)
    else:
        from tests.integration.think_model import write_think_model

        write_think_model(target)
    return target


@pytest.fixture(scope="session")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path, test_home: Path
) -> Iterator[LiveGateway]:
    tmp = tmp_path_factory.mktemp("gateway")
    proc, live = start_gateway(
        tmp,
        tiny_model_dir,
        test_home,
        # fastokens as with a GPU (the CPU's default leaves it off; test_process checks that)
        ["--model-aliases", "qwen=" + str(tiny_model_dir), "--fast-tokenizer"],
        server_env(test_home),
    )
    try:
        yield live
    finally:
        stop(proc)


@pytest.fixture(scope="session")
def client(gateway: LiveGateway) -> openai.OpenAI:
    """The openai SDK against the session's gateway (no retries: failures show)."""
    return openai.OpenAI(base_url=gateway.v1, api_key="EMPTY", max_retries=0, timeout=120)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.path):
            item.add_marker(pytest.mark.integration)
