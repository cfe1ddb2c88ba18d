"""Wire schema of structured-output requests: `response_format` and vLLM's extras.

Shared by chat and legacy completions (imports nothing from vLLM).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.base import WireModel


class JsonSchemaSpec(BaseModel):
    """`response_format.json_schema`: OpenAI's shape (`name`, `schema`, `strict`)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str | None = None
    description: str | None = None
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaSpec | None = None


class StructuredFields(WireModel):
    """Request fields that constrain the output (OpenAI's and `vllm serve`'s)."""

    response_format: ResponseFormat | None = None
    # vLLM: {"json" | "regex" | "choice" | "grammar" | "json_object" | "structural_tag": ...}
    structured_outputs: dict[str, Any] | None = None
    # vLLM's older spellings, still sent by many clients
    guided_json: dict[str, Any] | str | None = None
    guided_regex: str | None = None
    guided_choice: list[str] | None = None
    guided_grammar: str | None = None
    guided_decoding_backend: str | None = None  # ignored: the engine picks its backend
    guided_whitespace_pattern: str | None = None  # ignored: grammars here have no free space
