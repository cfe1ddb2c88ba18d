"""Compile a JSON Schema into the compact EBNF of `app.grammar_ebnf`.

Supported keywords: `type` (one or a list), `properties`, `required`,
`additionalProperties`, `items`, `minItems`, `maxItems`, `minLength`, `maxLength`,
`enum`, `const`, `anyOf`, `oneOf` (read as anyOf), one-element `allOf`, `$ref` into
`$defs`/`definitions` (recursion included), `nullable`, integer bounds (`minimum`,
`maximum`, `exclusiveMinimum`, `exclusiveMaximum`), `minimum: 0` on numbers, the string
`format`s of `app.grammar_formats` (`date`, `time`, `date-time`, `uuid`, `ipv4`), and
annotations (`title`, `description`, `default`, ...). Any other keyword raises
`UnsupportedSchema`; callers then use vLLM's own JSON-schema constraint instead, which
knows every keyword but lets the model add whitespace. A lenient compiler (forced tool
calls, which have no such fallback) drops what it can't spell instead (see
`app.grammar_loosen`). Properties are written in schema order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.grammar_ebnf import ITEM_SEP, KEY_SEP, MAX_DIGITS, Grammar, json_literal, literal
from app.grammar_formats import FORMATS, integer_bounds, integer_range
from app.grammar_keywords import (
    ALL_TYPE_KEYS,
    ANNOTATIONS,
    ARRAY_KEYS,
    OBJECT_KEYS,
    STRING_KEYS,
    TYPE_KEYS,
    UnsupportedSchema,
)
from app.grammar_loosen import loosen

__all__ = ["SchemaCompiler", "json_object_grammar", "json_schema_grammar"]


class SchemaCompiler:
    """Compiles one JSON schema (one `$ref` root) into rules of a shared Grammar.

    Lenient, it never raises `UnsupportedSchema`: each subschema is loosened first, and
    one that still can't be compiled takes any value of its type.
    """

    def __init__(self, grammar: Grammar, root: Any, prefix: str, lenient: bool = False) -> None:
        self.grammar = grammar
        self.root = root
        self.prefix = prefix
        self.lenient = lenient
        self.refs: dict[str, str] = {}
        self.count = 0

    def new_name(self) -> str:
        self.count += 1
        return f"{self.prefix}_{self.count}"

    def rule(self, body: str) -> str:
        return self.grammar.add(self.new_name(), body)

    def value(self, schema: Any) -> str:
        """An EBNF expression (a rule name or literal) for values of `schema`."""
        if not self.lenient:
            return self.exact(schema)
        try:
            return self.exact(loosen(schema))
        except (UnsupportedSchema, ValueError, TypeError):
            return self.any_of_type(schema)

    def any_of_type(self, schema: Any) -> str:
        """Any value of the schema's `type` (any JSON value without a usable one)."""
        kind = schema.get("type") if isinstance(schema, Mapping) else None
        names = [kind] if isinstance(kind, str) else kind
        base = {
            "object": "json_object",
            "array": "json_array",
            "string": "json_string",
            "integer": "json_integer",
            "number": "json_number",
            "boolean": "json_boolean",
            "null": "json_null",
        }
        if not isinstance(names, list) or not names or not all(n in base for n in names):
            return self.grammar.use("json_value")
        return "(" + " | ".join(self.grammar.use(base[n]) for n in names) + ")"

    def exact(self, schema: Any) -> str:
        """`value` for a schema the compiler must spell exactly (else UnsupportedSchema)."""
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
        if keys <= OBJECT_KEYS:
            return self.typed(schema, "object", keys)
        if keys <= ARRAY_KEYS:
            return self.typed(schema, "array", keys)
        if keys <= STRING_KEYS:
            return self.typed(schema, "string", keys)
        raise UnsupportedSchema(f"unsupported keywords {sorted(keys - ALL_TYPE_KEYS)}")

    def typed(self, schema: Mapping[str, Any], kind: str, keys: set[str]) -> str:
        allowed = TYPE_KEYS.get(kind)
        if allowed is None:
            raise UnsupportedSchema(f"unknown type {kind!r}")
        extra = keys - {"type"} - ALL_TYPE_KEYS
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
        if "format" in schema:
            body = FORMATS.get(str(schema["format"]))
            if body is None:
                raise UnsupportedSchema(f"format {schema['format']!r}")
            if "minLength" in schema or "maxLength" in schema:
                raise UnsupportedSchema("format next to minLength/maxLength")
            return self.rule(f'"\\"" {body} "\\""')
        low = int(schema.get("minLength", 0))
        high = schema.get("maxLength")
        if low == 0 and high is None:
            return self.grammar.use("json_string")
        count = f"{{{low},{'' if high is None else int(high)}}}"
        char = self.grammar.use("json_char")
        return self.rule(f'"\\"" {char}{count} "\\""')

    def number(self, schema: Mapping[str, Any], kind: str) -> str:
        minimum = schema.get("minimum")
        if kind == "integer" and (
            set(schema) & {"maximum", "exclusiveMinimum", "exclusiveMaximum"}
            or minimum not in (None, 0, 1)
        ):
            return self.rule(integer_range(*integer_bounds(schema)))
        if set(schema) & {"maximum", "exclusiveMinimum", "exclusiveMaximum"}:
            raise UnsupportedSchema("bounds on a number other than minimum 0")
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
