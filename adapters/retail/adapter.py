"""RetailAdapter: the capevolve adapter for the offline retail environment.

``tasks()`` returns the shipped tasks (``data/tasks.json``) in file order. ``run_target``
loads the candidate (``policy/policy.md`` + ``tools/tools.py``), gives the policy agent a
fresh copy of the database and records the conversation; a malformed candidate file is a
``Rollout(error="file:line: problem")``, never an exception. ``score`` is
``scorer.score``. Synchronous and thread-safe (no shared mutable state per rollout).
"""

from __future__ import annotations

from hashlib import sha256
from pathlib import Path

from capevolve.adapter import Rollout, Score, Task

from . import scorer
from .agent import PolicyAgent
from .behaviours import Conduct
from .capability import CapabilityError, load_capability
from .store import canonical, changed_records, fresh_db, load_task_records
from .toolbox import ToolBox


def to_task(record: dict) -> Task:
    """A capevolve Task from one task record; the gold data lives only in ``target``."""
    return Task(
        id=record["id"],
        input={"user_id": record["user_id"], "request": record["request"]},
        target={"actions": record["actions"], "facts": record["facts"],
                "expected_hash": record["expected_hash"]},
        metadata={"kind": record["kind"], "cluster": record["kind"],
                  "decision": record["decision"]},
    )


def customer(task: Task) -> dict:
    """What the scripted customer knows: who they are, the request, the confirm answer."""
    return {**task.input, "decision": task.metadata["decision"]}


def db_summary(db: dict) -> dict:
    """The end state as stored in the trace: its hash and the records that changed."""
    changed = changed_records(db)
    return {"hash": sha256(canonical(changed).encode()).hexdigest(), "changed": changed}


def word_count(messages: list[dict]) -> int:
    """A rough token count: words in every message."""
    return sum(len(str(m.get("content") or "").split()) for m in messages)


class RetailAdapter:
    """Offline retail support: a deterministic policy agent over a per-rollout database."""

    run_target_reads = ("data/db.json",)
    """The one data file run_target reads: the sandbox hides the rest (tasks.json holds
    the gold)."""

    def tasks(self) -> list[Task]:
        """Every shipped task (ids ``retail_000``..), in file order."""
        return [to_task(r) for r in load_task_records()]

    def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        """Run the policy agent with the candidate's policy and tools on ``task``."""
        try:
            capability = load_capability(Path(candidate))
        except CapabilityError as exc:
            return Rollout(error=str(exc))
        db = fresh_db()
        box = ToolBox(capability.tools, db)
        conduct = Conduct.draw(capability.rules, seed)
        agent = PolicyAgent(customer(task), box, conduct)
        messages = agent.run()
        final = next((m["content"] for m in reversed(messages) if m["role"] == "assistant"), "")
        trace = {"messages": messages, "db": db_summary(db),
                 "behaviours": sorted(str(b) for b in conduct.followed),
                 "narrated": agent.narrated, "trial": trial}
        return Rollout(output=final, trace=trace, tool_calls=box.calls,
                       tokens=word_count(messages), cost_usd=None)

    def score(self, task: Task, rollout: Rollout) -> Score:
        """Database end state AND required facts (see ``retail.scorer``)."""
        return scorer.score(task, rollout)
