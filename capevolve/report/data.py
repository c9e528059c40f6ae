"""The report as data (for report.html and ``report --json``), from stored records; a value
never recorded is None, never 0."""

from __future__ import annotations

import json
from typing import Any

from capevolve._loop.false_accepts import false_accept_ledger
from capevolve._loop.frozen_config import run_config
from capevolve._loop.standing import standings
from capevolve._loop.status import run_status
from capevolve._policy.gateable import gate_refusal
from capevolve._store.documents import read_final
from capevolve._store.evals import all_evals
from capevolve._store.evals_means import task_means_of
from capevolve._store.rundir import RunDir
from capevolve.errors import StoreError
from capevolve.kinds import SEED_ID, EvalStatus, EventKind, Split
from capevolve.report.lineage import diff_stat, iterations
from capevolve.stats import t_quantile
from capevolve.stats.estimators import n_clusters

FORMAT_VERSION = 1


def _ci(mean: float | None, se: float | None, df: float | None = None) -> list[float] | None:
    """Two-sided 95% interval (t at ``df``; the normal when df is None)."""
    if mean is None or se is None:
        return None
    half = t_quantile(0.975, df) * se
    return [mean - half, mean + half]


def _mean_ci(run: RunDir, record: Any, data: dict[str, Any]) -> list[float] | None:
    """95% CI of an evaluation's mean at its SE's df: clusters - 1 when clustered (as the
    gate), else scored tasks - 1."""
    clustered = data.get("stderr_clustered")
    if clustered is not None:
        groups = n_clusters(sorted(task_means_of(run, record)), data.get("clusters") or {})
        return _ci(data.get("mean"), clustered, groups - 1 if groups > 1 else None)
    n = data.get("n_scored") or 0
    return _ci(data.get("mean"), data.get("stderr"), n - 1 if n > 1 else None)


def _val_evals(run: RunDir, n_trials: int,
               intervals: bool = True) -> dict[str, dict[str, Any]]:
    """The latest full val evaluation per candidate at ``n_trials`` (never a probe, screen or
    confirm), with its 95% CI unless ``intervals`` is False (a t quantile loads SciPy)."""
    out: dict[str, dict[str, Any]] = {}
    for record in all_evals(run):
        if record.split == Split.VAL and record.n_trials == n_trials \
                and gate_refusal(record, allow_incomplete=True) is None:
            data = record.to_json()
            data["ci95"] = _mean_ci(run, record, data) if intervals else None
            out[record.candidate_id] = data
    return out


def _gates(run: RunDir, intervals: bool = True) -> list[dict[str, Any]]:
    """Every recorded gate with its 95% CI, critical value and accept threshold (None
    unless ``intervals``)."""
    frozen = run_config(run).gate
    out = []
    for event in run.events(EventKind.GATE):
        gate = event.to_json()
        delta, se, df = gate.get("delta"), gate.get("se"), gate.get("df")
        crit: float | None = None
        if intervals and gate.get("k_se") is not None:
            crit = gate["k_se"]
        elif intervals and gate.get("alpha") is not None and se is not None:
            crit = t_quantile(1.0 - gate["alpha"], df)
        out.append({**gate, "ci95": _ci(delta, se, df) if intervals else None,
                    "critical": crit,
                    "threshold": None if crit is None or se is None else crit * se,
                    "min_delta": gate.get("overrides", {}).get("min_delta", frozen.min_delta)})
    return out


def _diagnosis(run: RunDir, candidate_id: str) -> dict[str, Any] | None:
    """The stored val diagnosis of ``candidate_id``, or None."""
    path = run.layout.diagnoses / f"{Split.VAL}__{candidate_id}.json"
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or not isinstance(doc.get("clusters", []), list):
            raise ValueError("not a diagnosis document")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise StoreError(f"{path}: unreadable diagnosis ({exc}); run `capevolve diagnose` "
                         "again") from None
    keep = ("eval_id", "mode", "failing_tasks", "failing_total", "errored_trials",
            "kept_good", "flaky", "always_failing")
    return {**{k: doc.get(k) for k in keep},
            "clusters": [{k: c.get(k) for k in ("signature", "size", "score_lost", "kinds",
                                                 "tasks", "tools", "tag")}
                         for c in doc.get("clusters", [])]}


def _spend(run: RunDir) -> dict[str, Any]:
    """Cumulative spend after each spend event, and the totals."""
    totals = {"metric_calls": 0, "tokens": 0, "cost_usd": 0.0, "cost_unrecorded": 0}
    series = []
    for event in run.events(EventKind.SPEND):
        for key in totals:
            totals[key] += getattr(event, key)
        series.append({"ts": event.ts, **totals})
    spent = run.spent.to_dict()
    return {"series": series, "totals": spent,
            "cost_recorded": spent["cost_usd"] is not None,
            "tokens_recorded": bool(spent["tokens"])}


