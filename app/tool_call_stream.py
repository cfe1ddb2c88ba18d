"""Parse tool calls from an answer arriving as deltas, emitting OpenAI-style call deltas."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Final

from app.tool_call_body import CALL_HEADER, WHITESPACE, is_cut_call, split_call
from app.tool_call_tags import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from app.tool_call_types import ToolCallDelta, new_call_id

__all__ = ["ToolCallStream", "merge_deltas"]


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
            body = self._call_body + held
            found = split_call(body)
            if found is not None:  # complete JSON, `</tool_call>` cut off: still a call
                calls.extend(self._whole(found))
            elif not is_cut_call(body):
                content = TOOL_CALL_OPEN + body
            # else a call cut off before its arguments began: neither a call nor content
        # _ARGS: the arguments were cut short; the call was sent as far as it went (what is
        # held is a partial tag). _TAIL: the call is complete.
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
            text = text.lstrip(WHITESPACE)
            if not text:
                return ""
            self._strip = False
        start = text.find(TOOL_CALL_OPEN)
        if start != -1:
            before = text[:start].rstrip(WHITESPACE)
            content.append(before)
            self._state = _HEAD
            self._call_body = ""
            return text[start + len(TOOL_CALL_OPEN) :]
        keep = _partial_suffix(text, TOOL_CALL_OPEN)
        body = text[: len(text) - keep]
        stripped = body.rstrip(WHITESPACE)
        content.append(stripped)
        self._buf = body[len(stripped) :] + text[len(text) - keep :]
        return ""

    def _head(self, text: str, content: list[str], calls: list[ToolCallDelta]) -> str:
        body = self._call_body + text
        end = body.find(TOOL_CALL_CLOSE)
        if self._state == _HEAD:  # first, as when the text comes a character at a time
            header = CALL_HEADER.match(body)
            if header is not None and header.end() < (len(body) if end == -1 else end + 1):
                first = body[header.end()]
                if first in "{[":  # stream the arguments as they come
                    name = json.loads(f'"{header.group(1)}"')
                    self._open_call(name, calls)
                    self._state = _ARGS
                    self._depth = 0
                    self._in_string = self._escape = False
                    return body[header.end() :]
                self._state = _WHOLE  # arguments as a string or scalar: parse at the end
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
