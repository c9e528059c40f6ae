"""The local engine's scorer process: ``python -m capevolve._engine.score_child``.

It loads only the project's adapter (never a candidate's files) and turns the outcomes the
workers reported into rows with a :class:`~capevolve._engine.scorer.ScorerCore`, which
refuses to score while a candidate module is loaded in this process, as a Ray scorer actor
does. Requests (``init``, ``prepare``, ``score``) and replies are JSON lines on a private
channel (:mod:`capevolve._engine.channel`). A ``score`` request names the picks the driver
accepted (``[index, task_id, trial, seed]``, trusted) and is followed by the worker's
outcomes as a payload line, untrusted and parsed here as plain JSON; the reply is the rows
as one column batch.
"""

from __future__ import annotations

import json
import os

from capevolve._engine.channel import Replies, requests, run_child
from capevolve._engine.wire import score_job_from_wire
from capevolve.errors import CapevolveError


async def _serve(replies: Replies) -> None:
    from capevolve._engine.contract import picked_items
    from capevolve._engine.scorer import ScorerCore

    core: ScorerCore | None = None
    async for request, payload in requests():
        op = request.get("op")
        try:
            if op == "init":
                core = ScorerCore(request["project_root"], request["adapter_spec"],
                                  scorer_id=f"{request['name']}-{os.getpid()}")
                replies.send({"ok": True, "pid": os.getpid()})
            elif op == "prepare" and core is not None:
                core.prepare(score_job_from_wire(request["job"]))
                replies.send({"ok": True})
            elif op == "score" and core is not None:
                outcomes = _outcomes(payload)
                picks = [(int(i), str(t), int(k), int(s)) for i, t, k, s in request["picks"]]
                batch = await core.score(request["eval_id"], picked_items(outcomes, picks))
                replies.send({"ok": True, "n": len(batch), "columns": batch.columns})
            else:
                replies.send({"error": f"unexpected request {op!r}"})
        except CapevolveError as exc:
            replies.send({"error": str(exc)})
        except (KeyError, TypeError, ValueError) as exc:  # a malformed request
            replies.send({"error": f"{type(exc).__name__}: {exc}"})


def _outcomes(payload: bytes | None) -> list:
    """The worker's outcomes (untrusted JSON): anything but a list is no outcome at all,
    so every pick becomes an error row of its own unit."""
    try:
        outcomes = json.loads(payload) if payload else []
    except ValueError:
        return []
    return outcomes if isinstance(outcomes, list) else []


def main() -> None:
    """Keep the reply channel private, then serve requests until stdin closes."""
    run_child(_serve, "scorer")


if __name__ == "__main__":
    main()
