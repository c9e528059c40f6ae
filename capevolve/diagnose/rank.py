"""Rank the clusters: recoverable score first, structural causes kept afloat, refuted fixes last.

The rule (docs/diagnose.md, "Ranking"):

1. clusters whose fix was already tried and rejected (``history`` set) come after every
   other cluster: they are listed, never presented as new;
2. within each of the two groups, by ``priority`` descending: ``score_lost``, multiplied by
   ``STRUCTURAL_WEIGHT`` for a structural cluster -- a mechanical signature
   (narrated_without_action, claimed_without_matching_action) or one a person tagged
   CAPABILITY-GAP. One new mechanism fixes every member of such a cluster, where a
   many-task cluster of cosmetic misses needs as many prose nudges; so a small stall is not
   sunk under task count;
3. ties: size (failing trials) descending, then signature.

Each record gets ``priority`` and ``rank`` (1 = first).
"""

from __future__ import annotations

from typing import Any

from capevolve.diagnose.kinds import JudgementTag

STRUCTURAL_WEIGHT = 3.0


def is_structural(record: dict[str, Any]) -> bool:
    """A mechanical signature, or a cluster tagged CAPABILITY-GAP."""
    return bool(record.get("structural")) or record.get("tag") == JudgementTag.CAPABILITY_GAP


def priority(record: dict[str, Any]) -> float:
    """score_lost, weighted for a structural cluster (rule 2)."""
    weight = STRUCTURAL_WEIGHT if is_structural(record) else 1.0
    return round(record["score_lost"] * weight, 6)


def rank_clusters(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records in rank order, each with ``priority`` and ``rank`` set."""
    for record in records:
        record["priority"] = priority(record)
    ordered = sorted(records, key=lambda r: (r.get("history") is not None, -r["priority"],
                                             -r["size"], r["signature"]))
    for n, record in enumerate(ordered, start=1):
        record["rank"] = n
    return ordered
