"""OpenTelemetry spans through the real SDK with its in-memory exporter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime

import pytest

import capevolve
from capevolve import telemetry as otel
from capevolve._store.evals import load_eval
from capevolve._store.rundir import RunDir

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="needs the otel extra")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

pytestmark = pytest.mark.slow

EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans(monkeypatch):
    """Tracing on, into the in-memory exporter (one global provider per process)."""
    if not isinstance(trace.get_tracer_provider(), sdk_trace.TracerProvider):
        provider = sdk_trace.TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    monkeypatch.setenv("CAPEVOLVE_OTEL", "1")
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def _ns(text):
    return int(datetime.fromisoformat(text).timestamp() * 1e9)


def test_evaluation_and_rollout_spans_from_stored_rows(spans, view_run):
    run = RunDir.open(view_run.path)
    record = load_eval(run, "val__seed__k3")
    with otel.command_span("evaluate", run_dir=str(view_run.path)):
        n = otel.evaluation_spans(run, record)
    finished = spans.get_finished_spans()
    rollouts = [s for s in finished if s.name == "capevolve.rollout"]
    evaluation = next(s for s in finished if s.name == "capevolve.evaluation")
    command = next(s for s in finished if s.name == "capevolve.evaluate")
    _, rows = capevolve.query(view_run.path, "SELECT task_id, trial, latency_s, started_at, "
                              "error_kind FROM rollouts WHERE eval_id = 'val__seed__k3'")
    assert n == len(rollouts) == len(rows) == record.n_rows
    assert evaluation.parent.span_id == command.context.span_id
    assert all(s.parent.span_id == evaluation.context.span_id for s in rollouts)
    by_unit = {(s.attributes["capevolve.task_id"], s.attributes["capevolve.trial"]): s
               for s in rollouts}
    for task_id, trial, latency, started, error_kind in rows:
        span = by_unit[(task_id, trial)]
        assert span.attributes["capevolve.latency_s"] == pytest.approx(latency)
        assert span.start_time == pytest.approx(started.timestamp() * 1e9, abs=1e3)
        assert ("capevolve.error_kind" in span.attributes) == (error_kind is not None)
    assert evaluation.start_time == pytest.approx(_ns(record.started_at), abs=1e3)
    assert evaluation.attributes["capevolve.mean"] == pytest.approx(record.mean)


def test_evaluate_verb_emits_spans(spans, view_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(view_run.path, run_dir)
    capevolve.evaluate(run_dir, view_run.improved, "train", engine="local")
    names = [s.name for s in spans.get_finished_spans()]
    _, rows = capevolve.query(run_dir, "SELECT count(*) FROM rollouts WHERE split='train'")
    assert names.count("capevolve.evaluation") == 1
    assert names.count("capevolve.rollout") == rows[0][0] > 0


def test_off_by_default_and_never_imported(view_run, tmp_path):
    code = ("import sys, capevolve\n"
            "from capevolve.cli.app import app\n"
            "from typer.testing import CliRunner\n"
            f"r = CliRunner().invoke(app, ['status', '--run-dir', {str(view_run.path)!r}, "
            "'--json'])\n"
            "assert r.exit_code == 0, r.output\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('opentelemetry'))))")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CAPEVOLVE_OTEL", "OTEL_EXPORTER_OTLP_ENDPOINT")}
    done = subprocess.run([sys.executable, "-c", "import json\n" + code],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
