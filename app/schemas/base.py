"""The base of request wire schemas: an explicit `null` means "the default".

OpenAI marks most optional request fields nullable, and some SDKs send every field,
nulls included (`"stream": null`, `"n": null`, `"logprobs": null`). A field whose
default is a value (`stream: bool = False`) would refuse that null with "Input should be
a valid boolean"; here a null for such a field is dropped before validation, so the
field takes its default (and stays out of `model_fields_set`, as if it were not sent).
A required field (no default) still refuses null.

A number field also refuses NaN and the infinities (which JSON parsers here accept as
`NaN`, `Infinity`): "Input should be a finite number" rather than a bound it misses.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class WireModel(BaseModel):
    """A request body (or part of one) in which `null` stands for the field's default."""

    model_config = ConfigDict(allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        drop = _defaulted_keys(cls)
        if not any(data.get(key, 0) is None for key in drop):
            return data
        return {k: v for k, v in data.items() if not (v is None and k in drop)}


def _defaulted_keys(model: type[BaseModel]) -> frozenset[str]:
    """The wire names of `model`'s fields that have a default other than None."""
    cached = _DEFAULTED.get(model)
    if cached is None:
        keys = set()
        for name, info in model.model_fields.items():
            if info.is_required():
                continue
            if info.get_default(call_default_factory=True) is not None:
                keys.update({name, info.alias or name})
        cached = _DEFAULTED[model] = frozenset(keys)
    return cached


_DEFAULTED: dict[type[BaseModel], frozenset[str]] = {}
