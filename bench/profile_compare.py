"""Two or more `bench.profile` recordings side by side, per output token.

    python -m bench.profile_compare DIR_A DIR_B [--top 40]

Each DIR is one `bench.profile --out` folder (its `py-spy.txt` and `summary.json`, as
`gpu_run.sh`'s `PROFILE_ARGS` leave them in logs.tar.gz and `profile-N.json`). Shares of
one recording say where its time went; they can't say whether the same code ran slower
in one process than in another. Dividing each function's samples (inclusive: every
sample it was on the stack for) by the output tokens made during the recording can: with
py-spy's `--gil`, samples a token are the interpreter's time a token. Prints a Markdown
table: each recording's samples per million output tokens, and each column's ratio to the
first.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from bench.profile_summary import parse_frame, stacks


def inclusive_samples(lines: list[str]) -> tuple[collections.Counter[str], int]:
    """Samples per function name (once per stack however often it recurs) and in all, from
    py-spy's raw collapsed stacks."""
    by_name: collections.Counter[str] = collections.Counter()
    total = 0
    for frames, count in stacks(lines):
        total += count
        for name in {parse_frame(frame)[0] for frame in frames}:
            by_name[name] += count
    return by_name, total


def per_token(
    recordings: list[tuple[collections.Counter[str], int, float]], top: int
) -> list[tuple[str, list[float]]]:
    """(name, samples per million output tokens in each recording) for the `top` names
    with the most samples over all recordings, the whole recording first as "(all)"."""
    names = collections.Counter[str]()
    for by_name, _, _ in recordings:
        names.update(by_name)
    rows = [("(all)", [total / tokens * 1e6 for _, total, tokens in recordings])]
    for name, _ in sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[:top]:  # ties by name
        rows.append((name, [by[name] / tokens * 1e6 for by, _, tokens in recordings]))
    return rows


def table(labels: list[str], rows: list[tuple[str, list[float]]]) -> str:
    head = (
        "| function | "
        + " | ".join(labels)
        + " | "
        + " | ".join(f"{label} ÷ {labels[0]}" for label in labels[1:])
        + " |"
    )
    out = [head, "|" + "---|" * (1 + 2 * len(labels) - 1)]
    for name, values in rows:
        ratios = [f"{v / values[0]:.2f}" if values[0] else "–" for v in values[1:]]
        cells = [f"{v:,.0f}" for v in values] + ratios
        out.append(f"| {name or '(no frame)'} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def load(folder: Path) -> tuple[str, collections.Counter[str], int, float]:
    summary = json.loads((folder / "summary.json").read_text())
    tokens = summary.get("output_tokens")
    if not tokens:
        raise SystemExit(f"{folder}: summary.json has no output_tokens")
    lines = (folder / "py-spy.txt").read_text(errors="replace").splitlines()
    by_name, total = inclusive_samples(lines)
    label = summary.get("server", folder.name)
    if summary.get("vllm_frontend") == "rust" and label == "vllm":
        label = "vllm (Rust frontend)"
    return label, by_name, total, float(tokens)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile_compare")
    p.add_argument("folders", nargs="+", type=Path, help="bench.profile --out folders")
    p.add_argument("--top", type=int, default=40)
    args = p.parse_args(argv)
    loaded = [load(folder) for folder in args.folders]
    rows = per_token([(by, total, tokens) for _, by, total, tokens in loaded], args.top)
    print("py-spy samples per million output tokens (inclusive)\n")
    print(table([label for label, *_ in loaded], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
