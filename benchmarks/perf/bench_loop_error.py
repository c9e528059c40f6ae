"""Whole optimisation loops with known truth: which decision procedure keeps noise out and
still finds real gains, per rollout spent.

Run with ``.venv/bin/python benchmarks/perf/bench_loop_error.py`` (``--quick``: fewer loops).
Each loop is a hill-climb of 20 edits on 30 val tasks in 6 clusters x 3 trials. A task's
true success rate is logistic(cluster effect + task effect), drawn per loop; a trial's
reward is Bernoulli(p) or partial credit (4 graded parts: Binomial(4, p) / 4). An edit is a
no-op (the parent's rates) or a real gain (every rate + 0.10, clipped to [0, 1]); the true
gain of a best is the mean of its rates minus the seed's. Every decision is the real pure
gate, ``capevolve._policy.gate.decide`` (CR1 SE, df = clusters - 1), at the level each
procedure asks for:

- ``per_gate``: every gate at alpha; the best's own evaluation is the bar for later edits;
- ``alpha_spending run``: every gate at alpha / 20 (Bonferroni over the budget);
- ``screen+confirm`` (``capevolve._policy.loop_alpha``, the default): the gate at
  sqrt(alpha / 20), then both sides on 2 x 3 fresh trials and the gate on the fresh data
  only, at the same level; the promoted best's screen evaluation stays its bar (as in the
  CLI, where only an evaluation from trial 0 is a gate evaluation); a variant measures the
  promoted best again on fresh trials to be the next bar;
- ``LORD++`` (Javanmard & Montanari 2018, W0 = alpha / 2, their gamma sequence): the
  online level alpha_t, which earns alpha back after each promotion;
- ``sequential``: the candidate's trials arrive one at a time (3 looks); Pocock-type alpha
  spending of alpha / 20 per edit over the looks (Bonferroni across looks), a stop for a
  clear win at any look and for a loss (delta <= 0) at looks 1 and 2.

Figures per procedure, with 95% intervals (Wilson for rates, mean +- 1.96 SE otherwise):
the share of all-no-op loops that end with a promoted no-op (Bernoulli and partial
credit), the power at +0.10 (real edits promoted / real edits, in loops where each edit is
real with probability 0.25), the true gain found per 1,000 rollouts in those loops, and
the rollouts per decision. Seeded ``numpy.random.Generator``; exits 1 when the default
procedure (screen+confirm) promotes a no-op in more than alpha of the loops beyond the
sampling error (the upper end of a 95% interval of alpha at this many loops).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from bench_row import emit, load_note
from scipy import stats

from capevolve._policy.gate import SideOutcomes, decide
from capevolve._policy.loop_alpha import CONFIRM_FACTOR, stage_alpha
from capevolve.config import GateConfig
from capevolve.kinds import Decision

ALPHA, EDITS, TASKS, CLUSTERS, TRIALS, GAIN, P_REAL = 0.05, 20, 30, 6, 3, 0.10, 0.25
IDS = [f"t{i:02d}" for i in range(TASKS)]
GROUPS = {t: f"g{i % CLUSTERS}" for i, t in enumerate(IDS)}
CONFIRM_TRIALS = CONFIRM_FACTOR * TRIALS
"""Fresh trials per side in a confirmation (``capevolve._policy.loop_alpha``)."""
OFFSETS = {k: np.arange(0, TASKS * k + 1, k) for k in range(1, CONFIRM_TRIALS + 1)}
DEFAULT = "screen+confirm"
TABLE = Path(__file__).resolve().parent / "loop_error.md"
"""The markdown table a full run writes (docs/statistics.md includes it)."""


@dataclass
class World:
    """One loop's truth and noise: the rates of the seed, a generator, a reward model."""

    rng: np.random.Generator
    partial: bool
    rollouts: int = 0

    def measure(self, p: np.ndarray, trials: int = TRIALS) -> SideOutcomes:
        """``trials`` fresh rewards per task (paid: tasks x trials rollouts)."""
        self.rollouts += TASKS * trials
        if self.partial:
            rewards = self.rng.binomial(4, np.repeat(p, trials)) / 4.0
        else:
            rewards = (self.rng.random(TASKS * trials) < np.repeat(p, trials)).astype(float)
        return SideOutcomes.from_columns(IDS, OFFSETS[trials], rewards)


def passes(cand: SideOutcomes, bar: SideOutcomes, alpha: float) -> bool:
    """The real gate at one-sided level ``alpha``."""
    config = GateConfig(alpha=alpha, min_delta=0.0)
    return decide(cand, bar, IDS, config, clusters=GROUPS).decision == Decision.ACCEPT


@dataclass
class Loop:
    """What one loop did."""

    promoted_noop: bool = False
    real: int = 0
    real_found: int = 0
    gain: float = 0.0
    rollouts: int = 0
    decisions: int = 0


@dataclass
class State:
    """The loop in flight: the best's true rates and the bar its edits are gated on."""

    seed: np.ndarray
    best: np.ndarray
    bar: SideOutcomes
    extra: dict[str, float] = field(default_factory=dict)


