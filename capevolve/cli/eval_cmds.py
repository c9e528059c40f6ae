"""Commands that measure and decide: checkout, evaluate, gate, accept, reject, finalize, and
beside the gate no-change (an unscorable iteration), confirm and probe."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

import capevolve
from capevolve.cli.options import (
    AddressOpt,
    EngineOpt,
    JsonOpt,
    MaybeRunDirOpt,
    RunProjectOpt,
    resolve_run_dir,
    split_or_fail,
)
from capevolve.cli.output import command, emit, exit_if_breaker, fail, fmt_mean, progress
from capevolve.kinds import GateMode

if TYPE_CHECKING:
    from capevolve.records import EvalRecord, GateNumbers, GateRecord

EVAL_KEYS = ("eval_id", "candidate_id", "split", "status", "mean", "stderr", "n_tasks",
             "n_scored", "n_errors", "n_trials", "pass_k", "coverage", "units_run", "purpose",
             "target", "excluded", "excluded_reasons")
NoteOpt = Annotated[str | None, typer.Option("--note", help="Why (recorded in events).")]
TargetOpt = Annotated[str | None, typer.Option(
    "--target", help="The census bucket (census check --record) or val diagnose cluster the "
    "change targets: the mechanism audit checks the gain comes from it.")]
CandidateIdOpt = Annotated[str, typer.Option("--candidate", "-c", help="Candidate id.")]


def _eval_human(record: EvalRecord, already: bool = False) -> str:
    from capevolve.report.words import pass_k_text, scored_text

    mean = fmt_mean(record.mean, record.stderr)
    scored = scored_text(record.n_scored, record.n_tasks, record.excluded_reasons)
    return (f"{record.eval_id}: {'already complete, nothing ran: ' if already else ''}"
            f"{record.split} mean {mean} ({scored}; {record.n_errors} errored trials, "
            f"{record.n_trials} trials; {pass_k_text(record.pass_k)}) [{record.status}]")


@command
def checkout(dest: Annotated[Path, typer.Argument(
                 help="Where to write the copy (a new or empty directory).")],
             candidate: Annotated[str | None, typer.Option(
                 "--candidate", "-c", help="Candidate id (default: the current best).")] = None,
             run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
             json: JsonOpt = False) -> None:
    """Copy a candidate's files into DEST as writable files, to edit into the next candidate."""
    result = capevolve.checkout(resolve_run_dir(run_dir, project), dest, candidate)
    emit(result.to_dict(), json, f"{result.candidate_id} copied to {result.path} "
                                 f"({len(result.files)} files); edit them, then: capevolve "
                                 f"evaluate --candidate {dest} --split val")


@command
def evaluate(candidate: Annotated[str, typer.Option("--candidate", "-c",
                                                    help="A candidate directory or id.")],
             run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
             split: Annotated[str, typer.Option("--split", "-s", help="train or val.")] = "val",
             n_trials: Annotated[int | None, typer.Option(
                 "--n-trials", min=1, help="Trials per task (default: num_trials).")] = None,
             resume: Annotated[bool, typer.Option(
                 "--resume", help="Say that an interrupted evaluation is being continued; "
                 "resuming is automatic: the same candidate, split and trials run only the "
                 "missing units, and a complete evaluation is returned as it is.")] = False,
             target: TargetOpt = None,
             address: AddressOpt = None, engine: EngineOpt = None, json: JsonOpt = False) -> None:
    """Evaluate a candidate on train or val (test is refused: only finalize scores it).

    A directory is snapshotted as the next cand_NNN. Refused on a finalized run, for a change
    to protected paths, when a project file the scores depend on changed, and once the budget
    is spent."""
    split_or_fail(split, "evaluate")
    run = capevolve.open_run(resolve_run_dir(run_dir, project))
    progress(f"capevolve: evaluating {candidate} on {split}{' (resume)' if resume else ''} ...")
    from capevolve.progress.live import live_progress

    started = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")
    with live_progress():  # on stderr: units, rate, ETA, errors, running mean
        record = capevolve.evaluate(run, candidate, split, n_trials=n_trials, engine=engine,
                                    address=address, target=target)
    # a complete evaluation is returned as it was: it finished before this command started
    already = record.status == "complete" and (record.finished_at or "") < started
    data = record.to_dict()
    payload = {k: data.get(k) for k in EVAL_KEYS}
    if already:
        payload.update(units_run=0, already_complete=True)
    emit(payload, json, _eval_human(record, already))
    exit_if_breaker(record.incomplete_reason)


def _gate_human(result: GateRecord | GateNumbers) -> str:
    names = {"delta": "delta", "se": "se", "t": "t",
             "p_one_sided": "p one-sided (the decision's)", "p_value": "p two-sided"}
    numbers = ", ".join(f"{label} {getattr(result, k):.4f}" for k, label in names.items()
                        if getattr(result, k) is not None)
    recorded = result if isinstance(result, capevolve.GateRecord) else None
    tag = " (exploratory: not a basis for accept)" if recorded and recorded.exploratory else ""
    if result.confidence:
        tentative = ", TENTATIVE" if recorded and recorded.tentative else ""
        tag += f" [{result.confidence}{tentative}]"
    from capevolve.report.words import gate_power_text

    power = gate_power_text(result.power)
    return f"{str(result.decision).upper()}{tag}: {numbers}\n" + "\n".join(
        f"- {r}" for r in result.reasons) + (f"\n{power}" if power else "")


