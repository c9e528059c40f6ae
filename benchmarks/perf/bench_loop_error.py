"""Whole optimisation loops with known truth: which decision procedure keeps noise out and
still finds real gains, per rollout spent.

Run with ``.venv/bin/python benchmarks/perf/bench_loop_error.py`` (``--quick``: fewer loops).
Each loop is a hill-climb of 20 edits on 30 val tasks in 6 clusters x 3 trials. A task's
true success rate is logistic(cluster effect + task effect), drawn per loop; a trial's
reward is Bernoulli(p) or partial credit (4 graded parts: Binomial(4, p) / 4). An edit
moves every rate of its parent by its effect (clipped to [0, 1]); the true gain of a best is
the mean of its rates minus the seed's. The proposer draws effects from a stated
distribution: all no-ops (the no-op loops), or the mixed stream ``EFFECTS`` (mostly null,
some harmful, some helpful). Every decision is the real pure gate,
``capevolve._policy.gate.decide`` (CR1 SE, df = clusters - 1), at the level each procedure
asks for:

- ``per_gate``: every gate at alpha; the best's own evaluation is the bar for later edits;
- ``alpha_spending run``: every gate at alpha / 20 (Bonferroni over the budget);
- ``screen+confirm`` (``capevolve._policy.gate.loop_alpha``): the gate at sqrt(alpha / 20),
  then both sides on 2 x 3 fresh trials and the gate on the fresh data only, at the same
  level; the promoted best's screen evaluation stays its bar (as in the CLI, where only an
  evaluation from trial 0 is a gate evaluation). The default (``gate.first_look``) runs the
  child's first trial alone first and stops a child that does not lead the bar there (a
  futility stop: it only rejects); variants run every child in full, add the same look to
  the confirmation's first half, or measure the promoted best again as the next bar;
- ``keep-best``: the real keep-best verdict (``capevolve._policy.keep_best`` over the gate
  and the mechanism audit): keep any move of the point estimate;
- ``GEPA-style``: the child and its parent on a minibatch of 5 tasks x 1 trial; a child
  that scores higher there is measured on full val and kept when its val mean beats the
  best's (point estimates, as GEPA's reflective loop does);
- ``LORD++`` (Javanmard & Montanari 2018, W0 = alpha / 2, their gamma sequence): the
  online level alpha_t, which earns alpha back after each promotion;
- ``sequential``: the candidate's trials arrive one at a time (3 looks); Pocock-type alpha
  spending of alpha / 20 per edit over the looks (Bonferroni across looks), a stop for a
  clear win at any look and for a loss (delta <= 0) at looks 1 and 2.

Figures per procedure, with 95% intervals (Wilson for rates, mean +- 1.96 SE otherwise):
the share of all-no-op loops that end with a promoted no-op, i.e. whose final best is no
better than the seed although it moved (Bernoulli and partial credit); no-op promotions
per no-op loop, measured, beside what the run's false-accept ledger
(``capevolve._policy.gate.alpha.false_accept_summary``, what ``status`` prints) says for the
procedures the CLI has; in mixed loops the power at +0.05 / +0.10 / +0.20 (edits of that
effect promoted / such edits), the share of loops whose final best is worse than the seed,
the true gain found per 1,000 rollouts and the rollouts per decision; and the winner's
curse: the power at +0.10 of a child whose best is a no-op the procedure just promoted
(a lucky best), beside the power against a best measured without selection. Seeded
``numpy.random.Generator``; exits 1 when the default procedure (screen+confirm) promotes a
no-op in more than alpha of the loops beyond the sampling error (the upper end of a 95%
interval of alpha at this many loops).
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

from capevolve._policy.audit import audit
from capevolve._policy.gate import SideOutcomes, decide
from capevolve._policy.gate.alpha import GateTally, false_accept_summary
from capevolve._policy.gate.loop_alpha import CONFIRM_FACTOR, stage_alpha
from capevolve._policy.keep_best import keep_best, tentative
from capevolve.config import GateConfig
from capevolve.kinds import AlphaSpending, Decision, GatePolicy

ALPHA, EDITS, TASKS, CLUSTERS, TRIALS, GAIN = 0.05, 20, 30, 6, 3, 0.10
EFFECTS = {0.0: 0.55, -0.10: 0.15, 0.05: 0.10, 0.10: 0.10, 0.20: 0.10}
"""The mixed loops' proposer: effect on every rate -> probability."""
POWERS = (0.05, 0.10, 0.20)
MINIBATCH = 5
"""GEPA-style: tasks in the minibatch (one trial each, both sides)."""
IDS = [f"t{i:02d}" for i in range(TASKS)]
GROUPS = {t: f"g{i % CLUSTERS}" for i, t in enumerate(IDS)}
CONFIRM_TRIALS = CONFIRM_FACTOR * TRIALS
"""Fresh trials per side in a confirmation (``capevolve._policy.gate.loop_alpha``)."""
OFFSETS = {k: np.arange(0, TASKS * k + 1, k) for k in range(1, CONFIRM_TRIALS + 1)}
DEFAULT = "screen+confirm with a first look"
WITHOUT_LOOK = "screen+confirm, every child in full"
ALPHA_STAGE = stage_alpha(ALPHA, EDITS)
"""Each stage's one-sided level under screen+confirm."""
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


