"""``diagnose``: a candidate's rollouts on a split -> ``diagnoses/<split>__<tag>.json`` and
missing trajectory files.
"""

from __future__ import annotations

import codecs
import contextlib
import gc
import json
import re
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

import orjson
from pydantic_core import from_json

from capevolve._store import jsonfiles
from capevolve._store.documents import diagnosis_record
from capevolve._store.rundir import RunDir
from capevolve.diagnose import trajectories
from capevolve.diagnose.classify import (
    PASS_FLOOR,
    TOLERANCE,
    group_tasks,
    is_failure,
    task_outcomes,
)
from capevolve.diagnose.context import AdapterContext, adapter_context
from capevolve.diagnose.gold import GoldGuard
from capevolve.diagnose.grouping import cluster_failures, cluster_records
from capevolve.diagnose.history import TriedFix, mark_tried, tried_fixes
from capevolve.diagnose.jsontext import SURROGATES
from capevolve.diagnose.kinds import ClusterMode
from capevolve.diagnose.narrated import column_calls, trace_calls
from capevolve.diagnose.rank import rank_clusters
from capevolve.diagnose.reflective import (
    TRACE_MAY_BE_NEEDED,
    Analyser,
    Failure,
    TaskSummary,
    entry,
    with_makeable_claims,
)
from capevolve.diagnose.sanity import sanity_checks
from capevolve.diagnose.signature import preamble_cuts_of
from capevolve.diagnose.source import TraceUnread, Trial, TrialRows, read_trials, refuse_test
from capevolve.diagnose.units import (
    Unit,
    UnitCache,
    common_labels_of,
    passing_statements,
    score_parts,
)
from capevolve.errors import ConfigError
from capevolve.records import FORMAT_VERSION  # the document is a versioned DiagnosisRecord


@dataclass(frozen=True)
class DiagnoseOptions:
    """What to diagnose and how."""

    split: str
    tag: str  # a candidate id
    mode: ClusterMode = ClusterMode.ROOT_CAUSE
    redact_gold: bool = False
    project: Path | None = None  # the project whose adapter gives targets / trajectories


def canonical_json(value: Any) -> bytes:
    """Canonical JSON bytes (compact, sorted keys, UTF-8, trailing newline)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        pass
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":"))
    return (text + "\n").encode("utf-8", SURROGATES)


def document_bytes(doc: dict[str, Any]) -> bytes:
    """:func:`canonical_json` of ``doc`` validated as a DiagnosisRecord."""
    bulky = {"reflective_dataset": doc["reflective_dataset"], "clusters": doc["clusters"]}
    envelope = diagnosis_record({**doc, "reflective_dataset": [], "clusters": []}).to_json()
    if all(all(map(isinstance, values, repeat(dict))) for values in bulky.values()):
        try:
            return canonical_json({**envelope, **bulky})
        except (ValueError, TypeError):
            pass
    return canonical_json(diagnosis_record(doc).to_json())


def write_document(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc``'s :func:`document_bytes` atomically."""
    jsonfiles.write_bytes_atomic(path, document_bytes(doc))


def diagnosis_path(run: RunDir, split: str, tag: str,
                   mode: ClusterMode | str = ClusterMode.ROOT_CAUSE) -> Path:
    """``diagnoses/<split>__<tag>.json``; other modes add ``.<mode>``, so each keeps its
    judgements."""
    suffix = "" if ClusterMode(mode) == ClusterMode.ROOT_CAUSE else f".{ClusterMode(mode).value}"
    return run.layout.diagnoses / f"{split}__{tag}{suffix}.json"


def with_units(failures: list[Failure], passing_feedback: list[str]) -> list[Failure]:
    """The failures with their cause units and, if only one score part fell short, that part."""
    counts = Counter(f.feedback for f in failures)
    cuts = preamble_cuts_of(counts)
    stripped: Counter[str] = Counter()
    for text, n in counts.items():
        stripped[text[cuts[text]:]] += n
    labels = common_labels_of(stripped)
    passing = passing_statements(passing_feedback, labels)
    seen: dict[tuple[str, str | None], tuple[tuple[Unit, ...], int, str | None]] = {}
    splitters: dict[str | None, tuple[UnitCache, str | None]] = {}
    out = []
    new = tuple.__new__  # a Failure from all its fields, without its Python-level __new__
    for f in failures:
        key = (f.feedback, f.trial.score_parts)
        known = seen.get(key)  # feedback repeats: split it once
        if known is None:
            splitter = splitters.get(key[1])
            if splitter is None:
                parts = score_parts(key[1])
                short = [k for k, v in parts.items() if v < 1 - TOLERANCE]
                splitter = splitters[key[1]] = (
                    UnitCache(parts, labels, passing), short[0] if len(short) == 1 else None)
            cut = cuts[key[0]]
            known = seen[key] = (tuple(splitter[0].units(key[0][cut:])), cut, splitter[1])
        out.append(new(Failure, f[:8] + known))  # f's facts, its units, cut and part
    return out


