"""Classify scored trials and tasks.

A trial fails below reward 1; an errored trial (reward None) neither fails nor passes. A failing
task is ``always_failing`` (rewards ~ 0), ``consistently_partial`` (one partial reward) or
``flaky``; a task whose scored trials all pass is kept good.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter

from capevolve.diagnose.jsontext import loads
from capevolve.diagnose.kinds import FailureKind, TaskPattern
from capevolve.diagnose.signature import even_digits
from capevolve.diagnose.source import Trial

TOLERANCE = 1e-9
PASS_FLOOR = 1.0 - TOLERANCE  # a reward at least this is a pass
NEAR_MISS_FLOOR = 0.7

_COMM_PART = re.compile(r"communicat|inform|messag|mention|explain|omi[st]|tell|notif|disclos")
_NEGATIONS = ("did not", "didn't", "does not", "doesn't", "failed to", "never", "forgot to",
              "neglected to")
_TELLING = ("tell", "inform", "mention", "communicat", "notify", "report", "explain",
            "disclos", "relay")
_REPLIES = ("reply", "response", "message", "answer", "summary")
_COMM_FEEDBACK = re.compile(
    rf"\b(?:{'|'.join(_NEGATIONS)})\s+(?:\w+\s+)?(?:{'|'.join(_TELLING)})\w*"
    r"|\b(?:omitted|omits|missing|left out|absent|not included)\b[^.]{0,40}?"
    rf"\b(?:{'|'.join(_REPLIES)})\b"
    rf"|\b(?:{'|'.join(_REPLIES)})\b[^.]{{0,40}}?"
    r"\b(?:omitted|omits|omit|left out|lacks|lacked|did not include|does not include)\b",
    re.IGNORECASE)


def is_pass(reward: float | None) -> bool:
    """A scored trial with full reward."""
    return reward is not None and reward >= PASS_FLOOR


def is_failure(trial: Trial) -> bool:
    """A scored trial with a reward below 1."""
    return trial.reward is not None and not is_pass(trial.reward)


@lru_cache(maxsize=4096)
def _communication_parts(score_parts: str | None) -> bool:
    """Whether only communication-like score parts fell short."""
    try:
        parts = loads(score_parts) if score_parts else None
    except ValueError:
        return False
    if not isinstance(parts, dict) or len(parts) < 2:
        return False
    short = [k for k, v in parts.items() if isinstance(v, (int, float)) and v < 1 - TOLERANCE]
    return bool(short) and all(_COMM_PART.search(str(k).lower()) for k in short)


def is_communication(label: str | None, text: str) -> bool:
    """Whether a cause unit is about what was told (by label, or an omission in its text)."""
    return bool(label and _COMM_PART.search(label.lower())) or _reports_omission(
        even_digits(text))


def _may_report_omission(feedback: str) -> bool:
    """False only when ``_COMM_FEEDBACK`` cannot match, judged by substrings of ASCII text."""
    if not feedback.isascii():
        return True
    text = feedback.lower()
    return (any(w in text for w in _REPLIES)
            or (any(w in text for w in _TELLING) and any(w in text for w in _NEGATIONS)))


@lru_cache(maxsize=65536)
def _reports_omission(feedback: str) -> bool:
    return _may_report_omission(feedback) and _COMM_FEEDBACK.search(feedback) is not None


@lru_cache(maxsize=65536)
def _communication(score_parts: str | None, feedback: str) -> bool:
    return _communication_parts(score_parts) or _reports_omission(even_digits(feedback))


_COMMUNICATION, _ZERO = FailureKind.COMMUNICATION, FailureKind.ZERO  # read once, not per
_NEAR_MISS, _PARTIAL = FailureKind.NEAR_MISS, FailureKind.PARTIAL  # trial (enum lookups)


def failure_kind(trial: Trial) -> FailureKind:
    """The kind of one failing trial; communication wins where detectable."""
    if _communication(trial.score_parts, trial.feedback or ""):
        return _COMMUNICATION
    reward = trial.reward or 0.0
    if reward <= TOLERANCE:
        return _ZERO
    return _NEAR_MISS if reward >= NEAR_MISS_FLOOR else _PARTIAL


@dataclass
class TaskOutcome:
    """One task's scored rewards and errored-trial count."""

    task_id: str
    rewards: list[float] = field(default_factory=list)
    errored: int = 0

    @property
    def mean(self) -> float | None:
        """Graded mean over scored trials; None when every trial errored."""
        return sum(self.rewards) / len(self.rewards) if self.rewards else None

    @property
    def pattern(self) -> TaskPattern | None:
        """The pattern of a task with a failing trial, else None."""
        if not self.rewards:
            return None
        low, high = min(self.rewards), max(self.rewards)
        if is_pass(low):
            return None
        if high - low > TOLERANCE:
            return TaskPattern.FLAKY
        if high <= TOLERANCE:
            return TaskPattern.ALWAYS_FAILING
        return TaskPattern.CONSISTENTLY_PARTIAL


_UNIT = itemgetter(1, 2)  # a Trial's (task_id, trial)


def task_outcomes(trials: list[Trial]) -> dict[str, TaskOutcome]:
    """Per-task outcomes, keyed and ordered by task id."""
    out: dict[str, TaskOutcome] = {}
    for trial in sorted(trials, key=_UNIT):  # (task_id, trial), picked in C
        outcome = out.get(trial.task_id)
        if outcome is None:  # made once per task, not once per trial as a default
            outcome = out[trial.task_id] = TaskOutcome(trial.task_id)
        if trial.reward is None:
            outcome.errored += 1
        else:
            outcome.rewards.append(trial.reward)
    return out


@dataclass(frozen=True)
class TaskGroups:
    """Sorted task-id lists of the diagnosis header."""

    kept_good: list[str]
    flaky: list[str]
    always_failing: list[str]
    consistently_partial: list[str]
    unscored: list[str]  # every trial errored: missing data

    @property
    def n_failing(self) -> int:
        """Tasks with at least one failing trial."""
        return len(self.flaky) + len(self.always_failing) + len(self.consistently_partial)


def group_tasks(outcomes: dict[str, TaskOutcome]) -> TaskGroups:
    """Tasks split into kept-good, the three patterns and unscored."""
    groups: dict[object, list[str]] = {"good": [], "none": [],
                                       **{p: [] for p in TaskPattern}}
    for task_id in sorted(outcomes):
        outcome = outcomes[task_id]
        if not outcome.rewards:
            groups["none"].append(task_id)
        else:
            groups[outcome.pattern or "good"].append(task_id)
    return TaskGroups(kept_good=groups["good"], flaky=groups[TaskPattern.FLAKY],
                      always_failing=groups[TaskPattern.ALWAYS_FAILING],
                      consistently_partial=groups[TaskPattern.CONSISTENTLY_PARTIAL],
                      unscored=groups["none"])