Step = Callable[[World, State, np.ndarray, int], bool]
"""(world, state, child's rates, edit index 1..EDITS) -> promote?"""


def per_gate(w: World, s: State, child: np.ndarray, _: int) -> bool:
    cand = w.measure(child)
    if passes(cand, s.bar, ALPHA):
        s.bar = cand  # the selected evaluation becomes the bar (as the per-gate loop does)
        return True
    return False


def run_spending(w: World, s: State, child: np.ndarray, _: int) -> bool:
    cand = w.measure(child)
    if passes(cand, s.bar, ALPHA / EDITS):
        s.bar = cand
        return True
    return False


def screen_confirm(w: World, s: State, child: np.ndarray, remeasure: bool) -> bool:
    level = stage_alpha(ALPHA, EDITS)
    screen = w.measure(child)
    if not passes(screen, s.bar, level):
        return False
    fresh = CONFIRM_TRIALS
    if not passes(w.measure(child, fresh), w.measure(s.best, fresh), level):
        return False  # only the fresh data decides
    s.bar = w.measure(child) if remeasure else screen
    return True


GAMMA = np.array([0.07720838 * math.log(max(j, 2)) / (j * math.exp(math.sqrt(math.log(j))))
                  for j in range(1, EDITS + 1)])
"""LORD++'s default gamma sequence (sums to 1 over an infinite stream)."""


def lord(w: World, s: State, child: np.ndarray, t: int) -> bool:
    w0 = ALPHA / 2
    taus = [int(x) for x in s.extra.get("taus", "").split(",") if x] \
        if isinstance(s.extra.get("taus"), str) else []
    level = GAMMA[t - 1] * w0
    if taus:
        level += (ALPHA - w0) * GAMMA[t - taus[0] - 1]
        level += ALPHA * sum(GAMMA[t - tau - 1] for tau in taus[1:])
    cand = w.measure(child)
    if passes(cand, s.bar, min(level, 0.49)):
        s.bar = cand
        s.extra["taus"] = ",".join(map(str, [*taus, t]))  # type: ignore[assignment]
        return True
    return False


def sequential(w: World, s: State, child: np.ndarray, _: int) -> bool:
    budget, rewards = ALPHA / EDITS, []
    spent = 0.0
    for look in range(1, TRIALS + 1):
        cumulative = budget * math.log(1 + (math.e - 1) * look / TRIALS)  # Pocock-type
        level, spent = cumulative - spent, cumulative
        one = w.measure(child, 1)
        rewards.append(one.values)
        cand = SideOutcomes.from_columns(IDS, OFFSETS[look],
                                         np.stack(rewards, axis=1).ravel())
        if passes(cand, s.bar, level):
            s.bar = cand
            return True
        if look < TRIALS:
            delta = float(np.mean(cand.aligned(IDS).mean - s.bar.aligned(IDS).mean))
            if delta <= 0:
                return False
    return False


PROCEDURES: dict[str, Step] = {
    "per_gate (alpha 0.05 each)": per_gate,
    "alpha_spending run (alpha / 20 each)": run_spending,
    DEFAULT: lambda w, s, c, _: screen_confirm(w, s, c, remeasure=False),
    "screen+confirm, best re-measured as the bar": lambda w, s, c, _: screen_confirm(
        w, s, c, remeasure=True),
    "LORD++ online": lord,
    "sequential (3 looks, alpha / 20 each)": sequential,
}


def seed_rates(rng: np.random.Generator) -> np.ndarray:
    cluster = rng.normal(0.0, 0.8, CLUSTERS)
    logits = cluster[np.arange(TASKS) % CLUSTERS] + rng.normal(0.0, 0.8, TASKS)
    return 1.0 / (1.0 + np.exp(-logits))


def one_loop(step: Step, rng: np.random.Generator, partial: bool, p_real: float) -> Loop:
    w = World(rng, partial)
    seed = seed_rates(rng)
    s = State(seed, seed.copy(), w.measure(seed))
    out = Loop()
    for t in range(1, EDITS + 1):
        real = rng.random() < p_real
        child = np.clip(s.best + GAIN, 0.0, 1.0) if real else s.best.copy()
        out.real += real
        out.decisions += 1
        if step(w, s, child, t):
            out.real_found += real
            out.promoted_noop |= not real
            s.best = child
    out.gain = float(np.mean(s.best - s.seed))
    out.rollouts = w.rollouts
    return out


