"""Wire schemas of `POST /v1/completions`, `/tokenize` and `/detokenize` (no vLLM imports)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field

from app.schemas.base import WireModel
from app.schemas.chat import ChatMessage, LogitBias, Stop, StreamOptions, Tool, ToolChoice
from app.schemas.structured import StructuredFields

TokenId = Annotated[int, Field(ge=0)]
Prompt = str | list[str] | list[TokenId] | list[list[TokenId]]


class CompletionRequest(StructuredFields):
    """OpenAI's legacy completion request, plus the vLLM extras clients send."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    prompt: Prompt
    suffix: str | None = None
    max_tokens: int | None = Field(default=16, ge=0)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    n: int = Field(default=1, ge=1, le=128)
    best_of: int | None = Field(default=None, ge=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    logprobs: int | None = Field(default=None, ge=0, le=20)
    echo: bool = False
    stop: Stop | None = None
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    logit_bias: LogitBias | None = None
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)
    user: str | None = None
    # vLLM extras
    top_k: int | None = Field(default=None, ge=-1)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    repetition_penalty: float | None = Field(default=None, gt=0.0, le=2.0)
    ignore_eos: bool = False
    min_tokens: int = Field(default=0, ge=0)
    skip_special_tokens: bool = True
    add_special_tokens: bool = True
    include_stop_str_in_output: bool = False


class TokenizeRequest(WireModel):
    """`vllm serve`'s tokenize request: a `prompt`, or chat `messages` (rendered as chat is)."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    prompt: str | None = None
    messages: list[ChatMessage] | None = None
    add_special_tokens: bool | None = None  # default: true for a prompt, false for messages
    add_generation_prompt: bool | None = None  # default: true (unless continuing)
    continue_final_message: bool = False
    return_token_strs: bool = False
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None  # as chat takes it: "none" or allowed_tools narrow
    chat_template_kwargs: dict[str, Any] | None = None
    enable_thinking: bool | None = None


class DetokenizeRequest(WireModel):
    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    tokens: list[TokenId]
