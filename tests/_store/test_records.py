"""Every stored document is a versioned record: a hand-edited file with an unknown
format_version or a bad field is refused in one line that names the file, and the CLI
turns that into exit code 2 without a traceback."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from capevolve._store import jsonfiles
from capevolve._store.documents import read_final
from capevolve._store.evals import all_evals, latest_eval
from capevolve._store.rundir import RunDir
from capevolve._store.seal import read_seal
from capevolve.cli.app import app
from capevolve.errors import RunDirError
from capevolve.records import FORMAT_VERSION, RunManifest, parse_event


def _append_raw(run: RunDir, record: dict) -> None:
    with open(run.layout.events, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def _event(**fields) -> dict:
    return {"format_version": FORMAT_VERSION, "ts": "2026-01-01T00:00:00+00:00", "pid": 1,
            **fields}


def _edit(path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.chmod(0o644)
    path.write_text(json.dumps(data))


# -- events.jsonl ---------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    _event(kind="set_best", candidate_id="seed", reason="seed", format_version=99),
    _event(kind="set_best", candidate_id="seed", reason="x", forged=True),
    _event(kind="set_best", candidate_id=None, reason="x"),
    _event(kind="spend", cost_usd=-5.0),
    _event(kind="spend", metric_calls=1.5),
    _event(kind="gate", candidate_id="c", best_id="seed", decision="maybe"),
    _event(kind="Bad Kind"),
    [1, 2, 3],
], ids=["unknown-version", "extra-field", "bad-type", "negative-spend", "fractional-count",
        "bad-decision", "bad-user-kind", "not-an-object"])
def test_a_hand_edited_event_line_is_refused_by_name(run, line):
    """A complete events.jsonl line that is not a valid event makes every read fail with
    a RunDirError naming events.jsonl and the line number."""
    n_lines = len(run.layout.events.read_bytes().splitlines())
    _append_raw(run, line)
    with pytest.raises(RunDirError, match=rf"events\.jsonl:{n_lines + 1}"):
        RunDir.open(run.root).best_id  # noqa: B018


def test_an_unknown_version_message_is_one_line(run):
    """The refusal says which version it found and which one it reads, on one line."""
    _append_raw(run, _event(kind="note", format_version=2))
    with pytest.raises(RunDirError) as caught:
        RunDir.open(run.root).events()
    text = str(caught.value)
    assert "\n" not in text and "format_version 2" in text and "events.jsonl" in text


def test_parse_event_types_library_and_user_kinds():
    """A library kind parses to its model; a user kind to UserEvent with its data."""
    spend = parse_event(_event(kind="spend", tokens=3), "x")
    assert type(spend).__name__ == "SpendEvent" and spend.tokens == 3
    note = parse_event(_event(kind="my_note", data={"a": 1}), "x")
    assert type(note).__name__ == "UserEvent" and note.data == {"a": 1}


# -- run.json -------------------------------------------------------------------------------

@pytest.mark.parametrize("changes", [
    {"format_version": 7},
    {"format_version": None},
    {"n_tasks": "many"},
    {"surprise": 1},
    {"config": {"name": "x"}},  # adapter / capability_path missing
], ids=["future-version", "no-version", "bad-field", "extra-field", "bad-config"])
def test_a_hand_edited_manifest_is_refused_by_name(run, changes):
    """run.json with an unknown version or a field that does not validate: RunDirError
    naming run.json on open."""
    _edit(run.layout.run_json, **changes)
    with pytest.raises(RunDirError, match="run.json") as caught:
        RunDir.open(run.root)
    assert "\n" not in str(caught.value)


def test_manifest_carries_the_project_fingerprint_field(run):
    """run.json validates as a RunManifest with a fingerprint mapping (path -> sha256)."""
    manifest = RunDir.open(run.root).manifest
    assert isinstance(manifest, RunManifest)
    assert isinstance(manifest.fingerprint, dict)
    assert jsonfiles.read(run.layout.run_json)["format_version"] == FORMAT_VERSION


def test_cli_names_the_bad_file_with_exit_2(run):
    """`capevolve status` on a run with a future run.json: exit 2, one line, no traceback."""
    _edit(run.layout.run_json, format_version=3)
    result = CliRunner().invoke(app, ["status", "--run-dir", str(run.root), "--json"])
    assert result.exit_code == 2, (result.stdout, result.stderr, result.exception)
    assert "run.json" in result.stderr and "format_version 3" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


# -- evals, final, seal ---------------------------------------------------------------------

@pytest.mark.slow
def test_eval_records_are_validated_on_read(gated):
    """A hand-edited eval record (NaN mean, future version, renamed file) is refused."""
    path = gated.layout.eval_json("val__cand_001__k2")
    good = path.read_text()
    path.write_text(good.replace('"mean": 1.0', '"mean": NaN'))
    with pytest.raises(RunDirError, match="val__cand_001__k2.json"):
        latest_eval(gated, "cand_001", "val")
    _edit(path, **{**json.loads(good), "format_version": 2})
    with pytest.raises(RunDirError, match="format_version 2"):
        all_evals(gated)
    path.write_text(good)
    path.rename(gated.layout.eval_json("val__cand_001__k3"))
    with pytest.raises(RunDirError, match="not the one its name says"):
        all_evals(gated)


def test_final_and_seal_are_validated_on_read(run):
    """final.json and seal.json of an unknown version are refused naming the file."""
    run.layout.final.write_text(json.dumps({"format_version": 9, "best_id": "seed"}))
    with pytest.raises(RunDirError, match="final.json"):
        read_final(run.layout)
    run.layout.seal.write_text(json.dumps({"format_version": 1, "status": "burnt"}))
    with pytest.raises(RunDirError, match="seal.json"):
        read_seal(run.layout)


@pytest.mark.slow
def test_diagnosis_files_are_records(gated):
    """diagnose writes a versioned DiagnosisRecord; annotate refuses a diagnosis file of an
    unknown version, naming it, and leaves it untouched."""
    from capevolve.diagnose.annotate import annotate
    from capevolve.diagnose.diagnosis import DiagnoseOptions, diagnose, diagnosis_path
    from capevolve.records import DiagnosisRecord

    diagnose(gated, DiagnoseOptions(split="val", tag="seed"))
    path = diagnosis_path(gated, "val", "seed")
    record = DiagnosisRecord.model_validate(json.loads(path.read_text()))
    assert record.format_version == FORMAT_VERSION and record.clusters
    _edit(path, format_version=2)
    before = path.read_bytes()
    with pytest.raises(RunDirError, match=r"val__seed\.json.*format_version 2"):
        annotate(gated, path, record.clusters[0]["signature"], "behavioral")
    assert path.read_bytes() == before


# -- the hash chain -------------------------------------------------------------------------

def _lines(run: RunDir) -> list[bytes]:
    return run.layout.events.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("edit", ["in-place", "removed", "inserted"])
def test_an_edited_event_history_breaks_the_hash_chain(run, edit):
    """Editing an earlier event in place (same length), removing one, or inserting a
    forged set_best is refused on the next open, naming the line after the edit."""
    run.update_spent(tokens=5)
    run.update_spent(tokens=6)
    lines = _lines(run)
    if edit == "in-place":
        lines[-2] = lines[-2].replace(b'"tokens": 5', b'"tokens": 9')
    elif edit == "removed":
        del lines[-2]
    else:
        forged = parse_event(json.loads(lines[0]), "x").to_json()
        forged.update(kind="set_best", candidate_id="seed", reason="x")
        del forged["run_id"], forged["key_id"], forged["run_json_sha256"]
        lines.insert(1, (json.dumps(forged) + "\n").encode())
    run.layout.events.write_bytes(b"".join(lines))
    # an edited line fails its own signature; a removed or inserted one breaks the chain
    with pytest.raises(RunDirError,
                       match=r"events\.jsonl:\d+: (the hash chain is broken|forged)"):
        RunDir.open(run.root).spent  # noqa: B018


def test_every_appended_event_chains_to_the_previous_line(run):
    """Each stored event's prev is the sha256 of the line before it."""
    import hashlib

    run.log_event("note", text="x")
    lines = [line.rstrip(b"\n") for line in _lines(run)]
    events = RunDir.open(run.root).events()
    assert events[0].prev is None
    for before, event in zip(lines, events[1:], strict=False):
        assert event.prev == hashlib.sha256(before).hexdigest()
