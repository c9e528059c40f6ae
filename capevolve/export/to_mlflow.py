"""``export mlflow``: log a run to an MLflow tracking store from stored data."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from capevolve._loop.frozen_config import run_config
from capevolve._store.evals import all_evals
from capevolve._store.rundir import RunDir
from capevolve.errors import ConfigError
from capevolve.report.data import report_data

RUN_TAG, CANDIDATE_TAG, KIND_TAG = "capevolve.run_id", "capevolve.candidate_id", "capevolve.kind"
PARENT_TAG = "mlflow.parentRunId"
GATE_METRICS = ("delta", "se", "t", "p_value", "threshold", "critical", "min_delta")
RUN_ARTIFACTS = ("report.html", "report.md", "final.json", "run.json")


def artifact_root(tracking_uri: str | None) -> str | None:
    """A new experiment's artifact root: ``<dir>/mlartifacts`` beside a sqlite store, never
    the current directory; None lets MLflow decide."""
    if tracking_uri and tracking_uri.startswith("sqlite:///"):
        db = Path(tracking_uri[len("sqlite:///"):])
        return (db.parent / "mlartifacts").resolve().as_uri()
    return None


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested config -> ``{"gate.alpha": "0.05", ...}`` (lists and None as text)."""
    if isinstance(value, dict):
        return {name: text for key, item in value.items()
                for name, text in flatten(item, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): str(value)[:6000]}


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


class _Logger:
    """Logs into one MLflow run, skipping what is already there."""

    def __init__(self, client: Any, run_id: str) -> None:
        self.client, self.run_id = client, run_id
        data = client.get_run(run_id).data
        self.params, self.metrics = dict(data.params), dict(data.metrics)
        self.artifacts = {f.path for f in client.list_artifacts(run_id)}

    def params_(self, params: dict[str, str]) -> None:
        for key, value in sorted(params.items()):
            if key not in self.params:
                self.client.log_param(self.run_id, key, value)
                self.params[key] = value

    def metrics_(self, metrics: dict[str, Any], step: int = 0) -> None:
        for key, value in sorted(metrics.items()):
            number = _finite(value)
            if number is not None and self.metrics.get(key) != number:
                self.client.log_metric(self.run_id, key, number, step=step)
                self.metrics[key] = number

    def tags(self, tags: dict[str, Any]) -> None:
        for key, value in sorted(tags.items()):
            if value is not None:
                self.client.set_tag(self.run_id, key, str(value)[:5000])

    def artifact(self, path: Path, folder: str | None = None) -> None:
        name = path.name if folder is None else folder
        if path.exists() and name not in self.artifacts:
            log = self.client.log_artifacts if path.is_dir() else self.client.log_artifact
            log(self.run_id, str(path), folder)
            self.artifacts.add(name)


def _find_or_create(client: Any, experiment_id: str, tags: dict[str, str],
                    name: str) -> str:
    query = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
    found = client.search_runs([experiment_id], filter_string=query, max_results=1)
    if found:
        return str(found[0].info.run_id)
    return str(client.create_run(experiment_id, tags=tags, run_name=name).info.run_id)


def export_mlflow(run: RunDir, tracking_uri: str | None = None,
                  experiment: str | None = None) -> dict[str, Any]:
    """Log ``run`` to ``tracking_uri`` (MLflow's default when None); returns the experiment, parent
    and per-candidate run ids. ConfigError without mlflow or when the store fails."""
    try:
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ConfigError("export mlflow needs the mlflow extra: "
                          "pip install 'capevolve[mlflow]'") from None
    store_errors: tuple[type[BaseException], ...] = (MlflowException, OSError)
    try:  # SQLAlchemy's error base, when installed
        from sqlalchemy.exc import SQLAlchemyError

        store_errors += (SQLAlchemyError,)
    except ImportError:
        pass
    try:
        return _export(MlflowClient(tracking_uri=tracking_uri), run, tracking_uri, experiment)
    except store_errors as exc:
        text = str(exc).strip().splitlines()
        raise ConfigError(f"export mlflow: tracking store {tracking_uri or 'default'}: "
                          f"{text[0] if text else type(exc).__name__}") from None


