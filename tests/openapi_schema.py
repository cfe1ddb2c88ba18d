"""Validate JSON bodies against OpenAI's published OpenAPI document.

The document itself is *not* part of this project: it lives next to the
checkout at ``../shared/openai-openapi/openapi.json`` (relative to the repo
root) or wherever ``OPENAI_OPENAPI_PATH`` points.  Tests that need it should be
marked with :data:`requires_openapi` so they skip cleanly when it is absent.

The document declares ``openapi: 3.1.0`` and mostly uses 3.1 / JSON Schema
2020-12 idioms (``anyOf: [..., {type: "null"}]``), but it still carries
OpenAPI 3.0-isms that a Draft 2020-12 validator would silently ignore or
reject.  :func:`convert_schema` produces a converted copy:

* ``nullable: true`` -> null is allowed.  On a plain ``type`` schema ``"null"``
  is added to ``type`` (and ``None`` to ``enum`` if there is one); on schemas
  with ``$ref`` / ``allOf`` / ``anyOf`` / ``oneOf`` / ``const`` or no ``type``
  the schema is wrapped as ``anyOf: [<schema>, {type: "null"}]``.
  ``nullable: false`` is dropped.
* boolean ``exclusiveMinimum`` / ``exclusiveMaximum`` (3.0 style, paired with
  ``minimum`` / ``maximum``) become the numeric 2020-12 form.
* ``$ref: "#/components/schemas/X"`` -> ``$ref: "#/$defs/X"``; every component
  schema is placed under ``$defs`` of a wrapper root schema.
* draft 2019-09 recursion (``$recursiveAnchor: true`` + ``$recursiveRef: "#"``,
  used by e.g. BetaCompoundFilter) -> ``$ref`` to the enclosing component.
* ``discriminator``, ``example``, ``examples``, ``default``, ``deprecated``,
  ``x-*`` and other annotations are copied verbatim; they never affect
  validation (2020-12 ignores unknown keywords and ``discriminator`` is
  advisory only: ``oneOf`` still does the work).
* duplicate names in ``required`` (ContainerResource) are dropped.

Nothing else is tightened: no ``additionalProperties: false`` is added and
``format`` is not asserted (annotation only, as 2020-12 specifies by default).
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

__all__ = [
    "ENV_VAR",
    "convert_schema",
    "converted_root",
    "load_openapi",
    "openapi_path",
    "requires_openapi",
    "schema_names",
    "validate_schema",
]

ENV_VAR = "OPENAI_OPENAPI_PATH"
_REPO_ROOT = Path(__file__).resolve().parent.parent
_DEFAULT_PATH = _REPO_ROOT.parent / "shared" / "openai-openapi" / "openapi.json"
_COMPONENT_PREFIX = "#/components/schemas/"
_DEFS_PREFIX = "#/$defs/"

# Keywords whose value is a map name -> subschema.
_SCHEMA_MAP_KEYWORDS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
# Keywords whose value is a list of subschemas.
_SCHEMA_LIST_KEYWORDS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
# Keywords whose value is a single subschema (or a boolean schema).
_SCHEMA_KEYWORDS = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contains",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
# Presence of any of these means "add null to type" is not enough: wrap instead.
_COMPOSITE_KEYWORDS = frozenset({"$ref", "allOf", "anyOf", "oneOf", "const", "not"})


def openapi_path() -> Path:
    """Location of OpenAI's openapi.json (``$OPENAI_OPENAPI_PATH`` overrides)."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    return _DEFAULT_PATH


@functools.lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Any] | None:
    p = Path(path)
    if not p.is_file():
        return None
    with p.open("r", encoding="utf-8") as fh:
        doc = json.load(fh)
    if not isinstance(doc, dict):
        raise ValueError(f"{p}: expected a JSON object at top level")
    return doc


def load_openapi() -> dict[str, Any] | None:
    """The parsed document, or ``None`` when absent.  Cached per path.

    The returned dict is shared: do not mutate it.
    """
    return _load(str(openapi_path()))


def _missing_reason(path: Path | None = None) -> str:
    return f"OpenAI OpenAPI document not found at {path or openapi_path()}"


def _convert_ref(ref: str) -> str:
    if ref.startswith(_COMPONENT_PREFIX):
        return _DEFS_PREFIX + ref[len(_COMPONENT_PREFIX) :]
    return ref


def _convert_exclusive(out: dict[str, Any], excl: str, bound: str) -> None:
    value = out.get(excl)
    if isinstance(value, bool):  # OpenAPI 3.0 / draft-04 style
        del out[excl]
        if value and bound in out:
            out[excl] = out.pop(bound)


def _apply_nullable(out: dict[str, Any]) -> Any:
    nullable = out.pop("nullable", None)
    if nullable is not True:
        return out
    typ = out.get("type")
    if typ is not None and not (_COMPOSITE_KEYWORDS & out.keys()):
        types = [typ] if isinstance(typ, str) else list(typ)
        if "null" not in types:
            types.append("null")
        out["type"] = types
        enum = out.get("enum")
        if isinstance(enum, list) and None not in enum:
            out["enum"] = [*enum, None]
        return out
    return {"anyOf": [out, {"type": "null"}]}


