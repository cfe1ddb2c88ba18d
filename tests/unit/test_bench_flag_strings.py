"""A server's flags given to a bench tool as `--X-args '--flag'` (a space, not `=`)."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable

import pytest

from bench import client_limit, profile
from bench.flag_strings import FLAGS, flag_string_options, joined, parse
from bench.options import build_parser

# session 47's BENCH_SETS, as gpu_run.sh's `eval "set -- $flags"` splits it
SESSION_47_SET = "--gateway-args '--access-log' --gwb-args '--engine-inline-outputs'"


def test_the_space_form_parses_as_the_equals_form() -> None:
    argv = ["--servers", "vllm,gateway,gwb", "--gwb-root", ".", *shlex.split(SESSION_47_SET)]
    with pytest.raises(SystemExit):  # argparse alone: "expected one argument"
        build_parser().parse_args(argv)
    args = parse(build_parser(), argv)
    assert args.gateway_args == "--access-log"
    assert args.gwb_args == "--engine-inline-outputs"
    assert args.servers == "vllm,gateway,gwb"
    equals = parse(build_parser(), ["--gateway-args=--access-log", "--rounds", "2"])
    assert (equals.gateway_args, equals.rounds) == ("--access-log", 2)


def test_values_of_several_words_and_engine_args_stay_whole() -> None:
    engine = "--max-num-seqs 8 --enforce-eager"
    args = parse(build_parser(), ["--engine-args", engine, "--vllm-args", "-O0", "--rounds", "3"])
    assert args.engine_args == engine
    assert args.vllm_args == "-O0"
    assert args.rounds == 3


def test_only_flag_string_options_are_joined() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-args", default="", metavar=FLAGS)
    parser.add_argument("--rounds", type=int, default=1)
    assert flag_string_options(parser) == {"--server-args"}
    assert joined(["--rounds", "2", "--server-args", "--x 1"], parser) == [
        "--rounds",
        "2",
        "--server-args=--x 1",
    ]
    # an option left without its value is argparse's error still
    assert joined(["--server-args"], parser) == ["--server-args"]
    with pytest.raises(SystemExit):
        parse(parser, ["--server-args"])


@pytest.mark.parametrize("main", [profile.main, client_limit.main], ids=["profile", "client_limit"])
def test_the_tools_with_server_args_take_the_space_form(
    main: Callable[[list[str] | None], int], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--help` after the flag string: exit 0 once the value is read as a value (argparse
    alone stops at `--server-args` with exit 2)."""
    with pytest.raises(SystemExit) as stopped:
        main(["--server-args", "--api-server-count 1", "--help"])
    assert stopped.value.code == 0
    assert "--server-args FLAGS" in capsys.readouterr().out
