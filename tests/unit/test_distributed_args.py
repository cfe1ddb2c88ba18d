"""Tensor/pipeline parallelism and Ray reach vLLM's AsyncEngineArgs unchanged."""

from __future__ import annotations

import pytest

from app.cli import build_serve_parser, settings_from_args
from app.engine_args import build_engine_args, overrides_from_env


@pytest.fixture(scope="module")
def parser():  # type: ignore[no-untyped-def]
    return build_serve_parser()


def test_flags_reach_engine_args(parser) -> None:  # type: ignore[no-untyped-def]
    args = parser.parse_args(
        [
            "/models/Qwen3-0.6B",
            "--tensor-parallel-size", "2",
            "--pipeline-parallel-size", "2",
            "--distributed-executor-backend", "ray",
        ]
    )  # fmt: skip
    settings = settings_from_args(args, parser)
    assert settings.engine_overrides is not None
    engine_args = build_engine_args(settings.engine_overrides, str(settings.model))
    assert engine_args.tensor_parallel_size == 2
    assert engine_args.pipeline_parallel_size == 2
    assert engine_args.distributed_executor_backend == "ray"


def test_short_and_underscore_spellings(parser) -> None:  # type: ignore[no-untyped-def]
    args = parser.parse_args(["m", "-tp", "4", "--pipeline_parallel_size", "2"])
    overrides = settings_from_args(args, parser).engine_overrides
    assert overrides == {"tensor_parallel_size": 4, "pipeline_parallel_size": 2}


def test_env_vars_reach_engine_args() -> None:
    overrides = overrides_from_env(
        {
            "GATEWAY_TENSOR_PARALLEL_SIZE": "2",
            "GATEWAY_PIPELINE_PARALLEL_SIZE": "2",
            "GATEWAY_DISTRIBUTED_EXECUTOR_BACKEND": "ray",
        }
    )
    engine_args = build_engine_args(overrides, "/models/Qwen3-0.6B")
    assert (engine_args.tensor_parallel_size, engine_args.pipeline_parallel_size) == (2, 2)
    assert engine_args.distributed_executor_backend == "ray"


def test_defaults_stay_single_device(parser) -> None:  # type: ignore[no-untyped-def]
    overrides = settings_from_args(parser.parse_args([]), parser).engine_overrides
    engine_args = build_engine_args(overrides or {}, "m")
    assert engine_args.tensor_parallel_size == 1 and engine_args.pipeline_parallel_size == 1
    assert engine_args.distributed_executor_backend is None