def convert_schema(schema: Any, component: str | None = None) -> Any:
    """Return a Draft 2020-12 copy of one OpenAPI schema object (see module doc).

    ``component`` is the components/schemas name the schema belongs to; it is
    the target of ``$recursiveRef: "#"`` (left untouched when not given).
    """
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, Mapping):
        # Not a schema (malformed document); copy it so the validator reports it.
        return copy.deepcopy(schema)

    def sub(value: Any) -> Any:
        return convert_schema(value, component)

    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = _convert_ref(value)
        elif key == "$recursiveAnchor":
            continue  # not a 2020-12 keyword; its meaning is handled below
        elif key == "$recursiveRef" and value == "#" and component is not None:
            out["$ref"] = _DEFS_PREFIX + component
        elif key in _SCHEMA_MAP_KEYWORDS and isinstance(value, Mapping):
            out[key] = {name: sub(s) for name, s in value.items()}
        elif key in _SCHEMA_LIST_KEYWORDS and isinstance(value, list):
            out[key] = [sub(s) for s in value]
        elif key == "items" and isinstance(value, list):  # draft-04 tuple form
            out["prefixItems"] = [sub(s) for s in value]
        elif key in _SCHEMA_KEYWORDS:
            out[key] = sub(value)
        else:
            # Assertions with scalar values, annotations (description, example,
            # examples, default, deprecated, discriminator, x-*): verbatim.
            out[key] = copy.deepcopy(value)
    required = out.get("required")
    if isinstance(required, list) and len(set(map(str, required))) != len(required):
        # A few schemas list a name twice; 2020-12 wants unique items.  Same meaning.
        out["required"] = list(dict.fromkeys(required))
    _convert_exclusive(out, "exclusiveMinimum", "minimum")
    _convert_exclusive(out, "exclusiveMaximum", "maximum")
    return _apply_nullable(out)


@functools.lru_cache(maxsize=4)
def _converted_root(path: str) -> dict[str, Any]:
    doc = _load(path)
    if doc is None:
        raise FileNotFoundError(_missing_reason(Path(path)))
    schemas = doc.get("components", {}).get("schemas", {})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {name: convert_schema(s, name) for name, s in schemas.items()},
    }


def converted_root() -> dict[str, Any]:
    """``{"$schema": ..., "$defs": {<every converted component schema>}}``.

    Raises FileNotFoundError when the document is absent.  Shared: do not mutate.
    """
    return _converted_root(str(openapi_path()))


def schema_names() -> list[str]:
    """Names under components/schemas ([] when the document is absent)."""
    doc = load_openapi()
    if doc is None:
        return []
    return sorted(doc.get("components", {}).get("schemas", {}))


@functools.lru_cache(maxsize=256)
def _validator(path: str, name: str) -> Draft202012Validator:
    root = _converted_root(path)
    if name not in root["$defs"]:
        raise KeyError(f"no schema named {name!r} under components/schemas in {path}")
    schema = {**root, "$ref": _DEFS_PREFIX + name}
    return Draft202012Validator(schema)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


_MAX_BRANCH_LINES = 6


def _branch_errors(error: ValidationError) -> list[tuple[object, ValidationError]]:
    """(branch index, leaf error) for the anyOf/oneOf branches worth showing.

    Branches rejected only because the instance has another type (typically the
    ``{type: "null"}`` branch) are left out unless nothing else is left.
    """
    context = list(error.context or ())
    useful = [e for e in context if not (e.validator == "type" and not e.relative_path)]
    leaves: list[tuple[object, ValidationError]] = []
    for e in useful or context:
        branch = e.relative_schema_path[0] if e.relative_schema_path else "?"
        nested = [leaf for _, leaf in _branch_errors(e)] if e.context else [e]
        leaves.extend((branch, leaf) for leaf in nested)
    return leaves


def _describe(error: ValidationError) -> str:
    line = f"{error.json_path}: {_short(error.message)}"
    if error.context:
        branches = _branch_errors(error)
        for branch, e in branches[:_MAX_BRANCH_LINES]:
            line += f"\n      {error.validator} branch {branch}: {e.json_path}: {_short(e.message)}"
        if len(branches) > _MAX_BRANCH_LINES:
            line += f"\n      ... {len(branches) - _MAX_BRANCH_LINES} more branch error(s)"
    return line


def validate_schema(name: str, body: object) -> None:
    """Assert that ``body`` validates against ``components/schemas/<name>``.

    Raises AssertionError listing every error (JSON path + message).  Skips the
    calling test when the document is absent; KeyError for an unknown name.
    """
    path = openapi_path()
    if _load(str(path)) is None:
        pytest.skip(_missing_reason(path))
    validator = _validator(str(path), name)
    errors = sorted(
        validator.iter_errors(body), key=lambda e: (list(map(str, e.absolute_path)), e.message)
    )
    if errors:
        lines = "\n".join(f"  - {_describe(e)}" for e in errors)
        raise AssertionError(
            f"body does not validate against components/schemas/{name} "
            f"({len(errors)} error(s)):\n{lines}"
        )


requires_openapi = pytest.mark.skipif(not openapi_path().is_file(), reason=_missing_reason())
