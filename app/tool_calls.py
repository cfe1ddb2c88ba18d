"""Parse Qwen3's ``<tool_call>{json}</tool_call>`` blocks out of the answer text.

Qwen3 writes each call as::

    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

:func:`parse_tool_calls` handles a complete answer; :class:`ToolCallStream` handles it
arriving as deltas and emits OpenAI-style tool-call deltas: first the call's index, id,
type and name (with empty arguments), then the arguments text in fragments.

Shared rules:

* ``arguments`` is the model's own text of the ``"arguments"`` value (``"parameters"`` is
  read too), so streamed fragments join to exactly the non-streamed string; when it can't
  be cut out verbatim it is re-serialized with ``json.dumps``.
* Whitespace before a ``<tool_call>`` and after a parsed call is dropped from the
  content; other text stays as it is.
* A block that is not a JSON object with a string ``name`` stays in the content, as
  written (``parse_tool_calls`` also keeps an unclosed block whose JSON is incomplete).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

__all__ = [
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallStream",
    "new_call_id",
    "parse_tool_calls",
]

TOOL_CALL_OPEN: Final = "<tool_call>"
TOOL_CALL_CLOSE: Final = "</tool_call>"

_HEADER = re.compile(
    r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(?:arguments|parameters)"\s*:\s*', re.DOTALL
)
_WS = " \t\r\n"


def new_call_id() -> str:
    """An OpenAI-style tool call id: `call_` and 24 hex digits."""
    return "call_" + uuid.uuid4().hex[:24]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class ToolCallDelta:
    """One streamed piece of a call: the header (id and name set) or an arguments fragment."""

    index: int
    arguments: str = ""
    id: str | None = None
    name: str | None = None

    def wire(self) -> dict[str, Any]:
        if self.id is None:
            return {"index": self.index, "function": {"arguments": self.arguments}}
        return {
            "index": self.index,
            "id": self.id,
            "type": "function",
            "function": {"name": self.name or "", "arguments": self.arguments},
        }


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
    header = _HEADER.match(body)
    if header is not None:
        raw = body[header.end() :].rstrip(_WS)
        if raw.endswith("}"):
            raw = raw[:-1].rstrip(_WS)
            try:
                if json.loads(raw) == value:
                    return data["name"], raw
            except ValueError:
                pass
    return data["name"], json.dumps(value, ensure_ascii=False)


def parse_tool_calls(
    text: str, new_id: Callable[[], str] = new_call_id
) -> tuple[str, list[ToolCall]]:
    """``(content, calls)`` from a complete answer."""
    calls: list[ToolCall] = []
    parts: list[str] = []
    pos = 0
    strip_next = False
    while True:
        start = text.find(TOOL_CALL_OPEN, pos)
        if start == -1:
            break
        body_start = start + len(TOOL_CALL_OPEN)
        end = text.find(TOOL_CALL_CLOSE, body_start)
        body = text[body_start:] if end == -1 else text[body_start:end]
        after = len(text) if end == -1 else end + len(TOOL_CALL_CLOSE)
        parts.append(_lstrip(text[pos:start], strip_next).rstrip(_WS))
        found = split_call(body)
        if found is None:
            parts.append(text[start:after])
        else:
            calls.append(ToolCall(new_id(), found[0], found[1]))
        strip_next = found is not None
        pos = after
    parts.append(_lstrip(text[pos:], strip_next))
    return "".join(parts), calls


def merge_deltas(deltas: list[ToolCallDelta]) -> list[ToolCallDelta]:
    """Join consecutive pieces of the same call (one entry per call and chunk, as OpenAI
    sends them; LangChain keeps same-index entries of one chunk apart)."""
    out: list[ToolCallDelta] = []
    for delta in deltas:
        last = out[-1] if out else None
        if last is not None and last.index == delta.index and delta.id is None:
            out[-1] = replace(last, arguments=last.arguments + delta.arguments)
        else:
            out.append(delta)
    return out


def _lstrip(text: str, strip: bool) -> str:
    return text.lstrip(_WS) if strip else text


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


_TEXT: Final = 0  # answer text
_HEAD: Final = 1  # inside a call, before its name is known
_ARGS: Final = 2  # streaming the arguments value
_TAIL: Final = 3  # arguments done, waiting for </tool_call>
_WHOLE: Final = 4  # a call that is parsed whole at </tool_call> (unusual shapes)


class ToolCallStream:
    """Incremental tool-call parser: ``feed(delta)`` returns ``(content, [ToolCallDelta])``.

    Held back, never more than needed: trailing whitespace of the content (it is dropped
    if a call follows) and a partial ``<tool_call>``; inside a call, the text before the
    name is known and, in the arguments, whitespace after the value and anything from a
    ``<`` outside a JSON string (a possible ``</tool_call>``).
    """

    def __init__(self, new_id: Callable[[], str] = new_call_id) -> None:
        self._new_id = new_id
        self._state = _TEXT
        self._buf = ""  # held text of the current state
        self._strip = False  # drop leading whitespace (a call just ended)
        self._count = 0
        self._index = -1
        self._call_body = ""  # _HEAD/_WHOLE: the call's text so far
        # JSON scanner over the arguments value
        self._depth = 0
        self._in_string = False
        self._escape = False

    @property
    def called(self) -> bool:
        """True once a call has been emitted."""
        return self._count > 0

    def feed(self, delta: str) -> tuple[str, list[ToolCallDelta]]:
        content: list[str] = []
        calls: list[ToolCallDelta] = []
        text = self._buf + delta
        self._buf = ""
        while text:
            text = self._step(text, content, calls)
        return "".join(content), merge_deltas(calls)

    def finish(self) -> tuple[str, list[ToolCallDelta]]:
        """Flush what was held back at the end of the answer."""
        held, self._buf = self._buf, ""
        calls: list[ToolCallDelta] = []
        content = ""
        if self._state == _TEXT:
            content = held
        elif self._state in (_HEAD, _WHOLE):
            found = split_call(self._call_body + held)
            if found is None:
                content = TOOL_CALL_OPEN + self._call_body + held
            else:
                calls.extend(self._whole(found))
        # _ARGS: the arguments were cut short (what is held is a partial tag); _TAIL: done.
        self._state = _TEXT
        return content, merge_deltas(calls)

    # -- states ---------------------------------------------------------------------

    def _step(self, text: str, content: list[str], calls: list[ToolCallDelta]) -> str:
        if self._state == _TEXT:
            return self._text(text, content)
        if self._state in (_HEAD, _WHOLE):
            return self._head(text, content, calls)
        if self._state == _ARGS:
            return self._args(text, calls)
        return self._tail(text)

    def _text(self, text: str, content: list[str]) -> str:
        if self._strip:
            text = text.lstrip(_WS)
            if not text:
                return ""
            self._strip = False
        start = text.find(TOOL_CALL_OPEN)
        if start != -1:
            before = text[:start].rstrip(_WS)
            content.append(before)
            self._state = _HEAD
            self._call_body = ""
            return text[start + len(TOOL_CALL_OPEN) :]
        keep = _partial_suffix(text, TOOL_CALL_OPEN)
        body = text[: len(text) - keep]
        stripped = body.rstrip(_WS)
        content.append(stripped)
        self._buf = body[len(stripped) :] + text[len(text) - keep :]
        return ""

    def _head(self, text: str, content: list[str], calls: list[ToolCallDelta]) -> str:
        body = self._call_body + text
        end = body.find(TOOL_CALL_CLOSE)
        if end != -1:
            found = split_call(body[:end])
            rest = body[end + len(TOOL_CALL_CLOSE) :]
            self._state = _TEXT
            if found is None:
                content.append(TOOL_CALL_OPEN + body[: end + len(TOOL_CALL_CLOSE)])
                return rest
            calls.extend(self._whole(found))
            self._strip = True
            return rest
        if self._state == _HEAD:
            header = _HEADER.match(body)
            if header is not None and header.end() < len(body):
                first = body[header.end()]
                if first in "{[":  # stream the arguments as they come
                    name = json.loads(f'"{header.group(1)}"')
                    self._open_call(name, calls)
                    self._state = _ARGS
                    self._depth = 0
                    self._in_string = self._escape = False
                    return body[header.end() :]
                self._state = _WHOLE  # arguments as a string or scalar: parse at the end
        self._call_body = body
        return ""

    def _open_call(self, name: str, calls: list[ToolCallDelta]) -> None:
        self._index += 1
        self._count += 1
        calls.append(ToolCallDelta(self._index, "", self._new_id(), name))

    def _whole(self, found: tuple[str, str]) -> list[ToolCallDelta]:
        head: list[ToolCallDelta] = []
        self._open_call(found[0], head)
        return [ToolCallDelta(self._index, found[1], head[0].id, found[0])]

    def _args(self, text: str, calls: list[ToolCallDelta]) -> str:
        out: list[str] = []
        i = 0
        while i < len(text):
            ch = text[i]
            if self._in_string:
                if self._escape:
                    self._escape = False
                elif ch == "\\":
                    self._escape = True
                elif ch == '"':
                    self._in_string = False
            elif ch == "<":  # not JSON: the call is cut short; wait for </tool_call>
                rest = text[i:]
                if rest.startswith(TOOL_CALL_CLOSE):
                    self._emit(out, calls)
                    self._state = _TEXT
                    self._strip = True
                    return rest[len(TOOL_CALL_CLOSE) :]
                if TOOL_CALL_CLOSE.startswith(rest):
                    self._emit(out, calls)
                    self._buf = rest
                    return ""
            elif ch == '"':
                self._in_string = True
            elif ch in "{[":
                self._depth += 1
            elif ch in "}]":
                self._depth -= 1
                if self._depth == 0:
                    out.append(ch)
                    self._emit(out, calls)
                    self._state = _TAIL
                    return text[i + 1 :]
            out.append(ch)
            i += 1
        self._emit(out, calls)
        return ""

    def _emit(self, out: list[str], calls: list[ToolCallDelta]) -> None:
        if out:
            calls.append(ToolCallDelta(self._index, "".join(out)))
            out.clear()

    def _tail(self, text: str) -> str:
        end = text.find(TOOL_CALL_CLOSE)
        if end == -1:
            self._buf = text[len(text) - _partial_suffix(text, TOOL_CALL_CLOSE) :]
            return ""
        self._state = _TEXT
        self._strip = True
        return text[end + len(TOOL_CALL_CLOSE) :]
