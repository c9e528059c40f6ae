"""A keep-best accept shows as tentative everywhere until a confirmation (recomputed from
rows, never its stored label) makes it confirmed: status, report.md, report.html, viewer."""

from __future__ import annotations

import pytest
from cli.cli_support import invoke, one_json
from fixtures.projects import make_candidate, make_project

from capevolve._loop.confirm import confirm
from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import start_run
from capevolve._loop.standing import standings
from capevolve._store import jsonfiles
from capevolve._store.rundir import RunDir
from capevolve.report.data import report_data
from capevolve.report.html import render_html
from capevolve.report.markdown import render
from capevolve.view.data import overview


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A tentative keep-best accept (within_noise at 2 trials over 4 val tasks)."""
    root = tmp_path_factory.mktemp("standing")
    project = make_project(root / "p", 16, trials=2, quality=0.3,
                           extra="gate: {policy: keep-best}\nseed: 1\n")
    run = RunDir.open(start_run(project, root / "run")["run_dir"])
    cid = evaluate(run, make_candidate(root / "c", 0.6), "val")["candidate_id"]
    gate = gate_candidate(run, cid)
    assert gate["decision"] == "accept" and gate["confidence"] == "within_noise"
    accept(run, cid)
    return run, cid


def _shown(run: RunDir, cid: str) -> dict:
    status = one_json(invoke("status", "--run-dir", run.root, "--json"))
    text = invoke("status", "--run-dir", run.root).stdout
    row = next(r for r in status["decisions"] if r["candidate_id"] == cid)
    data = report_data(run)
    cand = next(c for c in data["candidates"] if c["id"] == cid)
    view = next(c for c in overview(run)["candidates"] if c["id"] == cid)
    return {"status": status, "text": text, "row": row, "md": render(run),
            "html": render_html(data), "report": cand, "view": view}


@pytest.mark.slow
def test_a_kept_move_is_tentative_everywhere_until_confirmed(kept):
    run, cid = kept
    shown = _shown(run, cid)
    assert shown["status"]["best_standing"]["standing"] == "tentative"
    assert shown["row"]["standing"] == "tentative" and shown["row"]["confidence"] == \
        "within_noise"
    assert f"best {cid} (within_noise, TENTATIVE until confirmed)" in shown["text"]
    assert "accept (within_noise, TENTATIVE until confirmed)" in shown["text"]
    assert "accept (within_noise, TENTATIVE until confirmed)" in shown["md"]
    assert "tentative: within_noise" in shown["html"]
    assert shown["report"]["standing"] == "tentative"
    assert shown["view"]["standing"] == "tentative"
    gates = shown["status"]["gates"]  # the keep counts 1 in the ledger, everywhere
    assert gates["expected_false_accepts"] == 1.0 and gates["tentative_keeps"] == 1
    counted = "keep-best counts each of its 1 keeps not shown beyond noise as 1"
    assert counted in shown["text"] and counted in shown["md"] and counted in shown["html"]


@pytest.mark.slow
def test_a_forged_confirmation_changes_nothing_and_a_real_one_confirms(kept):
    """A confirmations/ file claiming significant without the evaluations behind it is
    ignored; a real confirmation whose recomputed label is significant confirms it, and the
    best never moves."""
    run, cid = kept
    folder = run.root / "confirmations"
    folder.mkdir(exist_ok=True)
    jsonfiles.write_atomic(folder / "99.json", {
        "candidate_id": cid, "reference_id": "seed", "confidence": "significant",
        "evals": {cid: ["val__x__k2", "val__x__k8"], "seed": ["a", "b"]}})
    assert standings(run)[cid]["standing"] == "tentative"
    (folder / "99.json").unlink()
    doc = confirm(run, cid, trials=8)
    assert doc["confidence"] == "significant" and run.best_id == cid
    forged = jsonfiles.read(doc["path"])
    jsonfiles.write_atomic(doc["path"], {**forged, "confidence": "within_noise"})
    shown = _shown(run, cid)  # the stored label is never read: recomputed from rows
    assert shown["row"]["standing"] == "confirmed"
    assert shown["status"]["standings"][cid]["confirmations"] == 1
    assert f"best {cid} (confirmed)" in shown["text"] and "accept (confirmed)" in shown["md"]
    assert ">confirmed</small>" in shown["html"] and shown["view"]["standing"] == "confirmed"
    gates = shown["status"]["gates"]  # confirmed: its gate's alpha, no longer a whole keep
    assert gates["tentative_keeps"] == 0 and gates["expected_false_accepts"] < 0.06
