"""vLLM's own engine flags on our command line and from GATEWAY_* variables."""

from __future__ import annotations

import pytest

from app.cli import build_serve_parser, settings_from_args
from app.engine_args import build_engine_args, engine_env_argv, overrides_from_env

SEED_COMMAND = [
    "/models/Qwen3-0.6B", "--host", "0.0.0.0", "--port", "8000", "--max-model-len", "6384",
    "--tensor-parallel-size", "1", "--gpu-memory-utilization", "0.95", "--enforce-eager",
    "--max-num-seqs", "256", "--max-num-batched-tokens", "8192", "--block-size", "16",
    "--enable-chunked-prefill", "--enable-prefix-caching", "--dtype", "bfloat16",
    "--served-model-name", "qwen3",
]  # fmt: skip


@pytest.fixture(scope="module")
def parser():  # type: ignore[no-untyped-def]
    return build_serve_parser()


def test_the_seeds_vllm_serve_command_parses(parser) -> None:  # type: ignore[no-untyped-def]
    args = parser.parse_args(SEED_COMMAND)
    settings = settings_from_args(args, parser)
    assert settings.model == "/models/Qwen3-0.6B"
    assert settings.host == "0.0.0.0" and settings.port == 8000
    engine = settings.engine_overrides
    assert engine is not None
    assert engine["max_model_len"] == 6384
    assert engine["gpu_memory_utilization"] == 0.95
    assert engine["enforce_eager"] is True
    assert engine["max_num_seqs"] == 256
    assert engine["max_num_batched_tokens"] == 8192
    assert engine["block_size"] == 16
    assert engine["enable_chunked_prefill"] is True
    assert engine["enable_prefix_caching"] is True
    assert engine["served_model_name"] == ["qwen3"]
    engine_args = build_engine_args(engine, "/models/Qwen3-0.6B")
    assert engine_args.max_model_len == 6384 and engine_args.model == "/models/Qwen3-0.6B"


def test_underscore_spelling_is_accepted(parser) -> None:  # type: ignore[no-untyped-def]
    args = parser.parse_args(["m", "--max_model_len", "1024"])
    assert settings_from_args(args, parser).engine_overrides == {"max_model_len": 1024}


def test_unset_engine_flags_are_left_to_vllm(parser) -> None:  # type: ignore[no-untyped-def]
    args = parser.parse_args([])
    settings = settings_from_args(args, parser)
    assert settings.engine_overrides == {}
    assert settings.model is None


def test_env_maps_to_engine_flags(parser) -> None:  # type: ignore[no-untyped-def]
    argv = engine_env_argv(
        parser,
        {
            "GATEWAY_MAX_MODEL_LEN": "6384",
            "GATEWAY_ENFORCE_EAGER": "true",
            "GATEWAY_ENABLE_PREFIX_CACHING": "false",
            "GATEWAY_SERVED_MODEL_NAME": "a b",
            "GATEWAY_PORT": "9000",  # a gateway setting, not an engine flag
        },
    )
    assert "--max-model-len" in argv and "6384" in argv
    assert "--enforce-eager" in argv
    assert "--no-enable-prefix-caching" in argv
    assert argv[argv.index("--served-model-name") + 1 : argv.index("--served-model-name") + 3] == [
        "a",
        "b",
    ]
    assert "9000" not in argv


def test_overrides_from_env_alone() -> None:
    assert overrides_from_env({"GATEWAY_MAX_NUM_SEQS": "32"}) == {"max_num_seqs": 32}


def test_command_line_beats_env(parser) -> None:  # type: ignore[no-untyped-def]
    env_argv = engine_env_argv(parser, {"GATEWAY_MAX_MODEL_LEN": "100"})
    args = parser.parse_args([*env_argv, "--max-model-len", "200"])
    assert settings_from_args(args, parser).engine_overrides == {"max_model_len": 200}


def test_gateway_settings_flags_exist(parser) -> None:  # type: ignore[no-untyped-def]
    args = parser.parse_args(
        [
            "--default-system-prompt",
            "hi",
            "--no-fill-system-message",
            "--no-allow-demo-fallback",
            "--log-level",
            "DEBUG",
        ]
    )
    settings = settings_from_args(args, parser)
    assert settings.default_system_prompt == "hi"
    assert settings.fill_system_message is False
    assert settings.allow_demo_fallback is False
    assert settings.log_level == "debug"


def test_env_gateway_settings(monkeypatch: pytest.MonkeyPatch, parser) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GATEWAY_PORT", "9123")
    monkeypatch.setenv("GATEWAY_MODEL", "/m")
    settings = settings_from_args(parser.parse_args([]), parser)
    assert settings.port == 9123 and settings.model == "/m"
    flagged = settings_from_args(parser.parse_args(["--port", "1"]), parser)
    assert flagged.port == 1


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--port", "99999"], "port: Input should be less than or equal to 65535"),
        (["--model-aliases", "qwen"], "bad model alias 'qwen': expected ALIAS=TARGET"),
    ],
)
def test_a_bad_gateway_setting_is_a_usage_error_before_any_loading(  # type: ignore[no-untyped-def]
    parser, capsys, argv: list[str], says: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        settings_from_args(parser.parse_args(argv), parser)
    assert exit_.value.code == 2  # argparse's, not the engine-death exit status 3
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_gateway_choice_flags_take_any_case_without_vllms_own() -> None:
    """Where vLLM's parser has no `--log-level` (vLLM 0.26) the gateway's own flag takes
    `DEBUG` as vLLM's does; seen on the H200, where it was 'invalid choice'."""
    import argparse

    from app.cli import add_settings_flags

    parser = argparse.ArgumentParser()
    add_settings_flags(parser)
    args = parser.parse_args(["--log-level", "DEBUG", "--log-format", "JSON"])
    assert (args.gw_log_level, args.gw_log_format) == ("debug", "json")
    with pytest.raises(SystemExit):
        parser.parse_args(["--log-level", "LOUD"])
