"""bench/gpu_run.sh run with a fake python that records its calls, for its tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def dry_gpu_run(
    tmp_path: Path, fake: str = "", rc: int = 0, **knobs: str | None
) -> list[list[str]]:
    """gpu_run.sh in DRY_RUN with a fake python that records its arguments (then runs the
    shell lines `fake`); its calls (a knob of None unsets that variable), once it has
    exited with `rc`."""
    calls = tmp_path / "calls.txt"
    fake_python = tmp_path / "python"
    fake_python.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> {calls}\necho >> {calls}\n{fake}\n')
    fake_python.chmod(0o755)
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    modes = (
        "TEST_ARGS",
        "PAIRED_ARGS",
        "COLD_ARGS",
        "FEM_ARGS",
        "PROFILE_ARGS",
        "BENCH_ARGS",
        "BENCH_SETS",
    )
    env = {
        **{name: value for name, value in os.environ.items() if name not in modes},
        "DRY_RUN": "1",
        "PYTHON": str(fake_python),
        "OUT": str(tmp_path / "out"),
        "RES_DIR": str(tmp_path / "res"),
        "MODEL_DIR": str(model),
        **{name: value for name, value in knobs.items() if value is not None},
    }
    for name in [name for name, value in knobs.items() if value is None]:
        env.pop(name, None)
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        ["bash", "bench/gpu_run.sh"], cwd=root, env=env, capture_output=True, timeout=60
    )
    assert done.returncode == rc, done.stdout.decode()[-2000:]
    return [line.split("|") for line in calls.read_text().splitlines()]
