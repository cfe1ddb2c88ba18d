"""bench.gpu_stage: the part size that fits a device call beside the checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.gpu_stage import MIB, blocks, checkout_bytes, part_mib, plan, tree_bytes


def test_session_33s_refused_and_accepted_parts() -> None:
    checkout = int(29.7 * MIB)  # 27.7 MiB of files, 29.7 MiB in blocks
    wheels = int(0.12 * MIB)
    size = part_mib(checkout, wheels)
    assert 32 <= size < 36  # 32 MiB parts went, 36 MiB ones were refused
    assert checkout + wheels + size * MIB <= 63 * MIB


def test_a_small_checkout_gets_stage_shs_default_and_a_huge_one_an_error() -> None:
    assert part_mib(2 * MIB, 0) == 60
    with pytest.raises(ValueError, match="move raw results out of git"):
        part_mib(57 * MIB, 0)


def test_files_count_as_whole_blocks() -> None:
    assert blocks(0) == 0
    assert blocks(1) == 4096
    assert blocks(4096) == 4096
    assert blocks(4097) == 8192


def test_checkout_counts_tracked_and_untracked_but_not_ignored(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("ignored/\n")
    (tmp_path / "tracked.txt").write_bytes(b"x" * 5000)
    git("add", ".gitignore", "tracked.txt")
    (tmp_path / "untracked.txt").write_bytes(b"y" * 10)
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "big.bin").write_bytes(b"z" * 100_000)
    assert checkout_bytes(tmp_path) == 4096 + 8192 + 4096
    assert tree_bytes(tmp_path / "ignored") == blocks(100_000)
    assert tree_bytes(tmp_path / "absent") == 0


def test_the_plan_carries_the_wheels_with_the_last_part_only() -> None:
    lines = plan(3)
    assert len(lines) == 3
    assert '[".gpu/part1"]' in lines[0] and "cp -r .gpu/part1/." in lines[0]
    assert '[".gpu/part3", ".whl"]' in lines[2] and "bench/gpu_run.sh" in lines[2]
    assert ".whl" not in lines[1]
