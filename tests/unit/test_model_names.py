from __future__ import annotations

import pytest

from app.model_names import (
    ModelRegistry,
    ServedModel,
    check_alias_targets,
    model_keys,
    normalize_model_name,
    parse_aliases,
)

HOME = "/home/user"

MS_QWEN = ServedModel(name="qwen3", root="~/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B")
MS_LOWER = ServedModel(
    name="qwen3-lower", root="/home/user/.cache/modelscope/hub/models/qwen/Qwen3-0.6B/"
)
HUB = ServedModel(name="Qwen/Qwen3-0.6B", root="Qwen/Qwen3-0.6B")
HF = ServedModel(
    name="served-hf",
    root="/data/hf/hub/models--Qwen--Qwen3-8B/snapshots/0123456789abcdef",
)
LOCAL = ServedModel(name="local", root="/models/Llama-3.1-8B/", aliases=("llama", "L3"))
MS_MASKED = ServedModel(name="masked", root="~/.cache/modelscope/hub/Qwen/Qwen2___5-7B-Instruct")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Qwen3", "qwen3"),
        ("  Qwen/Qwen3-0.6B \n", "qwen/qwen3-0.6b"),
        ("~", "/home/user"),
        ("~/models/X", "/home/user/models/x"),
        ("~user/models", "~user/models"),  # only a bare "~" or "~/" is the home dir
        ("/models//X///", "/models/x"),
        ("/models/./X", "/models/x"),
        ("/models/X/.", "/models/x"),
        ("~/models/y/../X/", "/home/user/models/x"),
        ("./models/X", "./models/x"),  # relative: left as sent
        ("//", "/"),
        ("/", "/"),
        ("", ""),
        ("   ", ""),
        ("STRASSE", "strasse"),
        ("Straße", "strasse"),  # casefold, not just lower
    ],
)
def test_normalize_model_name(name: str, expected: str) -> None:
    assert normalize_model_name(name, home=HOME) == expected


def test_normalize_home_with_trailing_slash() -> None:
    assert normalize_model_name("~/x", home="/home/user/") == "/home/user/x"
    assert normalize_model_name("~/x", home="/") == "/x"


def test_normalize_default_home_is_expanduser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/tmp/fakehome")
    assert normalize_model_name("~/m") == "/tmp/fakehome/m"
    reg = ModelRegistry([ServedModel("m", "~/models/m")])
    assert reg.resolve("/tmp/fakehome/models/m") is not None


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            MS_QWEN,
            {
                "qwen3",
                "/home/user/.cache/modelscope/hub/models/qwen/qwen3-0.6b",
                "qwen/qwen3-0.6b",
                "qwen3-0.6b",
            },
        ),
        (
            MS_LOWER,
            {
                "qwen3-lower",
                "/home/user/.cache/modelscope/hub/models/qwen/qwen3-0.6b",
                "qwen/qwen3-0.6b",
                "qwen3-0.6b",
            },
        ),
        (HUB, {"qwen/qwen3-0.6b", "qwen3-0.6b"}),
        (
            HF,
            {
                "served-hf",
                "/data/hf/hub/models--qwen--qwen3-8b/snapshots/0123456789abcdef",
                "qwen/qwen3-8b",
                "qwen3-8b",
            },
        ),
        (LOCAL, {"local", "llama", "l3", "/models/llama-3.1-8b", "llama-3.1-8b"}),
        (
            MS_MASKED,
            {
                "masked",
                "/home/user/.cache/modelscope/hub/qwen/qwen2___5-7b-instruct",
                "qwen/qwen2.5-7b-instruct",
                "qwen2.5-7b-instruct",
            },
        ),
        (
            ServedModel("hf-no-snapshot", "/c/models--Qwen--Qwen3-0.6B/"),
            {"hf-no-snapshot", "/c/models--qwen--qwen3-0.6b", "qwen/qwen3-0.6b", "qwen3-0.6b"},
        ),
        (
            ServedModel("gpt2", "/c/hub/models--gpt2/snapshots/abc"),
            {"gpt2", "/c/hub/models--gpt2/snapshots/abc"},
        ),
        (ServedModel("rel", "./Qwen3-0.6B"), {"rel", "./qwen3-0.6b", "qwen3-0.6b"}),
        (ServedModel("dot", "."), {"dot", "."}),
    ],
)
def test_model_keys(model: ServedModel, expected: set[str]) -> None:
    assert model_keys(model, home=HOME) == expected


