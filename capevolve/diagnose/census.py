"""Census: export failing datapoints for describer agents, then check their synthesis.

Batches name no category, so describers use their own words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capevolve._store import jsonfiles
from capevolve._store.rundir import RunDir
from capevolve.diagnose.classify import is_failure
from capevolve.diagnose.context import AdapterContext
from capevolve.diagnose.reflective import input_text
from capevolve.diagnose.source import Trial, load_trials
from capevolve.errors import ConfigError

MANIFEST = "census_manifest.json"
INSTRUCTIONS = ("For each datapoint, describe in your own words what went wrong and why, "
                "citing the datapoint id.")


def failing_trials(run: RunDir, split: str, tag: str) -> list[Trial]:
    """A candidate's failing datapoints on a split, by (task, trial)."""
    return [t for t in load_trials(run, split, tag) if is_failure(t)]


def _datapoint(trial: Trial, context: AdapterContext) -> dict[str, Any]:
    targets = context.targets or {}
    return {"id": trial.unit_id, "input": input_text(trial.inputs),
            "output": trial.output or "", "reference": targets.get(trial.task_id),
            "feedback": trial.feedback or ""}


def export(run: RunDir, split: str, tag: str, batch_size: int, out: Path,
           context: AdapterContext, notes: str | None = None) -> dict[str, Any]:
    """Write the batches and the manifest under ``out``; returns the manifest."""
    if batch_size < 1:
        raise ConfigError(f"--batch-size must be >= 1, got {batch_size}")
    trials = failing_trials(run, split, tag)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("batch_*.json"):
        stale.unlink()
    config = run.manifest.config.model_dump(mode="json")
    domain = {"project": config.get("name"), "capabilities": config.get("capabilities", []),
              "notes": notes if notes is not None else config.get("domain_notes")}
    names = []
    for start in range(0, len(trials), batch_size):
        name = f"batch_{start // batch_size:03d}.json"
        jsonfiles.write_atomic(out / name, {
            "batch": start // batch_size, "instructions": INSTRUCTIONS, "domain": domain,
            "datapoints": [_datapoint(t, context) for t in trials[start:start + batch_size]]})
        names.append(name)
    manifest = {"run_dir": str(run.root), "split": str(split), "tag": tag,
                "eval_id": trials[0].eval_id if trials else None,
                "failing_total": len(trials), "batch_size": batch_size, "batches": names}
    jsonfiles.write_atomic(out / MANIFEST, manifest)
    return manifest


def template(run: RunDir, split: str, tag: str) -> dict[str, Any]:
    """A census.json to fill in, which :func:`check` accepts as is."""
    return {"run_dir": str(run.root), "split": str(split), "tag": tag,
            "failing_total": len(failing_trials(run, split, tag)), "described": 0,
            "buckets": [{"name": "short-name",
                         "description": "what went wrong and why, in your own words",
                         "count": 0, "examples": []}]}


def _count(doc: dict[str, Any], name: str, problems: list[str]) -> int | None:
    value = doc.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(f"{name}: required, a non-negative integer (got {value!r})")
        return None
    return value


def check(doc: Any, failing: list[Trial] | None) -> dict[str, Any]:
    """Problems and coverage line of a census document; ``failing``: the run's failing datapoints,
    or None."""
    if not isinstance(doc, dict):
        return {"ok": False, "problems": ["census: expected a JSON object"], "coverage": None}
    problems: list[str] = []
    total, described = _count(doc, "failing_total", problems), _count(doc, "described", problems)
    if total is not None and described is not None and described > total:
        problems.append(f"described {described} exceeds failing_total {total}")
    buckets = doc.get("buckets", [])
    if not isinstance(buckets, list):
        problems.append("buckets: expected a list")
        buckets = []
    counts = [b.get("count") if isinstance(b, dict) else None for b in buckets]
    sizes = [c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c >= 0]
    if len(sizes) < len(counts):
        problems.append("buckets: every bucket needs a non-negative integer count")
    elif described is not None and sum(sizes) > described:
        problems.append(f"bucket counts sum to {sum(sizes)}, more than described {described}")
    if failing is None:
        problems.append("example ids cannot be resolved: pass --run-dir or put run_dir, "
                        "split and tag in the census")
    else:
        valid = {t.unit_id for t in failing} | {t.task_id for t in failing}
        examples = [e for b in buckets if isinstance(b, dict) for e in b.get("examples", [])]
        bad = sorted({str(e) for e in examples if str(e) not in valid})
        if bad:
            problems.append(f"example ids not failing datapoints of the split: "
                            f"{', '.join(bad[:10])}")
        if total is not None and total != len(failing):
            problems.append(f"failing_total {total} but the run has {len(failing)} "
                            "failing datapoints")
    coverage = (f"{described} of {total} failures described"
                if total is not None and described is not None else None)
    return {"ok": not problems, "problems": problems, "coverage": coverage,
            "described": described, "failing_total": total}
