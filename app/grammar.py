"""EBNF grammars for vLLM's structured outputs: a JSON Schema subset and Qwen3 tool calls.

The grammars are xgrammar's EBNF (vLLM's default backend, on CPU and GPU alike) and
describe *one* spelling of each value: `json.dumps`'s separators (`", "` and `": "`, what
Qwen3 sees in its chat template), no other whitespace, properties in schema order, at
most 16 integer and 16 fraction digits and a two-digit exponent (doubles stay finite).
Free whitespace is what makes small models loop (`{"a": 1,` followed by spaces until
`max_tokens`); without it a bounded schema (`maxLength`, `maxItems`, `enum`) always
finishes.

Supported keywords: `type` (one or a list), `properties`, `required`,
`additionalProperties`, `items`, `minItems`, `maxItems`, `minLength`, `maxLength`,
`enum`, `const`, `anyOf`, `oneOf` (read as anyOf), one-element `allOf`, `$ref` into
`$defs`/`definitions` (recursion included), `nullable`, a non-negative `minimum` on
integers and numbers, and annotations (`title`, `description`, `default`, ...). Any
other keyword raises `UnsupportedSchema`; callers then use vLLM's own JSON-schema
constraint instead, which knows every keyword but lets the model add whitespace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ToolSpec",
    "UnsupportedSchema",
    "json_object_grammar",
    "json_schema_grammar",
    "tool_call_grammar",
]

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
ITEM_SEP = ", "
KEY_SEP = ": "
MAX_DIGITS = 16

ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "example",
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "deprecated",
        "readOnly",
        "writeOnly",
        "strict",
        "discriminator",
    }
)
_OBJECT_KEYS = frozenset({"properties", "required", "additionalProperties"})
_ARRAY_KEYS = frozenset({"items", "minItems", "maxItems"})
_STRING_KEYS = frozenset({"minLength", "maxLength"})
_NUMBER_KEYS = frozenset({"minimum"})
_TYPE_KEYS = {
    "object": _OBJECT_KEYS,
    "array": _ARRAY_KEYS,
    "string": _STRING_KEYS,
    "integer": _NUMBER_KEYS,
    "number": _NUMBER_KEYS,
    "boolean": frozenset(),
    "null": frozenset(),
}
_ALL_TYPE_KEYS = frozenset().union(*_TYPE_KEYS.values())

BASE_RULES = {
    "json_value": (
        "json_object | json_array | json_string | json_number | json_boolean | json_null"
    ),
    "json_object": ('"{" (json_string ": " json_value (", " json_string ": " json_value)*)? "}"'),
    "json_array": '"[" (json_value (", " json_value)*)? "]"',
    "json_string": '"\\"" json_char* "\\""',
    "json_char": '[^"\\\\\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "json_digits": f"[0-9]{{1,{MAX_DIGITS}}}",
    "json_natural": f'"0" | [1-9] [0-9]{{0,{MAX_DIGITS - 1}}}',
    "json_integer": '"-"? json_natural',
    "json_fraction": '("." json_digits)? ([eE] [+-]? [0-9]{1,2})?',
    "json_number": "json_integer json_fraction",
    "json_boolean": '"true" | "false"',
    "json_null": '"null"',
}
# Which base rules each one uses, so a grammar carries only what it needs.
_BASE_DEPS = {
    "json_value": ("json_object", "json_array", "json_string", "json_number", "json_boolean",
                   "json_null"),
    "json_object": ("json_string", "json_value"),
    "json_array": ("json_value",),
    "json_string": ("json_char",),
    "json_natural": (),
    "json_integer": ("json_natural",),
    "json_fraction": ("json_digits",),
    "json_number": ("json_integer", "json_fraction"),
}  # fmt: skip


class UnsupportedSchema(ValueError):
    """The schema uses a keyword outside the supported subset."""


def literal(text: str) -> str:
    """`text` as an EBNF string literal."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_literal(value: Any) -> str:
    """The EBNF literal of a JSON value, spelled with the grammar's separators."""
    return literal(json.dumps(value, ensure_ascii=False, separators=(ITEM_SEP, KEY_SEP)))


