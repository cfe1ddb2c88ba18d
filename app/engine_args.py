"""vLLM's own engine flags: parser reuse, `GATEWAY_<FLAG>` env mapping, engine config.

Nothing here re-declares an engine option: the parser is vLLM's, so every flag that
`vllm serve` accepts for the engine (`--max-model-len 6384`, `--enforce-eager`, ...)
is accepted as it is spelled there.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.engine.arg_utils import AsyncEngineArgs

ENGINE_ENV_PREFIX = "GATEWAY_"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def add_engine_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add vLLM's AsyncEngineArgs flags to `parser` (imports vLLM)."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    return AsyncEngineArgs.add_cli_args(parser)  # type: ignore[no-any-return]


def new_engine_parser(**kwargs: Any) -> argparse.ArgumentParser:
    """A vLLM FlexibleArgumentParser (accepts `--max_model_len` and `--max-model-len`)."""
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    return FlexibleArgumentParser(**kwargs)  # type: ignore[no-any-return]


def engine_dests(parser: argparse.ArgumentParser) -> set[str]:
    """The argparse dests that belong to vLLM's AsyncEngineArgs."""
    import dataclasses

    from vllm.engine.arg_utils import AsyncEngineArgs

    fields = {f.name for f in dataclasses.fields(AsyncEngineArgs)}
    return {a.dest for a in parser._actions if a.dest in fields}


def _flag_of(action: argparse.Action) -> str | None:
    longs = [o for o in action.option_strings if o.startswith("--") and not o.startswith("--no-")]
    return longs[0] if longs else None


def engine_env_argv(
    parser: argparse.ArgumentParser,
    environ: Mapping[str, str],
    *,
    skip: Sequence[str] = ("model",),
) -> list[str]:
    """Turn `GATEWAY_MAX_MODEL_LEN=6384` style variables into `--max-model-len 6384`.

    Booleans take true/false (`GATEWAY_ENFORCE_EAGER=true`); list flags take
    space-separated values. Only vLLM engine flags are mapped; unknown names are ignored.
    """
    argv: list[str] = []
    dests = engine_dests(parser)
    for action in parser._actions:
        if action.dest not in dests or action.dest in skip:
            continue
        value = environ.get(ENGINE_ENV_PREFIX + action.dest.upper())
        flag = _flag_of(action)
        if value is None or flag is None:
            continue
        argv.extend(_tokens_for(action, flag, value))
    return argv


def _tokens_for(action: argparse.Action, flag: str, value: str) -> list[str]:
    lowered = value.strip().lower()
    if isinstance(action, argparse.BooleanOptionalAction):
        if lowered in _TRUE:
            return [flag]
        if lowered in _FALSE:
            return ["--no-" + flag[2:]]
        raise ValueError(f"{ENGINE_ENV_PREFIX}{action.dest.upper()} must be true or false")
    if action.nargs == 0:  # store_true / store_const
        return [flag] if lowered in _TRUE else []
    if action.nargs in ("+", "*"):
        return [flag, *value.split()]
    return [flag, value]


def engine_overrides(
    namespace: argparse.Namespace, parser: argparse.ArgumentParser
) -> dict[str, Any]:
    """The engine options the user set (values that differ from vLLM's defaults)."""
    out: dict[str, Any] = {}
    for dest in engine_dests(parser):
        if not hasattr(namespace, dest):
            continue
        value = getattr(namespace, dest)
        if value != parser.get_default(dest):
            out[dest] = value
    return out


def overrides_from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """Engine options from `GATEWAY_<FLAG>` variables alone (no command line)."""
    parser = add_engine_args(new_engine_parser(add_help=False))
    namespace = parser.parse_args(engine_env_argv(parser, environ))
    return engine_overrides(namespace, parser)


def build_engine_args(overrides: Mapping[str, Any], model: str) -> AsyncEngineArgs:
    """AsyncEngineArgs with vLLM's defaults, the user's options and the resolved model."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    fields = {k: v for k, v in overrides.items() if k != "model"}
    return AsyncEngineArgs(model=model, **fields)


def create_vllm_config(engine_args: AsyncEngineArgs) -> VllmConfig:
    """The engine config exactly as `vllm serve` builds it.

    The OpenAI-server usage context gives the same max_num_seqs and
    max_num_batched_tokens defaults as `vllm serve` (AsyncLLM's default context
    picks smaller ones).
    """
    from vllm.usage.usage_lib import UsageContext

    return engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
