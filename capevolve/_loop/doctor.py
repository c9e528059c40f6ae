"""capevolve doctor: is this Ray cluster ready for capevolve, before a rollout is paid for?

Contract: :func:`diagnose` joins the cluster (``address``, else RAY_ADDRESS, else a local
Ray is started, as every engine command does), asks the Ray engine for an overview (the
driver's environment, and per alive node its resources plus the environment a task pinned
to that node sees) and adds ``problems``: one line per node that did not answer, cannot
import capevolve, or runs a different Python (major.minor), Ray or capevolve version than
the driver. ``ok`` is true when there is none. This module never imports ray itself.
"""

from __future__ import annotations

from typing import Any

GIB = 1024 ** 3
COMPARED = (("python", "Python"), ("ray_version", "Ray"), ("capevolve_version", "capevolve"))


def _minor(version: str | None) -> str | None:
    return ".".join(version.split(".")[:2]) if version else version


def find_problems(overview: dict[str, Any]) -> list[str]:
    """Mismatches between the driver and each node (pure; the overview as data)."""
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
        for key, label in COMPARED:
            mine, theirs = driver.get(key), probe.get(key)
            if key == "python":  # Ray needs the same major.minor; patch levels may differ
                mine, theirs = _minor(mine), _minor(theirs)
            if mine != theirs:
                problems.append(f"{name}: {label} {theirs or 'missing'} differs from the "
                                f"driver's {mine or 'missing'}")
    return problems


def diagnose(address: str | None = None, timeout_s: float = 60.0) -> dict[str, Any]:
    """The cluster overview plus ``problems`` and ``ok`` (see the module docstring)."""
    from capevolve._engine.ray.engine import cluster_overview

    overview = cluster_overview(address, timeout_s)
    problems = find_problems(overview)
    return {**overview, "problems": problems, "ok": not problems}


def render(report: dict[str, Any]) -> str:
    """The report as a short human table (one line per node, then the problems)."""
    d = report["driver"]
    lines = [f"cluster {report['address']}: {len(report['nodes'])} node(s)",
             (f"driver: Python {d['python']}, Ray {d['ray_version']}, "
             f"capevolve {d['capevolve_version']} on {d['hostname']}"),
             (f"{'node':<14} {'address':<16} {'head':<5} {'CPU':>5} {'GPU':>4} "
             f"{'obj store':>10} {'Python':<8} {'Ray':<8} {'capevolve':<10} custom")]
    for n in report["nodes"]:
        p = n.get("probe") or {}
        custom = ", ".join(f"{k}={v:g}" for k, v in n["custom_resources"].items()) or "-"
        lines.append(
            f"{n['node_id'][:12]:<14} {n['address']!s:<16} {'yes' if n['is_head'] else '':<5} "
            f"{n['cpus']:>5g} {n['gpus']:>4g} {n['object_store_bytes'] / GIB:>8.2f}Gi "
            f"{p.get('python', '?')!s:<8} {p.get('ray_version', '?')!s:<8} "
            f"{p.get('capevolve_version', '?')!s:<10} {custom}")
    if report["problems"]:
        lines += ["problems:", *(f"- {line}" for line in report["problems"])]
    else:
        lines.append("ok: every node matches the driver")
    return "\n".join(lines)
