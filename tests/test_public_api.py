"""The curated public surface: sorted and locked, verbs with stable signatures, cheap import."""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import capevolve

REPO = Path(__file__).resolve().parents[1]
TOY = REPO / "benchmarks" / "toy"

EXPECTED = [
    "Accepted", "Adapter", "AdapterError", "BudgetError", "BudgetLeft", "CandidateError",
    "CandidateRecord", "CandidateStanding", "CapevolveError", "Checkout", "ClusterReport",
    "Confidence", "ConfigError", "ConfirmTrials", "Confirmation", "Decision",
    "DiagnosisRecord", "EngineError", "EngineKind", "Estimate", "EvalLine", "EvalPurpose",
    "EvalRecord", "EvalStatus", "Event", "EventKind", "FinalLine", "FinalRecord", "GateError",
    "GateLedger", "GateMode", "GateNumbers", "GatePolicy", "GateRecord", "Handoff", "IntRange",
    "IterationLine", "LoopLine", "LoopSpend", "MeanLine", "ModelSpend", "NoChange",
    "OptimizeSummary", "PerRollout", "PlannedPower", "ProbeResult", "ProjectCheck",
    "ProjectInit", "ProposerSpend", "Quarantine", "RecordError", "Rejected", "RoleSpend",
    "Rollout", "RunDir", "RunDirError", "RunManifest", "RunProblem", "RunStatus", "Score",
    "Spent", "Split", "Standing", "StopParse", "StopPredicate", "StoreError", "Task",
    "TestSealError", "TestVerdict", "ToolCall", "TransientError", "UsdRange", "UserEvent",
    "Verification",
    "accept", "check_project", "checkout", "confirm", "create_run", "diagnose_candidate",
    "doctor", "estimate", "evaluate", "explore_gate", "finalize", "gate", "gate_numbers",
    "init_project", "log_event", "no_change", "open_run", "optimize_run", "probe",
    "quarantine", "query", "register_event_kind", "reject", "start_run", "status", "verify",
]

# The verbs' parameters (name=default, "*" before keyword-only ones): changing one is a
# deliberate act, and the deciding gate takes no setting that could override the project's
# (explore_gate's overrides are recorded as exploratory and never license an accept).
SIGNATURES = {
    "accept": "run, candidate_id, note=None, *, target=None",
    "check_project": "project",
    "checkout": "run, dest, candidate_id=None",
    "confirm": "run, candidate_id, *, trials=None, engine=None, address=None",
    "create_run": "project, run_dir=None",
    "diagnose_candidate": "run, candidate_id, split='val', *, cluster='root-cause', "
                          "redact_gold=False, project=None",
    "doctor": "address=None, timeout_s=60.0",
    "estimate": "run, *, iterations=None, finalize=True",
    "evaluate": "run, candidate, split='val', *, n_trials=None, tasks=None, first_trial=0, "
                "purpose=None, target=None, engine=None, address=None",
    "finalize": "run, *, engine=None, address=None, spend_test_ids=False",
    "explore_gate": "run, candidate_id, *, k_se=None, mode=None, min_delta=None, n_trials=None",
    "gate": "run, candidate_id, *, n_trials=None, target=None, engine=None, address=None",
    "gate_numbers": "current, candidate, current_stderr, candidate_stderr, *, k_se=None, "
                    "min_delta=None, run=None",
    "init_project": "directory, *, kind='adapter'",
    "log_event": "run, kind, **fields",
    "register_event_kind": "name",
    "open_run": "run",
    "optimize_run": "run, *, algorithm=None, proposer=None, iterations=None, parallel=1, "
                    "focus=None, timeout_s=900.0, finalize=False, resume=False, engine=None, "
                    "address=None, on_iteration=None, minibatch=None, spend_test_ids=False",
    "probe": "run, candidate, *, tasks=None, cluster=None, failing=False, split='val', "
             "engine=None, address=None",
    "query": "run, sql",
    "no_change": "run, reason, candidate_id=None",
    "reject": "run, candidate_id, note=None",
    "start_run": "project, run_dir=None, *, engine=None, address=None",
    "status": "run",
    "quarantine": "run",
    "verify": "run",
}