KEEP_BEST = GateConfig(alpha=ALPHA, min_delta=0.0, policy=GatePolicy.KEEP_BEST,
                       alpha_spending=AlphaSpending.PER_GATE)


def kept(cand: SideOutcomes, bar: SideOutcomes) -> tuple[bool, bool]:
    """(kept, tentative): the real keep-best verdict over the gate and the audit."""
    verdict = keep_best(decide(cand, bar, IDS, KEEP_BEST, clusters=GROUPS),
                        audit(cand, bar, IDS))
    return (verdict.decision == Decision.ACCEPT,
            tentative(verdict.decision, verdict.confidence))


@dataclass
class Loop:
    """What one loop did."""

    promoted_noop: bool = False
    noop_promotions: int = 0
    edits: dict[float, int] = field(default_factory=dict)
    found: dict[float, int] = field(default_factory=dict)
    gain: float = 0.0
    rollouts: int = 0
    decisions: int = 0
    ledger: float | None = None
    """What the run's false-accept ledger says (None: the CLI has no such procedure)."""


@dataclass
class State:
    """The loop in flight: the best's true rates and the bar its edits are gated on."""

    seed: np.ndarray
    best: np.ndarray
    bar: SideOutcomes
    extra: dict[str, float] = field(default_factory=dict)
    tallies: list[GateTally] = field(default_factory=list)
    """The gates as the CLI's ledger would count them."""


Step = Callable[[World, State, np.ndarray, int], bool]
"""(world, state, child's rates, edit index 1..EDITS) -> promote?"""


def _tally(s: State, t: int, promoted: bool, risk: float, is_tentative: bool = False) -> None:
    s.tallies.append(GateTally(False, Decision.ACCEPT if promoted else Decision.REJECT, risk,
                               (f"c{t}", f"b{len(s.tallies)}"), tentative=is_tentative))


def per_gate(w: World, s: State, child: np.ndarray, t: int) -> bool:
    cand = w.measure(child)
    ok = passes(cand, s.bar, ALPHA)
    _tally(s, t, ok, ALPHA)
    if ok:
        s.bar = cand  # the selected evaluation becomes the bar (as the per-gate loop does)
    return ok


def run_spending(w: World, s: State, child: np.ndarray, t: int) -> bool:
    cand = w.measure(child)
    ok = passes(cand, s.bar, ALPHA / EDITS)
    _tally(s, t, ok, ALPHA / EDITS)
    if ok:
        s.bar = cand
    return ok


def _joined(parts: list[SideOutcomes]) -> SideOutcomes:
    """One side's looks as one evaluation (each task's trials side by side)."""
    values = np.hstack([p.values.reshape(TASKS, -1) for p in parts])
    return SideOutcomes.from_columns(IDS, OFFSETS[values.shape[1]], values.ravel())


def _losing(cand: SideOutcomes, bar: SideOutcomes) -> bool:
    return float(np.mean(cand.aligned(IDS).mean - bar.aligned(IDS).mean)) <= 0


def _screen(w: World, s: State, child: np.ndarray, futile: bool) -> SideOutcomes | None:
    """The child's screen evaluation; with ``futile`` its first trial is a look of its own,
    and a delta <= 0 there stops it (None: a binding futility stop, which only rejects)."""
    if not futile:
        return w.measure(child)
    first = w.measure(child, 1)
    return None if _losing(first, s.bar) else _joined([first, w.measure(child, TRIALS - 1)])


