"""Sanity checks on a clustering's grain, computed from the cluster records."""

from __future__ import annotations

from typing import Any

MOST = 0.5
COHERENT = 2 / 3
MIN_SITE_UNITS = 2


def _dominant(counts: dict[str, int]) -> float:
    total = sum(counts.values())
    return max(counts.values()) / total if total else 1.0


def incoherent(record: dict[str, Any]) -> str | None:
    """Why a cluster's members look like several causes (None when they do not)."""
    parts = record.get("parts") or {}
    if len(parts) > 1 and _dominant(parts) < COHERENT:
        return f"its units come from different feedback parts ({', '.join(sorted(parts))})"
    sites = {s: n for s, n in (record.get("sites") or {}).items() if n >= MIN_SITE_UNITS}
    if len(sites) > 1 and _dominant(sites) < COHERENT:
        top = sorted(sites, key=lambda s: (-sites[s], s))[:4]
        return f"its units name different failure sites ({', '.join(top)})"
    return None


def sanity_checks(records: list[dict[str, Any]], failing_trials: int,
                  failing_tasks: int) -> list[str]:
    """Warnings about the clustering's grain (empty when it looks usable)."""
    if failing_tasks < 3 or not records:
        return []
    warnings = []
    lexical = [r for r in records if not r.get("structural")]
    if len(records) == 1 and lexical:
        warnings.append("too coarse: one cluster covers every failure (usually a scorer "
                        "preamble that was not stripped, or feedback with no specifics)")
    for record in lexical:
        why = incoherent(record)
        if record["size"] > MOST * failing_trials and why and len(records) > 1:
            warnings.append(f"too coarse: cluster {record['signature']!r} holds "
                            f"{record['size']} of {failing_trials} failing trials and {why}")
    if (len(records) >= failing_tasks and all(len(r["tasks"]) == 1 for r in records)):
        warnings.append("too fine: one cluster per failing task (the feedback may be "
                        "too specific to group; compare with --cluster first-words)")
    return warnings