@dataclass
class Grammar:
    """Rules collected while compiling; `text(root)` renders them, root first."""

    rules: dict[str, str] = field(default_factory=dict)
    base: set[str] = field(default_factory=set)

    def add(self, name: str, body: str) -> str:
        self.rules[name] = body
        return name

    def use(self, base: str) -> str:
        """Reference a base rule (and pull in the ones it needs)."""
        if base not in self.base:
            self.base.add(base)
            for dep in _BASE_DEPS.get(base, ()):
                self.use(dep)
        return base

    def text(self, root_body: str) -> str:
        lines = [f"root ::= {root_body}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()]
        lines += [f"{name} ::= {BASE_RULES[name]}" for name in BASE_RULES if name in self.base]
        return "\n".join(lines) + "\n"


class SchemaCompiler:
    """Compiles one JSON schema (one `$ref` root) into rules of a shared Grammar."""

    def __init__(self, grammar: Grammar, root: Any, prefix: str) -> None:
        self.grammar = grammar
        self.root = root
        self.prefix = prefix
        self.refs: dict[str, str] = {}
        self.count = 0

    def new_name(self) -> str:
        self.count += 1
        return f"{self.prefix}_{self.count}"

    def rule(self, body: str) -> str:
        return self.grammar.add(self.new_name(), body)

    def value(self, schema: Any) -> str:
        """An EBNF expression (a rule name or literal) for values of `schema`."""
        if schema is True or schema == {}:
            return self.grammar.use("json_value")
        if not isinstance(schema, Mapping):
            raise UnsupportedSchema(f"schema must be an object or true, not {schema!r}")
        keys = set(schema) - ANNOTATIONS
        if "$ref" in keys:
            if keys - {"$ref"}:
                raise UnsupportedSchema("$ref next to other keywords")
            return self.ref(str(schema["$ref"]))
        if schema.get("nullable") is True:
            rest = {k: v for k, v in schema.items() if k != "nullable"}
            return f"({self.value(rest)} | {self.grammar.use('json_null')})"
        keys.discard("nullable")
        if "const" in keys:
            return json_literal(schema["const"])
        if "enum" in keys:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise UnsupportedSchema("enum must be a non-empty list")
            return "(" + " | ".join(json_literal(v) for v in values) + ")"
        for combinator in ("anyOf", "oneOf", "allOf"):
            if combinator in keys:
                return self.combined(schema, combinator, keys)
        types = schema.get("type")
        if types is None:
            return self.untyped(schema, keys)
        if isinstance(types, str):
            return self.typed(schema, types, keys)
        if isinstance(types, list) and types:
            return "(" + " | ".join(self.typed(schema, str(t), keys) for t in types) + ")"
        raise UnsupportedSchema(f"bad type {types!r}")

    def ref(self, ref: str) -> str:
        name = self.refs.get(ref)
        if name is not None:
            return name
        target = self.resolve(ref)
        name = self.refs[ref] = self.new_name()
        self.grammar.add(name, "")  # reserve the slot (recursive schemas refer to it)
        self.grammar.add(name, self.value(target))
        return name

    def resolve(self, ref: str) -> Any:
        if ref == "#":
            return self.root
        match = re.fullmatch(r"#/(\$defs|definitions)/([^/]+)", ref)
        if match is None or not isinstance(self.root, Mapping):
            raise UnsupportedSchema(f"unsupported $ref {ref!r}")
        defs = self.root.get(match.group(1)) or {}
        name = match.group(2).replace("~1", "/").replace("~0", "~")
        if name not in defs:
            raise UnsupportedSchema(f"$ref {ref!r} points nowhere")
        return defs[name]

    def combined(self, schema: Mapping[str, Any], combinator: str, keys: set[str]) -> str:
        if keys - {combinator}:
            raise UnsupportedSchema(f"{combinator} next to other keywords")
        options = schema[combinator]
        if not isinstance(options, list) or not options:
            raise UnsupportedSchema(f"{combinator} must be a non-empty list")
        if combinator == "allOf":
            if len(options) != 1:
                raise UnsupportedSchema("allOf with more than one schema")
            return self.value(options[0])
        return "(" + " | ".join(self.value(option) for option in options) + ")"

    def untyped(self, schema: Mapping[str, Any], keys: set[str]) -> str:
        if not keys:
            return self.grammar.use("json_value")
        if keys <= _OBJECT_KEYS:
            return self.typed(schema, "object", keys)
        if keys <= _ARRAY_KEYS:
            return self.typed(schema, "array", keys)
        if keys <= _STRING_KEYS:
            return self.typed(schema, "string", keys)
        raise UnsupportedSchema(f"unsupported keywords {sorted(keys - _ALL_TYPE_KEYS)}")

    def typed(self, schema: Mapping[str, Any], kind: str, keys: set[str]) -> str:
        allowed = _TYPE_KEYS.get(kind)
        if allowed is None:
            raise UnsupportedSchema(f"unknown type {kind!r}")
        extra = keys - {"type"} - _ALL_TYPE_KEYS
        if extra:
            raise UnsupportedSchema(f"unsupported keywords {sorted(extra)}")
        if kind == "object":
            return self.object(schema)
        if kind == "array":
            return self.array(schema)
        if kind == "string":
            return self.string(schema)
        if kind in ("integer", "number"):
            return self.number(schema, kind)
        return self.grammar.use("json_boolean" if kind == "boolean" else "json_null")

    def object(self, schema: Mapping[str, Any]) -> str:
        properties = schema.get("properties") or {}
        required = schema.get("required") or []
        additional = schema.get("additionalProperties", True)
        if not isinstance(properties, Mapping) or not isinstance(required, list):
            raise UnsupportedSchema("properties must be an object and required a list")
        missing = [name for name in required if name not in properties]
        if missing:
            raise UnsupportedSchema(f"required names without a schema: {missing}")
        if not properties:
            if additional is False:
                return literal("{}")
            if additional is True or additional == {}:
                return self.grammar.use("json_object")
            value = self.value(additional)
            pair = f"{self.grammar.use('json_string')} {literal(KEY_SEP)} {value}"
            return self.rule(f'"{{" ({pair} ({literal(ITEM_SEP)} {pair})*)? "}}"')
        # Only the listed properties, in their order; optional ones may be left out.
        pairs = [
            (f"{json_literal(name)} {literal(KEY_SEP)} {self.value(sub)}", name in required)
            for name, sub in properties.items()
        ]
        first = self.first_pair(pairs)
        return self.rule(f'"{{" {first} "}}"')

    def first_pair(self, pairs: list[tuple[str, bool]]) -> str:
        """A rule for the properties, written after `{` (commas only between them).

        Built from the last property back: `after` is what may follow property i once
        something was written; rule `start` is what may come when nothing was written yet.
        """
        after = ""
        start = '""'
        for pair, required in reversed(pairs):
            sep = f"{literal(ITEM_SEP)} {pair}"
            if required:
                start = self.rule(f"{pair} {after}".strip())
                after = f"{sep} {after}".strip()
            else:
                start = self.rule(f"({f'{pair} {after}'.strip()}) | {start}")
                after = f"({sep})? {after}".strip()
        return start

    def array(self, schema: Mapping[str, Any]) -> str:
        items = schema.get("items", True)
        if isinstance(items, list):
            raise UnsupportedSchema("tuple-style items")
        low = int(schema.get("minItems", 0))
        high = schema.get("maxItems")
        if high is not None and int(high) < low:
            raise UnsupportedSchema("maxItems below minItems")
        if high is not None and int(high) == 0:
            return literal("[]")
        item = self.value(items)
        rest_low = max(low - 1, 0)
        rest = f"{{{rest_low},{'' if high is None else int(high) - 1}}}"
        body = f"{item} ({literal(ITEM_SEP)} {item}){rest}"
        if low == 0:
            body = f"({body})?"
        return self.rule(f'"[" {body} "]"')

    def string(self, schema: Mapping[str, Any]) -> str:
        low = int(schema.get("minLength", 0))
        high = schema.get("maxLength")
        if low == 0 and high is None:
            return self.grammar.use("json_string")
        count = f"{{{low},{'' if high is None else int(high)}}}"
        char = self.grammar.use("json_char")
        return self.rule(f'"\\"" {char}{count} "\\""')

    def number(self, schema: Mapping[str, Any], kind: str) -> str:
        minimum = schema.get("minimum")
        if minimum is None:
            whole = "json_integer"
        elif minimum == 0:
            whole = "json_natural"
        elif minimum == 1 and kind == "integer":
            return self.rule(f"[1-9] [0-9]{{0,{MAX_DIGITS - 1}}}")
        else:
            raise UnsupportedSchema(f"minimum {minimum!r} (only 0, or 1 for integers)")
        self.grammar.use(whole)
        if kind == "integer":
            return whole
        return f"({whole} {self.grammar.use('json_fraction')})"


def json_schema_grammar(schema: Any) -> str:
    """A grammar for JSON documents matching `schema` (raises UnsupportedSchema)."""
    grammar = Grammar()
    root = SchemaCompiler(grammar, schema, "s").value(schema)
    return grammar.text(root)


def json_object_grammar() -> str:
    """Any JSON object (`response_format: {"type": "json_object"}`)."""
    grammar = Grammar()
    return grammar.text(grammar.use("json_object"))


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

    with calls separated by a newline. A tool whose parameters fall outside the supported
    subset takes any JSON object as arguments.
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
    compiler = SchemaCompiler(grammar, parameters, prefix)
    saved = dict(grammar.rules), set(grammar.base)
    try:
        return compiler.value(parameters)
    except UnsupportedSchema:
        grammar.rules, grammar.base = saved
        return grammar.use("json_object")