def _confirmation(w: World, s: State, child: np.ndarray, futile: bool) -> bool:
    """Both sides on fresh trials, decided on those only; with ``futile``, in two halves,
    the first of which stops a child that does not lead."""
    if not futile:
        return passes(w.measure(child, CONFIRM_TRIALS), w.measure(s.best, CONFIRM_TRIALS),
                      ALPHA_STAGE)
    half = CONFIRM_TRIALS // 2
    cand, base = w.measure(child, half), w.measure(s.best, half)
    if _losing(cand, base):
        return False
    return passes(_joined([cand, w.measure(child, half)]),
                  _joined([base, w.measure(s.best, half)]), ALPHA_STAGE)


def screen_confirm(w: World, s: State, child: np.ndarray, t: int, remeasure: bool,
                   first_look: bool = False, confirm_look: bool = False) -> bool:
    level = ALPHA_STAGE
    screen = _screen(w, s, child, first_look)
    ok = screen is not None and passes(screen, s.bar, level)
    if ok:
        ok = _confirmation(w, s, child, confirm_look)
    _tally(s, t, ok, level * level)
    if ok and screen is not None:
        s.bar = w.measure(child) if remeasure else screen
    return ok


def keep_best_step(w: World, s: State, child: np.ndarray, t: int) -> bool:
    cand = w.measure(child)
    ok, is_tentative = kept(cand, s.bar)
    _tally(s, t, ok, ALPHA, is_tentative)
    if ok:
        s.bar = cand
    return ok


def gepa(w: World, s: State, child: np.ndarray, _: int) -> bool:
    batch = np.sort(w.rng.choice(TASKS, MINIBATCH, replace=False))
    w.rollouts += 2 * MINIBATCH
    draw = (lambda p: w.rng.binomial(4, p) / 4.0) if w.partial else \
        (lambda p: (w.rng.random(p.size) < p).astype(float))
    if float(np.sum(draw(child[batch]))) <= float(np.sum(draw(s.best[batch]))):
        return False
    cand = w.measure(child)
    ok = bool(cand.aligned(IDS).mean.mean() > s.bar.aligned(IDS).mean.mean())
    if ok:
        s.bar = cand
    return ok


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
    DEFAULT: lambda w, s, c, t: screen_confirm(w, s, c, t, remeasure=False, first_look=True),
    WITHOUT_LOOK: lambda w, s, c, t: screen_confirm(w, s, c, t, remeasure=False),
    "screen+confirm, best re-measured as the bar": lambda w, s, c, t: screen_confirm(
        w, s, c, t, remeasure=True),
    "screen+confirm, a first look in the confirmation too": lambda w, s, c, t:
        screen_confirm(w, s, c, t, remeasure=False, first_look=True, confirm_look=True),
    "keep-best": keep_best_step,
    "GEPA-style (minibatch, then full val)": gepa,
    "LORD++ online": lord,
    "sequential (3 looks, alpha / 20 each)": sequential,
}
LEDGERS: dict[str, GateConfig] = {
    "per_gate (alpha 0.05 each)": GateConfig(alpha_spending=AlphaSpending.PER_GATE),
    "alpha_spending run (alpha / 20 each)": GateConfig(alpha_spending=AlphaSpending.RUN),
    DEFAULT: GateConfig(),
    WITHOUT_LOOK: GateConfig(first_look=False),
    "screen+confirm, best re-measured as the bar": GateConfig(),
    "keep-best": KEEP_BEST,
}
"""The procedures the CLI runs, with the gate settings its ledger counts them under."""


def seed_rates(rng: np.random.Generator) -> np.ndarray:
    cluster = rng.normal(0.0, 0.8, CLUSTERS)
    logits = cluster[np.arange(TASKS) % CLUSTERS] + rng.normal(0.0, 0.8, TASKS)
    return 1.0 / (1.0 + np.exp(-logits))


