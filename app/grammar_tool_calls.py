"""The grammar that forces Qwen3 tool calls, with arguments matching each tool's schema."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.grammar_ebnf import Grammar, literal
from app.grammar_schema import SchemaCompiler
from app.tool_call_tags import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

__all__ = ["ToolSpec", "tool_call_grammar"]


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call: its name and its parameters' JSON schema."""

    name: str
    parameters: Mapping[str, Any] | None = None


def tool_call_grammar(tools: Sequence[ToolSpec], *, max_calls: int = 1) -> str:
    """One to `max_calls` Qwen3 tool calls, each written as the chat template writes them::

        <tool_call>
        {"name": "NAME", "arguments": {...}}
        </tool_call>

    with calls separated by a newline. The arguments follow each tool's schema, loosened
    only where the grammar can't spell a keyword (see `app.grammar_loosen`): the keyword
    is dropped, never the whole schema.
    """
    if not tools:
        raise ValueError("tool_call_grammar needs at least one tool")
    grammar = Grammar()
    calls = []
    for index, tool in enumerate(tools):
        arguments = _arguments(grammar, tool.parameters, f"t{index}")
        head = f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(tool.name, ensure_ascii=False)}, '
        head += '"arguments": '
        body = f"{literal(head)} {arguments} {literal('}' + chr(10) + TOOL_CALL_CLOSE)}"
        calls.append(grammar.add(f"call_{index}", body))
    grammar.add("call", " | ".join(calls))
    more = f' ("\\n" call){{0,{max_calls - 1}}}' if max_calls > 1 else ""
    return grammar.text("call" + more)


def _arguments(grammar: Grammar, parameters: Mapping[str, Any] | None, prefix: str) -> str:
    if parameters is None:
        return literal("{}")
    return SchemaCompiler(grammar, parameters, prefix, lenient=True).value(parameters)
