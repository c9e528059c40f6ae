"""OpenTelemetry spans of commands, evaluations and rollouts; every call is a no-op unless
``CAPEVOLVE_OTEL=1`` or an OTLP endpoint is set.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from capevolve.errors import ConfigError

if TYPE_CHECKING:  # the CLI imports this module: keep it free of duckdb and the store
    from capevolve._store.rundir import RunDir
    from capevolve.records import EvalRecord

TRACER_NAME = "capevolve"
ROW_COLUMNS = ("task_id", "trial", "reward", "latency_s", "error_kind", "worker_id",
               "node_id", "started_at", "finished_at", "tokens")
ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def enabled() -> bool:
    """Whether spans are wanted."""
    return os.environ.get("CAPEVOLVE_OTEL", "").strip() in ("1", "true", "yes") \
        or any(os.environ.get(name) for name in ENDPOINT_VARS)


def _tracer() -> Any:
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        raise ConfigError("CAPEVOLVE_OTEL needs the otel extra: "
                          "pip install 'capevolve[otel]'") from None
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource.create({"service.name": "capevolve"}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
    return trace.get_tracer(TRACER_NAME)


def _ns(stamp: Any) -> int | None:
    """Epoch nanoseconds of an ISO string or datetime, or None."""
    if stamp is None:
        return None
    moment = stamp if isinstance(stamp, datetime) else datetime.fromisoformat(str(stamp))
    return int(moment.timestamp() * 1e9)


def _attrs(values: dict[str, Any]) -> dict[str, Any]:
    """Span attributes: None dropped, scalars kept, the rest as text."""
    return {k: (v if isinstance(v, (bool, int, float, str)) else str(v))
            for k, v in values.items() if v is not None}


@contextlib.contextmanager
def command_span(name: str, **attributes: Any) -> Iterator[None]:
    """One span around a command."""
    if not enabled():
        yield
        return
    with _tracer().start_as_current_span(f"capevolve.{name}",
                                         attributes=_attrs(attributes)):
        yield


def flush() -> None:
    """Export what is buffered."""
    if not enabled():
        return
    from opentelemetry import trace

    force = getattr(trace.get_tracer_provider(), "force_flush", None)
    if force is not None:
        force()


def evaluation_spans(run: RunDir, record: EvalRecord) -> int:
    """Emit the spans of a finished evaluation and its rollouts; returns how many rollouts."""
    if not enabled():
        return 0
    tracer = _tracer()
    from opentelemetry import trace

    from capevolve._store.rollouts.query import RolloutStore

    span = tracer.start_span("capevolve.evaluation", start_time=_ns(record.started_at),
                             attributes=_attrs({
                                 "capevolve.run_id": run.run_id,
                                 "capevolve.eval_id": record.eval_id,
                                 "capevolve.candidate_id": record.candidate_id,
                                 "capevolve.split": str(record.split),
                                 "capevolve.status": str(record.status),
                                 "capevolve.mean": record.mean,
                                 "capevolve.stderr": record.stderr,
                                 "capevolve.n_rows": record.n_rows}))
    names, rows = RolloutStore(run.layout).query(
        f"SELECT {', '.join(ROW_COLUMNS)} FROM rollouts WHERE eval_id = "
        f"'{record.eval_id.replace(chr(39), chr(39) * 2)}' ORDER BY task_id, trial",
        record.eval_id)
    context = trace.set_span_in_context(span)
    for values in rows:
        row = dict(zip(names, values, strict=True))
        child = tracer.start_span("capevolve.rollout", context=context,
                                  start_time=_ns(row["started_at"]),
                                  attributes=_attrs({
                                      f"capevolve.{k}": row[k] for k in ROW_COLUMNS[:7]}
                                      | {"capevolve.tokens": row["tokens"]}))
        if row["error_kind"]:
            child.set_status(trace.Status(trace.StatusCode.ERROR, str(row["error_kind"])))
        child.end(end_time=_ns(row["finished_at"]))
    span.end(end_time=_ns(record.finished_at))
    return len(rows)
