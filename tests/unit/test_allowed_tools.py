"""`tool_choice: {"type": "allowed_tools", ...}`: the tools cut to the named functions, the
mode as tool_choice; a name the tools lack is a 400 naming the entry."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from app.chat.normalize import Defaults, normalize
from app.chat.tools import narrow_allowed_tools, plan_tools
from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest
from tests.integration.tool_requests import allowed


def tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def req(**fields: Any) -> ChatCompletionRequest:
    fields.setdefault("messages", [{"role": "user", "content": "hi"}])
    fields.setdefault("tools", [tool("a"), tool("b"), tool("c")])
    return ChatCompletionRequest.model_validate(fields)


@pytest.mark.parametrize("mode", ["auto", "required"])
def test_the_tools_are_cut_to_the_named_ones_in_their_order(mode: str) -> None:
    out, fired = narrow_allowed_tools(req(tool_choice=allowed(mode, "c", "a")))
    assert fired and out.tool_choice == mode
    assert [t.function.name for t in out.tools or []] == ["a", "c"]


def test_other_choices_pass_unchanged() -> None:
    request = req(tool_choice={"type": "function", "function": {"name": "b"}})
    assert narrow_allowed_tools(request) == (request, False)
    assert narrow_allowed_tools(req()) == (req(), False)


def test_a_name_the_tools_lack_is_a_400_naming_the_entry() -> None:
    with pytest.raises(GatewayError) as err:
        narrow_allowed_tools(req(tool_choice=allowed("auto", "a", "zz")))
    assert err.value.param == "tool_choice.allowed_tools.tools[1]"
    assert "`zz`" in err.value.message
    with pytest.raises(GatewayError):
        narrow_allowed_tools(req(tools=None, tool_choice=allowed("required", "a")))


@pytest.mark.parametrize(
    "choice",
    [
        {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}},
        {"type": "allowed_tools", "allowed_tools": {"mode": "none", "tools": [tool("a")]}},
        {"type": "allowed_tools"},
    ],
)
def test_a_malformed_allowed_tools_is_refused(choice: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        req(tool_choice=choice)


def test_required_forces_a_call_of_an_allowed_function_only() -> None:
    normalized = normalize(req(tool_choice=allowed("required", "b")), Defaults())
    assert "allowed_tools" in normalized.fired
    assert "constrained_thinking" in normalized.fired  # a forced call, as `required`
    plan = plan_tools(normalized.request)
    assert [t["function"]["name"] for t in plan.template_tools or []] == ["b"]
    assert plan.constraint is not None and plan.parse
    grammar = str(plan.constraint.value)
    assert '\\"b\\"' in grammar and '\\"a\\"' not in grammar and '\\"c\\"' not in grammar


def test_auto_offers_the_allowed_functions_without_a_grammar() -> None:
    plan = plan_tools(normalize(req(tool_choice=allowed("auto", "a", "c")), Defaults()).request)
    assert [t["function"]["name"] for t in plan.template_tools or []] == ["a", "c"]
    assert plan.parse and plan.constraint is None