def one_loop(name: str, rng: np.random.Generator, partial: bool, mixed: bool) -> Loop:
    step = PROCEDURES[name]
    w = World(rng, partial)
    seed = seed_rates(rng)
    s = State(seed, seed.copy(), w.measure(seed))
    out = Loop()
    sizes, weights = list(EFFECTS), list(EFFECTS.values())
    for t in range(1, EDITS + 1):
        effect = float(rng.choice(sizes, p=weights)) if mixed else 0.0
        child = np.clip(s.best + effect, 0.0, 1.0)
        out.edits[effect] = out.edits.get(effect, 0) + 1
        out.decisions += 1
        if step(w, s, child, t):
            out.found[effect] = out.found.get(effect, 0) + 1
            if effect == 0.0:
                out.promoted_noop = True
                out.noop_promotions += 1
            s.best = child
    out.gain = float(np.mean(s.best - s.seed))
    out.rollouts = w.rollouts
    if name in LEDGERS:
        config = LEDGERS[name]
        out.ledger = false_accept_summary(
            s.tallies, config, EDITS,
            keep_best=config.policy == GatePolicy.KEEP_BEST).expected_false_accepts
    return out


LUCKY_TRIES = 4000
"""No-op children tried per lucky-best draw before giving up on it."""
UNLUCKY = ("LORD++ online", "sequential (3 looks, alpha / 20 each)")
"""Procedures whose levels depend on the edit's index: no lucky-best figure."""


