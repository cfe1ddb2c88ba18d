"""EBNF building blocks: string literals, the base JSON rules and the rule collector.

The base rules spell JSON the one way the grammars allow: `json.dumps`'s separators
(`", "` and `": "`), no other whitespace, at most 16 integer and 16 fraction digits and
a two-digit exponent (doubles stay finite). `Grammar` gathers named rules and renders
them, root first, with only the base rules they use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BASE_RULES",
    "ITEM_SEP",
    "KEY_SEP",
    "MAX_DIGITS",
    "Grammar",
    "json_literal",
    "literal",
]

ITEM_SEP = ", "
KEY_SEP = ": "
MAX_DIGITS = 16

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
