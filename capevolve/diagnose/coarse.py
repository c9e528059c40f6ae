"""Split a too-coarse lexical cluster by the distinct causes its units name.

Residuals (keys less common tokens, identifiers and part token) sharing a token, or alternated
between by a task's trials, are one cause. A cause needs ``MIN_TRIALS`` and ``MIN_SHARE`` of the
trials, and ``MIN_TASKS`` tasks unless the cluster holds over ``MOST`` of its part's failures.
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
MIN_TASKS = 2


class Split(NamedTuple):
    """One split: the cluster's size, its part's failing trials, and the groups it became."""

    size: int
    failing: int
    groups: tuple[int, ...]
    shared: frozenset[str]  # the tokens every unit of it holds (named last)


def common_tokens(keys: Sequence[Key]) -> frozenset[str]:
    """The tokens at least ``COMMON`` of the keys hold."""
    distinct: dict[int, tuple[Key, int]] = {}
    for key in keys:
        seen = distinct.get(id(key))
        distinct[id(key)] = (key, seen[1] + 1 if seen else 1)
    counts: Counter[str] = Counter()
    for key, n in distinct.values():
        for t in key.tokens:
            counts[t] += n
    return frozenset(t for t, n in counts.items() if n >= COMMON * len(keys))


def residuals(keys: Sequence[Key], identifiers: Sequence[frozenset[str]]) -> list[frozenset[str]]:
    """Each unit's key less its cluster's common tokens, identifiers and part tokens."""
    common = common_tokens(keys)
    known: dict[tuple[int, frozenset[str]], frozenset[str]] = {}
    out = []
    for key, ids in zip(keys, identifiers, strict=True):
        rest = known.get((id(key), ids))
        if rest is None:
            rest = known[(id(key), ids)] = frozenset(
                t for t in key.tokens - common
                if not t.startswith("@") and "_" not in t and t not in ids)
        out.append(rest)
    return out


def _merge_rewordings(uf: UnionFind, nodes: Sequence[int], trials: Sequence[int],
                      task_of: Callable[[int], str]) -> None:
    """Union the components a task's trials alternate between."""
    by_task: dict[str, dict[int, set[int]]] = {}
    for node, f in zip(nodes, trials, strict=True):
        by_task.setdefault(task_of(f), {}).setdefault(node, set()).add(f)
    changed = True
    while changed:
        changed = False
        for per_node in by_task.values():
            by_root: dict[int, set[int]] = {}
            for node, failing in per_node.items():
                by_root.setdefault(uf.find(node), set()).update(failing)
            roots = sorted(by_root)
            for x, a in enumerate(roots):
                for b in roots[x + 1:]:
                    if by_root[a] - by_root[b] and by_root[b] - by_root[a] \
                            and uf.find(a) != uf.find(b):
                        uf.union(a, b)
                        changed = True


def causes_of(units: Sequence[int], keys: Sequence[Key], identifiers: Sequence[frozenset[str]],
              trials: Sequence[int], task_of: Callable[[int], str],
              min_tasks: int = 1) -> list[list[int]] | None:
    """``units`` split by their residuals' causes, the rest last; None when fewer than two groups
    have enough trials and ``min_tasks`` tasks."""
    node_of: dict[frozenset[str], int] = {}  # units with one residual are one node
    nodes = [node_of.setdefault(rest, len(node_of))
             for rest in residuals([keys[u] for u in units], identifiers)]
    empty = len(node_of)  # the rest: units with an empty residual
    uf = UnionFind(empty + 1)
    first: dict[str, int] = {}
    for node, tokens in enumerate(node_of):
        if not tokens:
            uf.union(node, empty)
        for t in tokens:
            uf.union(node, first.setdefault(t, node))
    _merge_rewordings(uf, nodes, trials, task_of)
    members: dict[int, list[int]] = {}
    for i, node in enumerate(nodes):
        members.setdefault(uf.find(node), []).append(i)
    need = max(MIN_TRIALS, MIN_SHARE * len(set(trials)))

    def enough(group: list[int]) -> bool:
        return len({trials[i] for i in group}) >= need and len(
            {task_of(trials[i]) for i in group}) >= min_tasks

    rest = uf.find(empty)
    causes, leftover = [], []
    for root, group in members.items():
        if root != rest and enough(group):
            causes.append(group)
        else:
            leftover += group
    if len(causes) + enough(leftover) < 2:
        return None
    causes.sort(key=min)
    out = [[units[i] for i in g] for g in causes]
    return out + ([[units[i] for i in sorted(leftover)]] if leftover else [])


def split_coarse(groups: list[list[int]], keys: Sequence[Key], parts: Sequence[str | None],
                 owners: Sequence[int], identifiers: Sequence[frozenset[str]],
                 task_of: Callable[[int], str]) -> tuple[list[list[int]], list[Split]]:
    """The groups (one part each) with every too-coarse one split, and the splits made."""
    kinds = set(parts)
    failing: Counter[str | None] = (
        Counter({kinds.pop(): len(set(owners))}) if len(kinds) == 1
        else Counter(part for part, _ in set(zip(parts, owners, strict=True))))
    out: list[list[int]] = []
    splits: list[Split] = []
    for group in groups:
        of_part = failing[parts[group[0]]] if group else 0
        trials = [owners[u] for u in group]
        size = len(set(trials))
        most = size > MOST * of_part  # most of its part: any cause; less: of several tasks
        found = None
        if size >= 2 * MIN_TRIALS and (most or len(
                set(map(task_of, trials))) >= 2 * MIN_TASKS):  # room for two causes
            found = causes_of(group, keys, [identifiers[u] for u in group], trials, task_of,
                              1 if most else MIN_TASKS)
        if found is None:
            out.append(group)
            continue
        start = len(out)
        out += found
        shared = frozenset.intersection(*(keys[u].tokens for u in group))
        splits.append(Split(size, of_part, tuple(range(start, len(out))), shared))
    return out, splits

