"""capevolve doctor: the overview of a real (local) Ray and the mismatch rules."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from capevolve._loop.doctor import find_problems
from capevolve.cli.doctor_cmds import render

DRIVER = {"python": "3.11.7", "ray_version": "2.60.0", "capevolve_version": "0.1.0",
          "capevolve_import": None, "sandbox": None, "hostname": "h"}


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


def test_a_node_without_bubblewrap_is_one_problem_line(monkeypatch):
    """The probe run here with no bwrap on PATH: the node says why it cannot sandbox, and
    doctor turns that into one line naming the opt-out; the table says no."""
    from capevolve._engine.ray.probe import _make_probe

    monkeypatch.setenv("PATH", "/nonexistent")
    probe = _make_probe()()
    assert probe["capevolve_import"] is None
    assert "bubblewrap (bwrap) is not installed" in probe["sandbox"]
    overview = {"address": "x", "driver": DRIVER, "nodes": [{**_node("a"), "probe": probe}]}
    problems = find_problems(overview)
    assert [p for p in problems if "sandbox" in p] == [
        f"node aaaaaaaaaaaa (127.0.0.1): cannot sandbox candidate code ({probe['sandbox']}); "
        "its rollouts fail unless engine.isolation: none"]
    table = render({**overview, "problems": problems}).splitlines()
    assert table[2].split()[-2:] == ["sandbox", "custom"] and table[3].split()[-2] == "no"


@pytest.mark.ray
def test_doctor_json_on_the_session_ray(ray_session):
    """`doctor --json` on a live Ray: one node, probed by a pinned task, no problem (but
    the sandbox's where bwrap cannot run)."""
    from capevolve.cli.doctor_cmds import doctor

    app = typer.Typer()
    app.command()(doctor)
    result = CliRunner().invoke(app, ["--json"], env={"RAY_ADDRESS": None})
    from capevolve._engine import sandbox

    contained = sandbox.check() is None  # else the one problem is the sandbox's
    assert result.exit_code == (0 if contained else 1), result.output
    report = json.loads(result.stdout)
    assert report["ok"] == contained and len(report["problems"]) == (0 if contained else 1)
    (node,) = report["nodes"]
    assert node["cpus"] == 2 and node["object_store_bytes"] > 0 and node["is_head"]
    assert node["probe"]["python"] == report["driver"]["python"]
    assert node["probe"]["capevolve_import"] is None
    assert node["probe"]["sandbox"] == sandbox.check()