def _shape(fn) -> str:
    parts, star = [], False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        default = p.default
        if p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        elif default is p.empty:
            parts.append(p.name)
        else:
            text = repr(str(default)) if isinstance(default, str) else repr(default)
            parts.append(f"{p.name}={text}")
    return ", ".join(parts)


def test_all_is_sorted_and_locked():
    """__all__ is sorted and equals the reviewed list (changing it is a deliberate act)."""
    assert capevolve.__all__ == sorted(capevolve.__all__)
    assert capevolve.__all__ == EXPECTED


def test_every_public_name_resolves():
    """Every name in __all__ is importable from the package root, and dir() lists it."""
    for name in capevolve.__all__:
        assert getattr(capevolve, name) is not None
    assert set(capevolve.__all__) <= set(dir(capevolve))
    with pytest.raises(AttributeError):
        capevolve.not_a_verb  # noqa: B018


def test_verbs_have_locked_signatures_and_docstrings():
    """Each verb is a documented function of capevolve._api with its locked parameters."""
    verbs = {n for n in capevolve.__all__ if n[0].islower()}
    assert verbs == set(SIGNATURES)
    for name in sorted(verbs):
        fn = getattr(capevolve, name)
        assert fn.__module__ == "capevolve._api", name
        assert (fn.__doc__ or "").strip(), f"{name} has no docstring"
        assert _shape(fn) == SIGNATURES[name], name


def test_no_package_is_callable():
    """The public subpackages are plain modules (no module class is swapped to make one
    callable); their names import as usual and the verbs are plain functions of the root."""
    import types

    import capevolve.diagnose as diagnose_package
    import capevolve.optimize as optimize_package
    from capevolve.diagnose import ClusterMode
    from capevolve.optimize.proposers.base import Proposal

    for package in (diagnose_package, optimize_package):
        assert type(package) is types.ModuleType and not callable(package)
    assert capevolve.diagnose is diagnose_package and capevolve.optimize is optimize_package
    assert ClusterMode.ROOT_CAUSE == "root-cause"
    assert Proposal(changed=False, blocker="x").blocker == "x"
    assert isinstance(capevolve.diagnose_candidate, types.FunctionType)
    assert isinstance(capevolve.optimize_run, types.FunctionType)


def test_verbs_declare_typed_returns():
    """No verb returns a bare dict: each names a record, a result or the run."""
    for name in SIGNATURES:
        returned = inspect.signature(getattr(capevolve, name)).return_annotation
        assert "dict" not in str(returned), (name, returned)


def test_errors_share_one_root():
    """Every public error derives from CapevolveError; TestSealError is a RunDirError."""
    for name in capevolve.__all__:
        obj = getattr(capevolve, name)
        if isinstance(obj, type) and name.endswith("Error") and name != "TransientError":
            assert issubclass(obj, capevolve.CapevolveError)
    assert issubclass(capevolve.TestSealError, capevolve.RunDirError)


HEAVY = ("ray", "duckdb", "pyarrow", "scipy")


def test_import_is_cheap_and_never_imports_ray(tmp_path):
    """A fresh ``import capevolve`` loads none of Ray, DuckDB, Arrow or SciPy; resolving a
    verb loads its code but still not Ray (Ray loads only when a Ray engine runs)."""
    code = ("import sys, json, capevolve\n"
            f"before = [m for m in {HEAVY!r} if m in sys.modules]\n"
            "capevolve.gate; capevolve.evaluate\n"
            f"after = [m for m in {HEAVY!r} if m in sys.modules]\n"
            "print(json.dumps([before, after]))")
    out = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, text=True,
                         capture_output=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    before, after = json.loads(out.stdout)
    assert before == []
    assert "ray" not in after


