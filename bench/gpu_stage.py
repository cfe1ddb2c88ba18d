"""Stage vLLM 0.26.0 for the lent H200 in parts that fit a device call beside this checkout.

    python -m bench.gpu_stage                 # from the checkout's root
    python -m bench.gpu_stage --dry-run       # only the size and the plan

A device call carries at most 64 MiB: the checkout's tracked (and untracked, not ignored)
files, plus the paths named in `carry`. The checkout grows by each lease's raw results
(23 MiB in session 26, 27.7 MiB in session 33, when 36 MiB parts no longer fitted), so the
part size is worked out here from the checkout's size and the wheels in `.whl/` that go
with the last part, instead of by hand. Then `../shared/gpu/stage.sh` cuts the parts, and
the call plan is printed: one call per part but the last, which runs `bench/gpu_run.sh`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from bench.profiles import ROOT

CALL_LIMIT_MIB = 64.0
"""What one device call may carry in all (the `run` tool's limit)."""

MARGIN_MIB = 1.0
"""Room left for files that appear between staging and the calls (a results README)."""

MAX_PART_MIB = 60
"""`stage.sh`'s default part size: no gain from larger ones."""

MIN_PART_MIB = 8
"""Below this the parts are too many for one lease's back-to-back calls (180 MiB staged)."""

STAGE_SH = ROOT.parent / "shared" / "gpu" / "stage.sh"
WHEELS = ROOT / ".whl"
MIB = 1024 * 1024
BLOCK = 4096
"""Files are counted as the disk blocks they take: session 33's 27.7 MiB checkout (29.7 MiB
in 4 KiB blocks, 888 files) and a 36 MiB part were refused as over 64 MiB, which only the
blocks explain; with a 32 MiB part it went."""


def blocks(size: int) -> int:
    """`size` bytes rounded up to whole BLOCKs."""
    return -(-size // BLOCK) * BLOCK


def checkout_bytes(root: Path = ROOT) -> int:
    """The bytes a device call takes from the checkout, in blocks: tracked files and
    untracked ones that git does not ignore (what the `run` tool copies)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout
    total = 0
    for name in filter(None, listed.split(b"\0")):
        path = root / os.fsdecode(name)
        if path.is_file():  # a tracked file deleted in the work tree is not copied
            total += blocks(path.stat().st_size)
    return total


def tree_bytes(path: Path) -> int:
    """The bytes of every file under `path`, in blocks (0 where it does not exist)."""
    if not path.exists():
        return 0
    return sum(blocks(p.stat().st_size) for p in path.rglob("*") if p.is_file())


def part_mib(checkout: int, extra: int) -> int:
    """The largest whole-MiB part that fits one call beside `checkout` bytes and the
    `extra` bytes carried with the last part, at most MAX_PART_MIB."""
    room = CALL_LIMIT_MIB - MARGIN_MIB - (checkout + extra) / MIB
    size = min(MAX_PART_MIB, int(room))
    if size < MIN_PART_MIB:
        raise ValueError(
            f"the checkout takes {checkout / MIB:.1f} MiB of a call's {CALL_LIMIT_MIB:.0f}: "
            f"only {room:.1f} MiB left per part; move raw results out of git first"
        )
    return size


def plan(parts: int) -> list[str]:
    """The device calls, one line each: carry and command."""
    lines = []
    for n in range(1, parts):
        lines.append(
            f'{n}. carry [".gpu/part{n}"]: '
            f"mkdir -p /root/stage && cp -r .gpu/part{n}/. /root/stage/"
        )
    lines.append(
        f'{parts}. carry [".gpu/part{parts}", ".whl"]: '
        'BENCH_BUDGET_S=575 BENCH_ARGS="..." bash bench/gpu_run.sh'
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the size and plan only")
    args = parser.parse_args(argv)
    checkout = checkout_bytes()
    extra = tree_bytes(WHEELS)
    try:
        size = part_mib(checkout, extra)
    except ValueError as exc:
        print(f"gpu_stage: {exc}", file=sys.stderr)
        return 1
    print(
        f"checkout {checkout / MIB:.1f} MiB, .whl {extra / MIB:.2f} MiB: "
        f"parts of {size} MiB (PART_MAX_MIB={size})"
    )
    if args.dry_run:
        return 0
    if not STAGE_SH.is_file():
        print(f"gpu_stage: {STAGE_SH} is missing", file=sys.stderr)
        return 1
    env = {**os.environ, "PART_MAX_MIB": str(size)}
    done = subprocess.run(["bash", str(STAGE_SH)], cwd=ROOT, env=env, check=False)
    if done.returncode != 0:
        return done.returncode
    parts = len(list((ROOT / ".gpu").glob("part*")))
    print("\n".join(plan(parts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
