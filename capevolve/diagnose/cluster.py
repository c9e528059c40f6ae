"""Group failures into clusters, score them, and order them totally.

Root-cause grouping: two failures share a cluster iff at least half of the smaller key's
tokens are shared (2 * shared >= min(len_a, len_b)), merged transitively (union-find).
The work is never a pair scan over all failures: identical keys are merged first, then
only keys that share a token (found through a token -> keys index) are compared; any pair
in which one key has at most two tokens merges on a single shared token, so those pairs
are united straight from the index without counting. Failures with an empty key (nothing
specific left in the feedback) form one cluster of their own.

Order: score_lost descending, then size (failing trials) descending, then signature, then
the task list; duplicate signatures get a " (2)", " (3)" suffix in that order, so the
output is byte-identical run to run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from capevolve.diagnose.signature import Key

EMPTY_SIGNATURE = "(no specific feedback)"
SIGNATURE_TOKENS = 3


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


def _merge_distinct(keys: list[frozenset[str]]) -> UnionFind:
    """Union-find over distinct non-empty keys by the shared-token rule."""
    uf = UnionFind(len(keys))
    postings: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        for token in key:
            postings.setdefault(token, []).append(i)
    large_postings: dict[str, list[int]] = {}
    for token, ids in postings.items():
        small = [i for i in ids if len(keys[i]) <= 2]
        if small:  # one shared token suffices when either key has <= 2 tokens
            for i in ids:
                uf.union(small[0], i)
        large_postings[token] = [i for i in ids if len(keys[i]) > 2]
    for a, key in enumerate(keys):
        if len(key) <= 2:
            continue
        counts: Counter[int] = Counter()
        for token in key:
            counts.update(b for b in large_postings[token] if b > a)
        for b, shared in counts.items():
            if 2 * shared >= min(len(key), len(keys[b])):
                uf.union(a, b)
    return uf


def group_root_cause(keys: list[Key]) -> list[list[int]]:
    """Indices of failures grouped by the root-cause rule (groups unordered)."""
    distinct: dict[frozenset[str], list[int]] = {}
    empty: list[int] = []
    for i, key in enumerate(keys):
        (distinct.setdefault(key.tokens, []) if key.tokens else empty).append(i)
    distinct_keys = sorted(distinct, key=sorted)
    uf = _merge_distinct(distinct_keys)
    groups: dict[int, list[int]] = {}
    for d, tokens in enumerate(distinct_keys):
        groups.setdefault(uf.find(d), []).extend(distinct[tokens])
    out = [sorted(g) for g in groups.values()]
    return out + ([empty] if empty else [])


def signature_of(keys: list[Key]) -> str:
    """The cluster's most frequent tokens, shown in their shortest form; ties go to the
    token that comes earliest in a feedback's text, then to the token itself."""
    counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    position: dict[str, int] = {}
    for key in keys:
        counts.update(key.tokens)
        for rank, (token, word) in enumerate(key.surface):
            position[token] = min(rank, position.get(token, rank))
            best = surface.get(token)
            if best is None or (len(word), word) < (len(best), best):
                surface[token] = word
    if not counts:
        return EMPTY_SIGNATURE
    top = sorted(counts, key=lambda t: (-counts[t], position[t], t))[:SIGNATURE_TOKENS]
    return " ".join(surface[t] for t in top)


@dataclass
class Cluster:
    """A group of failing trials with one signature."""

    signature: str
    members: list[int]  # failure indices
    tasks: list[str]
    score_lost: float
    note: str | None = None

    @property
    def size(self) -> int:
        return len(self.members)


def make_cluster(signature: str, members: list[int], task_ids: list[str],
                 rewards: list[float], note: str | None = None) -> Cluster:
    """A cluster with its sorted task list and score_lost = sum of (1 - reward)."""
    lost = round(sum(1.0 - rewards[i] for i in members), 6)
    return Cluster(signature, sorted(members), sorted({task_ids[i] for i in members}),
                   lost, note)


def order_clusters(clusters: list[Cluster]) -> list[Cluster]:
    """The total order of the module docstring; duplicate signatures made unique."""
    ordered = sorted(clusters, key=lambda c: (-c.score_lost, -c.size, c.signature, c.tasks))
    seen: Counter[str] = Counter()
    for cluster in ordered:
        seen[cluster.signature] += 1
        if seen[cluster.signature] > 1:
            cluster.signature = f"{cluster.signature} ({seen[cluster.signature]})"
    return ordered


def sanity_checks(clusters: list[Cluster], n_failing_tasks: int) -> list[str]:
    """Warnings about the clustering's grain (empty when it looks usable)."""
    if n_failing_tasks < 3 or not clusters:
        return []
    warnings = []
    if len(clusters) == 1:
        warnings.append("too coarse: one cluster covers every failure (usually a scorer "
                        "preamble that was not stripped, or feedback with no specifics)")
    elif len(clusters) >= n_failing_tasks and all(len(c.tasks) == 1 for c in clusters):
        warnings.append("too fine: one cluster per failing task (the feedback may be "
                        "too specific to group; compare with --cluster first-words)")
    return warnings
