"""bench.mem_map: a process's memory by mapping, read from /proc/PID/smaps."""

from __future__ import annotations

import json
import os
from pathlib import Path

from bench.mem_map import group_name, main, parse_smaps

SMAPS = """\
55d0c0000000-55d0c0100000 r-xp 00000000 fd:01 1234                       /usr/bin/python3.12
Size:               1024 kB
Rss:                 800 kB
Pss:                 400 kB
Private_Clean:       100 kB
Private_Dirty:        20 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
55d0c1000000-55d0c9000000 rw-p 00000000 00:00 0                          [heap]
Rss:              131072 kB
Pss:              131072 kB
Private_Clean:         0 kB
Private_Dirty:    131072 kB
Anonymous:        131072 kB
7f0000000000-7f0004000000 rw-p 00000000 00:00 0
Rss:               65536 kB
Pss:               65536 kB
Private_Dirty:     65536 kB
Anonymous:         65536 kB
7f0005000000-7f0005001000 rw-s 00000000 00:05 99                         /dev/nvidiactl
Rss:                   4 kB
Pss:                   4 kB
7f0006000000-7f0006002000 rw-p 00000000 00:00 0                          [stack]
Rss:                   8 kB
Pss:                   8 kB
Private_Dirty:         8 kB
Anonymous:             8 kB
"""


def test_parse_smaps_sums_by_file_and_kind() -> None:
    groups = parse_smaps(SMAPS)
    python = groups["/usr/bin/python3.12"]
    assert (python.rss, python.pss, python.private, python.anonymous) == (800, 400, 120, 0)
    assert groups["[heap]"].private == 131072
    # unnamed mappings and the stack count as anonymous memory
    assert groups["[anon]"].rss == 65536 + 8
    assert groups["[anon]"].anonymous == 65536 + 8
    assert groups["/dev/nvidiactl"].rss == 4


def test_group_name() -> None:
    assert group_name("") == "[anon]"
    assert group_name("[anon:some name]") == "[anon]"
    assert group_name("[heap]") == "[heap]"
    assert group_name("/lib/libc.so.6") == "/lib/libc.so.6"


def test_main_reads_this_process(tmp_path: Path) -> None:
    out = tmp_path / "mem.json"
    assert main([str(os.getpid()), "--top", "3", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    mine = report["processes"][0]
    assert mine["pid"] == os.getpid()
    assert mine["rss_kib"] > 1024
    assert mine["pss_kib"] <= mine["rss_kib"]
    assert len(mine["top"]) == 3
    assert mine["top"][0]["rss"] >= mine["top"][-1]["rss"]
    assert mine["gpu_device_files"] is False
    total = sum(p["rss_kib"] for p in report["processes"])
    assert report["total_rss_mib"] == round(total / 1024, 1)
