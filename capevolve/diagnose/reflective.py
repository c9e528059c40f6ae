"""Per-failure facts and the reflective-dataset entries an editor reads, one per failing trial
in (task, trial) order.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

from capevolve.diagnose.claimed import (
    family,
    is_specific,
    makeable,
    name_words,
    unmatched_claims,
)
from capevolve.diagnose.classify import TaskOutcome, failure_kind
from capevolve.diagnose.gold import GoldGuard
from capevolve.diagnose.jsontext import loads
from capevolve.diagnose.kinds import FailureKind
from capevolve.diagnose.narrated import (
    STATE_PATTERN,
    Call,
    call_mutates,
    claims_in,
    final_message,
    narrated_without_action,
    trace_calls,
    trace_may_write,
)
from capevolve.diagnose.source import Trial
from capevolve.diagnose.units import Unit


class Failure(NamedTuple):
    """What diagnosis derives from one failing trial."""

    trial: Trial
    kind: FailureKind
    narrated: bool
    tools: frozenset[str]
    identifiers: frozenset[str]  # tool names and argument names, lowercased
    feedback: str  # as shown (redacted when asked)
    gold_leak: bool | None
    claimed: tuple[str, ...] = ()  # specific claimed verbs no mutating call matches
    units: tuple[Unit, ...] = ()  # cause units, set once every failure is known
    cut: int = 0  # characters of shared preamble stripped before the units were cut
    inferred_part: str | None = None  # the one score part that fell short, if exactly one

    @property
    def claimed_mismatch(self) -> bool:
        """claimed_without_matching_action (never together with narrated)."""
        return bool(self.claimed) and not self.narrated


def analyse(trial: Trial, calls: list[Call], guard: GoldGuard | None,
            redact: bool, tools: Iterable[str] | None = None) -> Failure:
    """The facts of one failing trial; ``tools``: the agent's mutating tools."""
    feedback = trial.feedback or ""
    leak = None if guard is None else guard.leaks(trial.task_id, feedback)
    if redact and guard is not None:
        feedback = guard.redact(trial.task_id, feedback) or ""
    names = {c.name for c in calls}.union(*(c.fields for c in calls))
    identifiers = frozenset(map(str.lower, names))
    narrated = narrated_without_action(trial.output, calls, trial.trace)
    claimed = () if narrated else tuple(unmatched_claims(trial.output, calls, trial.trace,
                                                         tools))
    return Failure(trial=trial, kind=failure_kind(trial), narrated=narrated,
                   tools=frozenset(c.name for c in calls), identifiers=identifiers,
                   feedback=feedback, gold_leak=leak, claimed=claimed)


def with_makeable_claims(failures: list[Failure],
                         write_words: Iterable[frozenset[str]]) -> list[Failure]:
    """The failures keeping only claimed verbs whose family meets ``write_words`` (the name words
    of mutating calls)."""
    words = frozenset().union(*write_words)
    return [f if not f.claimed else f._replace(claimed=makeable(f.claimed, words))
            for f in failures]


TRACE_MAY_BE_NEEDED = (
    "reward IS NOT NULL AND (tool_calls IS NULL OR NOT contains(tool_calls, '\"name\"') "
    "OR output IS NULL OR NOT regexp_matches(output, '[0-9A-Za-z]') "
    f"OR regexp_matches(output, '(?i){STATE_PATTERN}|ship'))")
"""DuckDB SQL guessing which rows' traces diagnosis reads; :meth:`Analyser.needs_trace` is exact."""


_new = tuple.__new__  # a NamedTuple from all its fields, without its Python-level __new__


class CallFacts(NamedTuple):
    """What a rollout's recorded calls say."""

    tools: frozenset[str]
    identifiers: frozenset[str]
    mutating: bool  # some call mutates (narrated's first test)
    write_words: frozenset[frozenset[str]]  # the distinct name words of the mutating calls