@pytest.mark.parametrize(
    ("model", "requested"),
    [
        # Seed cases: every spelling resolves to each of these models.
        (MS_QWEN, "~/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B"),
        (MS_QWEN, "/home/user/.cache/modelscope/hub/models/qwen/Qwen3-0.6B/"),
        (MS_QWEN, "Qwen/Qwen3-0.6B"),
        (MS_QWEN, "qwen3-0.6b"),
        (MS_QWEN, "qwen3"),
        (MS_QWEN, "  QWEN3  "),
        (MS_QWEN, "/home/user//.cache/modelscope/hub/models/Qwen/Qwen3-0.6B//"),
        (MS_LOWER, "~/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B"),
        (MS_LOWER, "/home/user/.cache/modelscope/hub/models/qwen/Qwen3-0.6B/"),
        (MS_LOWER, "Qwen/Qwen3-0.6B"),
        (MS_LOWER, "qwen3-0.6b"),
        (HUB, "Qwen/Qwen3-0.6B"),
        (HUB, "qwen3-0.6b"),
        (HUB, "QWEN/QWEN3-0.6B"),
        (HF, "Qwen/Qwen3-8B"),
        (HF, "Qwen3-8B"),
        (HF, "/data/hf/hub/models--Qwen--Qwen3-8B/snapshots/0123456789abcdef/"),
        (LOCAL, "llama"),
        (LOCAL, "l3"),
        (LOCAL, "/models/Llama-3.1-8B"),
        (LOCAL, "Llama-3.1-8B"),
        (MS_MASKED, "Qwen/Qwen2.5-7B-Instruct"),
        (MS_MASKED, "qwen2.5-7b-instruct"),
        (MS_MASKED, "/home/user/.cache/modelscope/hub/Qwen/Qwen2___5-7B-Instruct"),
    ],
)
def test_resolve_single_model(model: ServedModel, requested: str) -> None:
    reg = ModelRegistry([model], home=HOME)
    assert reg.resolve(requested) is model


def test_home_path_in_root_matches_tilde_request() -> None:
    model = ServedModel("m", "/home/user/models/M")
    reg = ModelRegistry([model], home=HOME)
    assert reg.resolve("~/models/M") is model
    assert reg.resolve("~/models/m/") is model


@pytest.mark.parametrize(
    "requested",
    [
        "qwen3-1.7b",
        "Qwen/Qwen3-1.7B",
        "Qwen3",  # served name of another model, not this one
        "/home/user/.cache/modelscope/hub/models/Qwen",
        "~/.cache/modelscope/hub/models/Qwen/Qwen3-0.6",
        "qwen3-0.6b-instruct",
        "gpt-4o",
        "Llama-3.1",
        "/models",
        "models/Llama-3.1-8B",  # relative spelling of an absolute root
    ],
)
def test_resolve_unknown(requested: str) -> None:
    reg = ModelRegistry([HUB, LOCAL], home=HOME)
    assert reg.resolve(requested) is None


@pytest.mark.parametrize("requested", [None, "", "   "])
def test_resolve_missing_gives_default(requested: str | None) -> None:
    reg = ModelRegistry([LOCAL, HUB], home=HOME)
    assert reg.resolve(requested) is LOCAL
    assert reg.default is LOCAL