def _final(run: RunDir) -> dict[str, Any] | None:
    if not run.layout.final.is_file():
        return None
    final = read_final(run.layout).to_json()
    keys = ("best_id", "baseline_id", "delta", "se", "ci95", "df", "n_compared", "n_clusters",
            "verdict", "verdict_text", "missing", "val_delta", "test", "test_baseline",
            "test_reuse")
    out = {k: final.get(k) for k in keys}
    reuse = final.get("test_reuse")
    out["test_reused"] = None if reuse is None else bool(
        reuse.get("earlier_finalizes") or reuse.get("overlapping_finalizes"))
    return out


def candidate_decisions(run: RunDir) -> list[dict[str, Any]]:
    """One row per candidate: parent, decision, gate decision, val mean and SE, standing."""
    config = run_config(run)
    val = _val_evals(run, config.num_trials, intervals=False)
    _, candidates = iterations(run, val, _gates(run, intervals=False))
    kept = standings(run)
    return [{"candidate_id": c["id"], "parent": c["parent"], "decision": c["decision"],
             "gate": c["gate_decision"], "val_mean": c["val"]["mean"],
             "val_stderr": val.get(c["id"], {}).get("stderr"), "note": c["note"],
             **_standing_fields(kept, c)}
            for c in candidates]


def _standing_fields(kept: dict[str, dict[str, Any]], cand: dict[str, Any]) -> dict[str, Any]:
    entry = (kept.get(cand["id"]) if cand["decision"] == "accept" else None) or {}
    return {"standing": entry.get("standing"), "confidence": entry.get("confidence")}


def standing_text(row: dict[str, Any]) -> str:
    """A decision's standing as text (`` (confirmed)``, ...); empty without one."""
    state = row.get("standing")
    if not state:
        return ""
    if state == "tentative":
        return f" ({row.get('confidence') or 'not significant'}, TENTATIVE until confirmed)"
    return f" ({state})"


def report_data(run: RunDir) -> dict[str, Any]:
    """Every number and table of the report (JSON-ready)."""
    config = run_config(run)
    status = run_status(run)
    val = _val_evals(run, config.num_trials)
    gates = _gates(run)
    steps, candidates = iterations(run, val, gates)
    kept = standings(run)
    for cand in candidates:
        cand["diff_stat"] = diff_stat(run, cand["id"], cand["parent"])
        cand.update(_standing_fields(kept, cand))
    best = run.best_id
    return {
        "format_version": FORMAT_VERSION,
        "run": {"run_id": run.run_id, "project": config.name, "best_id": best,
                "created_at": run.manifest.created_at, "num_trials": config.num_trials,
                "splits": {s: len(run.splits.ids(s)) for s in Split},
                "stop_condition": config.stop_condition,
                "containment": status.get("containment") or []},
        "candidates": candidates,
        "iterations": steps,
        "heatmap": {"tasks": list(run.splits.val),
                    "candidates": [c["id"] for c in candidates if c["id"] in val
                                   and val[c["id"]]["status"] == EvalStatus.COMPLETE],
                    "means": {c: task_means_of(run, val[c]) for c in val},
                    "regressions": {g["candidate_id"]: g.get("regressions", [])
                                    for g in gates if not g.get("exploratory")}},
        "gates": gates,
        "ledger": false_accept_ledger(run).to_dict(),
        "pass_k": {c: val[c].get("pass_k", {}) for c in val},
        "final": _final(run),
        "spend": _spend(run),
        "diagnosis": {"candidate_id": best, "val": _diagnosis(run, best)},
        "seed_id": SEED_ID,
        "evaluations": status["evaluations"],
    }


def model_spend_lines(spend: dict[str, Any]) -> list[str]:
    """One line per role with model calls: tokens and cost, ``partial`` (a lower bound) when
    some calls were unpriced or of unknown tokens."""
    lines = []
    for role in ("agent", "judge", "check", "proposer"):
        found = spend.get(role)
        if not found:
            continue
        cost = "cost not recorded" if found["cost_usd"] is None \
            else f"${found['cost_usd']:.4f}" + (" (partial)" if found["partial"] else "")
        unknown = found.get("unknown_attempts")
        extra = f", {unknown} attempts of unknown tokens" if unknown else ""
        lines.append(f"{role}: {found['tokens']} tokens, {cost}{extra}")
    return lines
