"""Log output: the plain text format, or one JSON object per line (`GATEWAY_LOG_FORMAT=json`).

A JSON line always has `time`, `level`, `logger` and `message`; records that carry
request fields (the access log, anything logged inside a request) add `request_id`,
`method`, `route`, `status`, `latency_s`, `prompt_tokens`, `completion_tokens` and the
access log's `prompt_ms`, `first_output_ms` and `first_byte_ms` where they are known, and
`exception` when one is logged.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import orjson

from app.access_log import MARKS

LogFormat = Literal["text", "json"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"
"""The text format's line (`app.cli.configure_logging`)."""

# Record attributes copied into the JSON object when a record has them.
REQUEST_FIELDS = (
    "request_id",
    "method",
    "route",
    "status",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    *(f"{mark}_ms" for mark in MARKS),
)
# Loggers that keep handlers of their own; in JSON mode they hand records to the root.
FOREIGN_LOGGERS = ("vllm", "uvicorn", "uvicorn.error", "uvicorn.access")


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in REQUEST_FIELDS:
            value = getattr(record, name, None)
            if value is not None and value != "-":
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(entry, default=str).decode()


def vllm_logging_config(level: str) -> dict[str, Any]:
    """A `dictConfig` that gives vLLM's `vllm` logger the JSON formatter.

    vLLM applies its own logging configuration when it builds the engine config, and
    again in its engine-core process; handing it this one (VLLM_LOGGING_CONFIG_PATH)
    keeps those lines JSON too.
    """
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {
            "json": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {"vllm": {"handlers": ["json"], "level": level.upper(), "propagate": False}},
    }


def write_vllm_logging_config(level: str, directory: str | None = None) -> Path:
    """Write `vllm_logging_config(level)` to a file named after its level (idempotent)."""
    target = Path(directory or tempfile.gettempdir()) / f"vllm-gateway-logging-{level.lower()}.json"
    text = json.dumps(vllm_logging_config(level), indent=1)
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)
    return target


def use_json_logs(
    level: str = "info",
    root: logging.Logger | None = None,
    environ: MutableMapping[str, str] | None = None,
) -> None:
    """Switch the root logger's handlers to JSON, route uvicorn's and vLLM's loggers
    (which bring handlers of their own) through them, and hand vLLM a JSON logging
    config for the engine it is about to build (unless VLLM_LOGGING_CONFIG_PATH is set)."""
    root = root or logging.getLogger()
    environ = os.environ if environ is None else environ
    for handler in root.handlers:
        handler.setFormatter(JsonFormatter())
    for name in FOREIGN_LOGGERS:
        foreign = logging.getLogger(name)
        foreign.handlers.clear()
        foreign.propagate = True
    logging.captureWarnings(True)  # Python warnings become JSON lines too
    if not environ.get("VLLM_LOGGING_CONFIG_PATH"):
        environ["VLLM_LOGGING_CONFIG_PATH"] = str(write_vllm_logging_config(level))
