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
* A closed block that is not a JSON object with a string ``name`` stays in the content,
  as written.
* An answer cut short (``max_tokens``) inside a call: the call is returned once its name
  and the start of its ``arguments`` value were written (the point where a stream sends
  the call's header), with the arguments text as far as it went, whether or not the JSON
  or ``</tool_call>`` was finished (``finish_reason`` stays ``length``, as OpenAI's does
  for a cut call). A block cut before that point is dropped: neither a call nor raw
  ``<tool_call>`` markup in the content. An unclosed block whose text is not the start
  of a JSON object (prose after a ``<tool_call>``) stays in the content.

Whole answers go through the streaming parser in one piece, so a whole and a streamed
answer of the same text always agree. This module is the public entry point; the work is
done in `app.tool_call_types` (the call and delta values), `app.tool_call_body` (one
call's JSON), `app.tool_call_stream` (deltas) and `app.tool_call_parse` (whole answers),
with the tags in `app.tool_call_tags`.
"""

from __future__ import annotations

from app.tool_call_parse import parse_tool_calls
from app.tool_call_stream import ToolCallStream
from app.tool_call_tags import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from app.tool_call_types import ToolCall, ToolCallDelta, new_call_id

__all__ = [
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallStream",
    "new_call_id",
    "parse_tool_calls",
]
