"""Separate Qwen3's ``<think>…</think>`` reasoning from the visible answer.

Qwen3 writes ``<think>\\nREASONING\\n</think>\\n\\nANSWER``.  :func:`split_reasoning`
handles a complete text; :class:`ReasoningStream` handles the same text arriving
as deltas and yields the same result for every way of splitting it (see the
class docstring for the one documented exception).

Rules (``split_reasoning``):

* If the text, after optional leading whitespace, starts with ``<think>`` (or
  ``in_reasoning=True``, meaning the prompt already opened ``<think>``), the
  reasoning is everything up to the first ``</think>``; the content is that
  leading whitespace followed by what follows ``</think>`` with leading ``"\\n"``
  characters stripped. (Qwen3 writes ``<think>`` first; whitespace before it is
  text the model wrote outside the block, kept as content, and a stream can send
  it at once, as vLLM's Qwen3 parser does, instead of holding it back in case a
  ``<think>`` follows.)
* If ``</think>`` never comes (generation truncated), everything is reasoning
  and the content is ``""``.
* A single leading ``"\\n"`` and a single trailing ``"\\n"`` are stripped from
  the reasoning.
* Without an opening tag (and not ``in_reasoning``) but with a ``</think>``
  somewhere, everything before it is reasoning (some models omit ``<think>``).
* Otherwise the reasoning is ``None`` and the content is the text unchanged.
* A present but empty think block (``<think>\\n\\n</think>\\n\\n``) gives
  reasoning ``""``, not ``None``: ``None`` means "no think block at all";
  callers that want to omit empty reasoning test for falsiness.
"""

from __future__ import annotations

from typing import Final

__all__ = ["THINK_CLOSE", "THINK_OPEN", "ReasoningStream", "split_reasoning"]

THINK_OPEN: Final = "<think>"
THINK_CLOSE: Final = "</think>"


def _trim_reasoning(reasoning: str) -> str:
    if reasoning.startswith("\n"):
        reasoning = reasoning[1:]
    if reasoning.endswith("\n"):
        reasoning = reasoning[:-1]
    return reasoning


def split_reasoning(text: str, *, in_reasoning: bool = False) -> tuple[str | None, str]:
    """Return ``(reasoning, content)``; reasoning is None when there is no think block."""
    lead = ""  # whitespace before <think>: content
    if in_reasoning:
        body = text
    else:
        stripped = text.lstrip()
        if stripped.startswith(THINK_OPEN):
            lead = text[: len(text) - len(stripped)]
            body = stripped[len(THINK_OPEN) :]
        elif THINK_CLOSE in text:
            body = text  # opening tag omitted by the model
        else:
            return None, text
    end = body.find(THINK_CLOSE)
    if end == -1:
        return _trim_reasoning(body), lead
    content = body[end + len(THINK_CLOSE) :].lstrip("\n")
    return _trim_reasoning(body[:end]), lead + content


def _partial_close_len(text: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``</think>``."""
    # "<" occurs only at index 0 of THINK_CLOSE, so only the suffix starting at
    # the last "<" among the final len(THINK_CLOSE) - 1 chars can qualify.
    start = text.rfind("<", max(0, len(text) - (len(THINK_CLOSE) - 1)))
    if start == -1:
        return 0
    return len(text) - start if THINK_CLOSE.startswith(text[start:]) else 0


_START: Final = 0  # before the first non-whitespace char: is there a <think>?
_REASONING: Final = 1  # inside the think block
_AFTER_CLOSE: Final = 2  # after </think>, skipping the "\n\n" separator
_CONTENT: Final = 3  # plain answer text, passed through verbatim


class ReasoningStream:
    """Incremental :func:`split_reasoning`.

    ``feed(delta)`` returns ``(reasoning_delta, content_delta)`` and
    ``finish()`` flushes what was held back.  Only what might still change
    meaning is held back, never more:

    * at the start: a partial ``<think>`` (``"<thi"``; whitespace before it is
      content, returned at once);
    * inside reasoning: a partial ``</think>`` plus at most one ``"\\n"`` before
      it (it is dropped if it turns out to precede ``</think>`` or the end);
    * right after ``</think>``: the ``"\\n"`` separator, which is dropped;
    * in the answer: nothing — every content delta is returned at once.

    Each call costs O(len(delta)); the accumulated text is never rescanned.

    Joining all the outputs equals ``split_reasoning(whole_text, ...)`` (with
    ``None`` reasoning read as ``""``) for every way of splitting the text,
    except in one case: when the text does not start with ``<think>``, is not
    ``in_reasoning``, and still contains a ``</think>``.  ``split_reasoning``
    then treats everything before ``</think>`` as reasoning, which a stream can
    only do by withholding the whole answer; instead the stream emits such text
    as content, verbatim, as soon as it arrives.  For models whose template
    opens ``<think>`` in the prompt, pass ``in_reasoning=True``.
    """

    __slots__ = ("_at_reasoning_start", "_held", "_state")

    def __init__(self, *, in_reasoning: bool = False) -> None:
        self._state: int = _REASONING if in_reasoning else _START
        self._held: str = ""  # bounded: at most len("\n</think>") - 1 chars
        self._at_reasoning_start: bool = True

    def feed(self, delta: str) -> tuple[str, str]:
        """Consume one text delta; return ``(reasoning_delta, content_delta)``."""
        if self._state == _CONTENT:
            return "", delta
        if self._state == _AFTER_CLOSE:
            return "", self._after_close(delta)
        if self._state == _START:
            return self._start(delta)
        return self._reasoning(delta)

    def finish(self) -> tuple[str, str]:
        """Flush anything held back at the end of the stream."""
        held, self._held = self._held, ""
        if self._state == _START:
            # Only whitespace and/or a partial "<think>" came: plain content.
            self._state = _CONTENT
            return "", held
        if self._state == _REASONING:
            # Truncated inside reasoning: the trailing "\n" is trimmed.
            self._state = _CONTENT
            return (held[:-1] if held.endswith("\n") else held), ""
        self._state = _CONTENT
        return "", ""

    def _start(self, delta: str) -> tuple[str, str]:
        lead = ""  # whitespace before anything else: content, at once
        if self._held:
            text = self._held + delta  # self._held is a partial "<think>"
        else:
            text = delta.lstrip()
            lead = delta[: len(delta) - len(text)]
            if not text:
                return "", lead
        if text.startswith(THINK_OPEN):
            self._held = ""
            self._state = _REASONING
            reasoning, content = self._reasoning(text[len(THINK_OPEN) :])
            return reasoning, lead + content
        if THINK_OPEN.startswith(text):
            self._held = text
            return "", lead
        self._held = ""
        self._state = _CONTENT
        return "", lead + text

    def _reasoning(self, delta: str) -> tuple[str, str]:
        text = self._held + delta
        if self._at_reasoning_start and text:
            self._at_reasoning_start = False
            if text.startswith("\n"):
                text = text[1:]
        end = text.find(THINK_CLOSE)
        if end != -1:
            self._held = ""
            self._state = _AFTER_CLOSE
            reasoning = text[:end]
            if reasoning.endswith("\n"):
                reasoning = reasoning[:-1]
            return reasoning, self._after_close(text[end + len(THINK_CLOSE) :])
        keep = _partial_close_len(text)
        if len(text) > keep and text[len(text) - keep - 1] == "\n":
            keep += 1
        cut = len(text) - keep
        self._held = text[cut:]
        return text[:cut], ""

    def _after_close(self, delta: str) -> str:
        content = delta.lstrip("\n")
        if content:
            self._state = _CONTENT
        return content