def _raw_gate(candidate: str, current: float, current_stderr: float | None,
              candidate_stderr: float | None, k_se: float | None, min_delta: float | None,
              run_dir: str | None) -> GateNumbers:
    if current_stderr is None or candidate_stderr is None:
        fail("raw gate: --current-stderr and --candidate-stderr are required with --current")
    try:
        cand_mean = float(candidate)
    except ValueError:
        fail(f"raw gate: --candidate {candidate!r} must be a number with --current")
    return capevolve.gate_numbers(current, cand_mean, current_stderr, candidate_stderr,
                                  k_se=k_se, min_delta=min_delta, run=run_dir)


@command
def gate(candidate: Annotated[str, typer.Option(
             "--candidate", "-c", help="Candidate id (raw form: the candidate's mean).")],
         run_dir: Annotated[str | None, typer.Option(
             "--run-dir", "-r", envvar="CAPEVOLVE_RUN_DIR", help="The run directory.")] = None,
         project: RunProjectOpt = None,
         mode: Annotated[GateMode | None, typer.Option(
             "--mode", help="Exploratory override: paired or welch.")] = None,
         k_se: Annotated[float | None, typer.Option(
             "--k-se", min=0, help="Exploratory override: accept if delta > k_se x SE.")] = None,
         min_delta: Annotated[float | None, typer.Option(
             "--min-delta", min=0, help="Exploratory override: the smallest gain worth "
             "accepting.")] = None,
         n_trials: Annotated[int | None, typer.Option(
             "--n-trials", min=1, help="Compare the evaluations made with this many trials "
             "(a matched higher-power pair; default: the project's num_trials).")] = None,
         current: Annotated[float | None, typer.Option(
             "--current", help="Raw form: the current best's mean (computed elsewhere).")] = None,
         current_stderr: Annotated[float | None, typer.Option(
             "--current-stderr", help="Raw form: SE of --current (>= 0).")] = None,
         candidate_stderr: Annotated[float | None, typer.Option(
             "--candidate-stderr", help="Raw form: SE of --candidate (>= 0).")] = None,
         target: Annotated[str | None, typer.Option(
             "--target", help="The census bucket (census check --record) or val diagnose "
             "cluster the change targets: the audit checks the gain comes from it.")] = None,
         engine: EngineOpt = None, address: AddressOpt = None,
         json: JsonOpt = False) -> None:
    """Gate a candidate against the current best on full val, from stored rollouts.

    The run's frozen gate settings decide; under alpha_spending: confirm, a passing screen is
    re-run on fresh val trials, which alone decide. --mode, --k-se or --min-delta with another
    value give an exploratory gate, never a basis for accept.

    Raw form, for numbers computed elsewhere (unpaired SE, not recorded): --current X
    --candidate Y --current-stderr a --candidate-stderr b."""
    result: GateRecord | GateNumbers
    if current is not None:
        result = _raw_gate(candidate, current, current_stderr, candidate_stderr, k_se,
                           min_delta, run_dir)
    elif run_dir is None and project is None and not Path("capevolve.yaml").is_file():
        fail("gate: --run-dir R or --project P is required (P's latest run; the current "
             "directory when it holds a capevolve.yaml), or the raw form with --current")
    elif k_se is None and mode is None and min_delta is None:
        from capevolve.progress.live import live_progress

        with live_progress():  # a confirmation's evaluations: units, rate, ETA on stderr
            result = capevolve.gate(resolve_run_dir(run_dir, project), candidate,
                                    n_trials=n_trials, target=target, engine=engine,
                                    address=address)
    else:
        result = capevolve.explore_gate(resolve_run_dir(run_dir, project), candidate,
                                        k_se=k_se, mode=mode, min_delta=min_delta,
                                        n_trials=n_trials)
    emit(result.to_dict(), json, _gate_human(result))


@command
def accept(candidate: CandidateIdOpt, run_dir: MaybeRunDirOpt = None,
           project: RunProjectOpt = None, note: NoteOpt = None, target: TargetOpt = None,
           json: JsonOpt = False) -> None:
    """Make a candidate the best; refused without a passing full-val gate against the best,
    after a reject against it, and once the iteration budget is spent. --target re-gates the
    pair on that target first unless its last gate used it."""
    result = capevolve.accept(resolve_run_dir(run_dir, project), candidate, note, target=target)
    label = f" ({result.confidence}, TENTATIVE until confirmed)" if result.tentative else ""
    emit(result.to_dict(), json, f"accepted {candidate}: best is now {result.best_id}{label}")


