"""bench.access_marks: the gateway's access-log marks, run by run."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from app.access_log import Usage, log_access
from app.logs import TEXT_FORMAT, JsonFormatter
from bench import access_marks


def access_record(marks: dict[str, float], created: float) -> logging.LogRecord:
    """The record the real access log writes for a request with these marks."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("app.access")
    keep = Keep()
    logger.addHandler(keep)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        log_access("r1", "POST", "/v1/chat/completions", 200, 0.05, Usage(20, 4, marks=marks))
    finally:
        logger.removeHandler(keep)
        logger.setLevel(old_level)
    (record,) = records
    record.created, record.msecs = created, (created % 1) * 1000
    return record


def text_line(record: logging.LogRecord) -> str:
    formatter = logging.Formatter(TEXT_FORMAT)
    formatter.converter = time.gmtime  # the lent machines run in UTC
    return formatter.format(record)


MARKS = {"prompt": 5.5, "first_output": 30.25, "first_byte": 31.0}
NO_ENGINE = " – | – | – | – | – |"  # the engine's five segments of a line without its marks
WHEN = 1796230290.5  # 2026-12-02T16:51:30.5Z


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_both_log_formats_give_the_time_and_the_marks(fmt: str) -> None:
    record = access_record(MARKS, WHEN)
    line = text_line(record) if fmt == "text" else JsonFormatter().format(record)
    parsed = access_marks.parse_line(line)
    assert parsed is not None
    when, marks = parsed
    assert when == pytest.approx(WHEN, abs=0.002)
    # the text line has one decimal; the latency (0.05 s) comes in ms beside the marks
    assert marks == pytest.approx({**MARKS, "latency": 50.0}, abs=0.051)


ENGINE = {"queued": 6.0, "scheduled": 9.5, "first_token": 29.0, "received": 29.75}


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_engines_marks_come_where_the_line_has_them(fmt: str) -> None:
    record = access_record({**MARKS, **ENGINE}, WHEN)
    line = text_line(record) if fmt == "text" else JsonFormatter().format(record)
    parsed = access_marks.parse_line(line)
    assert parsed is not None
    assert parsed[1] == pytest.approx({**MARKS, **ENGINE, "latency": 50.0}, abs=0.051)


def test_the_engines_part_is_split_where_lines_have_its_marks() -> None:
    runs = [
        {"server": "gateway", "round": 1, "workload": "1024x128", "concurrency": 64,
         "started": "2026-12-02T16:51:30.000+00:00", "wall_s": 5.0},
    ]  # fmt: skip
    later = {"prompt": 1.0, "queued": 3.0, "scheduled": 13.0, "first_token": 53.0}
    lines = [
        (WHEN, {**MARKS, **ENGINE}),  # into 0.5, queue 3.5, prefill 19.5, 0.75 to the
        # worker's engine client, 0.5 on to the handler
        (WHEN + 1, {**later, "first_output": 56.0, "first_byte": 56.25}),  # 2, 10, 40, -, -
        (WHEN + 2, MARKS),  # a line without the engine's marks counts in the others only
    ]
    table = access_marks.summarize(runs, lines).splitlines()
    assert table[0].endswith(
        "| into the engine core | queue | prefill | to the worker's engine client"
        " | on to the handler |"
    )
    assert table[2] == (
        "| gateway r1 1024x128@64 | 3 | 5.50 | 30.25 | 31.00 | 0.75"
        " | 1.25 | 6.75 | 29.75 | 0.75 | 0.50 |"
    )


def test_other_lines_and_lines_without_every_mark_are_skipped() -> None:
    partial = access_record({"first_byte": 1.0}, WHEN)  # e.g. GET /v1/models
    assert access_marks.parse_line(text_line(partial)) is None
    assert access_marks.parse_line(JsonFormatter().format(partial)) is None
    assert access_marks.parse_line("2026-12-02 16:48:29,948 INFO app.workers [-]: x") is None
    assert access_marks.parse_line('{"logger": "vllm", "time": "2026-12-02T16:51:30"}') is None


def test_lines_go_to_the_run_whose_window_holds_them(tmp_path: Path) -> None:
    runs = [
        {"server": "vllm", "round": 1, "workload": "1024x128", "concurrency": 1,
         "started": "2026-12-02T16:51:24+00:00", "wall_s": 14.9},
        {"server": "gateway", "round": 1, "workload": "1024x128", "concurrency": 1,
         "started": "2026-12-02T16:51:24+00:00", "wall_s": 14.9},
        {"server": "gateway", "round": 1, "workload": "1024x128", "concurrency": 64,
         "started": "2026-12-02T16:52:00+00:00", "wall_s": 5.0},
    ]  # fmt: skip
    lines = [
        (WHEN, MARKS),
        (WHEN + 1, {"prompt": 6.5, "first_output": 32.25, "first_byte": 32.5}),
        (WHEN + 60, MARKS),  # after every window
    ]
    table = access_marks.summarize(runs, lines).splitlines()
    assert table[2] == "| gateway r1 1024x128@1 | 2 | 6.00 | 31.25 | 31.75 | 0.50 |" + NO_ENGINE
    assert len(table) == 3  # no row for the Rust server, none for a run without lines


