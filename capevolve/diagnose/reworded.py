"""One cause reworded from trial to trial: clusters of one part that a task's trials alternate
between are merged.

A scorer that writes prose (a rubric model, a person) describes the same failure of the same
task in different words on different trials ("Coverage check skipped", "Insurance eligibility
was not verified"); the root-cause key, which compares words, keeps such wordings apart.

Two groups of one part are one cause reworded when no failing trial holds both, and at least
``MIN_TASKS`` tasks (and ``SHARE`` of the larger group's tasks) vouch for it. A task vouches
when its trials alternate between the two groups and lost the same part (the labelled part,
or for unlabelled feedback the one score part that fell short); or, for unlabelled feedback
whose trials each lost the same several parts, when two of its trials differ in exactly one
group each (the groups they share are the causes they share: what is left is one cause,
worded twice).
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
    """``groups`` (of unit indices, each of one feedback part: ``parts``) with the groups that
    are one cause reworded merged (module docstring); ``short`` is each failure's one score
    part that fell short (or None), ``lost`` all the parts that did."""
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
    """The pairs of unlabelled groups two trials of one task that lost the same several
    parts differ by, one group each (module docstring), with the task."""
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
