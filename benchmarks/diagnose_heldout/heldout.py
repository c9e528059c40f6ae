"""The simulated support agent behind the held-out diagnose projects.

Each project (a folder beside this file) declares a :class:`Spec`: its task kinds (the
request, the usual tool calls and reply), its faults (the ground-truth causes) and how its
scorer lays out feedback. A task carries one or two latent faults; a fault fires on a trial
unless a bullet of the capability's ``system_prompt.md`` names its rule keyword, with the
task's failure rate. A fired fault may change the calls the agent makes and its final
message (a write narrated instead of made, a hold instead of a booking), and costs its
score part. The trace records the faults that fired and the trial's seed; the scorer
writes one sentence per fault (one of its phrasings, picked by the seed) in the project's
own layout. :func:`injected_causes` gives, for one rollout, each fault with the exact
sentence the scorer wrote for it: the ground truth a diagnose benchmark scores against,
taken from what the simulator injected, never from the feedback's wording.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capevolve.adapter import Rollout, Score, Task, ToolCall

Facts = dict[str, str]
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")


@dataclass(frozen=True)
class Kind:
    """A kind of request: its text, the calls a correct agent makes, its reply."""

    name: str
    request: str
    calls: tuple[str, ...]
    reply: str
    weight: float = 1.0


@dataclass(frozen=True)
class Fault:
    """One ground-truth cause: the rule keyword that prevents it, the score part it costs,
    the scorer's phrasings, and (optionally) the calls and reply of a trial where it fires."""

    rule: str
    keyword: str
    part: str
    sentences: tuple[str, ...]
    kinds: tuple[str, ...] = ()  # the task kinds it can occur in (empty: every kind)
    calls: tuple[str, ...] | None = None
    reply: str | None = None
    weight: float = 1.0
    credit: float = 0.0  # what its part still scores when it fires


@dataclass(frozen=True)
class Cause:
    """A fault that fired on one rollout and the sentence the scorer wrote for it."""

    part: str
    text: str
    rule: str


@dataclass(frozen=True)
class Spec:
    """A held-out project: kinds, faults, score parts, read-only tools, facts, layout."""

    name: str
    kinds: tuple[Kind, ...]
    faults: tuple[Fault, ...]
    parts: tuple[str, ...]
    read_only: frozenset[str]
    facts: Callable[[random.Random, str], Facts]
    layout: Callable[[list[Cause], dict[str, float], random.Random], str]
    passing: tuple[str, ...]
    n_tasks: int = 96
    two_faults: float = 0.3
    extra: dict[str, Any] = field(default_factory=dict)


def _rules(prompt: str) -> set[str]:
    """The lowercased text of every markdown bullet of the prompt."""
    return {m.group(1).lower() for line in prompt.splitlines() if (m := _BULLET.match(line))}


class SimAdapter:
    """An adapter over a :class:`Spec` (synchronous, deterministic per seed)."""

    spec: Spec

    def tasks(self) -> list[Task]:
        """``spec.n_tasks`` tasks: a kind, its facts, one or two latent faults, a rate."""
        spec = self.spec
        rng = random.Random(f"{spec.name}-tasks")
        tasks = []
        kinds, weights = list(spec.kinds), [k.weight for k in spec.kinds]
        for i in range(spec.n_tasks):
            kind = rng.choices(kinds, weights)[0]
            facts = spec.facts(rng, kind.name)
            possible = [f for f in spec.faults if not f.kinds or kind.name in f.kinds]
            faults = [rng.choices(possible, [f.weight for f in possible])[0]]
            others = [f for f in possible if f.part != faults[0].part]
            if others and rng.random() < spec.two_faults:
                faults.append(rng.choices(others, [f.weight for f in others])[0])
            rate = 0.0 if i % 6 == 0 else rng.choice((0.6, 1.0, 1.0))
            tasks.append(Task(
                id=f"{spec.name[:3]}_{i:03d}", input=kind.request.format(**facts),
                target=kind.reply.format(**facts),
                metadata={"kind": kind.name, "facts": facts,
                          "faults": [f.rule for f in faults], "rate": rate}))
        return tasks

    def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        """The simulated agent with the capability in ``candidate`` on ``task``."""
        path = Path(candidate) / "system_prompt.md"
        if not path.is_file():
            return Rollout(error=f"capability has no system_prompt.md (looked for {path})")
        bullets = _rules(path.read_text(encoding="utf-8"))
        spec = self.spec
        by_rule = {f.rule: f for f in spec.faults}
        kind = next(k for k in spec.kinds if k.name == task.metadata["kind"])
        facts = task.metadata["facts"]
        rng = random.Random(seed)
        fired = [by_rule[r] for r in task.metadata["faults"]
                 if not any(by_rule[r].keyword in b for b in bullets)
                 and rng.random() < task.metadata["rate"]]
        calls = next((f.calls for f in fired if f.calls is not None), kind.calls)
        reply = next((f.reply for f in fired if f.reply is not None), kind.reply)
        output = reply.format(**facts)
        tool_calls = [ToolCall(name=c, arguments={"ref": facts.get("ref", task.id)},
                               mutates=False if c in spec.read_only else None) for c in calls]
        trace = {"seed": seed, "faults": [f.rule for f in fired],
                 "messages": [{"role": "user", "content": task.input},
                              {"role": "assistant", "content": output}]}
        return Rollout(output=output, trace=trace, tool_calls=tool_calls,
                       tokens=len(str(task.input).split()) + len(output.split()))

    def score(self, task: Task, rollout: Rollout) -> Score:
        """Each fired fault costs its part; the feedback names each in the project's layout."""
        spec = self.spec
        if rollout.error or not isinstance(rollout.trace, dict):
            return Score(reward=0.0, feedback="no reply was produced")
        causes = injected_causes(spec, task, rollout)
        parts = dict.fromkeys(spec.parts, 1.0)
        credit = {f.rule: f.credit for f in spec.faults}
        for cause in causes:
            parts[cause.part] = min(parts[cause.part], credit[cause.rule])
        rng = random.Random(rollout.trace["seed"] * 7 + 1)
        if not causes:
            feedback = rng.choice(spec.passing)
        else:
            feedback = spec.layout(causes, parts, rng)
        return Score(reward=round(sum(parts.values()) / len(parts), 6), feedback=feedback,
                     parts=parts)


def injected_causes(spec: Spec, task: Task, rollout: Rollout) -> list[Cause]:
    """The faults that fired on ``rollout`` with the sentence the scorer writes for each
    (empty for a clean rollout or one without a trace)."""
    trace = rollout.trace if isinstance(rollout.trace, dict) else None
    if rollout.error or trace is None:
        return []
    by_rule = {f.rule: f for f in spec.faults}
    rng = random.Random(trace["seed"])
    facts = task.metadata["facts"]
    out = []
    for rule in trace["faults"]:
        fault = by_rule[rule]
        out.append(Cause(fault.part, rng.choice(fault.sentences).format(**facts), rule))
    return out


def money(rng: random.Random, low: int, high: int) -> str:
    """A dollar amount with cents, as text."""
    return f"{rng.randint(low, high)}.{rng.randint(0, 99):02d}"


def ref(rng: random.Random, prefix: str, n: int = 6) -> str:
    """A record reference such as ``R-482913``."""
    return f"{prefix}-{rng.randint(10 ** (n - 1), 10 ** n - 1)}"
