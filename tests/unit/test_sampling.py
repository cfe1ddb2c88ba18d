"""Token budget and SamplingParams building."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from app.chat.sampling import build_sampling_params, completion_budget
from app.errors import GatewayError
from app.schemas.chat import ChatCompletionRequest


def req(**fields: Any) -> ChatCompletionRequest:
    fields.setdefault("messages", [{"role": "user", "content": "hi"}])
    return ChatCompletionRequest.model_validate(fields)


def test_budget_defaults_to_the_room_left() -> None:
    assert completion_budget(req(), prompt_len=100, max_model_len=2048) == 1948


def test_max_completion_tokens_wins_over_max_tokens() -> None:
    assert completion_budget(req(max_tokens=50, max_completion_tokens=20), 10, 2048) == 20


def test_context_length_exceeded_names_both_numbers() -> None:
    with pytest.raises(GatewayError) as err:
        completion_budget(req(max_tokens=2000), prompt_len=100, max_model_len=2048)
    assert err.value.code == "context_length_exceeded"
    assert "2048" in err.value.message and "2100" in err.value.message
    assert err.value.param == "max_tokens"


def test_prompt_alone_too_long() -> None:
    with pytest.raises(GatewayError) as err:
        completion_budget(req(), prompt_len=2048, max_model_len=2048)
    assert err.value.code == "context_length_exceeded"


def test_sampling_params_carry_every_field() -> None:
    from vllm.sampling_params import RequestOutputKind

    params = build_sampling_params(
        req(
            n=2,
            stop="x",
            seed=7,
            temperature=0.3,
            top_p=0.9,
            top_k=5,
            min_p=0.1,
            presence_penalty=0.5,
            frequency_penalty=0.2,
            repetition_penalty=1.1,
            logprobs=True,
            top_logprobs=3,
            ignore_eos=True,
        ),
        max_tokens=12,
        stream=True,
    )
    assert (params.n, params.max_tokens, params.seed) == (2, 12, 7)
    assert params.stop == ["x"]
    assert (params.temperature, params.top_p, params.top_k, params.min_p) == (0.3, 0.9, 5, 0.1)
    assert (params.presence_penalty, params.frequency_penalty) == (0.5, 0.2)
    assert params.repetition_penalty == 1.1
    assert params.logprobs == 3 and params.ignore_eos
    assert params.output_kind == RequestOutputKind.DELTA
    assert build_sampling_params(req(), 5, stream=False).output_kind == RequestOutputKind.FINAL_ONLY


def test_top_p_zero_keeps_the_most_likely_token_alone() -> None:
    """OpenAI's range for top_p is [0, 1]; vLLM refuses 0, so it reaches the engine as
    top_k 1 (over any top_k given), and a top_p above 0 is passed as it is."""
    params = build_sampling_params(req(top_p=0, top_k=20, temperature=0.7), 5, stream=False)
    assert (params.top_p, params.top_k, params.temperature) == (1.0, 1, 0.7)
    kept = build_sampling_params(req(top_p=1e-6), 5, stream=False)
    assert kept.top_p == 1e-6 and kept.top_k != 1
    with pytest.raises(ValidationError):
        req(top_p=-0.1)


def test_each_requests_params_are_copied_shallowly_by_the_engine_client() -> None:
    """Made for one request, the params let vLLM's engine client copy them shallowly
    (`skip_clone`) instead of deep-copying them; a copy's changes stay its own."""
    params = build_sampling_params(req(stop="x", temperature=0.3), max_tokens=12, stream=True)
    assert params.skip_clone
    copy = params.clone()
    assert copy is not params and copy.stop == ["x"]
    copy.max_tokens = 3
    assert params.max_tokens == 12


def test_logit_bias_reaches_the_engine_as_token_ids() -> None:
    params = build_sampling_params(req(logit_bias={"5": 10, "7": -100}), 5, stream=False, vocab=100)
    assert params.logit_bias == {5: 10.0, 7: -100.0}
    assert build_sampling_params(req(), 5, stream=False).logit_bias is None


@pytest.mark.parametrize("key", ["abc", "-3", "100", "1.5"])
def test_logit_bias_keys_must_be_token_ids_of_the_vocabulary(key: str) -> None:
    with pytest.raises(GatewayError) as err:
        build_sampling_params(req(logit_bias={key: 1}), 5, stream=False, vocab=100)
    assert err.value.param == "logit_bias" and err.value.status == 400


def test_logit_bias_values_stay_within_openais_range() -> None:
    with pytest.raises(ValidationError):
        req(logit_bias={"3": 150})
    assert req(logit_bias={"3": -100}).logit_bias == {"3": -100.0}