def _export(client: Any, run: RunDir, tracking_uri: str | None,
            experiment: str | None) -> dict[str, Any]:
    config = run_config(run)
    data = report_data(run)
    name = experiment or f"capevolve/{config.name}"
    found = client.get_experiment_by_name(name)
    experiment_id = (found.experiment_id if found is not None
                     else client.create_experiment(name, artifact_location=artifact_root(
                         tracking_uri)))
    parent_id = _find_or_create(client, experiment_id,
                                {RUN_TAG: run.run_id, KIND_TAG: "run"},
                                f"{config.name} {run.run_id}")
    _log_run(_Logger(client, parent_id), run, config.model_dump(mode="json"), data)
    runs = {}
    evals = all_evals(run)
    gates = {g["candidate_id"]: g for g in data["gates"] if not g.get("exploratory")}
    for cand in data["candidates"]:
        cid = cand["id"]
        child = _find_or_create(client, experiment_id, {RUN_TAG: run.run_id,
                                                        CANDIDATE_TAG: cid,
                                                        KIND_TAG: "candidate",
                                                        PARENT_TAG: parent_id}, cid)
        _log_candidate(_Logger(client, child), run, cand,
                       [e for e in evals if e.candidate_id == cid], gates.get(cid))
        client.set_terminated(child)
        runs[cid] = child
    client.set_terminated(parent_id)
    return {"tracking_uri": tracking_uri, "experiment": name, "experiment_id": experiment_id,
            "parent_run_id": parent_id, "runs": runs}


def _log_run(log: _Logger, run: RunDir, config: dict[str, Any], data: dict[str, Any]) -> None:
    log.params_({**flatten(config, "config."), "run_id": run.run_id,
                 "project_dir": run.manifest.project_dir})
    final, spend, ledger = data["final"] or {}, data["spend"]["totals"], data["ledger"]
    ci = final.get("ci95") or [None, None]
    log.metrics_({"test.delta": final.get("delta"), "test.se": final.get("se"),
                  "test.ci95_low": ci[0], "test.ci95_high": ci[1],
                  "val.delta": final.get("val_delta"),
                  "spend.metric_calls": spend.get("metric_calls"),
                  "spend.tokens": spend.get("tokens"), "spend.cost_usd": spend.get("cost_usd"),
                  "gates.run": ledger.get("gates"),
                  "gates.expected_false_accepts": ledger.get("expected_false_accepts")})
    log.tags({"best_id": run.best_id, "verdict": final.get("verdict") or "not finalized"})
    for name in RUN_ARTIFACTS:
        log.artifact(run.root / name)


def _log_candidate(log: _Logger, run: RunDir, cand: dict[str, Any], evals: list[Any],
                   gate: dict[str, Any] | None) -> None:
    meta = run.candidate_meta(cand["id"])
    log.params_({"candidate_id": cand["id"], "parent": str(cand.get("parent")),
                 "role": str(meta.role), "hash": meta.hash})
    log.tags({"decision": cand.get("decision"), "gate_decision": cand.get("gate_decision"),
              "note": cand.get("note"), "best": cand["id"] == run.best_id})
    for record in evals:
        prefix = f"{record.split}.k{record.n_trials}"
        log.metrics_({f"{prefix}.mean": record.mean, f"{prefix}.stderr": record.stderr,
                      f"{prefix}.coverage": record.coverage,
                      f"{prefix}.n_scored": record.n_scored}, step=record.n_trials)
    if gate is not None:
        log.metrics_({f"gate.{k}": gate.get(k) for k in GATE_METRICS})
        log.tags({"gate.reasons": "; ".join(gate.get("reasons") or [])})
    log.artifact(run.candidate_dir(cand["id"]), "capability")