def carry_judgements(previous: dict[str, Any] | None, records: list[dict[str, Any]]) -> None:
    """Carry earlier ``tag`` / ``blast_radius`` to the cluster of the same signature, else of the
    same tasks and size."""
    if not previous:
        return
    earlier = [c for c in previous.get("clusters", []) if isinstance(c, dict)
               and (c.get("tag") or c.get("blast_radius"))]
    by_sig = {c.get("signature"): c for c in earlier}
    for record in records:
        old = by_sig.get(record["signature"])
        if old is None:
            same = [c for c in earlier if c.get("tasks") == record["tasks"]
                    and c.get("size") == record["size"]]
            old = same[0] if len(same) == 1 else None
        if old is not None:
            record["tag"], record["blast_radius"] = old.get("tag"), old.get("blast_radius")


def build_diagnosis(trials: list[Trial], context: AdapterContext, options: DiagnoseOptions,
                    trajectory_dir: Path | str, history: list[TriedFix] | None = None,
                    previous: dict[str, Any] | None = None,
                    unread: Collection[int] = ()) -> dict[str, Any]:
    """The diagnosis document of one evaluation's ``trials``. Raises TraceUnread when a needed
    trace is in ``unread``."""
    if options.redact_gold and context.targets is None:
        raise ConfigError("--redact-gold needs the tasks' targets, but the adapter could not "
                          f"be loaded ({context.unavailable}); pass --project")
    guard = None if context.targets is None else GoldGuard(context.targets)
    outcomes = task_outcomes(trials)
    groups = group_tasks(outcomes)
    kept_good = set(groups.kept_good)
    failures: list[Failure] = []
    passing_tools: dict[str, frozenset[str]] = {}
    passing_feedback: list[str] = []
    analyser = Analyser(guard, options.redact_gold)
    errored = 0
    for index, trial in enumerate(trials):  # calls are read only where they are used
        reward = trial.reward
        if reward is None:  # errored: missing data
            errored += 1
            continue
        if not reward >= PASS_FLOOR:  # is_failure (a NaN reward too)
            calls = column_calls(trial.tool_calls)
            if index in unread and analyser.needs_trace(trial, calls):
                raise TraceUnread(trial.unit_id)
            failures.append(analyser.failure(trial, calls or trace_calls(trial.trace)))
        else:
            passing_feedback.append(trial.feedback or "")
            if trial.task_id in kept_good:
                calls = column_calls(trial.tool_calls)
                if not calls and index in unread:
                    raise TraceUnread(trial.unit_id)
                facts = analyser.facts(calls or trace_calls(trial.trace))  # its writes count
                known: frozenset[str] = passing_tools.get(trial.task_id, frozenset())
                passing_tools[trial.task_id] = known | facts.tools
    failures = with_units(with_makeable_claims(failures, analyser.write_words()),
                          passing_feedback)
    clusters, placed, unit_keys, split_notes = cluster_failures(failures,
                                                                ClusterMode(options.mode))
    records = cluster_records(clusters, placed, failures, passing_tools, unit_keys)
    carry_judgements(previous, records)
    mark_tried(records, history or [])
    records = rank_clusters(records)
    rank = {r["signature"]: r["rank"] for r in records}
    n = len(failures)
    primary: list[str | None] = [None] * n  # each failure's best-ranked cluster, and next
    secondary: list[str | None] = [None] * n
    for c in sorted(clusters, key=lambda c: rank[c.signature]):  # signatures are unique
        sig = c.signature
        for i in c.trials:
            if primary[i] is None:
                primary[i] = sig
            elif secondary[i] is None:
                secondary[i] = sig
    unit_cluster: list[str] = [""] * len(placed)
    for c in clusters:
        for u in c.units:
            unit_cluster[u] = c.signature
    causes: dict[int, list[dict[str, Any]]] = {}
    for u, (i, unit) in enumerate(placed):
        if unit is not None:
            cause = {"cluster": unit_cluster[u], "part": unit.part, "text": unit.text}
            if i in causes:
                causes[i].append(cause)
            else:
                causes[i] = [cause]
    prefix = str(Path(trajectory_dir) / "x")[:-1]  # the folder as a path prefix, joined once
    summaries = {task: TaskSummary.of(o) for task, o in outcomes.items()}  # once per task
    entries = [entry(f, summaries[f.trial.task_id],
                     context.trajectory or f.trial.trajectory
                     or prefix + trajectories.file_name(f.trial),
                     causes.get(i, []), primary[i], secondary[i])
               for i, f in enumerate(failures)]
    return {
        "format_version": FORMAT_VERSION, "split": str(options.split), "tag": options.tag,
        "eval_id": trials[0].eval_id if trials else None, "mode": str(options.mode),
        "reflective_dataset": entries, "clusters": records,
        "kept_good": groups.kept_good, "flaky": groups.flaky,
        "always_failing": groups.always_failing,
        "consistently_partial": groups.consistently_partial, "unscored": groups.unscored,
        "failing_total": len(failures), "failing_tasks": groups.n_failing,
        "errored_trials": errored,
        "sanity": split_notes + sanity_checks(records, len(failures), groups.n_failing),
        "history": {"tried": [f.to_json() for f in history or []]},
        "gold_check": {
            "available": guard is not None, "unavailable_reason": context.unavailable,
            "entries_with_gold": sum(1 for f in failures if f.gold_leak),
            "redacted": bool(options.redact_gold),
        },
    }


