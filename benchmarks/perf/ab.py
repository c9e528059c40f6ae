"""Alternate a benchmark script between source trees in one run (A B B A, or A B C C B A).

    .venv/bin/python benchmarks/perf/ab.py --tree A=DIR --tree B=DIR [--rounds 2] SCRIPT [ARGS]

Each tree is a directory holding ``capevolve/``, the script under the same relative path
(e.g. ``benchmarks/perf/bench.py``) and ``.venv/bin/python``, an environment whose
``capevolve`` is the tree's (a PYTHONPATH would not reach Ray's workers): the kept code and
the code with a speed-up removed. The script runs from the tree as its working directory
(Ray puts the driver's on its workers' path), the trees in order, then in reverse order, for
``--rounds`` passes; every ``BENCH_ROW`` line it prints is collected. Printed last: per
figure, each tree's values in run order and their median, and the load averages.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
from pathlib import Path

PREFIX = "BENCH_ROW "


def run_once(tree: Path, script: str, args: list[str]) -> list[dict]:
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{python}: no environment for this tree")
    proc = subprocess.run([str(python), str(tree / script), *args], text=True, cwd=tree,
                          capture_output=True, check=False)
    rows = [json.loads(line[len(PREFIX):]) for line in proc.stdout.splitlines()
            if line.startswith(PREFIX)]
    if proc.returncode != 0:
        print(f"{tree}: exit {proc.returncode}: {proc.stderr.strip()[-500:]}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=DIR")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the trees")
    parser.add_argument("script", help="the script's path inside each tree")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    trees = dict(t.split("=", 1) for t in opts.tree)
    names = list(trees)
    values: dict[str, dict[str, list[float]]] = {}
    start = os.getloadavg()
    for i in range(opts.rounds):
        for name in names if i % 2 == 0 else names[::-1]:
            for row in run_once(Path(trees[name]).resolve(), opts.script, opts.args):
                values.setdefault(row["figure"], {n: [] for n in names})[name].append(row["value"])
                print(f"{name}: {row['figure']}: {row['value']} {row['unit']} "
                      f"(target {row['target'] or '-'}, met {row['met']}; {row['note'][:160]})",
                      flush=True)
    print(f"\nload average at the start {start}, at the end {os.getloadavg()}")
    for figure, sides in values.items():
        print(figure + ": " + " | ".join(
            f"{n} {v} (median {statistics.median(v):.4g})" if v else f"{n} -"
            for n, v in sides.items()))


if __name__ == "__main__":
    main()
