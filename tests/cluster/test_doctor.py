"""capevolve doctor: the overview of a real (local) Ray and the mismatch rules."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from capevolve._loop.doctor import find_problems
from capevolve.cli.doctor_cmds import render

DRIVER = {"python": "3.11.7", "ray_version": "2.60.0", "capevolve_version": "0.1.0",
          "capevolve_import": None, "hostname": "h"}


def _node(node_id: str, **probe) -> dict:
    return {"node_id": node_id * 12, "address": "127.0.0.1", "is_head": False, "cpus": 1.0,
            "gpus": 0.0, "object_store_bytes": 2**30, "memory_bytes": 2**31,
            "custom_resources": {}, "probe": {**DRIVER, **probe}}


def test_matching_nodes_have_no_problem():
    """Same Python minor (patch may differ), Ray and capevolve: no problem."""
    overview = {"address": "x", "driver": DRIVER,
                "nodes": [_node("a"), _node("b", python="3.11.9")]}
    assert find_problems(overview) == []
    assert "ok: every node matches" in render({**overview, "problems": []})


def test_mismatches_and_unreachable_nodes_are_flagged():
    """Version differences, a failed import and a probe error each become one problem."""
    overview = {"address": "x", "driver": DRIVER, "nodes": [
        _node("a", ray_version="2.59.0"), _node("b", python="3.12.1"),
        _node("c", capevolve_version=None, capevolve_import="ModuleNotFoundError: capevolve"),
        {**_node("d"), "probe": {"error": "GetTimeoutError"}}]}
    problems = find_problems(overview)
    assert len(problems) == 5, problems
    assert any("Ray 2.59.0" in p for p in problems)
    assert any("Python 3.12" in p for p in problems)
    assert any("not importable" in p for p in problems)
    assert any("capevolve missing" in p for p in problems)
    assert any("did not run" in p for p in problems)
    assert find_problems({"address": "x", "driver": DRIVER, "nodes": []})


@pytest.mark.ray
def test_doctor_json_on_the_session_ray(ray_session):
    """`doctor --json` on a live Ray: one node, probed by a pinned task, no problem."""
    from capevolve.cli.doctor_cmds import doctor

    app = typer.Typer()
    app.command()(doctor)
    result = CliRunner().invoke(app, ["--json"], env={"RAY_ADDRESS": None})
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] and report["problems"] == []
    (node,) = report["nodes"]
    assert node["cpus"] == 2 and node["object_store_bytes"] > 0 and node["is_head"]
    assert node["probe"]["python"] == report["driver"]["python"]
    assert node["probe"]["capevolve_import"] is None
