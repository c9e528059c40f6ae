"""The capevolve exception tree."""

from __future__ import annotations


class CapevolveError(Exception):
    """Root of every error capevolve raises deliberately."""


class ConfigError(CapevolveError):
    """capevolve.yaml (or another config input) is missing, malformed or invalid."""


class AdapterError(CapevolveError):
    """The adapter cannot be loaded, or it breaks the adapter contract."""


class CandidateError(CapevolveError):
    """A candidate directory or id does not exist or cannot be snapshotted."""


class RunDirError(CapevolveError):
    """A run directory is missing, malformed, or fails an integrity check."""


class TestSealError(RunDirError):
    """The held-out test split was already scored; it can be scored only once."""

    __test__ = False  # not a pytest test class


class GateError(CapevolveError):
    """A gate cannot be computed, or an accept has no passing gate behind it."""


class StoreError(CapevolveError):
    """Rollout storage is unreadable or inconsistent."""


class EngineError(CapevolveError):
    """The execution engine failed as a whole (not a single rollout)."""


class BudgetError(CapevolveError):
    """A budget cap (iterations, metric calls, money, stall) is reached."""


class Interrupted(KeyboardInterrupt):
    """An interrupt (Ctrl-C) stopped an evaluation; the message says what is on disk."""


class RecordError(CapevolveError, ValueError):
    """A value that would be recorded is refused: an event kind the library records
    itself, a negative or non-finite spend, a field a record does not have."""


class JudgeError(CapevolveError):
    """An LLM judge answered outside its strict schema (score in range + justification):
    the datapoint's score is missing (an error row), never a 0 and never a guess."""


class JudgeUnavailable(JudgeError):
    """The judge's endpoint could not be reached after every retry: the evaluation is
    incomplete (resuming it retries the units)."""


class ModelError(CapevolveError):
    """A model endpoint refused a call (bad request, auth, context length) or failed past
    its retries; ``failure`` says which kind (a ModelFailure value)."""

    def __init__(self, message: str, failure: str) -> None:
        super().__init__(message)
        self.failure = failure


class ModelUnavailable(ModelError):
    """Retryable failures (429, 5xx, timeouts, connections) persisted past every retry or
    past the call's deadline: infrastructure, never a score."""


class RolloutLimitReached(ModelError):
    """A per-rollout bound (``models.rollout``) was reached; ``bound`` names it."""

    def __init__(self, message: str, bound: str) -> None:
        super().__init__(message, "limit")
        self.bound = bound