def wilson(hits: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a binomial rate."""
    z, rate = 1.959964, hits / n
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    arr = np.asarray(values, dtype=float)
    half = 1.959964 * float(arr.std(ddof=1)) / math.sqrt(len(arr)) if len(arr) > 1 else 0.0
    return float(arr.mean()), float(arr.mean()) - half, float(arr.mean()) + half


def study(loops: int, seed: int) -> dict[str, dict[str, object]]:
    """Every procedure on the same seeded worlds (common random numbers per scenario)."""
    results: dict[str, dict[str, object]] = {}
    for name, step in PROCEDURES.items():
        row: dict[str, object] = {}
        for label, partial in (("bernoulli", False), ("partial", True)):
            rng = np.random.default_rng([seed, 1, int(partial)])
            runs = [one_loop(step, rng, partial, 0.0) for _ in range(loops)]
            hits = sum(r.promoted_noop for r in runs)
            row[f"noop_{label}"] = (hits, loops, *wilson(hits, loops))
        rng = np.random.default_rng([seed, 2])
        mixed = [one_loop(step, rng, False, P_REAL) for _ in range(loops)]
        real, found = sum(r.real for r in mixed), sum(r.real_found for r in mixed)
        row["power"] = (found, real, *wilson(found, real))
        row["gain_per_1k"] = mean_ci([1000 * r.gain / r.rollouts for r in mixed])
        row["gain"] = mean_ci([r.gain for r in mixed])
        row["rollouts_per_decision"] = mean_ci([r.rollouts / r.decisions for r in mixed])
        row["mixed_noop_promoted"] = sum(r.promoted_noop for r in mixed) / loops
        results[name] = row
        print(f"{name:40s} no-op loops promoting: bernoulli {row['noop_bernoulli'][0]}/{loops}"
              f", partial {row['noop_partial'][0]}/{loops}; power {found}/{real}; gain/1k "
              f"{row['gain_per_1k'][0]:.4f}; rollouts/decision "
              f"{row['rollouts_per_decision'][0]:.1f}", flush=True)
    return results


def rows(results: dict[str, dict[str, object]], loops: int) -> bool:
    """The BENCH_ROW lines; True when the default holds its bound."""
    limit = ALPHA + 1.959964 * math.sqrt(ALPHA * (1 - ALPHA) / loops)
    ok = True
    load = load_note()
    for name, row in results.items():
        is_default = name == DEFAULT
        for label, what in (("bernoulli", "Bernoulli"), ("partial", "partial credit")):
            hits, n, lo, hi = row[f"noop_{label}"]  # type: ignore[misc]
            target = f"<= {100 * limit:.1f}" if is_default else ""
            if is_default:
                ok &= hits / n <= limit
            emit(f"loop: 20-edit no-op loops ending with a promoted no-op, {name}, {what}",
                 round(100 * hits / n, 2), "%", target,
                 note=f"95% CI {lo:.1%} .. {hi:.1%}; {n} loops; bound {ALPHA:.0%} + "
                      f"sampling error; {load}")
        found, real, lo, hi = row["power"]  # type: ignore[misc]
        emit(f"loop: power at +0.10 (real edits promoted), {name}",
             round(100 * found / real, 2), "%",
             note=f"95% CI {lo:.1%} .. {hi:.1%}; {real} real edits in {loops} loops")
        mean, lo, hi = row["gain_per_1k"]  # type: ignore[misc]
        emit(f"loop: true gain found per 1,000 rollouts, {name}", round(mean, 4),
             "gain/1k rollouts", note=f"95% CI {lo:.4f} .. {hi:.4f}; final best's true "
             f"gain {row['gain'][0]:.3f}")  # type: ignore[index]
        mean, lo, hi = row["rollouts_per_decision"]  # type: ignore[misc]
        emit(f"loop: rollouts per decision, {name}", round(mean, 1), "rollouts",
             note=f"95% CI {lo:.1f} .. {hi:.1f}")
    return ok


def markdown(results: dict[str, dict[str, object]], loops: int, seed: int) -> str:
    """The study as one markdown table (the docs include it: docs/statistics.md)."""
    def rate(cell: object) -> str:
        hits, n, lo, hi = cell  # type: ignore[misc]
        return f"{hits / n:.1%} [{lo:.1%}, {hi:.1%}]"

    def mean(cell: object, digits: int) -> str:
        m, lo, hi = cell  # type: ignore[misc]
        return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"

    lines = [f"Loops of {EDITS} edits, {TASKS} val tasks in {CLUSTERS} clusters x {TRIALS} "
             f"trials, alpha {ALPHA:g}; {loops} loops per procedure and case, seed {seed}; "
             f"{load_note()}; 95% intervals in brackets. Written by "
             "`benchmarks/perf/bench_loop_error.py` (part of `make bench`).", "",
             "| procedure | no-op loops ending with a promoted no-op (Bernoulli) | "
             "same, partial credit | power at +0.10 | true gain per 1,000 rollouts | "
             "rollouts per decision |", "|---|---|---|---|---|---|"]
    for name, row in results.items():
        lines.append(f"| {name} | {rate(row['noop_bernoulli'])} | {rate(row['noop_partial'])}"
                     f" | {rate(row['power'])} | {mean(row['gain_per_1k'], 4)} | "
                     f"{mean(row['rollouts_per_decision'], 1)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=200, help="loops per procedure and case")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="30 loops per case")
    args = parser.parse_args()
    loops = 30 if args.quick else args.loops
    t0 = time.monotonic()
    stats.t.ppf(0.5, 5)  # SciPy loaded before timing anything
    results = study(loops, args.seed)
    ok = rows(results, loops)
    if not args.quick:
        TABLE.write_text(markdown(results, loops, args.seed), encoding="utf-8")
    print(json.dumps({"loops": loops, "seed": args.seed, "seconds": round(time.monotonic() - t0,
                                                                            1), "met": ok},
                     sort_keys=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
