"""Rank the clusters: recoverable score first, structural causes kept afloat, refuted fixes last."""

from __future__ import annotations

from typing import Any

from capevolve.diagnose.kinds import JudgementTag

STRUCTURAL_WEIGHT = 3.0


def is_structural(record: dict[str, Any]) -> bool:
    """A mechanical signature, or a cluster tagged CAPABILITY-GAP."""
    return bool(record.get("structural")) or record.get("tag") == JudgementTag.CAPABILITY_GAP


def priority(record: dict[str, Any]) -> float:
    """score_lost, times ``STRUCTURAL_WEIGHT`` for a structural cluster."""
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
