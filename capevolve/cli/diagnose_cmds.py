"""Commands that explain failures: diagnose (+ annotate) and census."""

from __future__ import annotations

import json as jsonlib
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from capevolve.cli.options import (
    JsonOpt,
    MaybeRunDirOpt,
    RunProjectOpt,
    resolve_run_dir,
    split_or_fail,
)
from capevolve.cli.output import command, emit, fail, progress
from capevolve.errors import CapevolveError
from capevolve.kinds import Split

# capevolve.diagnose (DuckDB, the adapter) loads inside the commands: `--help` stays fast.

diagnose_app = typer.Typer(invoke_without_command=True, no_args_is_help=False,
                           add_completion=False, pretty_exceptions_enable=False)
census_app = typer.Typer(no_args_is_help=True, add_completion=False,
                         pretty_exceptions_enable=False,
                         help="Export failing datapoints for describers; check a census.")

OptRunDir = Annotated[Path | None, typer.Option(
    "--run-dir", "-r", envvar="CAPEVOLVE_RUN_DIR",
    help="The run directory (required to diagnose, unless --project names a project: "
         "then its latest run).")]
SplitOpt = Annotated[str, typer.Option("--split", "-s", help="train or val (test is refused).")]
TagOpt = Annotated[str | None, typer.Option(
    "--tag", "-t", help="The candidate id (required to diagnose).")]
ProjectOpt = Annotated[Path | None, typer.Option(
    "--project", "-p", help="Project dir whose adapter gives targets and trajectories "
                            "(default: the run's project); without --run-dir, diagnose "
                            "reads this project's latest run.")]


def _diagnosis_human(result: dict, path: Path) -> str:
    lines = [(f"{result['split']} / {result['tag']} ({result['eval_id']}): "
              f"{result['failing_total']} failing trials in {result['failing_tasks']} tasks "
              f"({len(result['flaky'])} flaky, {len(result['always_failing'])} always "
              f"failing, {len(result.get('consistently_partial', []))} consistently "
              f"partial); {len(result['kept_good'])} kept good; {result['errored_trials']} "
              "errored trials (missing data)")]
    for c in result["clusters"]:
        tried = f"  ({c['history']})" if c.get("history") else ""
        lines.append(f"  {c['score_lost']:7.2f}  {c['size']:4d}  {c['signature']}  "
                     f"[{', '.join(c['tasks'][:6])}{' ...' if len(c['tasks']) > 6 else ''}]"
                     + tried)
    gold = result["gold_check"]
    if gold["entries_with_gold"]:
        lines.append(f"gold leakage: {gold['entries_with_gold']} entries quote a target"
                     + (" (redacted)" if gold["redacted"] else "; use --redact-gold"))
    elif not gold["available"]:
        lines.append(f"gold leakage check unavailable: {gold['unavailable_reason']}")
    lines += [f"warning: {w}" for w in result["sanity"]]
    lines.append(f"written: {path}")
    return "\n".join(lines)


@diagnose_app.callback(invoke_without_command=True)
@command
def diagnose(ctx: typer.Context, run_dir: OptRunDir = None, split: SplitOpt = "val",
             tag: TagOpt = None, project: ProjectOpt = None,
             cluster: Annotated[str, typer.Option(
                 "--cluster", help="root-cause (default) or first-words (the old "
                                   "lexical key, written to its own .first-words.json).")] =
             "root-cause",
             redact_gold: Annotated[bool, typer.Option(
                 "--redact-gold", help="Replace target values quoted in feedback.")] = False,
             json: JsonOpt = False) -> None:
    """Turn a candidate's stored rollouts into a reflective dataset and root-cause clusters."""
    if ctx.invoked_subcommand is not None:
        return
    if (run_dir is None and project is None) or tag is None:
        fail("diagnose: --run-dir (or --project) and --tag are required")
    split_or_fail(split, "diagnose")
    from capevolve import _api
    from capevolve.diagnose.diagnosis import DiagnoseOptions, diagnosis_path
    from capevolve.diagnose.diagnosis import diagnose as diagnose_run
    from capevolve.diagnose.kinds import ClusterMode
    from capevolve.progress.live import live_progress

    if cluster not in {m.value for m in ClusterMode}:
        fail(f"--cluster {cluster!r}: expected one of "
             f"{', '.join(m.value for m in ClusterMode)}")
    run = _api.run_dir_of(resolve_run_dir(run_dir, project))
    options = DiagnoseOptions(split=split, tag=tag, mode=ClusterMode(cluster),
                              redact_gold=redact_gold, project=project)
    progress(f"capevolve: diagnosing {tag} on {split} ...")
    with live_progress() as display:
        stage = nullcontext() if display is None else display.stage(f"diagnosing {split} / {tag}")
        with stage:
            result = diagnose_run(run, options)
    emit(result, json, _diagnosis_human(result, diagnosis_path(run, split, tag, options.mode)))


