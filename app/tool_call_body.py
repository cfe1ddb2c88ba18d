"""Read one ``<tool_call>`` block's JSON body: the call's name and its arguments text.

Shared by the streaming parser (`app.tool_call_stream`), which whole answers go through
too (`app.tool_call_parse`), so every path agrees on what a call is.
"""

from __future__ import annotations

import json
import re

__all__ = ["CALL_HEADER", "WHITESPACE", "is_cut_call", "split_call"]

CALL_HEADER = re.compile(
    r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(?:arguments|parameters)"\s*:\s*', re.DOTALL
)
WHITESPACE = " \t\r\n"


def split_call(body: str) -> tuple[str, str] | None:
    """``(name, arguments_json)`` of a call's JSON body, or None if it isn't one."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    key = "arguments" if "arguments" in data else "parameters"
    value = data.get(key, {})
    if isinstance(value, str):  # some models send the arguments as a JSON string
        return data["name"], value
    header = CALL_HEADER.match(body)
    if header is not None:
        raw = body[header.end() :].rstrip(WHITESPACE)
        if raw.endswith("}"):
            raw = raw[:-1].rstrip(WHITESPACE)
            try:
                if json.loads(raw) == value:
                    return data["name"], raw
            except ValueError:
                pass
    return data["name"], json.dumps(value, ensure_ascii=False)


def is_cut_call(body: str) -> bool:
    """True for the body of an unclosed block at the end of an answer that is the start
    of a call cut short (nothing yet, or a JSON object begun), not prose after a tag."""
    rest = body.lstrip(WHITESPACE)
    return not rest or rest.startswith("{")
