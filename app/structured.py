"""Which constraint a request puts on the output, as one `Constraint` (pure, no vLLM).

Sources, first match wins: `response_format` (`json_object`, `json_schema`), vLLM's
`structured_outputs` (exactly one of `json`, `regex`, `choice`, `grammar`,
`json_object`, `structural_tag`), then the older `guided_json`, `guided_regex`,
`guided_choice`, `guided_grammar`. JSON schemas and `json_object` become the compact
grammars of `app.grammar` (no free whitespace, so even small models finish); a schema
outside its subset goes to vLLM's own JSON-schema support unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

from app.errors import GatewayError
from app.grammar import UnsupportedSchema, json_object_grammar, json_schema_grammar
from app.schemas.structured import StructuredFields

__all__ = ["KINDS", "Constraint", "json_constraint", "requested_constraint", "wants_constraint"]

Kind = Literal["json", "regex", "choice", "grammar", "json_object", "structural_tag"]
KINDS: Final[tuple[Kind, ...]] = (
    "json",
    "regex",
    "choice",
    "grammar",
    "json_object",
    "structural_tag",
)
_GUIDED: Final[tuple[tuple[str, Kind], ...]] = (
    ("guided_json", "json"),
    ("guided_regex", "regex"),
    ("guided_choice", "choice"),
    ("guided_grammar", "grammar"),
)


@dataclass(frozen=True)
class Constraint:
    """One structured-output constraint, in the terms of vLLM's StructuredOutputsParams."""

    kind: Kind
    value: Any
    param: str  # the request field it came from (named in errors)


def wants_constraint(fields: StructuredFields) -> bool:
    """True when the request asks for constrained output (cheap: builds nothing)."""
    if fields.response_format is not None and fields.response_format.type != "text":
        return True
    if fields.structured_outputs:
        return True
    return any(getattr(fields, name) is not None for name, _ in _GUIDED)


def json_constraint(schema: Any, param: str) -> Constraint:
    """A JSON-schema constraint: the compact grammar, or vLLM's own for other schemas."""
    if not isinstance(schema, dict | bool):
        raise GatewayError("A JSON schema must be a JSON object.", param=param)
    try:
        return Constraint("grammar", json_schema_grammar(schema), param)
    except UnsupportedSchema:
        return Constraint("json", schema, param)


def requested_constraint(fields: StructuredFields) -> Constraint | None:
    """The constraint the request asks for, or None; 400 for malformed ones."""
    response_format = fields.response_format
    if response_format is not None and response_format.type != "text":
        if response_format.type == "json_object":
            return Constraint("grammar", json_object_grammar(), "response_format")
        spec = response_format.json_schema
        if spec is None or spec.json_schema is None:
            raise GatewayError(
                "response_format of type json_schema needs json_schema.schema.",
                param="response_format.json_schema",
            )
        return json_constraint(spec.json_schema, "response_format")
    if fields.structured_outputs:
        given = {k: v for k, v in fields.structured_outputs.items() if k in KINDS and v is not None}
        if len(given) != 1:
            raise GatewayError(
                "structured_outputs needs exactly one of " + ", ".join(KINDS) + ".",
                param="structured_outputs",
            )
        kind, value = given.popitem()
        return _vllm_constraint(kind, value, "structured_outputs")
    for name, guided in _GUIDED:
        value = getattr(fields, name)
        if value is not None:
            return _vllm_constraint(guided, value, name)
    return None


def _vllm_constraint(kind: str, value: Any, param: str) -> Constraint:
    if kind == "json":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise GatewayError(f"{param} is not valid JSON: {exc}", param=param) from exc
        return json_constraint(value, param)
    if kind == "json_object":
        if value is not True:
            raise GatewayError("json_object must be true when given.", param=param)
        return Constraint("grammar", json_object_grammar(), param)
    if kind == "choice":
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise GatewayError("choice must be a non-empty list of strings.", param=param)
        return Constraint("choice", value, param)
    if kind == "structural_tag":
        text = value if isinstance(value, str) else json.dumps(value)
        return Constraint("structural_tag", text, param)
    if not isinstance(value, str) or (kind == "grammar" and not value.strip()):
        raise GatewayError(f"{param} must be a non-empty string.", param=param)
    return Constraint("regex" if kind == "regex" else "grammar", value, param)