@diagnose_app.command("annotate")
@command
def annotate(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
             file: Annotated[Path, typer.Option("--file", "-f", help="The diagnosis file.")],
             cluster: Annotated[str, typer.Option("--cluster", help="Cluster signature.")],
             tag: Annotated[str | None, typer.Option(
                 "--tag", help="KNOWLEDGE, BEHAVIORAL, DECISION/PERMISSION or "
                               "CAPABILITY-GAP.")] = None,
             blast_radius: Annotated[str | None, typer.Option(
                 "--blast-radius", help="Comma-separated passing task ids.")] = None,
             json: JsonOpt = False) -> None:
    """Record a judgement (tag, blast radius) on one cluster of a diagnosis."""
    run_dir = resolve_run_dir(run_dir, project)
    from capevolve import _api
    from capevolve.diagnose.annotate import annotate as annotate_cluster

    radius = None if blast_radius is None else [
        t.strip() for t in blast_radius.split(",") if t.strip()]
    result = annotate_cluster(_api.run_dir_of(run_dir), file, cluster, tag, radius)
    emit(result, json, f"{result['signature']}: tag {result['tag']}, blast radius "
                       f"{', '.join(result['blast_radius'] or []) or '—'}")


@census_app.command("export")
@command
def census_export(*, run_dir: MaybeRunDirOpt = None, tag: Annotated[str, typer.Option(
                      "--tag", "-t", help="The candidate id whose failures are exported.")],
                  out: Annotated[Path, typer.Option("--out", help="Output directory.")],
                  split: SplitOpt = "val",
                  batch_size: Annotated[int, typer.Option(
                      "--batch-size", min=1, help="Failing datapoints per batch file.")] = 8,
                  project: ProjectOpt = None,
                  notes: Annotated[Path | None, typer.Option(
                      "--notes", help="A text file of domain notes for describers.")] = None,
                  json: JsonOpt = False) -> None:
    """Write batches of failing datapoints (no category vocabulary) for describer agents."""
    run_dir = resolve_run_dir(run_dir, project)
    from capevolve import _api
    from capevolve.diagnose import census as census_lib
    from capevolve.diagnose.context import adapter_context

    split_or_fail(split, "diagnose")
    run = _api.run_dir_of(run_dir)
    text = None
    if notes is not None:
        if not notes.is_file():
            fail(f"--notes {notes}: no such file")
        text = notes.read_text(encoding="utf-8")
    manifest = census_lib.export(run, split, tag, batch_size, out,
                                 adapter_context(run, split, project), text)
    emit(manifest, json, f"{manifest['failing_total']} failing datapoints in "
                         f"{len(manifest['batches'])} batches under {out}")


@census_app.command("template")
@command
def census_template(*, run_dir: MaybeRunDirOpt = None, project: RunProjectOpt = None,
                    tag: Annotated[str, typer.Option(
                        "--tag", "-t", help="The candidate id whose failures are described.")],
                    split: SplitOpt = "val",
                    out: Annotated[Path, typer.Option(
                        "--out", help="The census file to write (never overwritten).")]
                    = Path("census.json"),
                    json: JsonOpt = False) -> None:
    """Write a census.json to fill in; `census check` accepts it as it is."""
    run_dir = resolve_run_dir(run_dir, project)
    from capevolve import _api
    from capevolve.diagnose import census as census_lib

    split_or_fail(split, "diagnose")
    if out.exists():
        fail(f"--out {out}: exists; census template never overwrites a census")
    doc = census_lib.template(_api.run_dir_of(run_dir), split, tag)
    out.write_text(jsonlib.dumps(doc, indent=2) + "\n", encoding="utf-8")
    emit({"path": str(out), **doc}, json,
         f"wrote {out}: {doc['failing_total']} failing datapoints of {tag} on {split} to "
         f"describe; fill in the buckets, then: capevolve census check {out}")


@census_app.command("check")
@command
def census_check(file: Annotated[Path, typer.Argument(help="The census.json to check.")],
                 run_dir: OptRunDir = None,
                 record: Annotated[bool, typer.Option(
                     "--record", help="Store the valid census in the run dir (every bucket "
                     "needs a name and a description); its buckets become --targets.")] = False,
                 json: JsonOpt = False) -> None:
    """Validate a census.json and print its coverage; --record stores it in the run dir as
    census/<file stem>.json."""
    from capevolve import _api
    from capevolve.diagnose import census as census_lib
    from capevolve.diagnose.census_record import record_census

    try:
        doc = jsonlib.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        fail(f"{file}: unreadable census ({exc})")
    failing = None
    where = run_dir or (doc.get("run_dir") if isinstance(doc, dict) else None)
    if where and isinstance(doc, dict) and doc.get("split") and doc.get("tag"):
        if str(doc["split"]) not in (Split.TRAIN, Split.VAL):
            fail(f"census split {doc['split']!r}: only train or val can be censused")
        try:
            failing = census_lib.failing_trials(_api.run_dir_of(where), doc["split"], doc["tag"])
        except CapevolveError as exc:
            fail(f"census: {exc}")
    result = census_lib.check(doc, failing)
    human = "\n".join([result["coverage"] or "coverage unknown",
                       *(f"problem: {p}" for p in result["problems"])])
    if record:
        if not result["ok"] or not where:
            fail("census --record refused: " + ("; ".join(result["problems"])
                                                 or "no run dir (--run-dir or run_dir)"))
        try:
            result["recorded"] = str(record_census(where, file.stem, doc))
        except CapevolveError as exc:
            fail(str(exc))
        human += f"\nrecorded {result['recorded']}"
    emit(result, json, human, failed=not result["ok"])
