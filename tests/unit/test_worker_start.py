"""app.worker_start: what vLLM's launcher module gets from `multiprocessing` meanwhile."""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import types
from collections.abc import Iterator

import pytest

from app.shared_tokenizer import ENV, TokenizerKey
from app.worker_start import PRELOAD, worker_start

KEY = TokenizerKey("/models/q", "generate", "auto", None, False, copies=2)


@pytest.fixture
def launcher() -> Iterator[types.ModuleType]:
    """A stand-in for `vllm.v1.utils`, which holds `multiprocessing` as a global, and the
    fork server's preload list put back afterwards."""
    module = types.ModuleType("launcher")
    module.multiprocessing = multiprocessing  # type: ignore[attr-defined]
    server = multiprocessing.forkserver._forkserver
    preload = list(server._preload_modules)
    yield module
    server._preload_modules = preload


def test_forkserver_stands_in_for_spawn_meanwhile(launcher: types.ModuleType) -> None:
    with worker_start("forkserver", launcher):
        mp = launcher.multiprocessing
        assert mp.get_context("spawn").get_start_method() == "forkserver"
        # everything else as it was: other start methods, and the rest of the module
        assert mp.get_context("fork").get_start_method() == "fork"
        assert mp.connection is multiprocessing.connection
        assert mp.Process is multiprocessing.Process
        # the fork server imports what every worker imports, once
        assert multiprocessing.forkserver._forkserver._preload_modules == list(PRELOAD)
    assert launcher.multiprocessing is multiprocessing


def test_the_launcher_gets_multiprocessing_back_after_a_failure(
    launcher: types.ModuleType,
) -> None:
    with pytest.raises(RuntimeError), worker_start("forkserver", launcher):
        raise RuntimeError("the engine did not start")
    assert launcher.multiprocessing is multiprocessing


def test_spawn_leaves_the_launcher_alone(launcher: types.ModuleType) -> None:
    preload = list(multiprocessing.forkserver._forkserver._preload_modules)
    with worker_start("spawn", launcher):
        assert launcher.multiprocessing is multiprocessing
        assert launcher.multiprocessing.get_context("spawn").get_start_method() == "spawn"
    assert multiprocessing.forkserver._forkserver._preload_modules == preload


def test_every_preloaded_module_exists() -> None:
    import importlib.util

    assert all(importlib.util.find_spec(name) is not None for name in PRELOAD)


def test_the_fork_server_hears_of_the_tokenizer_meanwhile(
    launcher: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with worker_start("forkserver", launcher, KEY):
        # the fork server, started while the launcher starts the workers, inherits it
        assert TokenizerKey.from_json(os.environ[ENV]) == KEY
    assert ENV not in os.environ
    with worker_start("spawn", launcher, KEY):
        assert ENV not in os.environ
    monkeypatch.setenv(ENV, "before")
    with worker_start("forkserver", launcher, KEY):
        assert os.environ[ENV] == KEY.to_json()
    assert os.environ[ENV] == "before"