def test_a_window_ends_where_the_next_run_starts() -> None:
    """Session 28's call 1: whole-second starts, a c=1 run right after a c=64 run that
    ended within the c=1 run's first second, and a c=256 run starting 0.2 s before the
    c=1 run's wall time and one second more were up."""
    runs = [
        {"server": "gateway", "round": 2, "workload": "1024x128", "concurrency": 1,
         "started": "2026-12-02T21:14:11+00:00", "wall_s": 12.22},
        {"server": "gateway", "round": 2, "workload": "1024x128", "concurrency": 256,
         "started": "2026-12-02T21:14:24+00:00", "wall_s": 11.83},
    ]  # fmt: skip
    start = access_marks.run_window(runs[0])[0] - 1.0  # 21:14:11
    c64 = {"prompt": 7.0, "first_output": 110.0, "first_byte": 110.5}
    c1 = {"prompt": 3.0, "first_output": 20.0, "first_byte": 20.0}
    c256 = {"prompt": 8.0, "first_output": 120.0, "first_byte": 120.5}
    lines = [
        (start + 0.3, c64),  # the second the c=1 run began in: either run's
        (start + 5, c1),
        (start + 13.1, c256),  # the same for the c=256 run
        (start + 14.2, c256),
        (start + 20, c256),
    ]
    table = access_marks.summarize(runs, lines).splitlines()
    assert table[2] == "| gateway r2 1024x128@1 | 1 | 3.00 | 20.00 | 20.00 | 0.00 |" + NO_ENGINE
    assert table[3] == "| gateway r2 1024x128@256 | 2 | 8.00 | 120.00 | 120.50 | 0.50 |" + NO_ENGINE
    assert access_marks.run_window(runs[0]) == (start + 1.0, start + 12.22 + 1.0)  # alone


def test_a_start_to_the_millisecond_opens_its_window_at_once() -> None:
    run = {"started": "2026-12-02T21:14:11.250+00:00", "wall_s": 2.0}
    later = access_marks.run_window({"started": "2026-12-02T21:14:12.750+00:00", "wall_s": 1})
    low, high = access_marks.run_window(run, [later[0]])
    assert (high - low, later[1] - later[0]) == (1.5, 2.0)


def _probe_line(
    arrival: float, latency_ms: float, prompt: float, first_output: float
) -> tuple[float, dict[str, float]]:
    marks = {"prompt": prompt, "first_output": first_output, "first_byte": first_output + 0.5}
    return arrival + latency_ms / 1000, {**marks, "latency": latency_ms}


def test_a_probes_first_wave_is_the_first_to_reach_the_app() -> None:
    """bench.first_text_load's requests: the first `concurrency` arrivals (line time less
    latency, whatever order the lines were written in) against the rest."""
    sessions = [
        {"server": "vllm", "first_text_load": [{"concurrency": 2, "started": "x"}]},
        {"server": "gateway", "round": 1, "first_text_load": [
            {"concurrency": 2, "wall_s": 3.0, "started": "2026-12-02T16:51:30.500000+00:00"},
            {"concurrency": 64, "wall_s": 3.0},  # recorded before probes had a start
        ]},
    ]  # fmt: skip
    lines = [
        _probe_line(WHEN + 0.020, 900.0, 1.0, 400.0),  # second to arrive, ends last
        _probe_line(WHEN + 0.002, 300.0, 2.0, 100.0),  # first
        _probe_line(WHEN + 0.400, 200.0, 3.0, 50.0),  # later ones
        _probe_line(WHEN + 0.600, 200.0, 5.0, 70.0),
        _probe_line(WHEN + 0.600, 200.0, 5.0, 70.0),  # arrived with the one before
        _probe_line(WHEN + 9.000, 200.0, 5.0, 70.0),  # after the probe
    ]
    table = access_marks.probe_rows(sessions, lines).splitlines()
    assert (
        table[2]
        == "| gateway r1 c=2 | first wave | 2 | 9.0, 18.0, 18.0 | 1.50 | 250.00 |" + NO_ENGINE
    )
    assert (
        table[3]
        == "| gateway r1 c=2 | later | 3 | 598.0, 598.0, 598.0 | 5.00 | 70.00 |" + NO_ENGINE
    )
    assert len(table) == 4
    assert access_marks.probe_rows(sessions[:1], lines) == ""  # no gateway probe: no table


def test_the_run_table_and_the_probe_table_from_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server-gateway-r1.log"
    log.write_text(text_line(access_record(MARKS, WHEN + 0.05)) + "\nunrelated line\n")
    probe = {"concurrency": 1, "wall_s": 1.0, "started": "2026-12-02T16:51:30.400000+00:00"}
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"runs": [], "sessions": [
        {"server": "gateway", "round": 1, "first_text_load": [probe]},
    ]}))  # fmt: skip
    assert access_marks.main([str(results), str(log)]) == 0
    # the text line's marks have one decimal: first_output 30.25 is written 30.2
    assert "| gateway r1 c=1 | first wave | 1 | 0.0, 0.0, 0.0 | 5.50 | 30.20 |" + NO_ENGINE in (
        capsys.readouterr().out
    )


def test_the_second_gateways_runs_are_read_when_asked() -> None:
    run = {"round": 1, "workload": "1024x128", "concurrency": 1, "wall_s": 14.9}
    runs = [run | {"server": s, "started": "2026-12-02T16:51:24+00:00"} for s in ("gateway", "gwb")]
    table = access_marks.summarize(runs, [(WHEN, MARKS)], "gwb").splitlines()
    assert [row.split(" | ")[0] for row in table[2:]] == ["| gwb r1 1024x128@1"]
