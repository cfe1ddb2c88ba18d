"""Wire schema of `POST /v1/chat/completions` requests (imports nothing from vLLM)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from app.schemas.base import WireModel
from app.schemas.structured import StructuredFields

Role = Literal["system", "developer", "user", "assistant", "tool", "function"]


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["text"]
    text: str


class StreamOptions(WireModel):
    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False
    continuous_usage_stats: bool = False


def _refusal_as_text(part: Any) -> Any:
    """OpenAI's `{"type": "refusal", "refusal": ...}` part (an assistant message replayed
    as OpenAI returned it) as a text part with the refusal's text."""
    if isinstance(part, dict) and part.get("type") == "refusal":
        refusal = part.get("refusal")
        if isinstance(refusal, str):
            return {"type": "text", "text": refusal}
    return part


def include_usage(options: StreamOptions | None) -> bool:
    """A usage chunk at the end of a stream."""
    return bool(options and options.include_usage)


def continuous_usage(options: StreamOptions | None) -> bool:
    """Usage so far in every chunk too (vLLM's, with `include_usage` only)."""
    return bool(options and options.include_usage and options.continuous_usage_stats)


class ChatMessage(BaseModel):
    """One message; content is a string or a list of text parts (OpenAI's refusal parts,
    in a replayed assistant message, are read as text)."""

    model_config = ConfigDict(extra="allow")

    role: Role
    content: str | list[TextPart] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    partial: bool | None = None  # Qwen's (DashScope's) prefix mode: continue this message

    @field_validator("content", mode="before")
    @classmethod
    def _text_parts_only(cls, value: Any) -> Any:
        """A part of another type (an image, audio, a file) gets one clear error instead of
        pydantic's list of failed union branches: the Qwen3 text models read text only."""
        if isinstance(value, list):
            value = [_refusal_as_text(part) for part in value]
            for index, part in enumerate(value):
                kind = part.get("type") if isinstance(part, dict) else None
                if isinstance(kind, str) and kind != "text":
                    raise PydanticCustomError(
                        "unsupported_content_part",
                        "part {index} has type '{kind}', but this model reads text only: "
                        "send the content as a string or as parts of type 'text'",
                        {"index": index, "kind": kind},
                    )
        return value

    def text(self) -> str:
        """The content as one string (text parts joined)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class FunctionDef(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(BaseModel):
    """A function tool; the chat template sees it as sent (nulls left out)."""

    model_config = ConfigDict(extra="allow")

    type: Literal["function"] = "function"
    function: FunctionDef


class NamedFunction(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str


class NamedToolChoice(BaseModel):
    """`tool_choice: {"type": "function", "function": {"name": ...}}`."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["function"] = "function"
    function: NamedFunction


class AllowedTools(BaseModel):
    """`allowed_tools`: the calls `mode` allows, from the functions `tools` names."""

    model_config = ConfigDict(extra="ignore")

    mode: Literal["auto", "required"]
    tools: list[NamedToolChoice] = Field(min_length=1)


class AllowedToolsChoice(BaseModel):
    """`tool_choice: {"type": "allowed_tools", "allowed_tools": {"mode": ..., "tools":
    [{"type": "function", "function": {"name": ...}}, ...]}}`: only those of the request's
    tools may be called (`app.chat.tools.narrow_allowed_tools`)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["allowed_tools"]
    allowed_tools: AllowedTools


def _no_empty_stop(value: str | list[str]) -> str | list[str]:
    """vLLM refuses an empty stop string; say so here, naming the field."""
    texts = [value] if isinstance(value, str) else value
    if "" in texts:
        raise PydanticCustomError(
            "empty_stop", "stop strings must not be empty (an empty string matches anywhere)"
        )
    return value


# OpenAI's `reasoning_effort` values (any case), and "off"/"false": "none" and its
# spellings turn Qwen3's thinking off, any other effort turns it on (app.chat.normalize)
REASONING_EFFORTS = frozenset(
    {"none", "off", "false", "minimal", "low", "medium", "high", "xhigh", "max"}
)


def _known_effort(value: str) -> str:
    if value.lower() not in REASONING_EFFORTS:
        raise PydanticCustomError(
            "unknown_reasoning_effort",
            "unknown reasoning effort '{value}'; use one of: {known}",
            {"value": value, "known": ", ".join(sorted(REASONING_EFFORTS))},
        )
    return value


ReasoningEffort = Annotated[str, AfterValidator(_known_effort)]
# `stop`: one string or a list of them, none empty (chat and completions)
Stop = Annotated[str | list[str], AfterValidator(_no_empty_stop)]
ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice | AllowedToolsChoice
PositiveInt = Annotated[int, Field(ge=1)]
# OpenAI's `logit_bias`: token ids (as JSON object keys, so strings) to a bias in [-100, 100]
LogitBias = dict[str, Annotated[float, Field(ge=-100.0, le=100.0)]]


class ChatCompletionRequest(StructuredFields):
    """OpenAI's chat request, plus the vLLM and Qwen3 extras clients send."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, le=128)
    stop: Stop | None = None
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)
    max_tokens: PositiveInt | None = None
    max_completion_tokens: PositiveInt | None = None
    min_tokens: int = Field(default=0, ge=0)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=-1)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    repetition_penalty: float | None = Field(default=None, gt=0.0, le=2.0)
    logit_bias: LogitBias | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    ignore_eos: bool = False
    user: str | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    # OpenAI's deprecated form of tools/tool_choice: read only to refuse it with a clear 400
    functions: list[Any] | None = None
    function_call: Any = None
    # OpenAI's audio output and web search: read only to refuse them (app.chat.unsupported)
    modalities: list[str] | None = None
    audio: Any = None
    web_search_options: Any = None
    # Qwen3 / vLLM extras
    enable_thinking: bool | None = None
    return_reasoning: bool | None = None
    max_reasoning_tokens: int | None = Field(default=None, ge=0)
    reasoning_effort: ReasoningEffort | None = None
    reasoning_in_content: bool | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    extra_body: dict[str, Any] | None = None
    skip_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    # vLLM's: end the prompt with a new assistant turn (default), or continue the last message
    add_generation_prompt: bool | None = None
    continue_final_message: bool = False

    def token_limit(self) -> int | None:
        """The client's cap on generated tokens (`max_completion_tokens` wins)."""
        return self.max_completion_tokens or self.max_tokens