def test_no_internal_module_imports_the_package_root():
    """The package root sits on top: no module below it imports ``capevolve`` itself (which
    would be a cycle through the root API); only the CLI, a client of the API, may."""
    import grimp

    graph = grimp.build_graph("capevolve")
    importers = {m for m in graph.find_modules_that_directly_import("capevolve")
                 if not m.startswith("capevolve.cli")}
    assert importers == set()


@pytest.mark.slow
def test_the_verbs_run_a_whole_loop_on_the_toy_project(tmp_path):
    """start_run -> evaluate -> gate -> accept -> status -> query -> finalize through the
    public verbs on the local engine, each returning its typed record; test is refused to
    evaluate, a second finalize too."""
    project = tmp_path / "toy"
    shutil.copytree(TOY, project, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    assert type(capevolve.check_project(project)) is capevolve.ProjectCheck
    handoff = capevolve.start_run(project, tmp_path / "run", engine="local")
    assert type(handoff) is capevolve.Handoff
    run = capevolve.open_run(handoff.run_dir)
    assert run.best_id == "seed"
    record = capevolve.evaluate(run, project / "improved_capability", "val", engine="local")
    assert type(record) is capevolve.EvalRecord
    assert record.status == capevolve.EvalStatus.COMPLETE
    candidate = record.candidate_id
    with pytest.raises(capevolve.TestSealError):
        capevolve.evaluate(run, candidate, "test", engine="local")
    verdict = capevolve.gate(str(run.root), candidate, engine="local")  # its confirmation
    assert type(verdict) is capevolve.GateRecord
    assert verdict.decision == capevolve.Decision.ACCEPT, verdict
    accepted = capevolve.accept(run.root, candidate, note="adds the missing rules")
    assert type(accepted) is capevolve.Accepted and accepted.best_id == candidate
    status = capevolve.status(run.root)
    assert type(status) is capevolve.RunStatus and status.best_id == candidate
    assert type(status.spent) is capevolve.Spent and status.spent.metric_calls > 0
    assert type(status.gates) is capevolve.GateLedger and status.gates.decision_gates >= 1
    assert type(status.standings[candidate]) is capevolve.CandidateStanding
    assert status.best_standing == status.standings[candidate] and status.final is None
    assert status.spent == run.spent and status.best_val.eval_id == verdict.candidate_eval
    copy = capevolve.checkout(run, tmp_path / "next")
    assert type(copy) is capevolve.Checkout and copy.candidate_id == candidate
    edited = Path(copy.path) / copy.files[0]
    edited.write_text(edited.read_text() + "\n")  # an ordinary writable file
    with pytest.raises(capevolve.ConfigError, match="not an empty directory"):
        capevolve.checkout(run, tmp_path / "next", "seed")
    columns, rows = capevolve.query(run.root, "SELECT count(*) AS n FROM rollouts")
    assert columns == ["n"] and rows[0][0] > 0
    diagnosis = capevolve.diagnose_candidate(run.root, "seed", "val")
    assert type(diagnosis) is capevolve.DiagnosisRecord
    assert diagnosis.tag == "seed" and (run.root / "diagnoses").is_dir()
    with pytest.raises(capevolve.CapevolveError):
        capevolve.diagnose_candidate(run.root, "seed", "test")
    final = capevolve.finalize(run.root, engine="local", spend_test_ids=True)
    assert type(final) is capevolve.FinalRecord and final.best_id == candidate
    closed = capevolve.status(run.root).final
    assert type(closed) is capevolve.FinalLine and closed.verdict == final.verdict
    with pytest.raises(capevolve.TestSealError):
        capevolve.finalize(run.root, engine="local", spend_test_ids=True)


def test_results_nest_typed_parts():
    """No field of a verb's result is a dict of arbitrary values where a typed part exists
    (status's spend, budget, standings, gates, final, loop and model calls; check's and
    the handoff's power; the estimate's ranges; verify's problems; optimize's rows, spend
    and final; a confirmation's trials and evaluations)."""
    nested = {capevolve.RunStatus: ("spent", "budget", "budget_left", "spent_by_role",
                                    "standings", "best_standing", "gates", "final", "stop",
                                    "optimize", "model_spend"),
              capevolve.ProjectCheck: ("power", "stop"), capevolve.Handoff: ("power",),
              capevolve.Estimate: ("rollouts", "per_rollout", "tokens", "usd"),
              capevolve.Verification: ("problems",),
              capevolve.OptimizeSummary: ("iterations", "best_val", "seed_val",
                                          "stop_condition", "spend", "final"),
              capevolve.Confirmation: ("trials", "evals")}
    for model, names in nested.items():
        for name in names:
            annotation = str(model.model_fields[name].annotation)
            assert "Any" not in annotation and "dict[str, dict" not in annotation, \
                (model.__name__, name, annotation)


@pytest.mark.slow
@pytest.mark.ray  # the CLI gate confirms on the project's engine
def test_a_verbs_dict_is_the_json_the_cli_prints(tmp_path):
    """``to_dict()`` of a verb's result is what the same command prints with --json (the
    gate's record, the status), and the stored gate event holds the same fields."""
    from typer.testing import CliRunner

    from capevolve.cli.app import app

    project = tmp_path / "toy"
    shutil.copytree(TOY, project, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    run = capevolve.create_run(project, tmp_path / "run")
    capevolve.evaluate(run, "seed", "val", engine="local")
    cand = capevolve.evaluate(run, project / "improved_capability", "val", engine="local")
    gate = capevolve.gate(run.root, cand.candidate_id)
    event = run.events(capevolve.EventKind.GATE)[-1].to_json()
    assert {k: event[k] for k in gate.to_dict()} == gate.to_dict()
    out = CliRunner().invoke(app, ["gate", "--run-dir", str(run.root), "--candidate",
                                   cand.candidate_id, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == gate.to_dict()
    out = CliRunner().invoke(app, ["status", "--run-dir", str(run.root), "--json"])
    status = capevolve.status(run.root).to_dict()
    assert {k: v for k, v in json.loads(out.stdout).items() if k != "decisions"} == status


def test_open_run_refuses_a_directory_that_is_not_a_run(tmp_path):
    """open_run on a plain directory is a one-line RunDirError, and creates nothing."""
    with pytest.raises(capevolve.RunDirError, match="not a capevolve run dir"):
        capevolve.open_run(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments_are_one_line_capevolve_errors(tmp_path):
    """An unknown split, engine kind or cluster mode given to a verb is a ConfigError
    naming the value (never a bare ValueError), and nothing is run or written."""
    project = tmp_path / "toy"
    shutil.copytree(TOY, project, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    run = capevolve.create_run(project, tmp_path / "run")
    before = sorted(p.relative_to(run.root) for p in run.root.rglob("*"))
    with pytest.raises(capevolve.ConfigError, match="split 'bogus'"):
        capevolve.evaluate(run, "seed", "bogus", engine="local")
    with pytest.raises(capevolve.ConfigError, match="engine 'bogus': expected one of ray, local"):
        capevolve.evaluate(run, "seed", "val", engine="bogus")
    with pytest.raises(capevolve.ConfigError, match="split 'bogus'"):
        capevolve.diagnose_candidate(run, "seed", "bogus")
    with pytest.raises(capevolve.ConfigError, match="cluster 'nope'"):
        capevolve.diagnose_candidate(run, "seed", "val", cluster="nope")
    with pytest.raises(capevolve.ConfigError, match="engine 'bogus'"):
        capevolve.start_run(project, tmp_path / "run2", engine="bogus")
    assert sorted(p.relative_to(run.root) for p in run.root.rglob("*")) == before
    assert not (tmp_path / "run2").exists()
