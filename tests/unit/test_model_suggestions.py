"""The names a 404 `model_not_found` suggests: served names, aliases, then the roots'
short names (hub id, directory name), each where it reaches that model."""

from __future__ import annotations

from app.model_names import ModelRegistry, ServedModel

HOME = "/home/user"
HUB = ServedModel(name="Qwen/Qwen3-0.6B", root="Qwen/Qwen3-0.6B")
LOCAL = ServedModel(name="local", root="/models/Llama-3.1-8B/", aliases=("llama", "L3"))


def test_valid_names_and_models() -> None:
    dup = ServedModel("dup", "/m/dup", aliases=("llama", "extra"))
    reg = ModelRegistry([LOCAL, HUB, dup], home=HOME)
    assert reg.valid_names() == [
        *("local", "Qwen/Qwen3-0.6B", "dup"),  # served names
        *("llama", "L3", "extra"),  # aliases
        *("Llama-3.1-8B", "Qwen3-0.6B"),  # the roots' short names (dup's is its name)
    ]
    assert reg.models == (LOCAL, HUB, dup)


def test_a_short_name_is_suggested_once_for_the_model_it_reaches() -> None:
    """Two roots ending in `Qwen3-0.6B`: the name reaches the first, listed once. A served
    name spelled alike in another case takes the key (served names come first): the short
    name is not listed beside it."""
    first = ServedModel("a", "/models/Qwen3-0.6B")
    second = ServedModel("b", "/other/Qwen3-0.6B")
    reg = ModelRegistry([first, second], home=HOME)
    assert reg.valid_names() == ["a", "b", "Qwen3-0.6B"]
    assert reg.resolve("Qwen3-0.6B") is first
    third = ServedModel("qwen3-0.6b", "/m/x")
    reg = ModelRegistry([first, second, third], home=HOME)
    assert reg.valid_names() == ["a", "b", "qwen3-0.6b", "x"]
    assert all(reg.resolve(name) is not None for name in reg.valid_names())
