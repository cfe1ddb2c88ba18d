"""EBNF grammars for vLLM's structured outputs: a JSON Schema subset and Qwen3 tool calls.

The grammars are xgrammar's EBNF (vLLM's default backend, on CPU and GPU alike) and
describe *one* spelling of each value: `json.dumps`'s separators (`", "` and `": "`, what
Qwen3 sees in its chat template), no other whitespace, properties in schema order, at
most 16 integer and 16 fraction digits and a two-digit exponent (doubles stay finite).
Free whitespace is what makes small models loop (`{"a": 1,` followed by spaces until
`max_tokens`); without it a bounded schema (`maxLength`, `maxItems`, `enum`) always
finishes.

This module is the public entry point; the work is done in:

* `app.grammar_ebnf`: literals, the base JSON rules and the `Grammar` rule collector;
* `app.grammar_keywords`: the supported keyword subset and `UnsupportedSchema`;
* `app.grammar_schema`: the JSON Schema compiler (`json_schema_grammar`, which lists the
  supported keywords, and `json_object_grammar`);
* `app.grammar_tool_calls`: the tool-call grammar (`ToolSpec`, `tool_call_grammar`).
"""

from __future__ import annotations

from app.grammar_ebnf import literal as literal
from app.grammar_keywords import UnsupportedSchema
from app.grammar_schema import json_object_grammar, json_schema_grammar
from app.grammar_tool_calls import ToolSpec, tool_call_grammar
from app.tool_call_tags import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

__all__ = [
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ToolSpec",
    "UnsupportedSchema",
    "json_object_grammar",
    "json_schema_grammar",
    "tool_call_grammar",
]
