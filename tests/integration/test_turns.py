"""A conversation's turns on the real engine, through the openai SDK: the gateway remembers
the prompt parts it has encoded (`app.encode_turns`), and each turn's prompt is still the
whole conversation's. The chat path encodes with fastokens (`app.fast_encode`), `/tokenize`
with the Hugging Face tokenizer: their counts must agree."""

from __future__ import annotations

import httpx
import openai

from tests.integration.conftest import LiveGateway
from tests.integration.live_helpers import metric


def test_a_conversations_turns_have_the_prompt_tokens_of_the_whole(
    client: openai.OpenAI, gateway: LiveGateway
) -> None:
    """Each turn resends the conversation; the gateway encodes only the parts between added
    tokens it has not seen (`app.encode_turns`). Every turn's prompt must still count what
    `/tokenize` counts for the same messages (rendered the same way, encoded whole)."""
    assert "prompts encoded by fastokens" in gateway.log.read_text(errors="replace")
    before = {s: _turn_tokens(gateway, s) for s in ("remembered", "encoded")}
    prompt_tokens = 0
    messages: list[dict[str, str]] = []
    for turn in range(4):
        messages.append(
            {
                "role": "user",
                "content": f"Turn {turn}: <think> stays text here, café 于是乎 "
                + " ".join(f"word{turn}{i}" for i in range(60)),
            }
        )
        resp = client.chat.completions.create(
            model=gateway.model,
            messages=messages,  # type: ignore[arg-type]
            max_tokens=12,
        )
        counted = httpx.post(
            gateway.base_url + "/tokenize",
            json={"model": gateway.model, "messages": messages},
            timeout=30,
        ).json()["count"]
        assert resp.usage is not None and resp.usage.prompt_tokens == counted, turn
        prompt_tokens += counted
        messages.append({"role": "assistant", "content": resp.choices[0].message.content or ""})
    # /metrics: the later turns' earlier messages were remembered, their new ones encoded
    grown = {s: _turn_tokens(gateway, s) - before[s] for s in before}
    assert grown["remembered"] > 0 and grown["encoded"] > 0, grown
    assert sum(grown.values()) < prompt_tokens, (grown, prompt_tokens)


def _turn_tokens(gateway: LiveGateway, source: str) -> float:
    return metric(gateway, "gateway_prompt_turn_tokens_total", labels={"source": source})
