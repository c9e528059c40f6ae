"""A proposer that raises is a no_change naming the exception, never a crash of the loop;
a proposer's detail is stored as JSON values whatever it returned."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from capevolve.optimize import step


class Raising:
    name = "raising"

    def propose(self, ctx):
        raise RuntimeError("model exploded")


def test_a_raising_proposer_is_a_no_change_with_the_exception():
    planned = step.Planned(iteration=1, parent_id="seed", focus=None, pending={},
                           ctx=SimpleNamespace())
    step.propose(SimpleNamespace(proposer=Raising()), planned)
    assert planned.proposal is not None and not planned.proposal.changed
    assert planned.proposal.blocker == "proposer failed: RuntimeError: model exploded"


def test_detail_is_stored_as_json_values():
    stored = step._json_values({"path": Path("/x"), "nan": float("nan"), "set": {2},
                                "raw": b"\xff", "nested": {"ok": [1, 2.5, None]}})
    assert stored == {"path": "/x", "nan": None, "set": "{2}", "raw": "b'\\xff'",
                      "nested": {"ok": [1, 2.5, None]}}
    assert json.loads(json.dumps(stored, allow_nan=False)) == stored
    assert step._json_values(["not", "a", "dict"]) == {"detail": ["not", "a", "dict"]}
