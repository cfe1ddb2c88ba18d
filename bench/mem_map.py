"""Where a running server's front-end memory goes, process by process and mapping by mapping.

    python -m bench.mem_map PID [--top 12] [--out mem.json]

PID is the server's first process (`python -m app serve`, or `vllm serve`). Every process
under it but the engine core is read from /proc/PID/smaps: RSS, PSS and private (anonymous
and file-backed) memory, the mappings that hold the most, grouped by file ("[anon]" for
anonymous memory, "[heap]"), and whether the process opened the GPU's device files (a
CUDA context maps /dev/nvidia*). One JSON object on stdout (and in --out).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from bench.procfs import is_engine_core

FIELDS = ("Rss", "Pss", "Private_Clean", "Private_Dirty", "Anonymous")


@dataclass
class Mapping:
    """One file's (or anonymous memory's) share of a process, in KiB."""

    name: str
    rss: int = 0
    pss: int = 0
    private: int = 0
    anonymous: int = 0


@dataclass
class ProcessMemory:
    pid: int
    title: str
    rss_kib: int
    pss_kib: int
    private_kib: int
    anonymous_kib: int
    gpu_device_files: bool
    top: list[Mapping] = field(default_factory=list)


def group_name(path: str) -> str:
    """The name a mapping is counted under: its file, or its kind of anonymous memory."""
    if not path:
        return "[anon]"
    if path.startswith("[anon:") or path.startswith("[stack"):
        return "[anon]"
    return path


def parse_smaps(text: str) -> dict[str, Mapping]:
    """/proc/PID/smaps text → its mappings' memory, summed by `group_name`."""
    groups: dict[str, Mapping] = {}
    current: Mapping | None = None
    for line in text.splitlines():
        head, _, rest = line.partition(":")
        if " " not in head and rest.strip().endswith("kB") and current is not None:
            if head not in FIELDS:
                continue
            kib = int(rest.split()[0])
            if head == "Rss":
                current.rss += kib
            elif head == "Pss":
                current.pss += kib
            elif head == "Anonymous":
                current.anonymous += kib
            else:
                current.private += kib
            continue
        words = line.split(None, 5)
        if len(words) >= 5 and "-" in words[0]:
            name = group_name(words[5].strip() if len(words) == 6 else "")
            current = groups.setdefault(name, Mapping(name))
    return groups


def read_process(proc: psutil.Process, top: int) -> ProcessMemory | None:
    try:
        text = Path(f"/proc/{proc.pid}/smaps").read_text(encoding="utf-8", errors="replace")
        title = " ".join(proc.cmdline())[:120]
    except (OSError, psutil.Error):
        return None
    groups = parse_smaps(text)
    ranked = sorted(groups.values(), key=lambda m: m.rss, reverse=True)
    return ProcessMemory(
        pid=proc.pid,
        title=title,
        rss_kib=sum(m.rss for m in ranked),
        pss_kib=sum(m.pss for m in ranked),
        private_kib=sum(m.private for m in ranked),
        anonymous_kib=sum(m.anonymous for m in ranked),
        gpu_device_files=any(name.startswith("/dev/nvidia") for name in groups),
        top=ranked[:top],
    )


def front_end(root: int) -> list[psutil.Process]:
    """The server's processes but its engine core(s) and what runs under them."""
    first = psutil.Process(root)
    engine = [p for p in first.children(recursive=True) if is_engine_core(p)]
    below = {c.pid for p in engine for c in p.children(recursive=True)} | {p.pid for p in engine}
    return [first] + [p for p in first.children(recursive=True) if p.pid not in below]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pid", type=int)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    found = [read_process(p, args.top) for p in front_end(args.pid)]
    processes = [asdict(p) for p in found if p is not None]
    report = {
        "root": args.pid,
        "processes": processes,
        "total_rss_mib": round(sum(p["rss_kib"] for p in processes) / 1024, 1),
        "total_pss_mib": round(sum(p["pss_kib"] for p in processes) / 1024, 1),
    }
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
