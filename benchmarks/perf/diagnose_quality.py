"""Scoring a diagnosis against ground-truth causes: item alignment, ARI, per-cause recall.

An *item* is one ground-truth cause of one failing trial: ``(task_id, trial, part, text,
rule)``, where ``text`` is the sentence the scorer wrote for that cause. Diagnose's label
for the item is the cluster of the diagnosis cause unit of the same trial whose text is
that sentence (or contains it, or is contained in it), preferring the same part; an item
no unit covers gets the label ``(unmatched)`` -- it counts against the clustering, never
for it. Only the stored diagnosis document is read.

- adjusted Rand index (Hubert & Arabie 1985) between the rules and diagnose's labels;
- per-cause recall: for each rule, the share of its items in the one cluster holding most
  of them (how much of the cause one edit aimed at that cluster would reach), and that
  cluster's purity (the share of the cluster's items that are this rule).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from math import comb
from typing import Any

UNMATCHED = "(unmatched)"


@dataclass(frozen=True)
class Item:
    """One ground-truth cause of one failing trial."""

    task_id: str
    trial: int
    part: str | None
    text: str
    rule: str


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def label_items(diagnosis: dict[str, Any], items: list[Item]) -> list[str]:
    """Diagnose's cluster for each item (module docstring)."""
    causes: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for entry in diagnosis["reflective_dataset"]:
        causes[(entry["task_id"], entry["trial"])] = entry.get("causes") or []
    labels = []
    for item in items:
        want = _norm(item.text)
        found = [c for c in causes.get((item.task_id, item.trial), [])
                 if (got := _norm(c["text"])) and (got == want or want in got or got in want)]
        found.sort(key=lambda c: (c.get("part") != item.part, _norm(c["text"]) != want))
        labels.append(found[0]["cluster"] if found else UNMATCHED)
    return labels


def adjusted_rand_index(truth: list[str], predicted: list[str]) -> float:
    """ARI of two labelings of the same items (1 = identical partitions, ~0 = chance)."""
    n = len(truth)
    if n < 2:
        return 1.0
    pairs = Counter(zip(truth, predicted, strict=True))
    index = sum(comb(v, 2) for v in pairs.values())
    a = sum(comb(v, 2) for v in Counter(truth).values())
    b = sum(comb(v, 2) for v in Counter(predicted).values())
    expected = a * b / comb(n, 2)
    top = (a + b) / 2
    if top == expected:
        return 1.0
    return (index - expected) / (top - expected)


def per_cause(truth: list[str], predicted: list[str]) -> dict[str, dict[str, Any]]:
    """Per rule: items, recall into its best cluster, that cluster and its purity."""
    out = {}
    sizes = Counter(predicted)
    for rule in sorted(set(truth)):
        mine = Counter(p for t, p in zip(truth, predicted, strict=True) if t == rule)
        best, hits = max(mine.items(), key=lambda kv: (kv[1], kv[0] != UNMATCHED, kv[0]))
        out[rule] = {"items": sum(mine.values()), "recall": round(hits / sum(mine.values()), 3),
                     "cluster": best,
                     "purity": round(hits / sizes[best], 3) if best != UNMATCHED else 0.0}
    return out


def score(diagnosis: dict[str, Any], items: list[Item]) -> dict[str, Any]:
    """ARI, per-cause recall and counts of one diagnosis against its ground truth."""
    predicted = label_items(diagnosis, items)
    truth = [i.rule for i in items]
    return {"items": len(items), "failing_trials": diagnosis["failing_total"],
            "rules": len(set(truth)), "clusters": len(diagnosis["clusters"]),
            "unmatched": predicted.count(UNMATCHED),
            "ari": round(adjusted_rand_index(truth, predicted), 3),
            "per_cause": per_cause(truth, predicted), "sanity": diagnosis["sanity"]}
