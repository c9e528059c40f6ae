"""Search algorithms: the next parent, a proposal's focus, and whether children are screened."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capevolve.errors import ConfigError
from capevolve.records._optimize import IterationRecord, Outcome

FOCUS_MODES = ("all", "cyclic", "hardest-first")


@dataclass(frozen=True)
class SearchView:
    """What an algorithm may look at."""

    best_id: str
    val_task_means: Mapping[str, Mapping[str, float]]
    """candidate -> {val task -> mean}, complete full-val evaluations only."""
    ledger: Sequence[IterationRecord]
    clusters: Sequence[str] = ()
    """The parent's train failure cluster signatures, ranked, when known."""


@dataclass(frozen=True)
class HillClimb:
    """Every child from the best; children go to the gate unscreened."""

    focus: str = "all"
    name: str = "hill-climb"
    screens: bool = False
    """Whether children are screened on train before the gate."""

    def choose_parent(self, view: SearchView, rng: random.Random) -> str:
        return view.best_id

    def choose_focus(self, view: SearchView, parent_id: str, iteration: int) -> str | None:
        """The cluster a proposal should target under ``focus`` (None: no focus)."""
        if self.focus == "all" or not view.clusters:
            return None
        if self.focus == "cyclic":
            return view.clusters[(iteration - 1) % len(view.clusters)]
        tried = {r.focus for r in view.ledger if r.parent_id == parent_id and r.focus
                 and r.outcome != Outcome.ACCEPT}  # tried on this parent without an accept
        fresh = [c for c in view.clusters if c not in tried]
        return fresh[0] if fresh else view.clusters[0]


def frontier_weights(val_task_means: Mapping[str, Mapping[str, float]]) -> dict[str, int]:
    """candidate -> val tasks it is (jointly) best on, for non-dominated candidates."""
    tasks = sorted({t for means in val_task_means.values() for t in means})
    wins: dict[str, set[str]] = {c: set() for c in val_task_means}
    for task in tasks:
        scored = {c: m[task] for c, m in val_task_means.items() if task in m}  # never empty
        top = max(scored.values())
        for cand, value in scored.items():
            if value >= top - 1e-9:
                wins[cand].add(task)
    alive = {c: w for c, w in wins.items() if w}
    dominated = {c for c, w in alive.items()
                 if any(o != c and w < other for o, other in alive.items())}
    return {c: len(w) for c, w in sorted(alive.items()) if c not in dominated}


@dataclass(frozen=True)
class Pareto(HillClimb):
    """Parents sampled from the val frontier; children screened on train first."""

    name: str = "pareto"
    screens: bool = True

    def choose_parent(self, view: SearchView, rng: random.Random) -> str:
        weights = frontier_weights(view.val_task_means)
        if not weights:
            return view.best_id
        ids = sorted(weights)
        return rng.choices(ids, weights=[weights[i] for i in ids], k=1)[0]


ALGORITHMS: dict[str, type[HillClimb]] = {"hill-climb": HillClimb, "pareto": Pareto}


def build_algorithm(name: str, focus: str = "all") -> HillClimb:
    """The algorithm ``name`` with ``focus``; ConfigError naming the valid values."""
    if focus not in FOCUS_MODES:
        raise ConfigError(f"--focus {focus!r}: expected one of {', '.join(FOCUS_MODES)}")
    if name not in ALGORITHMS:
        raise ConfigError(f"--algorithm {name!r}: expected one of {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name](focus)
