"""GEPA interop: ``gepa.optimize(...)`` with capevolve as evaluator and store.

A candidate is ``{relative path: text}``, a data instance a train or val task id.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from capevolve import _api as api
from capevolve._policy.protect import protected_patterns
from capevolve.diagnose import DiagnoseOptions, diagnose
from capevolve.errors import CapevolveError, ConfigError, RunDirError
from capevolve.kinds import Decision
from capevolve.models import Meter, ModelClient, ModelSettings
from capevolve.optimize.proposers.llm_settings import LLMSettings, api_key, load_settings

try:
    from gepa.core.adapter import EvaluationBatch
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError("capevolve.integrations.gepa needs gepa: pip install "
                      "'capevolve[gepa]'") from exc

__all__ = ["ChatReflectionLM", "GEPAAdapter"]

SAFE_ID = re.compile(r"[A-Za-z0-9_.\-]+")
REFLECTIVE_FIELDS = ("Inputs", "Generated Outputs", "Feedback")


class GEPAAdapter:
    """gepa's adapter protocol over a capevolve run."""

    propose_new_texts = None  # gepa's own reflective proposer (with its reflection_lm)

    def __init__(self, run: api.RunLike, *, base: str = "seed",
                 engine: str | None = None, address: str | None = None,
                 components: Sequence[str] | None = None) -> None:
        self.run = api.open_run(run)
        self.engine, self.address = engine, address
        self.base_dir = self.run.candidate_dir(base)  # CandidateError for an unknown id
        patterns = protected_patterns(self.run.manifest.config.protected_paths)
        texts = {rel: text for rel, text in _text_files(self.base_dir).items()
                 if not any(fnmatch.fnmatch(rel, p) for p in patterns)}
        wanted = list(components) if components is not None else sorted(texts)
        missing = [c for c in wanted if c not in texts]
        if missing or not wanted:
            raise ConfigError(f"gepa adapter: components {missing or wanted} are not "
                              f"editable text files of candidate {base!r} (protected paths "
                              "are never components)")
        self.components = {c: texts[c] for c in wanted}
        self.evaluations: list[dict[str, Any]] = []
        """Every evaluation record obtained, in order, with ``rollouts_run``."""

    def seed_candidate(self) -> dict[str, str]:
        """The base candidate's component texts."""
        return dict(self.components)

    def trainset(self) -> list[str]:
        """The run's train task ids."""
        return list(self.run.splits.train)

    def valset(self) -> list[str]:
        """The run's val task ids."""
        return list(self.run.splits.val)

    def _split_of(self, batch: Sequence[str]) -> str:
        for split in ("train", "val"):
            if set(batch) <= set(self.run.splits.ids(split)):
                return split
        raise RunDirError("gepa adapter: a batch must be task ids of the train or the val "
                          "split (test belongs to finalize)")

    def snapshot(self, candidate: Mapping[str, str]) -> Path:
        """A temporary copy of the base with ``candidate`` over it (the caller removes it);
        ConfigError for unknown components."""
        unknown = sorted(set(candidate) - set(self.components))
        if unknown:
            raise ConfigError(f"gepa adapter: unknown components {unknown}")
        root = Path(tempfile.mkdtemp(prefix="capevolve-gepa-"))
        target = root / "candidate"
        shutil.copytree(self.base_dir, target)
        for rel, text in candidate.items():
            (target / rel).write_text(text, encoding="utf-8")
        return target

    def _metric_calls(self) -> int:
        return api.open_run(self.run.root).spent.metric_calls

    def _evaluate_split(self, candidate: Mapping[str, str], split: str) -> dict[str, Any]:
        """The evaluation record, with ``rollouts_run`` (0 when a stored one was reused)."""
        directory = self.snapshot(candidate)
        before = self._metric_calls()
        try:
            record = api.evaluate(self.run.root, directory, split, engine=self.engine,
                                  address=self.address).to_dict()
        finally:
            shutil.rmtree(directory.parent, ignore_errors=True)
        record = {**record, "rollouts_run": self._metric_calls() - before}
        self.evaluations.append(record)
        if record["status"] != "complete":
            raise CapevolveError(f"gepa adapter: evaluation {record['eval_id']} is "
                                 f"{record['status']}: {record.get('incomplete_reason')}")
        return record

    def evaluate(self, batch: list[str], candidate: dict[str, str],
                 capture_traces: bool = False) -> EvaluationBatch:
        """Scores of ``batch`` from its whole split's evaluation; a task with no scored trial scores
        0.0, flagged ``unscored``."""
        split = self._split_of(batch)
        record = self._evaluate_split(candidate, split)
        rows = _task_rows(self.run, record["eval_id"])
        outputs, scores, traces = [], [], []
        for task_id in batch:
            rewards = [r for r, _ in rows.get(task_id, []) if r is not None]
            errors = sum(1 for r, _ in rows.get(task_id, []) if r is None)
            mean = sum(rewards) / len(rewards) if rewards else None
            fact = {"task_id": task_id, "candidate_id": record["candidate_id"],
                    "eval_id": record["eval_id"], "split": split, "mean": mean,
                    "scored_trials": len(rewards), "errored_trials": errors,
                    "unscored": mean is None}
            outputs.append(fact)
            scores.append(0.0 if mean is None else mean)
            traces.append({**fact, "feedback": [f for _, f in rows.get(task_id, []) if f]})
        return EvaluationBatch(outputs=outputs, scores=scores,
                               trajectories=traces if capture_traces else None,
                               num_metric_calls=record["rollouts_run"])

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: EvaluationBatch,
                                components_to_update: list[str]
                                ) -> dict[str, list[dict[str, Any]]]:
        """capevolve's diagnosis entries for the batch's tasks, per component asked for."""
        traces = eval_batch.trajectories or []
        if not traces:
            raise CapevolveError("gepa adapter: make_reflective_dataset needs an evaluation "
                                 "made with capture_traces=True")
        first = traces[0]
        diagnosis = diagnose(api.run_dir_of(self.run.root),
                             DiagnoseOptions(split=first["split"], tag=first["candidate_id"]))
        tasks = {t["task_id"] for t in traces}
        entries = [e for e in diagnosis["reflective_dataset"] if e["task_id"] in tasks]
        records = [{**{k: e[k] for k in REFLECTIVE_FIELDS}, "reward": e["reward"]}
                   for e in entries]
        if not records:
            records = [{"Inputs": "", "Generated Outputs": "",
                        "Feedback": "every scored trial of these tasks passed"}]
        return {name: list(records) for name in components_to_update}

    def adopt(self, candidate: Mapping[str, str], note: str | None = None) -> dict[str, Any]:
        """Evaluate ``candidate`` on full val, gate it against the best, then accept or
        reject; returns ``{"candidate_id", "gate", "decision"}``."""
        record = self._evaluate_split(candidate, "val")
        candidate_id = record["candidate_id"]
        if candidate_id == self.run.best_id:
            return {"candidate_id": candidate_id, "gate": None, "decision": "already best"}
        gate = api.gate(self.run.root, candidate_id)
        why = note or "gepa.optimize best candidate"
        if gate.decision == Decision.ACCEPT:
            api.accept(self.run.root, candidate_id, note=why)
        elif gate.decision == Decision.REJECT:
            api.reject(self.run.root, candidate_id, note=why)
        return {"candidate_id": candidate_id, "gate": gate.to_dict(),
                "decision": str(gate.decision)}


