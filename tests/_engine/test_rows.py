"""Row values as canonical JSON text: the scalar fast path writes what the encoder writes."""

from __future__ import annotations

import json

import pytest

from capevolve._engine.rows import to_json_text
from capevolve.adapter import Rollout


@pytest.mark.parametrize("value", [0, -7, 2**70, 1.5, 0.1, 1e300, -0.0, "", "a\"b\n\té",
                                   "\ud800", "日本", True, False])
def test_scalars_are_written_as_the_canonical_encoder_writes_them(value):
    """str / int / float / bool: the same text as sort_keys, ensure_ascii=False JSON."""
    assert to_json_text(value) == json.dumps(value, sort_keys=True, ensure_ascii=False)


def test_non_finite_numbers_and_containers_keep_their_rules():
    """NaN and infinities are their repr (JSON has none), inside containers too; keys
    sorted; an int subclass still goes through the encoder."""
    assert to_json_text(float("nan")) == '"nan"'
    assert to_json_text({"b": float("inf"), "a": [1, "x"]}) == '{"a": [1, "x"], "b": "inf"}'

    class Count(int):
        pass

    assert to_json_text(Count(3)) == "3"


AWKWARD = [None, 0, -1, 2**70, 1.5, float("nan"), float("inf"), -float("inf"), "", "x",
           "\ud800", b"b", b"\xff", (1, 2), [1, (2, float("nan"))], {"k": float("inf")},
           {1: 2}, {(1, 2): 3}, object(), True, {"a": {"b": [None, {"c": -float("inf")}]}},
           {1}, frozenset(), 1j, range(3)]


def _awkward_rollouts():
    from capevolve.adapter import ToolCall

    class Wider(Rollout):
        extra: int = 7

    yield Rollout(output="ok", trace=[{"role": "user"}], tokens=3, cost_usd=0.5)
    yield Rollout(cost_usd=float("nan"))
    yield Wider(output="a subclass")
    for field in ("output", "trace", "tokens", "cost_usd", "error", "transient",
                  "trajectory", "tool_calls"):
        for value in AWKWARD:
            yield Rollout.model_construct(**{field: value})
    for value in AWKWARD:
        yield Rollout.model_construct(tool_calls=[
            ToolCall.model_construct(name=value, arguments=value, mutates=value)])


def _outcome_of(fn, rollout):
    try:
        return fn(rollout)
    except Exception as exc:  # noqa: BLE001 - compared as data
        return type(exc).__name__


def test_the_one_pass_rollout_json_writes_what_the_field_by_field_path_writes(monkeypatch):
    """``rollout_json`` writes a plain Rollout in one pass; on 228 awkward rollouts (every
    typed field given every kind of wrong or non-finite value, model_construct'ed tool
    calls, a subclass) its text and problem equal the field-by-field path's."""
    from capevolve._engine import rows

    fast = [_outcome_of(rows.rollout_json, r) for r in _awkward_rollouts()]
    monkeypatch.setattr(rows, "_plain", lambda rollout: False)
    plain = [_outcome_of(rows.rollout_json, r) for r in _awkward_rollouts()]
    assert len(fast) == 228 and fast == plain
