"""Reliability figures: the fault matrix and the bad-input table, counted from stored files.

Run with ``.venv/bin/python benchmarks/perf/reliability.py`` (part of ``make bench``;
``--only faults`` or ``--only inputs`` runs one half). Prints two Markdown tables (the
README's "Reliability" section holds the last run) and one JSON line with every number.

- The fault matrix (``reliability_faults.py``): each fault injected for real, several
  times (kill -9 and Ctrl-C of a real ``capevolve evaluate``, a file size limit that makes
  writes fail, adapters that return bad values or exit, kill -9 of ``finalize`` and of a
  snapshot, forged events and parts, a SIGKILLed Ray actor), then counted from the stored
  Parquet parts, events and the counting adapter's own fsync'ed log of executions.
- The bad-input table (``tests/cli/bad_inputs.py``, the same rows the tests assert): every
  bad input run through the real console script, judged on one error line, a traceback,
  and whether every stored file is as it was.

Each figure is also a ``BENCH_ROW`` line (``bench_row.py``; :func:`figures` names them):
per fault whether it survived, units lost, duplicates, finished rollouts beyond the in-flight
bound, executions not counted as spent; per bad-input group how many were tried and how
many were not clean (``reliability_figures.py``). ``make bench`` compares them with
``reliability_baseline.json``, which ``--write-baseline COMMIT`` rewrites from this run.
``--quick``: the fault scenarios that need no kill timing (adapter faults, snapshots,
tampering) and every fifth bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE))

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("CAPEVOLVE_KEY_DIR", tempfile.mkdtemp(prefix="capevolve-rel-keys-"))

from bench_row import emit  # noqa: E402
from cli.bad_inputs import all_cases, build_base, run_case  # noqa: E402
from reliability_faults import QUICK_SCENARIOS, SCENARIOS  # noqa: E402
from reliability_figures import BASELINE, figures, write_baseline  # noqa: E402


def _cell(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    return str(value)


def run_faults(scenarios=SCENARIOS) -> list[dict]:
    rows = []
    for scenario in scenarios:
        with tempfile.TemporaryDirectory(prefix="capevolve-rel-") as tmp:
            print(f"[reliability] {scenario.__name__} ...", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            try:
                row = scenario(Path(tmp))
            except Exception as exc:  # a scenario that breaks is a row that did not survive
                traceback.print_exc()
                doc = (scenario.__doc__ or scenario.__name__).strip().splitlines()[0]
                row = {"fault": f"{scenario.__name__}: {doc}", "injected": None,
                       "survived": False,
                       "error": f"{type(exc).__name__}: {exc}"}
            row["seconds"] = round(time.monotonic() - t0, 1)
            rows.append(row)
    return rows


def print_faults(rows: list[dict]) -> None:
    cols = ("injected", "survived", "units", "lost", "finished_not_on_disk",
            "beyond_in_flight", "duplicates", "executed", "recorded")
    print("| fault | injected | survived | units | lost at the end | finished, not on disk "
          "after the kill | of those, beyond in flight | duplicates | rollouts executed | "
          "metric calls recorded |")
    print("|---|" + "---|" * len(cols))
    for r in rows:
        print(f"| {r['fault']} | " + " | ".join(_cell(r.get(c)) for c in cols) + " |")


def run_inputs(workers: int = 2, every: int = 1) -> list[dict]:
    cases = all_cases()[::every]
    with tempfile.TemporaryDirectory(prefix="capevolve-bad-") as tmp:
        base = build_base(Path(tmp) / "base")
        print(f"[reliability] {len(cases)} bad inputs ...", file=sys.stderr, flush=True)

        def one(item):
            i, case = item
            return run_case(case, base, Path(tmp) / f"case{i}")

        with ThreadPoolExecutor(workers) as pool:
            outcomes = list(pool.map(one, enumerate(cases)))
    return [{"name": o.name, "group": o.group, "exit": o.exit_code, "one_line": o.one_line,
             "traceback": o.traceback, "intact": o.intact, "named": o.named,
             "error": next((ln for ln in o.stderr.splitlines() if ln.startswith("error:")),
                           o.stderr[-300:])}
            for o in outcomes]


def print_inputs(rows: list[dict]) -> None:
    groups = ["config", "path", "usage", "cli", "record"]
    tally = {g: Counter() for g in groups}
    for r in rows:
        t = tally[r["group"]]
        t["tried"] += 1
        t["one line, exit 2"] += r["one_line"]
        t["traceback"] += r["traceback"]
        t["data intact"] += r["intact"]
        t["names the file / field / value"] += r["named"]
    keys = ["tried", "one line, exit 2", "traceback", "data intact",
            "names the file / field / value"]
    total = sum(tally.values(), Counter())
    print("| bad input | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    names = {"config": "capevolve.yaml values and syntax", "path": "paths (config, arguments, "
             "candidates, symlinks)", "usage": "usage errors (not a terminal)",
             "cli": "argument values", "record": "hand-edited / truncated run-dir records"}
    for g in groups:
        print(f"| {names[g]} | " + " | ".join(str(tally[g][k]) for k in keys) + " |")
    print("| **all** | " + " | ".join(f"**{total[k]}**" for k in keys) + " |")
    bad = [r for r in rows if not (r["one_line"] and r["intact"] and r["named"])
           or r["traceback"]]
    for r in bad:
        print(f"- not clean: {r['name']} (exit {r['exit']}): {r['error']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("faults", "inputs"))
    parser.add_argument("--quick", action="store_true",
                        help="three fault scenarios and every fifth bad input")
    parser.add_argument("--write-baseline", metavar="COMMIT",
                        help=f"rewrite {BASELINE.name} from this run (full runs only)")
    args = parser.parse_args()
    if args.write_baseline and (args.quick or args.only):
        parser.error("--write-baseline needs a full run (no --quick, no --only)")
    scenarios = QUICK_SCENARIOS if args.quick else SCENARIOS
    faults = run_faults(scenarios) if args.only != "inputs" else []
    inputs = run_inputs(every=5 if args.quick else 1) if args.only != "faults" else []
    if faults:
        print()
        print_faults(faults)
    if inputs:
        print()
        print_inputs(inputs)
    print(json.dumps({"faults": faults, "inputs": inputs}, default=str))
    for figure, value, unit, target, _ in figures(faults, inputs):
        emit(figure, value, unit, target, note="counted from the stored files")
    if args.write_baseline:
        write_baseline(faults, inputs, BASELINE, args.write_baseline)


if __name__ == "__main__":
    main()
