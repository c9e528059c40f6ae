"""The JSON lines between the driver and its child processes."""

from __future__ import annotations

import json
import math

from capevolve._engine.wire import dumps, encode


def test_dumps_parses_back_to_what_json_dumps_would_give():
    """Outcome-like values, big ints, non-ASCII text, NaN and infinities, tuples and
    unknown objects (their repr) read back exactly as json.dumps(default=repr) writes
    them; a lone surrogate (not UTF-8) is escaped, and no line ever holds a newline."""
    class Odd:
        def __repr__(self) -> str:
            return "<odd>"

    values = [
        [{"task_id": "t1", "trial": 0, "latency_s": 0.1 + 0.2, "started": 1764620000.123456,
          "rollout": '{"output": "a\\nb"}', "error": None, "attempts": 2**70}],
        {"text": "é 日本 \u2028 line\nbreak", "pair": (1, 2), "odd": Odd()},
        ["\ud800 lone", {"x": "\udfff"}],
    ]
    for value in values:
        data = dumps(value)
        assert b"\n" not in data
        assert json.loads(data) == json.loads(json.dumps(value, default=repr))
    nan, inf = json.loads(dumps([float("nan"), float("inf"), -float("inf")]))[:2]
    assert math.isnan(nan) and inf == float("inf")
    assert encode({"op": "x"}).endswith(b"}\n")