def test_first_model_wins_shared_keys() -> None:
    reg = ModelRegistry([MS_QWEN, MS_LOWER, HUB], home=HOME)
    # All three claim the hub id and base name; the first two share the root
    # path. The first claimant wins, but a served name beats derived keys.
    assert reg.resolve("Qwen/Qwen3-0.6B") is HUB
    assert reg.resolve("qwen3-0.6b") is MS_QWEN
    assert reg.resolve("~/.cache/modelscope/hub/models/qwen/qwen3-0.6b") is MS_QWEN
    assert reg.resolve("qwen3-lower") is MS_LOWER


def test_precedence_served_name_over_alias_over_derived() -> None:
    a = ServedModel("a", "/models/b", aliases=("c",))
    b = ServedModel("b", "/models/x", aliases=("a",))
    c = ServedModel("c", "/models/y")
    reg = ModelRegistry([a, b, c], home=HOME)
    assert reg.resolve("a") is a  # served name of a beats alias of b
    assert reg.resolve("b") is b  # served name of b beats base name of a's root
    assert reg.resolve("c") is c  # served name of c beats alias of a
    assert reg.resolve("/models/b") is a


def test_alias_beats_derived_key_of_earlier_model() -> None:
    first = ServedModel("first", "/models/shared")
    second = ServedModel("second", "/models/other", aliases=("shared",))
    reg = ModelRegistry([first, second], home=HOME)
    assert reg.resolve("shared") is second
    assert reg.resolve("/models/shared") is first


def test_empty_registry_rejected() -> None:
    with pytest.raises(ValueError):
        ModelRegistry([], home=HOME)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            "qwen=/models/Qwen3-0.6B,q3=Qwen/Qwen3-0.6B",
            {"qwen": "/models/Qwen3-0.6B", "q3": "Qwen/Qwen3-0.6B"},
        ),
        (
            "  qwen = /models/Qwen3-0.6B ,\n q3=Qwen/Qwen3-0.6B  ",
            {"qwen": "/models/Qwen3-0.6B", "q3": "Qwen/Qwen3-0.6B"},
        ),
        ("", {}),
        ("   ", {}),
        ("a=b,", {"a": "b"}),
        (",a=b,,c=d,", {"a": "b", "c": "d"}),
        ("a=b=c", {"a": "b=c"}),
        ("a=b,a=b", {"a": "b"}),
    ],
)
def test_parse_aliases(spec: str, expected: dict[str, str]) -> None:
    assert parse_aliases(spec) == expected


@pytest.mark.parametrize(
    "spec",
    ["qwen", "=target", "alias=", " = ", "a=b,c", "a=b,a=c"],
)
def test_parse_aliases_rejects(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_aliases(spec)


def test_serve_model_is_frozen() -> None:
    with pytest.raises(AttributeError):
        LOCAL.name = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    "requested",
    [
        "~/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B",
        "/srv/other/.cache/modelscope/hub/Qwen/Qwen3-0.6B/",
        "/root/.cache/huggingface/hub/models--Qwen--Qwen3-0.6B",
        "~/.cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/abc123",
    ],
)
def test_a_hub_cache_path_reaches_the_model_served_by_its_hub_id(requested: str) -> None:
    """The seeds' client config names the ModelScope cache path; a server started with
    `Qwen/Qwen3-0.6B` (its copy anywhere, e.g. --models-dir) serves that model."""
    reg = ModelRegistry([ServedModel("qwen3", "Qwen/Qwen3-0.6B")], home=HOME)
    assert reg.resolve(requested) is reg.default
    assert reg.resolve("~/.cache/modelscope/hub/models/Qwen/Qwen3-1.7B") is None
    assert reg.resolve("/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B") is None


def test_alias_targets_must_name_the_served_model() -> None:
    served = ModelRegistry([ServedModel("qwen3", "/models/Qwen3-0.6B")], home=HOME)
    check_alias_targets({"fast": "/models/Qwen3-0.6B/", "q": "qwen3", "b": "Qwen3-0.6B"}, served)
    with pytest.raises(ValueError, match=r"'other' points to '/nonexistent'.*qwen3"):
        check_alias_targets({"fast": "qwen3", "other": "/nonexistent"}, served)