class Analyser:
    """:func:`analyse`, caching work per distinct set of calls."""

    def __init__(self, guard: GoldGuard | None, redact: bool) -> None:
        self.guard, self.redact = guard, redact
        self._calls: dict[frozenset[Call], CallFacts] = {}
        self._claimed: dict[tuple[frozenset[frozenset[str]], str], tuple[str, ...]] = {}

    def facts(self, calls: list[Call]) -> CallFacts:
        """The :class:`CallFacts` of ``calls``; order and repeats change none."""
        key = frozenset(calls)
        known = self._calls.get(key)
        if known is None:
            names = {c.name for c in calls}.union(*(c.fields for c in calls))
            writes = frozenset(name_words(c.name) for c in calls
                               if call_mutates(c.name, c.mutates))
            known = self._calls[key] = CallFacts(
                frozenset(c.name for c in calls), frozenset(map(str.lower, names)),
                bool(writes), writes)
        return known

    def write_words(self) -> list[frozenset[str]]:
        """The name words of every mutating call :meth:`facts` has seen."""
        return [w for facts in self._calls.values() for w in facts.write_words]

    def _narrated(self, facts: CallFacts, calls: list[Call], message: str,
                  trace: str | None) -> bool:
        if facts.mutating or not claims_in(message):
            return False
        if calls and not trace_may_write(trace):
            return True
        more = trace_calls(trace)
        if not calls and not more:
            return False
        return not any(call_mutates(c.name, c.mutates) for c in more)

    def _unmatched(self, facts: CallFacts, message: str) -> tuple[str, ...]:
        """Cached ``unmatched_claims`` from the calls' facts."""
        key = (facts.write_words, message)
        known = self._claimed.get(key)
        if known is None:
            claims = [v for v in claims_in(message) if is_specific(v)]
            missing = {v for v in claims if not any(family(v) & w for w in facts.write_words)}
            known = self._claimed[key] = tuple(sorted(missing))
        return known

    def needs_trace(self, trial: Trial, calls: list[Call]) -> bool:
        """Whether ``trial``'s facts need its trace: no call in ``calls``, a blank output, or a
        state claim without a mutating call."""
        if not calls:
            return True
        output = trial.output
        if not output or output.isspace():  # blank: no character but whitespace
            return True
        return bool(claims_in(output)) and not self.facts(calls).mutating

    def failure(self, trial: Trial, calls: list[Call]) -> Failure:
        """The facts of one failing trial (:func:`analyse`)."""
        feedback = trial.feedback or ""
        guard = self.guard
        leak = None if guard is None else guard.leaks(trial.task_id, feedback)
        if self.redact and guard is not None:
            feedback = guard.redact(trial.task_id, feedback) or ""
        facts = self.facts(calls)
        message = final_message(trial.output, trial.trace)
        narrated = self._narrated(facts, calls, message, trial.trace)
        claimed = () if narrated or not facts.mutating else self._unmatched(facts, message)
        return _new(Failure, (trial, failure_kind(trial), narrated, facts.tools,
                              facts.identifiers, feedback, leak, claimed, (), 0, None))


@lru_cache(maxsize=8192)
def input_text(inputs: str | None) -> str:
    """The task input as text: a JSON string decoded, anything else unchanged."""
    if inputs is None:
        return ""
    try:
        value = loads(inputs)
    except ValueError:
        return inputs
    return value if isinstance(value, str) else inputs


class TaskSummary(NamedTuple):
    """A task's graded mean and pattern as JSON values."""

    mean: float | None
    pattern: str | None

    @classmethod
    def of(cls, outcome: TaskOutcome) -> TaskSummary:
        mean, pattern = outcome.mean, outcome.pattern
        return _new(cls, (None if mean is None else round(mean, 6),
                          None if pattern is None else str(pattern)))


_KIND_TEXT = {kind: str(kind) for kind in FailureKind}


def entry(failure: Failure, summary: TaskSummary, trajectory: str,
          causes: list[dict[str, Any]], cluster: str | None,
          secondary: str | None) -> dict[str, Any]:
    """The reflective-dataset entry of one failure; ``cluster`` / ``secondary`` are its best- and
    second-ranked distinct clusters."""
    trial = failure.trial
    kind = failure.kind
    return {
        "Feedback": failure.feedback, "Generated Outputs": trial.output or "",
        "Inputs": input_text(trial.inputs), "Trajectory": trajectory, "causes": causes,
        "claimed_verbs": list(failure.claimed),
        "claimed_without_matching_action": failure.claimed_mismatch,
        "cluster": cluster, "gold_in_feedback": failure.gold_leak,
        "kind": _KIND_TEXT[kind] if kind in _KIND_TEXT else str(kind),
        "narrated_without_action": failure.narrated, "pattern": summary.pattern,
        "reward": trial.reward, "secondary_cluster": secondary, "task_id": trial.task_id,
        "task_mean": summary.mean, "trial": trial.trial,
    }
