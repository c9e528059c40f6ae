"""Group cause units into clusters, share their lost score, and name them; units of different
feedback parts never merge.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from capevolve.diagnose.signature import Key

EMPTY_SIGNATURE = "(no specific feedback)"
SIGNATURE_TOKENS = 3
LARGER_SHARE = 0.4
SMOOTHING = 3.0


class UnionFind:
    """Disjoint sets over 0..n-1 with path halving and union by size."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]


def token_weights(keys: list[frozenset[str]]) -> dict[str, float]:
    """Smoothed IDF over distinct keys, ``1 + ln((D + K) / (df + K))`` with ``K = SMOOTHING``."""
    df: Counter[str] = Counter(t for key in keys for t in key)
    n = len(keys)
    return {t: 1.0 + math.log((n + SMOOTHING) / (d + SMOOTHING)) for t, d in df.items()}


def overlaps(shared: int, len_a: int, len_b: int, shared_weight: float | None = None,
             weight_a: float = 0.0, weight_b: float = 0.0) -> bool:
    """The merge rule: half the smaller key's tokens shared and, with weights, ``LARGER_SHARE`` of
    the larger's weight."""
    if 2 * shared < min(len_a, len_b):
        return False
    if shared_weight is None:
        return True
    return shared_weight + 1e-9 >= LARGER_SHARE * max(weight_a, weight_b)


def _merge(keys: list[frozenset[str]], weights: dict[str, float]) -> UnionFind:
    uf = UnionFind(len(keys))
    totals = [sum(weights[t] for t in key) for key in keys]
    postings: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        for token in key:
            postings.setdefault(token, []).append(i)
    for a, key in enumerate(keys):
        shared: dict[int, list[float]] = {}
        for token in key:
            w = weights[token]
            for b in postings[token]:
                if b > a:
                    acc = shared.setdefault(b, [0, 0.0])
                    acc[0] += 1
                    acc[1] += w
        for b, (count, weight) in shared.items():
            if overlaps(int(count), len(key), len(keys[b]), weight, totals[a], totals[b]):
                uf.union(a, b)
    return uf


def group_root_cause(keys: list[Key], parts: list[str | None] | None = None) -> list[list[int]]:
    """Indices of keys grouped by the root-cause rule (unordered); with ``parts``, within a part."""
    distinct: dict[tuple[str, frozenset[str]], list[int]] = {}
    empty: list[int] = []
    for i, key in enumerate(keys):
        part = "" if parts is None else (parts[i] or "")
        (distinct.setdefault((part, key.tokens), []) if key.tokens else empty).append(i)
    ordered = sorted(distinct, key=lambda pk: (pk[0], sorted(pk[1])))
    weights = token_weights([tokens for _, tokens in ordered])
    by_part: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for part_key in ordered:
        by_part.setdefault(part_key[0], []).append(part_key)
    out = []
    for members in by_part.values():
        uf = _merge([tokens for _, tokens in members], weights)
        groups: dict[int, list[int]] = {}
        for local, part_key in enumerate(members):
            groups.setdefault(uf.find(local), []).extend(distinct[part_key])
        out += [sorted(g) for g in groups.values()]
    return out + ([empty] if empty else [])


def signature_of(keys: list[Key], demote: frozenset[str] = frozenset()) -> str:
    """The cluster's most frequent tokens (``demote`` last) as shortest words; ties by first
    position, then token."""
    counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    position: dict[str, int] = {}
    repeats: dict[int, list] = {}  # keys are shared objects: each distinct one read once
    for key in keys:
        seen = repeats.get(id(key))
        if seen is None:
            repeats[id(key)] = [key, 1]
        else:
            seen[1] += 1
    for key, n in repeats.values():
        for t in key.tokens:
            if not t.startswith("@"):
                counts[t] += n
        for rank, (token, word) in enumerate(key.surface):
            position[token] = min(rank, position.get(token, rank))
            best = surface.get(token)
            if best is None or (len(word), word) < (len(best), best):
                surface[token] = word
    if not counts:
        return EMPTY_SIGNATURE
    top = sorted(counts, key=lambda t: (t in demote, -counts[t], position[t], t))
    top = top[:SIGNATURE_TOKENS]
    return " ".join(surface[t] for t in top)


@dataclass
class Cluster:
    """A group of cause units (one root cause) and their failing trials."""

    signature: str
    units: list[int]  # indices into the diagnosis' flat unit list
    trials: list[int]  # failure indices, sorted
    tasks: list[str]
    score_lost: float = 0.0
    note: str | None = None
    structural: bool = False  # a mechanical signature whose fix is a mechanism, not prose

    @property
    def size(self) -> int:
        """Failing trials in the cluster."""
        return len(self.trials)


def make_cluster(signature: str, units: list[int], unit_trial: list[int],
                 task_ids: list[str], note: str | None = None,
                 structural: bool = False) -> Cluster:
    """A cluster over ``units`` (``unit_trial`` maps a unit to its failure index)."""
    trials = sorted({unit_trial[u] for u in units})
    return Cluster(signature, sorted(units), trials, sorted({task_ids[i] for i in trials}),
                   note=note, structural=structural)


def share_score_lost(clusters: list[Cluster], rewards: list[float]) -> None:
    """Share each failing trial's lost score equally among its distinct clusters."""
    count: Counter[int] = Counter(i for c in clusters for i in c.trials)
    for cluster in clusters:
        cluster.score_lost = round(sum((1.0 - rewards[i]) / count[i] for i in cluster.trials), 6)


def unique_signatures(clusters: list[Cluster]) -> list[Cluster]:
    """Clusters in (score_lost desc, size desc, signature, tasks) order, repeated signatures
    numbered."""
    ordered = sorted(clusters, key=lambda c: (-c.score_lost, -c.size, c.signature, c.tasks))
    seen: Counter[str] = Counter()
    for cluster in ordered:
        seen[cluster.signature] += 1
        if seen[cluster.signature] > 1:
            cluster.signature = f"{cluster.signature} ({seen[cluster.signature]})"
    return ordered
