"""Simulated false-accept rates of the gate: a candidate identical in distribution to its best.

Run with ``.venv/bin/python benchmarks/perf/bench_gate.py`` (``--quick`` for a smoke run).
Each simulated evaluation is 30 val tasks x 3 Bernoulli trials; the per-task success
probabilities are drawn fresh per gate (per loop) from Uniform(0, 1), and both sides draw
fresh noise from the same probabilities, so every accept is a false accept. The decision
is the real pure gate, ``capevolve._policy.gate.decide``, with the settings named below.

- per gate: the fraction of independent gates that accept (with a 95% Wilson interval),
  for one gate at alpha (``per_gate``: also the screen's level under the default
  ``confirm`` at 20 iterations; the whole two-stage loop is ``bench_loop_error.py``'s),
  for ``alpha_spending: run`` (20 budgeted iterations), and for
  the old default ``k_se: 1`` (the unsound fixed threshold, for comparison);
- per 20-edit loop: the fraction of loops that promote at least one candidate, where, as
  in a real loop, the best's evaluation is reused across edits and an accepted candidate's
  evaluation becomes the new best's; in both alpha-spending modes.

Randomness is a seeded ``numpy.random.Generator``. Prints a line per figure, then one JSON
line and a ``BENCH_ROW`` line per figure (``bench_row.py``); exits 1 when a target is
missed: the default gate's per-gate rate, and the run-level mode's per-loop rate, must each
be at most 5%.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
from bench_row import emit

from capevolve._policy.gate import SideOutcomes, decide
from capevolve.config import GateConfig
from capevolve.kinds import AlphaSpending, Decision

TARGET = 0.05
TASKS, TRIALS, EDITS = 30, 3, 20
IDS = [f"t{i:02d}" for i in range(TASKS)]
SETTINGS = {
    "per_gate (alpha 0.05)": GateConfig(alpha_spending=AlphaSpending.PER_GATE),
    "alpha_spending run (20 iterations)": GateConfig(alpha_spending=AlphaSpending.RUN),
    "old default k_se 1.0": GateConfig(k_se=1.0),
}


def draw(rng: np.random.Generator, p: np.ndarray) -> SideOutcomes:
    """One evaluation: TRIALS Bernoulli(p_i) rewards per task."""
    wins = rng.random((len(p), TRIALS)) < p[:, None]
    return SideOutcomes.from_rewards({t: wins[i].astype(float).tolist()
                                      for i, t in enumerate(IDS)})


def accepts(cand: SideOutcomes, best: SideOutcomes, config: GateConfig) -> bool:
    return decide(cand, best, IDS, config, max_iterations=EDITS).decision == Decision.ACCEPT


def wilson(hits: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a binomial rate."""
    z, rate = 1.959964, hits / n
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def per_gate(config: GateConfig, gates: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(gates):
        p = rng.random(TASKS)
        hits += accepts(draw(rng, p), draw(rng, p), config)
    return hits


def per_loop(config: GateConfig, loops: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    promoted = 0
    for _ in range(loops):
        p = rng.random(TASKS)
        best, hit = draw(rng, p), False
        for _ in range(EDITS):
            cand = draw(rng, p)
            if accepts(cand, best, config):
                best, hit = cand, True
        promoted += hit
    return promoted


def bench_rows(rates: dict[str, float], loop_rates: dict[str, float], gates: int,
               loops: int) -> None:
    """The figures as BENCH_ROW lines (benchmarks/perf/bench_row.py): the two with a target,
    and the others beside them; the old ``k_se: 1`` gate is the reference line."""
    old_name = "old default k_se 1.0"
    old = f"{old_name}: {rates[old_name]:.2%} per gate"

    def note(rate: float, n: int, what: str) -> str:
        low, high = wilson(round(rate * n), n)
        return f"95% CI {low:.2%} .. {high:.2%}; {n:,} {what}, seeded"

    for name, rate in rates.items():
        target = f"<= {100 * TARGET:g}" if name.startswith("per_gate") else ""
        emit(f"gate false accepts per gate, {name}", round(100 * rate, 3), "%", target,
             reference="" if name == old_name else old, note=note(rate, gates, "gates"))
    for name, rate in loop_rates.items():
        target = f"<= {100 * TARGET:g}" if name.startswith("alpha_spending run") else ""
        emit(f"{EDITS}-edit loops promoting a no-better candidate, {name}",
             round(100 * rate, 3), "%", target, reference=old, note=note(rate, loops, "loops"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gates", type=int, default=10_000, help="independent gates per setting")
    parser.add_argument("--loops", type=int, default=1_000, help="20-edit loops per mode")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="1,000 gates and 100 loops")
    args = parser.parse_args()
    gates, loops = (1_000, 100) if args.quick else (args.gates, args.loops)
    t0 = time.monotonic()
    out: dict[str, object] = {"tasks": TASKS, "trials": TRIALS, "edits": EDITS,
                              "gates": gates, "loops": loops, "seed": args.seed}
    rates = {}
    for i, (name, config) in enumerate(SETTINGS.items()):
        hits = per_gate(config, gates, args.seed + i)
        low, high = wilson(hits, gates)
        rates[name] = hits / gates
        print(f"per gate  {name:38s} {hits / gates:7.2%}  (95% CI {low:.2%} .. {high:.2%})")
    loop_rates = {}
    for i, (name, config) in enumerate(list(SETTINGS.items())[:2]):
        hits = per_loop(config, loops, args.seed + 100 + i)
        low, high = wilson(hits, loops)
        loop_rates[name] = hits / loops
        print(f"per loop  {name:38s} {hits / loops:7.2%}  (95% CI {low:.2%} .. {high:.2%})"
              f"  of {EDITS}-edit loops promote a no-better candidate")
    default = rates["per_gate (alpha 0.05)"]
    run_loop = loop_rates["alpha_spending run (20 iterations)"]
    ok = default <= TARGET and run_loop <= TARGET
    print(f"targets: the per_gate rate <= {TARGET:.0%} and alpha_spending run per-loop "
          f"rate <= {TARGET:.0%}: {'met' if ok else 'MISSED'} ({time.monotonic() - t0:.1f} s)")
    out.update(per_gate=rates, per_loop=loop_rates, target=TARGET, met=ok,
               seconds=round(time.monotonic() - t0, 1))
    print(json.dumps(out, sort_keys=True))
    bench_rows(rates, loop_rates, gates, loops)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
