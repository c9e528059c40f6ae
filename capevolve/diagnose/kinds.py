"""Enumerations of the diagnosis: failure kinds, task patterns, cluster modes, judgement tags."""

from __future__ import annotations

from enum import StrEnum


class FailureKind(StrEnum):
    """The kind of a failing scored trial."""

    ZERO = "zero"  # reward ~ 0: the task was not achieved
    PARTIAL = "partial"  # 0 < reward < classify.NEAR_MISS_FLOOR: partial credit
    NEAR_MISS = "near_miss"  # classify.NEAR_MISS_FLOOR <= reward < 1: almost right
    COMMUNICATION = "communication"  # an omission / communication failure, where detectable


class TaskPattern(StrEnum):
    """How a failing task behaves across its scored trials."""

    ALWAYS_FAILING = "always_failing"  # every scored trial ~ 0
    CONSISTENTLY_PARTIAL = "consistently_partial"  # the same partial reward on every trial
    FLAKY = "flaky"  # the trials disagree: one passes and one fails, or rewards vary


class ClusterMode(StrEnum):
    """How failures are grouped into clusters."""

    ROOT_CAUSE = "root-cause"  # the shared-token key (the default)
    FIRST_WORDS = "first-words"  # the old lexical key: the feedback's first words


class JudgementTag(StrEnum):
    """A person's or editor agent's judgement of a cluster, never set mechanically."""

    KNOWLEDGE = "KNOWLEDGE"
    BEHAVIORAL = "BEHAVIORAL"
    DECISION_PERMISSION = "DECISION/PERMISSION"
    CAPABILITY_GAP = "CAPABILITY-GAP"


NARRATED_SIGNATURE = "narrated_without_action"
CLAIMED_SIGNATURE = "claimed_without_matching_action"
CLAIMED_NOTE = ("the final message claims a specific change (e.g. escalated, refunded) that "
                "no mutating call of a matching verb made, though another write happened; "
                "the fix is structural (the claimed action must be the call that is made), "
                "not a prose reminder")
NARRATED_NOTE = ("the final message claims a state change that no mutating tool call made; "
                 "the fix is structural (require the write before the claim, e.g. a tool-use "
                 "rule or a check in the loop), not a prose reminder")
