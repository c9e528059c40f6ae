"""One cause reworded from trial to trial: clusters of one part that a task's trials alternate
between are merged.

A scorer that writes prose (a rubric model, a person) describes the same failure of the same
task in different words on different trials ("Coverage check skipped", "Insurance eligibility
was not verified"); the root-cause key, which compares words, keeps such wordings apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain, combinations

from capevolve.diagnose.cluster import UnionFind

MIN_TASKS = 2
SHARE = 1 / 3


def merge_rewordings(groups: list[list[int]], parts: Sequence[str | None],
                     owners: Sequence[int], task_ids: Sequence[str],
                     short: Sequence[str | None],
                     specific: Sequence[bool]) -> list[list[int]]:
    """``groups`` (of unit indices, each of one feedback part: ``parts``) with the groups that
    are one cause reworded merged (module docstring)."""
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
    support: Counter[tuple[int, int]] = Counter()
    together: set[tuple[int, int]] = set()
    for per_group in by_task.values():
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
                support[(a, b)] += 1
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
