"""The seeds' traps, fixed in the server, observed through real requests."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.integration.conftest import LiveGateway


def prompt_tokens(gateway: LiveGateway, path: str = "/v1/chat/completions", **body: object) -> int:
    payload = {"max_tokens": 1, **body}
    r = httpx.post(gateway.base_url + path, json=payload, timeout=120)
    assert r.status_code == 200, r.text
    return int(r.json()["usage"]["prompt_tokens"])


def test_zero_width_characters_are_stripped(gateway: LiveGateway) -> None:
    clean = prompt_tokens(gateway, messages=[{"role": "user", "content": "hello"}])
    dirty = prompt_tokens(
        gateway, messages=[{"role": "user", "content": "he\u200bllo\u2060\ufeff"}]
    )
    parts = prompt_tokens(
        gateway, messages=[{"role": "user", "content": [{"type": "text", "text": "hel\u200clo"}]}]
    )
    assert clean == dirty == parts


def test_missing_system_message_is_filled(gateway: LiveGateway) -> None:
    without = prompt_tokens(gateway, messages=[{"role": "user", "content": "hello"}])
    with_empty = prompt_tokens(
        gateway, messages=[{"role": "system", "content": ""}, {"role": "user", "content": "hello"}]
    )
    assert without == with_empty


def test_late_system_and_developer_messages_are_moved_first(gateway: LiveGateway) -> None:
    late = prompt_tokens(
        gateway,
        messages=[
            {"role": "user", "content": "hello"},
            {"role": "developer", "content": "be nice"},
        ],
    )
    first = prompt_tokens(
        gateway,
        messages=[{"role": "system", "content": "be nice"}, {"role": "user", "content": "hello"}],
    )
    assert late == first


@pytest.mark.parametrize("path", ["/v1/chat/completions/", "//v1/chat/completions"])
def test_tolerant_paths(gateway: LiveGateway, path: str) -> None:
    assert prompt_tokens(gateway, path, messages=[{"role": "user", "content": "x"}]) > 0


def test_model_name_spellings(gateway: LiveGateway) -> None:
    home = str(gateway.home)
    tilde = "~" + gateway.model[len(home) :]
    names = [
        gateway.model, gateway.model + "/", tilde, tilde + "/", gateway.model.upper(),
        "Qwen/Qwen3-0.6B", "qwen/qwen3-0.6b", "Qwen3-0.6B", "qwen", None,
    ]  # fmt: skip
    client = openai.OpenAI(base_url=gateway.v1, api_key="EMPTY", max_retries=0)
    for name in names:
        kwargs = {"model": name} if name is not None else {}
        r = httpx.post(
            gateway.v1 + "/chat/completions",
            json={"messages": [{"role": "user", "content": "x"}], "max_tokens": 1, **kwargs},
            timeout=60,
        )
        assert r.status_code == 200, (name, r.text)
    resp = client.chat.completions.create(
        model=tilde, messages=[{"role": "user", "content": "x"}], max_tokens=1
    )
    assert resp.model == tilde


def test_model_retrieve_takes_the_same_spellings(gateway: LiveGateway) -> None:
    """`client.models.retrieve()` finds the model by any name chat accepts; the SDK sends
    the name as one path segment (`/` as %2F), curl and browsers with bare slashes."""
    tilde = "~" + gateway.model[len(str(gateway.home)) :]
    client = openai.OpenAI(base_url=gateway.v1, api_key="EMPTY", max_retries=0)
    assert client.models.retrieve(gateway.model).id == gateway.model
    assert client.models.retrieve("qwen").id == "qwen"  # a listed alias: its own entry
    for name in (gateway.model + "/", tilde, "Qwen/Qwen3-0.6B", "QWEN3-0.6B"):
        model = client.models.retrieve(name)
        assert (model.id, model.object, model.owned_by) == (
            gateway.model,
            "model",
            "vllm-gateway",
        ), name
    bare = httpx.get(gateway.v1 + "/models/" + gateway.model, timeout=10)
    assert bare.status_code == 200 and bare.json()["id"] == gateway.model
    for unknown in ("gpt-4o", " "):
        with pytest.raises(openai.NotFoundError) as err:
            client.models.retrieve(unknown)
        body = err.value.body
        assert isinstance(body, dict)
        assert (body["code"], body["param"]) == ("model_not_found", "model")
        assert gateway.model in body["message"]  # the 404 lists the valid names


def test_normalizations_are_counted(gateway: LiveGateway) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    def count(kind: str) -> float:
        text = httpx.get(gateway.base_url + "/metrics").text
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == "gateway_normalizations_total" and s.labels.get("kind") == kind:
                    return s.value
        return 0.0

    before = {k: count(k) for k in ("system_message", "invisible_chars", "sampling_defaults")}
    prompt_tokens(gateway, messages=[{"role": "user", "content": "a\u200bb"}])
    for kind, value in before.items():
        assert count(kind) == value + 1, kind
