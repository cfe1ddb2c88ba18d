"""`bench.paired`'s `--server` specs: `LABEL=[VAR=VALUE...] KIND FLAGS...` (also read by
`bench.cold_start`)."""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import dataclass

from bench.commands import RUST_FRONTEND_VAR


@dataclass(frozen=True)
class ServerSpec:
    """`--server LABEL=[VAR=VALUE...] KIND FLAGS...`, or just `KIND` (then LABEL is KIND);
    the VAR=VALUE words (a label is needed then) are that server's own environment."""

    label: str
    kind: str
    flags: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()

    @property
    def frontend(self) -> str:
        """vLLM's Rust frontend when the spec sets VLLM_USE_RUST_FRONTEND=1 (it needs the
        CLI's command line, see bench.commands.server_argv)."""
        return "rust" if dict(self.env).get(RUST_FRONTEND_VAR) == "1" else "python"

    @property
    def root(self) -> str | None:
        """The checkout to run this gateway from (`GATEWAY_ROOT=DIR`); None: this one."""
        return dict(self.env).get(GATEWAY_ROOT)

    @property
    def process_env(self) -> dict[str, str]:
        """The server's own environment: the spec's variables but GATEWAY_ROOT."""
        return {k: v for k, v in self.env if k != GATEWAY_ROOT}


GATEWAY_ROOT = "GATEWAY_ROOT"
_ENV_WORD = re.compile(r"([A-Z_][A-Z0-9_]*)=(.*)", re.DOTALL)


def parse_spec(text: str) -> ServerSpec:
    label, sep, rest = text.partition("=")
    named = bool(sep) and bool(label) and label.strip() == label and " " not in label
    words = shlex.split(rest if named else text)  # not named: '=' was in a flag
    env: list[tuple[str, str]] = []
    while named and words and (match := _ENV_WORD.fullmatch(words[0])):
        env.append((match[1], match[2]))
        words.pop(0)
    if not words or words[0] not in ("vllm", "gateway"):
        raise ValueError(f"--server {text!r}: expected [LABEL=[VAR=VALUE...]]vllm|gateway [FLAGS]")
    label = label if named else words[0]
    return ServerSpec(label=label, kind=words[0], flags=tuple(words[1:]), env=tuple(env))


def parse_specs(parser: argparse.ArgumentParser, texts: list[str]) -> list[ServerSpec]:
    """The `--server` options (default: vllm, gateway); a parser error for a bad one or for
    a label used twice."""
    try:
        specs = [parse_spec(s) for s in texts or ["vllm", "gateway"]]
    except ValueError as exc:
        parser.error(str(exc))
    if len({s.label for s in specs}) != len(specs):
        parser.error("--server labels must differ")
    return specs
