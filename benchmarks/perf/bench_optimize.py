"""Figures of the optimization loop: framework overhead, --parallel saturation, noise.

Run with ``.venv/bin/python benchmarks/perf/bench_optimize.py`` (``--quick`` for a smoke
run). Every figure runs the real loop (``capevolve.optimize``, local engine) on the noisy
project in ``benchmarks/perf/noisy_project`` (copied to a temporary directory): 80 tasks,
30 on val, 3 trials, a fixed success probability per task, draws seeded by the unit seed and
the candidate's content, so an edit that changes no behaviour is pure noise.

1. overhead: a loop of no-op scripted edits; per iteration, the ledger's ``overhead_s``
   (wall time minus the proposer's and the engine's own time). Target: every iteration
   (the maximum) under 1 s, the median far under (both move with the machine's load).
2. saturation: rollouts of 0.05 s (and 0.5 s) each; K children of ``--parallel K`` (their K val
   evaluations run at once through one shared engine and its one in-flight budget of
   ``engine.concurrency`` = 8 slots; wall time of the whole loop after its baseline, gates
   and decisions included) against one evaluation of the same total size (the seed on val
   at K x 3 trials), measured in the same process. The children are evaluated in full
   (``gate.first_look: false``): a first look stops a no-op child after one trial, and the
   loop would then run a third of the rows, not the same total. Target: the loop's
   rollouts/s within 10% of the single evaluation's. ``--parallel`` takes a list
   (``--parallel 2,3,4,5``): a row per K and latency; K=3 by default.
3. noise: loops of 20 no-op edits; every accept promotes noise. The per-gate accept rate
   against the gate's stated rate (alpha 0.05 per gate, what ``status`` reports as expected
   false accepts), with a 95% Wilson interval. Target: the interval's lower end is at or
   below alpha (the loop does not promote noise more often than the gate says).

Prints a line per figure, a ``BENCH_ROW {json}`` line per figure (the row protocol ``make
bench`` collects: figure, value, unit, target, met, reference, note with the load average),
then one JSON line; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import capevolve

HERE = Path(__file__).resolve().parent
PROJECT = HERE / "noisy_project"
ALPHA = 0.05


def wilson(hits: int, n: int) -> tuple[float, float]:
    z, rate = 1.959964, hits / n
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def project(root: Path, seed: int, latency: float = 0.0, first_look: bool = True) -> Path:
    dest = root / f"project_{seed}_{latency:g}"
    shutil.copytree(PROJECT, dest)
    config = dest / "capevolve.yaml"
    text = config.read_text() + f"seed: {seed}\n"
    if not first_look:  # the project's gate is one inline mapping
        assert "gate: {" in text, f"{config}: no inline gate mapping to turn the look off in"
        text = text.replace("gate: {", "gate: {first_look: false, ", 1)
    config.write_text(text)
    if latency:
        (dest / "seed" / "latency.txt").write_text(str(latency))
    return dest


def noop_edits(root: Path, n: int, tag: str) -> Path:
    """n scripted edits that each rewrite notes.md (no behaviour changes)."""
    for i in range(1, n + 1):
        (root / f"{i:02d}").mkdir(parents=True)
        (root / f"{i:02d}" / "notes.md").write_text(f"no-op edit {tag}-{i}\n")
    return root


def new_run(root: Path, seed: int, latency: float = 0.0, engine: str = "local",
            first_look: bool = True) -> Path:
    proj = project(root, seed, latency, first_look)
    run = capevolve.create_run(proj, root / f"run_{seed}_{latency:g}")
    capevolve.evaluate(run, "seed", "val", engine=engine)  # the baseline, outside timings
    return run.root


def overhead(root: Path, iterations: int) -> dict:
    run = new_run(root / "overhead", 1)
    edits = noop_edits(root / "overhead" / "edits", iterations, "o")
    capevolve.optimize_run(run, algorithm="hill-climb", proposer=f"scripted:{edits}",
                       iterations=iterations, engine="local")
    lines = (run / "optimize" / "ledger.jsonl").read_text().splitlines()
    values = [json.loads(line)["overhead_s"] for line in lines]
    return {"iterations": len(values), "median_s": statistics.median(values),
            "max_s": max(values), "target_s": 1.0,
            "met": max(values) < 1.0}


def saturation(root: Path, k: int, engine: str, latency: float) -> dict:
    root = root / f"saturation_{latency:g}"
    one_run = new_run(root / "one", 2, latency=latency, engine=engine)
    t0 = time.monotonic()
    one = capevolve.evaluate(one_run, "seed", "val", n_trials=3 * k, engine=engine)
    one_rate = one.n_rows / (time.monotonic() - t0)
    loop_run = new_run(root / "loop", 2, latency=latency, engine=engine, first_look=False)
    edits = noop_edits(root / "loop" / "edits", k, "s")
    for i in range(1, k + 1):
        (edits / f"{i:02d}" / "latency.txt").write_text(str(latency))
    t0 = time.monotonic()
    result = capevolve.optimize_run(loop_run, algorithm="hill-climb", proposer=f"scripted:{edits}",
                                iterations=k, parallel=k, engine=engine)
    wall = time.monotonic() - t0
    rows = sum(r.metric_calls for r in result.iterations)
    loop_rate = rows / wall
    ratio = loop_rate / one_rate
    return {"k": k, "engine": engine, "latency_s": latency, "one_eval_rows": one.n_rows,
            "one_eval_rollouts_per_s": one_rate,
            "loop_rows": rows, "loop_rollouts_per_s": loop_rate, "ratio": ratio,
            "target_ratio": 0.9, "met": ratio >= 0.9,
            "load": ", ".join(f"{x:.1f}" for x in os.getloadavg())}  # when it was measured


def noise(root: Path, loops: int, edits_per_loop: int) -> dict:
    accepts = gates = 0
    expected = 0.0
    for loop in range(loops):
        run = new_run(root / f"noise{loop}", 100 + loop)
        edits = noop_edits(root / f"noise{loop}" / "edits", edits_per_loop, f"n{loop}")
        result = capevolve.optimize_run(run, algorithm="hill-climb", proposer=f"scripted:{edits}",
                                    iterations=edits_per_loop, engine="local")
        rows = result.iterations
        gates += sum(1 for r in rows if r.val_child is not None)
        accepts += sum(1 for r in rows if r.outcome == "accept")
        expected += capevolve.status(run).gates.expected_false_accepts
    low, high = wilson(accepts, gates)
    return {"loops": loops, "gates": gates, "accepts": accepts, "rate": accepts / gates,
            "ci95": [low, high], "stated_rate": ALPHA, "expected_false_accepts": expected,
            "met": low <= ALPHA}


def bench_row(figure: str, value: float, unit: str, target: str, met: bool | None,
              reference: str, note: str) -> None:
    """One line of the bench row protocol (see benchmarks/perf/README.md)."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print("BENCH_ROW " + json.dumps({
        "figure": figure, "value": round(value, 4), "unit": unit, "target": target,
        "met": met, "reference": reference, "note": f"{note}; load avg {load}"}), flush=True)