def _text_files(root: Path) -> dict[str, str]:
    texts = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            texts[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return texts


def _task_rows(run: api.RunDir, eval_id: str) -> dict[str, list[tuple[float | None,
                                                                              str | None]]]:
    """{task id: [(reward or None, feedback)]} of an evaluation's stored rows."""
    if not SAFE_ID.fullmatch(eval_id):
        raise RunDirError(f"gepa adapter: unexpected evaluation id {eval_id!r}")
    _, rows = api.query(run.root, "SELECT task_id, reward, feedback FROM rollouts "
                              f"WHERE eval_id = '{eval_id}' ORDER BY task_id, trial")
    out: dict[str, list[tuple[float | None, str | None]]] = {}
    for task_id, reward, feedback in rows:
        out.setdefault(str(task_id), []).append(
            (None if reward is None else float(reward), feedback))
    return out


class ChatReflectionLM:
    """A gepa ``LanguageModel`` (``prompt -> text``) over an OpenAI-compatible endpoint."""

    def __init__(self, options: str = "", *, deadline_s: float = 300.0,
                 env: Mapping[str, str] | None = None,
                 model: ModelSettings | None = None) -> None:
        """``options`` as the ``llm`` proposer's spec, over ``model`` when given; ``env``
        supplies only the API key."""
        self.settings: LLMSettings = load_settings(options, model)
        self.meter = Meter()
        self.client = ModelClient(self.settings.model_settings(deadline_s), self.meter,
                                  api_key(self.settings, env))
        self.calls = 0

    @property
    def total_tokens_in(self) -> int:
        """Prompt tokens reported so far, every attempt."""
        return self.meter.counts["prompt_tokens"]

    @property
    def total_tokens_out(self) -> int:
        """Completion tokens reported so far, every attempt."""
        return self.meter.counts["completion_tokens"]

    @property
    def cost_usd(self) -> float | None:
        """Dollars of the priced calls (None when unpriced)."""
        return self.meter.cost_usd

    @property
    def total_cost(self) -> float:
        """Dollars so far (0.0 when unpriced)."""
        return self.cost_usd or 0.0

    def __call__(self, prompt: str | list[dict[str, Any]]) -> str:
        """The model's answer to ``prompt`` (a text, or chat messages)."""
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        response = self.client.complete({"messages": messages})
        self.calls += 1
        choices = response.get("choices") or [{}]
        content = (choices[0].get("message") or {}).get("content") if choices else None
        return content if isinstance(content, str) else ""