@command
def reject(candidate: CandidateIdOpt, run_dir: MaybeRunDirOpt = None,
           project: RunProjectOpt = None, note: NoteOpt = None, json: JsonOpt = False) -> None:
    """Record a rejected candidate (one iteration spent); refused for a candidate never gated
    and once the iteration budget is spent."""
    result = capevolve.reject(resolve_run_dir(run_dir, project), candidate, note)
    emit(result.to_dict(), json, f"rejected {candidate}: best stays {result.best_id}")


@command
def finalize(run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
             address: AddressOpt = None, engine: EngineOpt = None,
             spend_test_ids: Annotated[bool, typer.Option(
                 "--spend-test-ids", help="Score test even when the best is still the seed "
                 "(refused otherwise: the project's test ids then count as used).")] = False,
             json: JsonOpt = False) -> None:
    """Score the best and the seed on the held-out test split, once; writes final.json.

    Takes the test seal and closes the run (evaluate, gate, accept and reject are refused
    afterwards). Refused while the best is the seed unless --spend-test-ids."""
    run = capevolve.open_run(resolve_run_dir(run_dir, project))
    progress("capevolve: burning the test seal and scoring best and seed on test ...")
    from capevolve.progress.live import live_progress

    with live_progress():
        final = capevolve.finalize(run, engine=engine, address=address,
                                   spend_test_ids=spend_test_ids)
    t, b, ci = final.test, final.test_baseline, final.ci95
    human = (f"test: best {final.best_id} {fmt_mean(t.mean, t.stderr)} vs seed "
             f"{fmt_mean(b.mean, b.stderr)}; paired delta "
             + ("—" if final.delta is None else f"{final.delta:+.3f}")
             + (f" (95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}])" if ci else ""))
    human += "\n" + final.verdict_text + "".join(f"\n  missing: {m}" for m in final.missing)
    if final.test_reuse:
        human += "\n" + final.test_reuse.message
    emit(final.to_dict(), json, human)


@command
def no_change(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
              reason: Annotated[str, typer.Option(
                  "--reason", help="Why the change could not be scored (required, non-empty).")],
              candidate: Annotated[str | None, typer.Option(
                  "--candidate", "-c", help="The candidate id, when there was one.")] = None,
              json: JsonOpt = False) -> None:
    """Record an iteration whose change could not be scored (harness broken, judge
    unreachable): the best carries forward and no iteration is spent."""
    result = capevolve.no_change(resolve_run_dir(run_dir, project), reason, candidate)
    emit(result.to_dict(), json, f"no_change recorded as result {result.result}: best stays "
                                 f"{result.best_id}")


@command
def confirm(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
            candidate: Annotated[str, typer.Option("--candidate", "-c", help="Candidate id.")],
            trials: Annotated[int | None, typer.Option(
                "--trials", min=1, help="More trials per side (default: num_trials).")] = None,
            address: AddressOpt = None, engine: EngineOpt = None, json: JsonOpt = False) -> None:
    """Re-run a kept candidate and its reference with more trials (fresh seeds shared by
    both) and record the pooled, higher-power numbers; the best never changes."""
    run_dir = resolve_run_dir(run_dir, project)
    r = capevolve.confirm(run_dir, candidate, trials=trials, engine=engine, address=address)
    t = "—" if r.t is None else f"{r.t:.2f}"
    emit(r.to_dict(), json,
         f"{candidate} vs {r.reference_id} over {r.n_candidate}+{r.n_best} trials: delta "
         f"{r.delta:+.4f}, SE_diff {r.se_diff:.4f}, t {t}: {r.confidence} (was "
         f"{r.label_before})" + (", still TENTATIVE" if r.tentative else "")
         + f"; raw band {'cleared' if r.raw_band_cleared else 'not cleared'}; "
         f"best stays {r.best_id}")


@command
def probe(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
          candidate: Annotated[str, typer.Option(
              "--candidate", "-c", help="A candidate directory or id.")],
          tasks: Annotated[str | None, typer.Option(
              "--tasks", help="Comma-separated task ids of the split to probe.")] = None,
          cluster: Annotated[str | None, typer.Option(
              "--cluster", help="A recorded census bucket or a diagnose cluster signature "
                                "of the split: probe its tasks.")] = None,
          failing: Annotated[bool, typer.Option(
              "--failing", help="Probe every task the best fails on the split.")] = False,
          split: Annotated[str, typer.Option("--split", "-s", help="train or val.")] = "val",
          address: AddressOpt = None, engine: EngineOpt = None, json: JsonOpt = False) -> None:
    """Evaluate a candidate on its targeted datapoints only and report how many targeted
    failures flipped against the best. A probe is never gated: it can kill a hypothesis, never
    accept one."""
    run_dir = resolve_run_dir(run_dir, project)
    split_or_fail(split, "probe")
    ids = None if tasks is None else [t.strip() for t in tasks.split(",") if t.strip()]
    r = capevolve.probe(run_dir, candidate, tasks=ids, cluster=cluster, failing=failing,
                        split=split, engine=engine, address=address)
    hint = ("; suggestion: record `capevolve no-change --reason ...`"
            if r.suggestion == "no_change" else "")
    emit(r.to_dict(), json, f"{r.eval_id} [{r.status}]: {r.reasoning}{hint}")
