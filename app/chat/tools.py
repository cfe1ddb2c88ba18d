"""`tools` and `tool_choice`: what the template offers, whether to parse calls, the grammar.

* `auto` (the default with tools): the template lists the tools; `<tool_call>` blocks in
  the answer become `message.tool_calls`.
* `none`: the tools are not offered at all (the template renders no tool section).
* `allowed_tools`: the tools it does not name are left out, and its `mode` (`auto` or
  `required`) is the tool_choice for the rest (`narrow_allowed_tools`).
* `required`: the answer is constrained to 1..8 calls of the listed functions (one when
  `parallel_tool_calls` is false); a named function: exactly one call of it. The grammar
  writes the calls as Qwen3's template does, with arguments matching each function's
  JSON schema (see `app.grammar`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from app.errors import GatewayError
from app.grammar import ToolSpec, tool_call_grammar
from app.schema_types import JSON_TYPES, unknown_type
from app.schemas.chat import AllowedToolsChoice, ChatCompletionRequest, NamedToolChoice, Tool
from app.structured import Constraint

MAX_PARALLEL_CALLS: Final = 8


@dataclass(frozen=True)
class ToolPlan:
    template_tools: list[dict[str, Any]] | None  # what the chat template sees
    parse: bool = False  # turn <tool_call> blocks into message.tool_calls
    constraint: Constraint | None = None  # required / named function


def forces_tool_call(request: ChatCompletionRequest) -> bool:
    """True when the answer must be a tool call (`required` or a named function)."""
    choice = request.tool_choice
    return bool(request.tools) and (choice == "required" or isinstance(choice, NamedToolChoice))


def narrow_allowed_tools(request: ChatCompletionRequest) -> tuple[ChatCompletionRequest, bool]:
    """`allowed_tools` as the other tool choices: the request's tools cut to the functions
    it names and its mode as tool_choice; True when it did. A name the tools lack is a 400
    naming the entry. The template then lists only the allowed functions, which the model
    can call in `auto` as in `required`."""
    choice = request.tool_choice
    if not isinstance(choice, AllowedToolsChoice):
        return request, False
    tools = request.tools or []
    offered = {tool.function.name for tool in tools}
    names = [entry.function.name for entry in choice.allowed_tools.tools]
    for i, name in enumerate(names):
        if name not in offered:
            raise GatewayError(
                f"tool_choice.allowed_tools names the function `{name}`, which is not in tools.",
                param=f"tool_choice.allowed_tools.tools[{i}]",
            )
    allowed = [tool for tool in tools if tool.function.name in names]
    update = {"tools": allowed, "tool_choice": choice.allowed_tools.mode}
    return request.model_copy(update=update), True


def _spec(tool: Tool) -> ToolSpec:
    return ToolSpec(tool.function.name, tool.function.parameters)


def _check_types(tools: list[Tool], indices: Iterable[int]) -> None:
    """400 for a type name JSON Schema lacks in the parameters a forced call must match."""
    for i in indices:
        found = unknown_type(tools[i].function.parameters)
        if found is not None:
            where, kind = found
            param = f"tools[{i}].function.parameters"
            raise GatewayError(
                f"{param}{where} is {kind!r}, which is not a JSON Schema type (one of "
                f"{', '.join(JSON_TYPES)}); the call's arguments are generated to match it.",
                param=param,
            )


def plan_tools(request: ChatCompletionRequest) -> ToolPlan:
    """The plan for the request's tools; 400 for a tool_choice the tools can't satisfy
    (the deprecated `functions`/`function_call`: `app.chat.unsupported`)."""
    tools = request.tools or []
    choice = request.tool_choice
    forced = choice == "required" or isinstance(choice, NamedToolChoice)
    if not tools:
        if forced:
            raise GatewayError(
                "tool_choice requires a call, but the request has no tools.", param="tool_choice"
            )
        return ToolPlan(None)
    if choice == "none":
        return ToolPlan(None)
    template = [tool.model_dump(exclude_none=True) for tool in tools]
    if not forced:
        return ToolPlan(template, parse=True)
    if isinstance(choice, NamedToolChoice):
        name = choice.function.name
        chosen = [i for i, tool in enumerate(tools) if tool.function.name == name]
        if not chosen:
            raise GatewayError(
                f"tool_choice names the function `{name}`, which is not in tools.",
                param="tool_choice",
            )
        _check_types(tools, chosen[:1])
        grammar = tool_call_grammar([_spec(tools[chosen[0]])], max_calls=1)
    else:
        _check_types(tools, range(len(tools)))
        calls = 1 if request.parallel_tool_calls is False else MAX_PARALLEL_CALLS
        grammar = tool_call_grammar([_spec(tool) for tool in tools], max_calls=calls)
    return ToolPlan(template, parse=True, constraint=Constraint("grammar", grammar, "tool_choice"))
