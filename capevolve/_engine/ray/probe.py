"""The cluster probe behind ``capevolve doctor``: each alive node's resources and environment."""

from __future__ import annotations

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from capevolve._engine.ray.engine import ensure_ray


def _make_probe():
    """The probe as a closure, so Ray ships it by value to nodes that may lack capevolve."""

    def probe() -> dict:
        import importlib.metadata as md
        import os as _os
        import platform
        import sys as _sys

        info = {"python": platform.python_version(), "executable": _sys.executable,
                "hostname": platform.node(), "pid": _os.getpid()}
        for dist in ("ray", "capevolve"):
            try:
                info[f"{dist}_version"] = md.version(dist)
            except md.PackageNotFoundError:
                info[f"{dist}_version"] = None
        try:
            import capevolve._engine.scorer  # noqa: F401 - the import a scorer actor needs
            import capevolve._engine.worker  # noqa: F401 - the import a worker actor needs
            from capevolve._engine import sandbox

            info["capevolve_import"] = None
            info["sandbox"] = sandbox.check()  # None: rollouts can be sandboxed here
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            info["capevolve_import"] = f"{type(exc).__name__}: {exc}"
        return info

    return probe


def _node_row(node: dict) -> dict:
    resources = node.get("Resources", {})
    return {
        "node_id": node["NodeID"], "address": node.get("NodeManagerAddress"),
        "is_head": bool(resources.get("node:__internal_head__")),
        "cpus": resources.get("CPU", 0.0), "gpus": resources.get("GPU", 0.0),
        "object_store_bytes": int(resources.get("object_store_memory", 0)),
        "memory_bytes": int(resources.get("memory", 0)),
        "custom_resources": {k: v for k, v in resources.items()
                             if k not in ("CPU", "GPU", "memory", "object_store_memory")
                             and not k.startswith("node:")},
    }


def cluster_overview(address: str | None, timeout_s: float = 60.0) -> dict:
    """Join or start Ray; the driver's environment, and each alive node's resources and the
    environment a zero-CPU task pinned there sees."""
    ensure_ray(address)
    probe = _make_probe()
    remote_probe = ray.remote(num_cpus=0, max_retries=0)(probe)
    nodes = [_node_row(n) for n in ray.nodes() if n.get("Alive")]
    refs = [remote_probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["node_id"], soft=False)).remote() for n in nodes]
    ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    for node, ref in zip(nodes, refs, strict=True):
        try:
            node["probe"] = ray.get(ref, timeout=0.1)
        except Exception as exc:  # noqa: BLE001 - one line per node, as data
            node["probe"] = {"error": (str(exc).strip().splitlines() or [type(exc).__name__])[-1]}
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already finished or gone
                pass
    return {"address": ray.get_runtime_context().gcs_address, "driver": probe(),
            "nodes": sorted(nodes, key=lambda n: (not n["is_head"], n["node_id"]))}