def lucky_power(name: str, rng: np.random.Generator, bias_free: bool) -> tuple[bool, bool]:
    """(a lucky best was made, a +0.10 child of it was promoted): no-op children of the
    seed until the procedure promotes one (a best chosen because it looked better than
    it is), then one real +0.10 child. ``bias_free``: the seed's own evaluation is the bar
    instead (a best measured without selection)."""
    step = PROCEDURES[name]
    w = World(rng, False)
    seed = seed_rates(rng)
    s = State(seed, seed.copy(), w.measure(seed))
    if not bias_free:
        for t in range(1, LUCKY_TRIES + 1):
            if step(w, s, seed.copy(), min(t, EDITS)):
                break
        else:
            return False, False
    return True, step(w, s, np.clip(seed + GAIN, 0.0, 1.0), EDITS)


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
    for name in PROCEDURES:
        row: dict[str, object] = {}
        for label, partial in (("bernoulli", False), ("partial", True)):
            rng = np.random.default_rng([seed, 1, int(partial)])
            runs = [one_loop(name, rng, partial, mixed=False) for _ in range(loops)]
            hits = sum(r.promoted_noop for r in runs)
            row[f"noop_{label}"] = (hits, loops, *wilson(hits, loops))
            if label == "bernoulli":
                row["noop_promotions"] = mean_ci([r.noop_promotions for r in runs])
                row["ledger"] = (mean_ci([r.ledger for r in runs if r.ledger is not None])
                                 if name in LEDGERS else None)
        rng = np.random.default_rng([seed, 2])
        mixed = [one_loop(name, rng, False, mixed=True) for _ in range(loops)]
        for effect in POWERS:
            edits = sum(r.edits.get(effect, 0) for r in mixed)
            found = sum(r.found.get(effect, 0) for r in mixed)
            row[f"power_{effect:.2f}"] = (found, edits, *wilson(found, edits))
        worse = sum(r.gain < 0 for r in mixed)
        row["worse"] = (worse, loops, *wilson(worse, loops))
        row["gain_per_1k"] = mean_ci([1000 * r.gain / r.rollouts for r in mixed])
        row["gain"] = mean_ci([r.gain for r in mixed])
        row["rollouts_per_decision"] = mean_ci([r.rollouts / r.decisions for r in mixed])
        for key, free in (("lucky", False), ("unselected", True)):
            if name in UNLUCKY:
                row[key] = None
                continue
            rng = np.random.default_rng([seed, 3, int(free)])
            draws = [lucky_power(name, rng, free) for _ in range(max(10, loops // 4))]
            made = [hit for ok, hit in draws if ok]
            row[key] = (sum(made), len(made), *wilson(sum(made), max(1, len(made))))
        results[name] = row
        print(f"{name:45s} no-op loops promoting: bernoulli {row['noop_bernoulli'][0]}/{loops}"
              f", partial {row['noop_partial'][0]}/{loops}; power +0.10 "
              f"{row['power_0.10'][0]}/{row['power_0.10'][1]}; gain/1k "
              f"{row['gain_per_1k'][0]:.4f}; rollouts/decision "
              f"{row['rollouts_per_decision'][0]:.1f}; after a lucky best "
              f"{row['lucky'][:2] if row['lucky'] else '-'}", flush=True)
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
        mean, lo, hi = row["noop_promotions"]  # type: ignore[misc]
        ledger = row["ledger"]
        emit(f"loop: no-op promotions per no-op loop, {name}", round(mean, 3), "promotions",
             note=f"95% CI {lo:.3f} .. {hi:.3f}; the run's ledger says "
                  + ("-" if ledger is None else f"{ledger[0]:.3f}"))  # type: ignore[index]
        for effect in POWERS:
            found, real, lo, hi = row[f"power_{effect:.2f}"]  # type: ignore[misc]
            emit(f"loop: power at +{effect:.2f} (edits promoted), {name}",
                 round(100 * found / max(1, real), 2), "%",
                 note=f"95% CI {lo:.1%} .. {hi:.1%}; {real} such edits in {loops} loops")
        mean, lo, hi = row["gain_per_1k"]  # type: ignore[misc]
        emit(f"loop: true gain found per 1,000 rollouts, {name}", round(mean, 4),
             "gain/1k rollouts", note=f"95% CI {lo:.4f} .. {hi:.4f}; final best's true "
             f"gain {row['gain'][0]:.3f}")  # type: ignore[index]
        mean, lo, hi = row["rollouts_per_decision"]  # type: ignore[misc]
        emit(f"loop: rollouts per decision, {name}", round(mean, 1), "rollouts",
             note=f"95% CI {lo:.1f} .. {hi:.1f}")
        if row["lucky"] is not None:
            found, made, lo, hi = row["lucky"]  # type: ignore[misc]
            emit(f"loop: power at +0.10 after a lucky best, {name}",
                 round(100 * found / max(1, made), 2), "%",
                 note=f"95% CI {lo:.1%} .. {hi:.1%}; {made} lucky bests")
    return ok


def markdown(results: dict[str, dict[str, object]], loops: int, seed: int) -> str:
    """The study as two markdown tables (the docs include them: docs/statistics.md)."""
    def rate(cell: object) -> str:
        if cell is None:
            return "—"
        hits, n, lo, hi = cell  # type: ignore[misc]
        return f"{hits / max(1, n):.1%} [{lo:.1%}, {hi:.1%}]"

    def mean(cell: object, digits: int) -> str:
        if cell is None:
            return "—"
        m, lo, hi = cell  # type: ignore[misc]
        return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"

    lucky = max(10, loops // 4)
    effects = ", ".join(f"{p:.0%} {e:+.2f}" for e, p in EFFECTS.items())
    lines = [f"Loops of {EDITS} edits, {TASKS} val tasks in {CLUSTERS} clusters x {TRIALS} "
             f"trials, alpha {ALPHA:g}; {loops} loops per procedure and case, seed {seed}; "
             f"{load_note()}; 95% intervals in brackets. Written by "
             "`benchmarks/perf/bench_loop_error.py` (part of `make bench`).", "",
             "**No-op loops** (every edit a no-op):", "",
             "| procedure | loops ending with a promoted no-op (Bernoulli) | same, partial "
             "credit | no-op promotions per loop | the run's ledger says |",
             "|---|---|---|---|---|"]
    for name, row in results.items():
        lines.append(f"| {name} | {rate(row['noop_bernoulli'])} | {rate(row['noop_partial'])}"
                     f" | {mean(row['noop_promotions'], 3)} | {mean(row['ledger'], 3)} |")
    lines += ["", f"**Mixed loops** (each edit's effect on every rate: {effects}; Bernoulli; "
              f"the lucky-best columns over {lucky} draws each):", "",
              "| procedure | power at +0.05 | at +0.10 | at +0.20 | loops ending worse than "
              "the seed | true gain per 1,000 rollouts | rollouts per decision | power at "
              "+0.10 after a lucky best | against an unselected best |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, row in results.items():
        lines.append(f"| {name} | {rate(row['power_0.05'])} | {rate(row['power_0.10'])} | "
                     f"{rate(row['power_0.20'])} | {rate(row['worse'])} | "
                     f"{mean(row['gain_per_1k'], 4)} | {mean(row['rollouts_per_decision'], 1)}"
                     f" | {rate(row['lucky'])} | {rate(row['unselected'])} |")
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
