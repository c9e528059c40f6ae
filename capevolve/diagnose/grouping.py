"""From failures to clusters of cause units (a failure may sit in several), and their records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from capevolve.diagnose.classify import TOLERANCE, is_communication
from capevolve.diagnose.cluster import (
    Cluster,
    group_root_cause,
    make_cluster,
    share_score_lost,
    signature_of,
    unique_signatures,
)
from capevolve.diagnose.coarse import Split, split_coarse
from capevolve.diagnose.kinds import (
    CLAIMED_NOTE,
    CLAIMED_SIGNATURE,
    NARRATED_NOTE,
    NARRATED_SIGNATURE,
    ClusterMode,
)
from capevolve.diagnose.reflective import Failure
from capevolve.diagnose.reworded import merge_rewordings
from capevolve.diagnose.signature import Key, KeyCache, first_words
from capevolve.diagnose.units import Unit, score_parts

PART_TOKEN = "@"  # prefix of the score-part token an unlabelled unit's key carries

_MECHANICAL = {NARRATED_SIGNATURE: NARRATED_NOTE, CLAIMED_SIGNATURE: CLAIMED_NOTE}


Placed = tuple[int, Unit | None]
"""A failure's index and the unit that placed it (None: a mechanical cluster's member with no
state unit)."""


def _mechanical(failure: Failure) -> str | None:
    if failure.narrated:
        return NARRATED_SIGNATURE
    return CLAIMED_SIGNATURE if failure.claimed_mismatch else None


def _lexical_keys(failures: list[Failure], placed: list[Placed],
                  lexical: list[int]) -> tuple[list[int], list[Key]]:
    """Each lexical unit's key; a failure whose units all key empty after a preamble cut is keyed
    whole."""
    keys: list[Key] = []
    cache = KeyCache()  # feedback repeats: tokenise each text once
    key_of_text = cache.key
    with_part: dict[tuple[int, str], Key] = {}
    emptied: set[int] = set()  # failures with a stripped preamble and an empty unit key
    for u in lexical:
        i, unit = placed[u]
        failure = failures[i]
        key = key_of_text(unit.text if unit else "", failure.identifiers)
        if not key.tokens:
            if failure.cut:
                emptied.add(i)
        elif unit is not None and unit.part is None and (part := failure.inferred_part):
            tagged = with_part.get((id(key), part))
            if tagged is None:
                tagged = with_part[(id(key), part)] = Key(key.tokens | {PART_TOKEN + part},
                                                          key.surface)
            key = tagged
        keys.append(key)
    if emptied:  # rare: every unit of such a failure empty? then its whole feedback
        by_failure: dict[int, list[int]] = {}
        for n, u in enumerate(lexical):
            if placed[u][0] in emptied:
                by_failure.setdefault(placed[u][0], []).append(n)
        for i, positions in by_failure.items():
            failure = failures[i]
            if not any(keys[n].tokens for n in positions):
                whole = key_of_text(failure.feedback, failure.identifiers)
                for n in positions:
                    keys[n] = whole
                    placed[lexical[n]] = (i, Unit(None, failure.feedback))
    return list(lexical), keys


def place_units(failures: list[Failure], mode: ClusterMode
                ) -> tuple[list[Placed], dict[str, list[int]], list[int]]:
    """The flat unit list, the mechanical clusters' members and the lexical units."""
    placed: list[Placed] = []
    mechanical: dict[str, list[int]] = {}
    lexical: list[int] = []
    root_cause = mode == ClusterMode.ROOT_CAUSE
    for i, failure in enumerate(failures):
        units = failure.units if root_cause else (Unit(None, failure.feedback),)
        special = _mechanical(failure)
        if special is None:  # every unit is lexical
            for unit in units:
                lexical.append(len(placed))
                placed.append((i, unit))
            continue
        state = [u for u in units if not is_communication(u.part, u.text)]
        if not state:
            mechanical.setdefault(special, []).append(len(placed))
            placed.append((i, None))
        for unit in units:
            (mechanical.setdefault(special, []) if unit in state else lexical).append(len(placed))
            placed.append((i, unit))
    return placed, mechanical, lexical


