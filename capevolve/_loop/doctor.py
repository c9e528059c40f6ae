"""``capevolve doctor``: is this Ray cluster ready, before a rollout is paid for?"""

from __future__ import annotations

from typing import Any

COMPARED = (("python", "Python"), ("ray_version", "Ray"), ("capevolve_version", "capevolve"))


def _minor(version: str | None) -> str | None:
    return ".".join(version.split(".")[:2]) if version else version


def find_problems(overview: dict[str, Any]) -> list[str]:
    """One line per node that did not answer, cannot import capevolve or build the sandbox, or
    differs from the driver in Python, Ray or capevolve version."""
    driver, problems = overview["driver"], []
    if not overview["nodes"]:
        problems.append("the cluster has no alive node")
    for node in overview["nodes"]:
        name = f"node {node['node_id'][:12]} ({node['address']})"
        probe = node.get("probe") or {}
        if "error" in probe:
            problems.append(f"{name}: probe task did not run: {probe['error']}")
            continue
        if probe.get("capevolve_import"):
            problems.append(f"{name}: capevolve is not importable: {probe['capevolve_import']}")
        elif probe.get("sandbox"):
            problems.append(f"{name}: cannot sandbox candidate code ({probe['sandbox']}); "
                            "its rollouts fail unless engine.isolation: none")
        for key, label in COMPARED:
            mine, theirs = driver.get(key), probe.get(key)
            if key == "python":  # Ray needs the same major.minor; patch levels may differ
                mine, theirs = _minor(mine), _minor(theirs)
            if mine != theirs:
                problems.append(f"{name}: {label} {theirs or 'missing'} differs from the "
                                f"driver's {mine or 'missing'}")
    return problems


def refuse_unreachable_cluster(address: str | None) -> None:
    """EngineError at once when nothing answers at ``address`` (else RAY_ADDRESS)."""
    import os

    from capevolve._engine.address import refuse_unreachable

    if address or os.environ.get("RAY_ADDRESS"):
        refuse_unreachable(address or os.environ["RAY_ADDRESS"])


def diagnose(address: str | None = None, timeout_s: float = 60.0) -> dict[str, Any]:
    """The cluster overview plus ``problems`` and ``ok``."""
    refuse_unreachable_cluster(address)
    from capevolve._engine.ray.probe import cluster_overview

    overview = cluster_overview(address, timeout_s)
    problems = find_problems(overview)
    return {**overview, "problems": problems, "ok": not problems}

