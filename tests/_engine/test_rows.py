"""Row values as canonical JSON text: the scalar fast path writes what the encoder writes."""

from __future__ import annotations

import json

import pytest

from capevolve._engine.rows import to_json_text


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