def cluster_failures(failures: list[Failure], mode: ClusterMode
                     ) -> tuple[list[Cluster], list[Placed], dict[int, Key], list[str]]:
    """The clusters in ``unique_signatures`` order, the unit list they index, each lexical unit's
    key, and the split notes."""
    placed, mechanical, lexical = place_units(failures, mode)
    owner = [i for i, _ in placed]
    task_ids = [f.trial.task_id for f in failures]
    clusters = [make_cluster(sig, members, owner, task_ids, _MECHANICAL[sig], structural=True)
                for sig, members in sorted(mechanical.items())]
    unit_keys: dict[int, Key] = {}
    splits: list[Split] = []
    made: list[list[Cluster]] = []
    if mode == ClusterMode.FIRST_WORDS:
        groups: dict[str, list[int]] = {}
        for u in lexical:
            unit = placed[u][1]
            groups.setdefault(first_words(unit.text if unit else ""), []).append(u)
        clusters += [make_cluster(sig, m, owner, task_ids) for sig, m in groups.items()]
    elif lexical:
        lexical, keys = _lexical_keys(failures, placed, lexical)
        unit_keys = dict(zip(lexical, keys, strict=True))
        parts = [unit.part if (unit := placed[u][1]) is not None else None for u in lexical]
        owners = [owner[u] for u in lexical]
        lexical_groups, splits = split_coarse(
            merge_rewordings(group_root_cause(keys, parts), parts, owners, task_ids,
                             [f.inferred_part for f in failures],
                             [bool(key.tokens) for key in keys], parts_lost(failures)),
            keys, parts, owners, [failures[i].identifiers for i in owners],
            task_ids.__getitem__)
        first = len(clusters)
        demote = {g: split.shared for split in splits for g in split.groups}
        for g, group in enumerate(lexical_groups):
            clusters.append(make_cluster(
                signature_of([keys[j] for j in group], demote.get(g, frozenset())),
                [lexical[j] for j in group], owner, task_ids))
        made = [[clusters[first + g] for g in split.groups] for split in splits]
    # failures are scored trials (errored ones are never failures), so reward is a number
    share_score_lost(clusters, [float(f.trial.reward or 0.0) for f in failures])
    clusters = unique_signatures(clusters)  # the final signatures, named below
    notes = [f"too coarse: one cluster held {split.size} of the {split.failing} failing "
             f"trials of its part while its units named distinct causes; split into "
             + ", ".join(repr(c.signature) for c in pieces)
             for split, pieces in zip(splits, made, strict=True)]
    return clusters, placed, unit_keys, notes


def parts_lost(failures: list[Failure]) -> list[frozenset[str]]:
    """The score parts each failure fell short on."""
    known: dict[str | None, frozenset[str]] = {}
    out = []
    for f in failures:
        text = f.trial.score_parts
        lost = known.get(text)
        if lost is None:
            lost = known[text] = frozenset(
                k for k, v in score_parts(text).items() if v < 1 - TOLERANCE)
        out.append(lost)
    return out


def unit_sites(key: Key | None, identifiers: frozenset[str]) -> list[str]:
    """The identifiers (tools, fields) a unit's key names."""
    if key is None:
        return []
    return sorted(t for t in key.tokens
                  if not t.startswith(PART_TOKEN) and ("_" in t or t in identifiers))


def suggest_blast_radius(tools: list[str], passing_tools: dict[str, frozenset[str]]) -> list[str]:
    """Sorted passing tasks whose rollouts call all the cluster's tools."""
    if not tools:
        return []
    return sorted(t for t, used in passing_tools.items() if used.issuperset(tools))


def _expand(counts: Counter, names: Callable[[Any], Iterable[str]]) -> Counter[str]:
    out: Counter[str] = Counter()
    for value, n in counts.items():
        for name in names(value):
            out[name] += n
    return out


def cluster_records(clusters: list[Cluster], placed: list[Placed], failures: list[Failure],
                    passing_tools: dict[str, frozenset[str]],
                    unit_keys: dict[int, Key]) -> list[dict[str, Any]]:
    """JSON records of the clusters; ``tag`` and ``blast_radius`` stay None (judgement)."""
    records = []
    known: dict[tuple[int, frozenset[str]], list[str]] = {}  # keys are shared: sites once
    key_by_id = {id(key): key for key in unit_keys.values()}
    tools_of, kind_of = [f.tools for f in failures], [f.kind for f in failures]
    unit_of = [unit for _, unit in placed]
    site_of = [(id(unit_keys.get(u)), failures[i].identifiers) for u, (i, _) in enumerate(placed)]
    for cluster in clusters:
        tool_counts = _expand(Counter(map(tools_of.__getitem__, cluster.trials)), iter)
        tools = sorted(t for t, n in tool_counts.items() if 2 * n >= cluster.size)  # half
        kinds = _expand(Counter(map(kind_of.__getitem__, cluster.trials)), lambda k: (str(k),))
        units = [unit for unit in map(unit_of.__getitem__, cluster.units) if unit is not None]
        parts = Counter(unit.part or "" for unit in units)
        pairs = Counter(map(site_of.__getitem__, cluster.units))
        for pair in pairs:
            if pair not in known:
                known[pair] = unit_sites(key_by_id.get(pair[0]), pair[1])
        sites = _expand(pairs, known.__getitem__)
        record = {
            "signature": cluster.signature, "tasks": cluster.tasks,
            "score_lost": cluster.score_lost, "size": cluster.size, "units": len(units),
            "parts": dict(sorted(parts.items())), "sites": dict(sorted(sites.items())),
            "kinds": dict(sorted(kinds.items())), "tools": tools,
            "structural": cluster.structural,
            "suggested_blast_radius": suggest_blast_radius(tools, passing_tools),
            "tag": None, "blast_radius": None,
        }
        if cluster.note:
            record["note"] = cluster.note
        records.append(record)
    return records
