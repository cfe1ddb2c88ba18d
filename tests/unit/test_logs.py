"""The JSON log formatter and the switch to JSON logs."""

from __future__ import annotations

import json
import logging
import logging.config
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.logs import (
    FOREIGN_LOGGERS,
    JsonFormatter,
    use_json_logs,
    vllm_logging_config,
    write_vllm_logging_config,
)


def record(message: str = "hello %s", *args: object, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("app.test", logging.WARNING, __file__, 1, message, args, None)
    for key, value in extra.items():
        setattr(rec, key, value)
    return rec


def test_one_object_per_line_with_the_base_fields() -> None:
    line = JsonFormatter().format(record("hello %s", "世界"))
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "hello 世界"
    assert entry["level"] == "warning"
    assert entry["logger"] == "app.test"
    assert entry["time"].endswith("+00:00") and "T" in entry["time"]
    assert set(entry) == {"time", "level", "logger", "message"}


def test_request_fields_are_kept_and_unknown_ones_left_out() -> None:
    entry = json.loads(
        JsonFormatter().format(
            record(
                "POST /v1/chat/completions 200",
                request_id="abc",
                method="POST",
                route="/v1/chat/completions",
                status=200,
                latency_s=0.25,
                prompt_tokens=12,
                completion_tokens=None,
                prompt_ms=1.25,
                first_output_ms=None,
                color="blue",
            )
        )
    )
    assert entry["request_id"] == "abc"
    assert entry["status"] == 200 and entry["latency_s"] == 0.25
    assert entry["prompt_tokens"] == 12
    assert "completion_tokens" not in entry  # unknown: left out, not null
    assert entry["prompt_ms"] == 1.25 and "first_output_ms" not in entry
    assert "color" not in entry


def test_no_request_id_outside_a_request() -> None:
    entry = json.loads(JsonFormatter().format(record(request_id="-")))
    assert "request_id" not in entry


def test_exceptions_are_one_field() -> None:
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        rec = logging.LogRecord("app", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    line = JsonFormatter().format(rec)
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["exception"]


def test_values_json_cannot_encode_become_strings() -> None:
    entry = json.loads(JsonFormatter().format(record("x", route=Path("/a"))))
    assert entry["route"] == "/a"


@pytest.fixture
def saved_loggers() -> Iterator[None]:
    names = ("", *FOREIGN_LOGGERS)
    loggers = {name: logging.getLogger(name) for name in names}
    saved = {name: (list(lg.handlers), lg.propagate) for name, lg in loggers.items()}
    yield
    logging.captureWarnings(False)
    for name, (handlers, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.propagate = propagate


def test_use_json_logs_switches_every_handler(
    saved_loggers: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = logging.getLogger("test-root")
    root.propagate = False
    handler = logging.StreamHandler(sys.stderr)
    root.addHandler(handler)
    logging.getLogger("vllm").addHandler(logging.StreamHandler())
    environ: dict[str, str] = {}
    use_json_logs("debug", root=root, environ=environ)
    assert isinstance(handler.formatter, JsonFormatter)
    for name in FOREIGN_LOGGERS:
        assert logging.getLogger(name).handlers == []
        assert logging.getLogger(name).propagate is True
    config_path = Path(environ["VLLM_LOGGING_CONFIG_PATH"])
    assert json.loads(config_path.read_text())["loggers"]["vllm"]["level"] == "DEBUG"
    root.warning("json now")
    root.removeHandler(handler)
    assert json.loads(capsys.readouterr().err.strip())["message"] == "json now"


def test_a_users_vllm_logging_config_is_kept(saved_loggers: None) -> None:
    environ = {"VLLM_LOGGING_CONFIG_PATH": "/etc/mine.json"}
    use_json_logs(root=logging.getLogger("test-root-2"), environ=environ)
    assert environ["VLLM_LOGGING_CONFIG_PATH"] == "/etc/mine.json"


def test_vllm_config_is_a_working_dict_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = vllm_logging_config("info")
    config["loggers"] = {"test-vllm": config["loggers"]["vllm"]}
    logging.config.dictConfig(config)
    logger = logging.getLogger("test-vllm")
    try:
        logger.info("from vllm")
        logger.debug("hidden")
    finally:
        logger.handlers.clear()
    lines = capsys.readouterr().err.strip().splitlines()
    assert [json.loads(line)["message"] for line in lines] == ["from vllm"]


def test_written_config_is_reused(tmp_path: Path) -> None:
    first = write_vllm_logging_config("info", str(tmp_path))
    second = write_vllm_logging_config("INFO", str(tmp_path))
    assert first == second and first.name == "vllm-gateway-logging-info.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name]


def test_settings_flags_are_generated() -> None:
    from app.cli import build_serve_parser, settings_from_args

    parser = build_serve_parser()
    args = parser.parse_args(["m", "--log-format", "json", "--access-log", "--models-dir", "/m"])
    settings = settings_from_args(args, parser)
    assert (settings.log_format, settings.access_log, settings.models_dir) == ("json", True, "/m")
    with pytest.raises(SystemExit):
        parser.parse_args(["m", "--log-format", "xml"])
