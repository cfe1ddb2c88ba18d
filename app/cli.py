"""`vllm-gateway serve|tiny-model`: the command line.

`serve` takes vLLM's own engine flags (vLLM's parser adds them) plus one flag per
gateway setting, generated from `Settings`; env vars `GATEWAY_*` and `.env` supply
defaults for both, and flags on the command line win.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from app.model_source import ModelSource
from app.settings import DEFAULT_MODEL, ENV_PREFIX, Settings, gateway_field_names

logger = logging.getLogger("app.cli")


def _field_type(annotation: Any) -> type:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if typing.get_origin(annotation) is typing.Literal:
        return str
    return annotation if isinstance(annotation, type) else str


def _lowercase(value: str) -> str:
    return value.lower()


def add_settings_flags(parser: argparse.ArgumentParser) -> list[str]:
    """One `--flag` per Settings field that vLLM's parser does not already own."""
    taken = {opt for action in parser._actions for opt in action.option_strings}
    added = []
    for name in gateway_field_names():
        field = Settings.model_fields[name]
        flag = "--" + name.replace("_", "-")
        if flag in taken:
            continue
        kind: Callable[[str], Any] = _field_type(field.annotation)
        help_text = f"{field.description} [env {ENV_PREFIX}{name.upper()}]"
        if kind is bool:
            parser.add_argument(
                flag,
                dest=f"gw_{name}",
                action=argparse.BooleanOptionalAction,
                default=argparse.SUPPRESS,
                help=help_text,
            )
        else:
            choices = (
                typing.get_args(field.annotation)
                if typing.get_origin(field.annotation) is typing.Literal
                else None
            )
            if choices and all(isinstance(c, str) and c == c.lower() for c in choices):
                kind = _lowercase  # `--log-level DEBUG`, as vLLM's own flag takes it
            parser.add_argument(
                flag,
                dest=f"gw_{name}",
                type=kind,
                choices=choices,
                default=argparse.SUPPRESS,
                help=help_text,
            )
        added.append(name)
    return added


def _dotenv(path: str = ".env") -> dict[str, str]:
    if not os.path.isfile(path):
        return {}
    from dotenv import dotenv_values

    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def build_serve_parser() -> argparse.ArgumentParser:
    from app.engine_args import add_engine_args, new_engine_parser

    parser = new_engine_parser(
        prog="vllm-gateway serve",
        description="Serve a Qwen3 model behind an OpenAI API with vLLM in-process. "
        "Accepts vLLM's engine flags as `vllm serve` spells them.",
    )
    parser.add_argument(
        "model_tag",
        nargs="?",
        default=None,
        help=f"Model path or hub id (default {DEFAULT_MODEL}, demo model when offline) "
        f"[env {ENV_PREFIX}MODEL]",
    )
    add_engine_args(parser)
    add_settings_flags(parser)
    return parser


def settings_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Settings:
    """Settings from parsed flags: gateway flags override env; engine flags kept as set."""
    from app.engine_args import engine_overrides

    overrides: dict[str, Any] = {
        key[3:]: value for key, value in vars(args).items() if key.startswith("gw_")
    }
    engine = engine_overrides(args, parser)
    vllm_level = engine.get("log_level")
    if isinstance(vllm_level, str) and vllm_level.lower() in ("debug", "info", "warning", "error"):
        overrides.setdefault("log_level", vllm_level.lower())  # vLLM owns --log-level
    model = args.model_tag or engine.pop("model", None)
    if model is not None:
        overrides["model"] = model
    try:
        return Settings(engine_overrides=engine, **overrides)
    except ValidationError as exc:  # a bad setting: one line per field, before any loading
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'settings'}: {error['msg']}"
            for error in exc.errors()
        )
        parser.error(problems)


def serve(argv: Sequence[str]) -> int:
    from app.engine_args import engine_env_argv

    parser = build_serve_parser()
    env = {**_dotenv(), **os.environ}
    args = parser.parse_args([*engine_env_argv(parser, env), *argv])
    settings = settings_from_args(args, parser)
    configure_logging(settings.log_level, settings.log_format)
    from app.port_check import address_taken

    taken = address_taken(settings.host, settings.port)
    if taken is not None:  # now, not after the engine has loaded
        logger.error("cannot serve: %s", taken)
        return 1
    from app.model_source import ModelUnavailableError, resolve_model_source

    try:
        source = resolve_model_source(settings)
    except ModelUnavailableError as exc:
        logger.error("%s", exc)
        return 2
    from app.process_setup import prepare_process

    prepare_process(os.environ)
    return run_server(settings, source)


def configure_logging(level: str, log_format: str = "text") -> None:
    from app.logs import TEXT_FORMAT, use_json_logs
    from app.request_id import RequestIdFilter

    logging.basicConfig(level=level.upper(), format=TEXT_FORMAT)
    for handler in logging.getLogger().handlers:
        handler.addFilter(RequestIdFilter())
    if log_format == "json":
        use_json_logs(level)


def run_server(settings: Settings, source: ModelSource | None = None) -> int:
    from app.engine_core_setup import EngineCoreSetup, set_engine_core_setup
    from app.workers import resolve_worker_count, run_workers

    interval_ms = settings.engine_switch_interval_ms
    set_engine_core_setup(
        EngineCoreSetup(
            switch_interval_s=None if interval_ms is None else interval_ms / 1000,
            fast_block_hashes=settings.fast_block_hashes,
        )
    )
    workers = resolve_worker_count(settings.api_server_count)
    if workers > 1:
        from app.model_source import resolve_model_source

        settings = settings.model_copy(update={"api_server_count": workers})
        return run_workers(settings, source or resolve_model_source(settings))
    from app.main import create_app
    from app.server import serve_app

    return serve_app(create_app(settings, source=source), settings)


def tiny_model(argv: Sequence[str]) -> int:
    from app.tiny_model import PRESETS, write_tiny_model

    parser = argparse.ArgumentParser(
        prog="vllm-gateway tiny-model",
        description="Write a tiny random Qwen3 model (for tests and the demo fallback).",
    )
    parser.add_argument("directory")
    parser.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(list(argv))
    path = write_tiny_model(args.directory, preset=args.preset, seed=args.seed)
    sys.stdout.write(f"{path}\n")
    return 0


def download(argv: Sequence[str]) -> int:
    from app.download import main as download_main

    return download_main(argv)


COMMANDS = {"serve": serve, "tiny-model": tiny_model, "download": download}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        sys.stderr.write(
            "usage: vllm-gateway {serve,download,tiny-model} ...\n"
            "  serve [MODEL] [--host H] [--port P] [vLLM engine flags]\n"
            "  download [MODEL] [--source modelscope|huggingface] [--dir DIR]\n"
            "  tiny-model DIR [--preset tiny|qwen3-0.6b]\n"
        )
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return COMMANDS[argv[0]](argv[1:])