def test_top_logprobs_without_logprobs_is_rejected() -> None:
    with pytest.raises(GatewayError):
        build_sampling_params(req(top_logprobs=2), 5, stream=False)


def test_engine_failures_map_to_statuses() -> None:
    from app.engine_errors import engine_failure

    class EngineDeadError(Exception):
        pass

    class EngineGenerateError(Exception):
        pass

    assert engine_failure(EngineDeadError()).status == 503
    wrapped = EngineGenerateError()
    wrapped.__cause__ = OverflowError("can't serialize ints")
    assert engine_failure(wrapped).status == 400
    assert engine_failure(RuntimeError("x")).status == 500


def test_an_engine_validation_error_names_its_parameter() -> None:
    from app.engine_errors import engine_failure

    exceptions = pytest.importorskip("vllm.exceptions")
    error = exceptions.VLLMValidationError
    named = engine_failure(error("too many stop strings", parameter="stop", value=5))
    assert (named.status, named.param) == (400, "stop")
    assert named.message == "The engine rejected the request: too many stop strings"
    plain = engine_failure(error("Grammar error: Invalid type: nope"))
    assert (plain.status, plain.param) == (400, None)
    assert plain.message == "The engine rejected the request: Grammar error: Invalid type: nope"


def _raised_in(module: str, function: str, exc: Exception) -> Exception:
    """`exc` as raised by `function` of `module` (where vLLM checks grammars)."""
    namespace: dict[str, Any] = {"__name__": module, "exc": exc}
    exec(f"def {function}():\n    raise exc", namespace)  # a module of that name, in a test
    try:
        namespace[function]()
    except Exception as raised:
        return raised
    raise AssertionError("not raised")  # pragma: no cover


def test_a_grammar_the_engine_refused_names_the_constraint_field() -> None:
    """vLLM's grammar checks raise without a parameter (ValueError in 0.26,
    VLLMValidationError later): raised there, the error names the field the request's
    constraint came from; raised anywhere else, none."""
    from app.engine_errors import engine_failure

    for module, function in (
        ("vllm.v1.structured_output.backend_guidance", "validate_guidance_grammar"),
        ("vllm.sampling_params", "_validate_structured_outputs"),
    ):
        refused = _raised_in(module, function, ValueError("Grammar error: Invalid type: nope"))
        error = engine_failure(refused, "response_format")
        assert (error.status, error.param) == (400, "response_format"), module
        assert error.message == "The engine rejected the request: Grammar error: Invalid type: nope"
        assert engine_failure(refused).param is None  # a request without a constraint
    elsewhere = _raised_in("vllm.v1.engine.input_processor", "_validate_params", ValueError("x"))
    assert engine_failure(elsewhere, "response_format").param is None


def test_a_cut_stream_ends_with_one_error_frame() -> None:
    import json

    from app.engine_errors import error_frame

    ours = error_frame(GatewayError("too long", param="max_tokens"))
    theirs = error_frame(RuntimeError("x"))
    for frame in (ours, theirs):
        assert frame.startswith(b"data: {") and frame.endswith(b"}\n\n")
    assert json.loads(ours[6:])["error"]["param"] == "max_tokens"
    assert json.loads(theirs[6:])["error"]["code"] == "engine_error"


def test_include_stop_str_in_output_reaches_the_engine_but_not_a_think_phase() -> None:
    asked = req(stop=["x"], include_stop_str_in_output=True)
    assert build_sampling_params(asked, 5, stream=False).include_stop_str_in_output is True
    assert (
        build_sampling_params(req(stop=["x"]), 5, stream=False).include_stop_str_in_output is False
    )
    # the reasoning phase of a constrained answer ends at `</think>`, which the budget writes
    think = build_sampling_params(asked, 5, stream=False, stop_at="</think>")
    assert think.include_stop_str_in_output is False


@pytest.mark.parametrize("effort", ["none", "Low", "medium", "HIGH", "xhigh", "off"])
def test_known_reasoning_efforts_are_accepted(effort: str) -> None:
    assert req(reasoning_effort=effort).reasoning_effort == effort


def test_an_unknown_reasoning_effort_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValidationError) as err:
        req(reasoning_effort="bogus")
    assert err.value.errors()[0]["loc"] == ("reasoning_effort",)
    assert "bogus" in str(err.value) and "minimal" in str(err.value)


def test_a_refusal_part_is_read_as_text_and_other_parts_still_refused() -> None:
    refusal = {"type": "refusal", "refusal": "I won't."}
    body = req(
        messages=[{"role": "assistant", "content": [refusal, {"type": "text", "text": "!"}]}]
    )
    assert body.messages[0].text() == "I won't.!"
    with pytest.raises(ValidationError, match="reads text only"):
        req(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])