_COLON = re.compile(rb"[ \t\n\r]*:[ \t\n\r]*")  # a member's colon, JSON's blanks around it
_ESCAPE_U = re.compile(rb"\\u")  # re's search: faster than bytes.find where "\\" is common
_TOP_TAG = re.compile(rb'"tag"[ \t\n\r]*:[ \t\n\r]*"[^"\\]*"[ \t\n\r]*,[ \t\n\r]*"unscored"'
                      rb'[ \t\n\r]*:[ \t\n\r]*\[[ \t\n\r]*(?:"[^"\\]*"[ \t\n\r]*'
                      rb'(?:,[ \t\n\r]*"[^"\\]*"[ \t\n\r]*)*)?\][ \t\n\r]*\}[ \t\n\r]*')


def _set_members(data: bytes, name: bytes) -> list[int]:
    """Offsets of the quoted ``name`` before a non-null value: every such member, and maybe
    more."""
    found, at = [], data.find(name)
    while at >= 0:
        colon = _COLON.match(data, at + len(name))
        if colon is not None and not data.startswith(b"null", colon.end()):
            found.append(at)
        at = data.find(name, at + 1)
    return found


def may_hold_judgements(data: bytes) -> bool:
    """False only when no ``tag`` or ``blast_radius`` in ``data`` can be non-null; True means
    "parse to know"."""
    if _ESCAPE_U.search(data) or _set_members(data, b'"blast_radius"'):
        return True
    tags = _set_members(data, b'"tag"')
    return len(tags) > 1 or (len(tags) == 1 and _TOP_TAG.fullmatch(data, tags[0]) is None)


def _previous(path: Path) -> dict[str, Any] | None:
    """The earlier file of this mode when it may hold judgements, else None."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        data = path.read_bytes()
        if not may_hold_judgements(data):
            return None
        try:
            doc = from_json(data) if not data.startswith(codecs.BOM_UTF8) else None
        except ValueError:
            doc = None
        if doc is None:
            doc = jsonfiles.read(path)
    except (OSError, ValueError):
        return None  # an unreadable earlier file is simply replaced
    return doc if isinstance(doc, dict) else None


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Hold the cyclic garbage collector off: a diagnosis allocates many acyclic objects."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def load_trials(run: RunDir, split: str, tag: str, every_trace: bool) -> TrialRows:
    """The evaluation's trials, with all traces when ``every_trace``, else those
    ``TRACE_MAY_BE_NEEDED`` selects."""
    return read_trials(run, split, tag, None if every_trace else TRACE_MAY_BE_NEEDED)


def diagnose(run: RunDir, options: DiagnoseOptions,
             context: AdapterContext | None = None) -> dict[str, Any]:
    """Diagnose ``options.tag`` on ``options.split`` (never test) and write the file."""
    split = refuse_test(options.split)
    with _no_cycle_collection():
        run.candidate_meta(options.tag)  # an unknown candidate is refused before the adapter
        if context is None:  # is loaded (whose trace store decides which traces are read)
            context = adapter_context(run, split, options.project)
        rows = load_trials(run, split, options.tag, context.trajectory is None)
        history = tried_fixes(run)
        folder = trajectories.folder(run.layout.diagnoses, str(split), options.tag)
        path = diagnosis_path(run, split, options.tag, options.mode)
        with run.locked():  # every write into the run dir holds the run lock
            trajectories.confined(path.parent, run.root)
            previous = _previous(path)
            try:
                result = build_diagnosis(rows.trials, context, options, folder, history,
                                         previous, rows.unread)
            except TraceUnread:  # the SQL guess left a needed trace unread: read them all
                rows = load_trials(run, split, options.tag, True)
                result = build_diagnosis(rows.trials, context, options, folder, history,
                                         previous)
            path.parent.mkdir(parents=True, exist_ok=True)
            if context.trajectory is None:
                trajectories.write_all(folder, [t for t in rows.trials if is_failure(t)
                                                and not t.trajectory], run.root)
            write_document(path, result)
    return result
