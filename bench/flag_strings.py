"""Options whose value is a server's own flags, one string (`--gateway-args '--access-log'`).

argparse reads a value that starts with `-` as the next option, so `--gateway-args
'--access-log'` failed with "expected one argument" and only `--gateway-args=--access-log`
worked: in session 47 that cost a device call (session 46's plan wrote `gpu_run.sh`'s
`BENCH_SETS` the first way). Such options take `metavar=FLAGS`, and their
value is joined to them before parsing, whatever it starts with.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

FLAGS = "FLAGS"


def flag_string_options(parser: argparse.ArgumentParser) -> set[str]:
    """The parser's option strings that take a flag string (`metavar=FLAGS`)."""
    return {
        option
        for action in parser._actions
        if action.metavar == FLAGS
        for option in action.option_strings
    }


def joined(argv: Sequence[str] | None, parser: argparse.ArgumentParser) -> list[str]:
    """`argv` (default: the command line) with each flag-string option and the word after
    it made one `--option=value` word; everything else as it was."""
    words = list(sys.argv[1:] if argv is None else argv)
    options = flag_string_options(parser)
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in options and i + 1 < len(words):
            out.append(f"{word}={words[i + 1]}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """`parser.parse_args` with flag strings joined to their options first."""
    return parser.parse_args(joined(argv, parser))
