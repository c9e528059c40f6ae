"""From failures to ordered cluster records: narrated cluster, root-cause or first-words
grouping, tools and the suggested blast radius."""

from __future__ import annotations

from collections import Counter
from typing import Any

from capevolve.diagnose.cluster import (
    Cluster,
    group_root_cause,
    make_cluster,
    order_clusters,
    signature_of,
)
from capevolve.diagnose.kinds import NARRATED_NOTE, NARRATED_SIGNATURE, ClusterMode
from capevolve.diagnose.reflective import Failure
from capevolve.diagnose.signature import first_words, root_cause_keys


def cluster_failures(failures: list[Failure], mode: ClusterMode) -> list[Cluster]:
    """Every failure in exactly one cluster, in the total order of ``order_clusters``.

    Failures flagged narrated_without_action form their own cluster in either mode.
    """
    task_ids = [f.trial.task_id for f in failures]
    # failures are scored trials (errored ones are never failures), so reward is a number
    rewards = [float(f.trial.reward or 0.0) for f in failures]
    narrated = [i for i, f in enumerate(failures) if f.narrated]
    rest = [i for i, f in enumerate(failures) if not f.narrated]
    clusters = []
    if narrated:
        clusters.append(make_cluster(NARRATED_SIGNATURE, narrated, task_ids, rewards,
                                     NARRATED_NOTE))
    if mode == ClusterMode.FIRST_WORDS:
        groups: dict[str, list[int]] = {}
        for i in rest:
            groups.setdefault(first_words(failures[i].feedback), []).append(i)
        clusters += [make_cluster(sig, m, task_ids, rewards) for sig, m in groups.items()]
    elif rest:
        keys = root_cause_keys([failures[i].feedback for i in rest],
                               [failures[i].identifiers for i in rest])
        for group in group_root_cause(keys):
            members = [rest[j] for j in group]
            clusters.append(make_cluster(signature_of([keys[j] for j in group]), members,
                                         task_ids, rewards))
    return order_clusters(clusters)


def cluster_tools(cluster: Cluster, failures: list[Failure]) -> list[str]:
    """Tools called by at least half of the cluster's failing trials, sorted."""
    counts = Counter(tool for i in cluster.members for tool in failures[i].tools)
    return sorted(t for t, n in counts.items() if 2 * n >= cluster.size)


def suggest_blast_radius(tools: list[str], passing_tools: dict[str, frozenset[str]]) -> list[str]:
    """Passing tasks whose rollouts call every one of the cluster's tools (sorted)."""
    if not tools:
        return []
    return sorted(t for t, used in passing_tools.items() if used.issuperset(tools))


def cluster_records(clusters: list[Cluster], failures: list[Failure],
                    passing_tools: dict[str, frozenset[str]]) -> list[dict[str, Any]]:
    """JSON records of the clusters; ``tag`` and ``blast_radius`` stay None (judgement)."""
    records = []
    for cluster in clusters:
        tools = cluster_tools(cluster, failures)
        kinds = Counter(str(failures[i].kind) for i in cluster.members)
        record = {
            "signature": cluster.signature, "tasks": cluster.tasks,
            "score_lost": cluster.score_lost, "size": cluster.size,
            "kinds": dict(sorted(kinds.items())), "tools": tools,
            "suggested_blast_radius": suggest_blast_radius(tools, passing_tools),
            "tag": None, "blast_radius": None,
        }
        if cluster.note:
            record["note"] = cluster.note
        records.append(record)
    return records
