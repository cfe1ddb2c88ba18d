"""Request ids: keep a sane incoming `X-Request-Id` or make one; log with it.

`app.observe.ObserveMiddleware` assigns the id and echoes it in the response.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid

HEADER = b"x-request-id"
_VALID = re.compile(rb"^[A-Za-z0-9._:\-]{1,128}$")

current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


def new_request_id() -> str:
    return uuid.uuid4().hex


def pick_request_id(headers: list[tuple[bytes, bytes]]) -> str:
    for name, value in headers:
        if name == HEADER and _VALID.match(value):
            return value.decode()
    return new_request_id()


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every log record (\"-\" outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True
