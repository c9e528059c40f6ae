"""``capevolve doctor``: check a Ray cluster before any rollout is paid for; ``capevolve
down``: stop capevolve's own local Ray."""

from __future__ import annotations

from typing import Annotated, Any

import typer

import capevolve
from capevolve.cli.options import AddressOpt, JsonOpt
from capevolve.cli.output import command, emit, progress


def render(report: dict[str, Any]) -> str:
    """The report as a human table."""
    d = report["driver"]
    lines = [f"cluster {report['address']}: {len(report['nodes'])} node(s)",
             (f"driver: Python {d['python']}, Ray {d['ray_version']}, "
             f"capevolve {d['capevolve_version']} on {d['hostname']}"),
             (f"{'node':<14} {'address':<16} {'head':<5} {'CPU':>5} {'GPU':>4} "
             f"{'obj store':>10} {'Python':<8} {'Ray':<8} {'capevolve':<10} {'sandbox':<8} "
             "custom")]
    for n in report["nodes"]:
        p = n.get("probe") or {}
        custom = ", ".join(f"{k}={v:g}" for k, v in n["custom_resources"].items()) or "-"
        lines.append(
            f"{n['node_id'][:12]:<14} {n['address']!s:<16} {'yes' if n['is_head'] else '':<5} "
            f"{n['cpus']:>5g} {n['gpus']:>4g} {n['object_store_bytes'] / 1024 ** 3:>8.2f}Gi "
            f"{p.get('python', '?')!s:<8} {p.get('ray_version', '?')!s:<8} "
            f"{p.get('capevolve_version', '?')!s:<10} {_sandbox(p):<8} {custom}")
    if report["problems"]:
        lines += ["problems:", *(f"- {line}" for line in report["problems"])]
    else:
        lines.append("ok: every node matches the driver")
    return "\n".join(lines)


def _sandbox(probe: dict[str, Any]) -> str:
    """The sandbox column: yes, no or ? (not probed)."""
    if "sandbox" not in probe:
        return "?"
    return "no" if probe["sandbox"] else "yes"


@command
def doctor(address: AddressOpt = None,
           timeout_s: Annotated[float, typer.Option(
               "--timeout", min=1, help="Seconds to wait for every node's probe.")] = 60.0,
           json: JsonOpt = False) -> None:
    """Check the cluster: nodes, resources and Python / Ray / capevolve versions on the
    driver and each node. Exit 1 on a mismatch, a node without capevolve or one that cannot
    build the sandbox."""
    from capevolve import _api

    _api.refuse_unreachable_cluster(address)  # one error line, no progress line before it
    progress(f"capevolve: probing {address or 'a local Ray'} ...")
    report = capevolve.doctor(address, timeout_s).to_dict()
    emit(report, json, render(report), failed=not report["ok"])


@command
def down(force: Annotated[bool, typer.Option(
             "--force", help="Stop it even while other commands are connected (their "
             "evaluations lose the rollouts in flight; rerun them to resume).")] = False,
         json: JsonOpt = False) -> None:
    """Stop capevolve's own local Ray and remove its state (it also stops itself after
    CAPEVOLVE_RAY_IDLE_S idle seconds, default 900). Exit 2 while another command uses it,
    unless --force; a Ray joined with --address / RAY_ADDRESS is never touched. Nothing
    running: exit 0."""
    from capevolve import _api

    result = _api.local_ray_down(force=force)
    emit(result, json, result["message"])


if __name__ == "__main__":  # `python -m capevolve.cli.doctor_cmds` before app.py registers it
    typer.run(doctor)
