"""The too-coarse split: a lexical cluster that holds more than half of the failing trials of
its feedback part while its units name several distinct causes is split by those causes.

A unit's *residual* is its key less the cluster's common tokens, identifiers and its part token;
residuals that share a token name one cause (union-find). A cause counts from ``MIN_SHARE`` of
the cluster's failing trials and ``MIN_TRIALS``; with two or more the cluster is split, one
cluster per cause, the rest last.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

from capevolve.diagnose.cluster import UnionFind
from capevolve.diagnose.signature import Key

MOST = 0.5
COMMON = 0.5
MIN_SHARE = 0.1
MIN_TRIALS = 2


class Split(NamedTuple):
    """One split: the size of the cluster that was split and the failing trials of its
    part (both in failing trials), and the groups it became (indices into the grouping's
    group list)."""

    size: int
    failing: int
    groups: tuple[int, ...]
    shared: frozenset[str]  # the tokens every unit of it holds (named last)


def common_tokens(keys: Sequence[Key]) -> frozenset[str]:
    """The tokens at least ``COMMON`` of the keys hold."""
    counts: Counter[str] = Counter(t for key in keys for t in key.tokens)
    return frozenset(t for t, n in counts.items() if n >= COMMON * len(keys))


def residuals(keys: Sequence[Key], identifiers: Sequence[frozenset[str]]) -> list[frozenset[str]]:
    """Each unit's key beyond its cluster's common tokens, identifiers (an underscore, or a
    tool / field of the unit's rollout) and part tokens left out."""
    common = common_tokens(keys)
    return [frozenset(t for t in key.tokens - common
                      if not t.startswith("@") and "_" not in t and t not in ids)
            for key, ids in zip(keys, identifiers, strict=True)]


def _components(uf: UnionFind, n: int) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i in range(n):
        out.setdefault(uf.find(i), []).append(i)
    return out


def _merge_rewordings(uf: UnionFind, n: int, trials: Sequence[int],
                      task_of: Callable[[int], str]) -> None:
    """Union the components in which one task fails on different trials (each holds a trial of
    the task the other does not): one cause, worded differently from trial to trial."""
    changed = True
    while changed:
        changed = False
        seen: dict[str, dict[int, set[int]]] = {}
        for root, members in _components(uf, n).items():
            for i in members:
                if i < len(trials):
                    seen.setdefault(task_of(trials[i]), {}).setdefault(root, set()).add(
                        trials[i])
        for by_root in seen.values():
            roots = sorted(by_root)
            for x, a in enumerate(roots):
                for b in roots[x + 1:]:
                    if by_root[a] - by_root[b] and by_root[b] - by_root[a] \
                            and uf.find(a) != uf.find(b):
                        uf.union(a, b)
                        changed = True


def causes_of(units: Sequence[int], keys: Sequence[Key], identifiers: Sequence[frozenset[str]],
              trials: Sequence[int], task_of: Callable[[int], str]) -> list[list[int]] | None:
    """The cluster of ``units`` (indices into ``keys``) split by the causes its residuals
    name, the rest last when it is not empty (None when fewer than two causes hold enough
    trials); ``identifiers`` and ``trials`` (failure indices) are each unit's, in the
    order of ``units``; ``task_of`` gives a failure's task."""
    rest = residuals([keys[u] for u in units], identifiers)
    n = len(units)
    uf = UnionFind(n + 1)  # node n: the rest (units with an empty residual)
    first: dict[str, int] = {}
    for i, tokens in enumerate(rest):
        if not tokens:
            uf.union(i, n)
        for t in tokens:
            uf.union(i, first.setdefault(t, i))
    _merge_rewordings(uf, n + 1, trials, task_of)
    need = max(MIN_TRIALS, MIN_SHARE * len(set(trials)))
    causes, leftover = [], []
    for root, members in _components(uf, n + 1).items():
        members = [i for i in members if i < n]
        if root != uf.find(n) and len({trials[i] for i in members}) >= need:
            causes.append(members)
        else:
            leftover += members
    named = len(causes) + (len({trials[i] for i in leftover}) >= need)
    if named < 2:
        return None
    causes.sort(key=min)
    out = [[units[i] for i in g] for g in causes]
    return out + ([[units[i] for i in sorted(leftover)]] if leftover else [])


def split_coarse(groups: list[list[int]], keys: Sequence[Key], parts: Sequence[str | None],
                 owners: Sequence[int], identifiers_of: Callable[[int], frozenset[str]],
                 task_of: Callable[[int], str]) -> tuple[list[list[int]], list[Split]]:
    """The groups (of indices into ``keys``, each of one feedback part: ``parts``) with every
    too-coarse one -- more than ``MOST`` of the failing trials with a unit of its part, several
    causes -- split (module docstring), and the splits made."""
    kinds = set(parts)
    failing: Counter[str | None] = (
        Counter({kinds.pop(): len(set(owners))}) if len(kinds) == 1
        else Counter(part for part, _ in set(zip(parts, owners, strict=True))))
    out: list[list[int]] = []
    splits: list[Split] = []
    for group in groups:
        found, of_part = None, failing[parts[group[0]]] if group else 0
        if len(group) > MOST * of_part:  # units: at least as many as trials
            trials = [owners[u] for u in group]
            size = len(set(trials))
            if size > MOST * of_part:
                found = causes_of(group, keys, [identifiers_of(u) for u in group], trials,
                                  task_of)
        if found is None:
            out.append(group)
            continue
        start = len(out)
        out += found
        shared = frozenset.intersection(*(keys[u].tokens for u in group))
        splits.append(Split(size, of_part, tuple(range(start, len(out))), shared))
    return out, splits