def _ks(text: str) -> list[int]:
    """``--parallel``: one K or a comma-separated list, each at least 2."""
    try:
        ks = [int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a list of integers") from None
    if not ks or min(ks) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: each K must be at least 2")
    return ks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations and loops")
    parser.add_argument("--parallel", type=_ks, default=[3],
                        help="the K of the saturation figure, or several: 2,3,4,5")
    parser.add_argument("--engine", default="local", choices=("local", "ray"),
                        help="the engine of the saturation figure")
    args = parser.parse_args()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench_optimize_") as tmp:
        root = Path(tmp)
        over = overhead(root, 5 if args.quick else 10)
        print(f"overhead   per iteration median {over['median_s']:.3f} s, max "
              f"{over['max_s']:.3f} s over {over['iterations']} iterations (target: max < 1 s): "
              f"{'met' if over['met'] else 'MISSED'}")
        bench_row("optimize overhead per iteration (median)", over["median_s"], "s", "< 1",
                  over["median_s"] < 1.0, "ledger overhead_s: wall - engine - proposer",
                  f"N={over['iterations']} iterations, local engine")
        bench_row("optimize overhead per iteration (max)", over["max_s"], "s", "< 1",
                  over["met"], "ledger overhead_s: wall - engine - proposer",
                  f"N={over['iterations']} iterations, local engine")
        sats = [saturation(root / f"k{k}", k, args.engine, latency)
                for latency in ((0.05,) if args.quick else (0.05, 0.5)) for k in args.parallel]
        for sat in sats:
            print(f"saturation --parallel {sat['k']} ({sat['engine']} engine, "
                  f"{sat['latency_s']:g} s rollouts): {sat['loop_rollouts_per_s']:.1f} "
                  f"rollouts/s ({sat['loop_rows']} rows) vs one evaluation of "
                  f"{sat['one_eval_rows']}: {sat['one_eval_rollouts_per_s']:.1f} rollouts/s; "
                  f"ratio {sat['ratio']:.2f} (target >= 0.90): "
                  f"{'met' if sat['met'] else 'MISSED'}")
            bench_row(f"optimize --parallel {sat['k']} saturation ({sat['latency_s']:g} s "
                      "rollouts)", sat["ratio"], "ratio", ">= 0.90", sat["met"],
                      f"one evaluation of {sat['one_eval_rows']} rows: "
                      f"{sat['one_eval_rollouts_per_s']:.1f} rollouts/s",
                      f"loop {sat['loop_rollouts_per_s']:.1f} rollouts/s over "
                      f"{sat['loop_rows']} rows, {sat['engine']} engine, measured at load "
                      f"avg {sat['load']}")
        loops = 1 if args.quick else 5
        noisy = noise(root, loops, 20)
        low, high = noisy["ci95"]
        print(f"noise      {noisy['accepts']} accepts in {noisy['gates']} gates of no-op edits "
              f"({noisy['loops']} loops of 20): {noisy['rate']:.1%} (95% CI {low:.1%} .. "
              f"{high:.1%}) vs the stated {ALPHA:.0%} per gate (status: "
              f"{noisy['expected_false_accepts']:.2f} expected false accepts): "
              f"{'met' if noisy['met'] else 'MISSED'}")
        bench_row("optimize no-op edits accepted per gate", noisy["rate"], "fraction",
                  f"95% CI low <= {ALPHA}", noisy["met"], f"the gate's stated {ALPHA} per gate",
                  f"{noisy['accepts']}/{noisy['gates']} gates, 95% CI {low:.3f}..{high:.3f}")
    ok = over["met"] and all(sat["met"] for sat in sats) and noisy["met"]
    print(json.dumps({"overhead": over, "saturation": sats, "noise": noisy, "met": ok,
                      "seconds": round(time.monotonic() - t0, 1)}, sort_keys=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
