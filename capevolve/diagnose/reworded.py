"""Merge clusters of one part a task's trials alternate between: one cause, reworded.

Two groups of one part merge when no failing trial holds both and ``MIN_TASKS`` tasks (and
``SHARE`` of the larger group's) vouch. A task vouches when its trials alternate between the
groups having lost the same part, or when two of its trials with the same several lost parts
differ by one group each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import chain, combinations

from capevolve.diagnose.cluster import UnionFind

MIN_TASKS = 2
SHARE = 1 / 3


def merge_rewordings(groups: list[list[int]], parts: Sequence[str | None],
                     owners: Sequence[int], task_ids: Sequence[str],
                     short: Sequence[str | None], specific: Sequence[bool],
                     lost: Sequence[frozenset[str]] | None = None) -> list[list[int]]:
    """``groups`` (one part each) with rewordings merged; ``short``: each failure's sole short part,
    ``lost``: all its short parts."""
    trials = [set(map(owners.__getitem__, group)) if specific[group[0]] else set()
              for group in groups]
    tasks = [set(map(task_ids.__getitem__, failing)) for failing in trials]
    counts = Counter(chain.from_iterable(tasks))
    shared = {task for task, n in counts.items() if n > 1}  # in two groups or more
    by_task: dict[str, dict[int, set[int]]] = {}
    for g, failing in enumerate(trials):
        if tasks[g].isdisjoint(shared):
            continue
        for f in failing:
            if (task := task_ids[f]) in shared:
                by_task.setdefault(task, {}).setdefault(g, set()).add(f)
    vouch: dict[tuple[int, int], set[str]] = {}
    together: set[tuple[int, int]] = set()
    for task, per_group in by_task.items():
        if len(per_group) < 2:
            continue
        for a, b in combinations(sorted(per_group), 2):
            if parts[groups[a][0]] != parts[groups[b][0]]:
                continue
            in_a, in_b = per_group[a], per_group[b]
            if not in_a.isdisjoint(in_b):
                together.add((a, b))
            elif parts[groups[a][0]] is not None or \
                    ({short[f] for f in in_a} & {short[f] for f in in_b}) - {None}:
                vouch.setdefault((a, b), set()).add(task)
    if lost is not None:
        for (a, b), task in _aligned(groups, parts, trials, task_ids, lost):
            vouch.setdefault((a, b), set()).add(task)
    support = Counter({pair: len(vouching) for pair, vouching in vouch.items()})
    if not support:
        return groups
    uf = UnionFind(len(groups))
    for (a, b), n in sorted(support.items()):
        larger = max(len(tasks[a]), len(tasks[b]))
        if (a, b) not in together and n >= max(MIN_TASKS, SHARE * larger):
            uf.union(a, b)
    merged: dict[int, list[int]] = {}
    for g, group in enumerate(groups):
        merged.setdefault(uf.find(g), []).extend(group)
    return [sorted(group) if len(group) > 1 else group for group in merged.values()]


def _aligned(groups: list[list[int]], parts: Sequence[str | None], trials: Sequence[set[int]],
             task_ids: Sequence[str], lost: Sequence[frozenset[str]]
             ) -> Iterator[tuple[tuple[int, int], str]]:
    """Pairs of unlabelled groups two trials of a task with equal lost parts differ by, with the
    task."""
    held: dict[int, set[int]] = {}  # failing trial -> its unlabelled specific groups
    for g, failing in enumerate(trials):
        if parts[groups[g][0]] is None:
            for f in failing:
                if len(lost[f]) > 1:
                    held.setdefault(f, set()).add(g)
    by_task: dict[tuple[str, frozenset[str]], list[int]] = {}
    for f in sorted(held):
        by_task.setdefault((task_ids[f], lost[f]), []).append(f)
    for (task, _), same in by_task.items():
        for f, h in combinations(same, 2):
            only_f, only_h = held[f] - held[h], held[h] - held[f]
            if len(only_f) == 1 and len(only_h) == 1:
                a, b = sorted((*only_f, *only_h))
                yield (a, b), task
