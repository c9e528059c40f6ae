"""The capevolve exception tree."""

from __future__ import annotations


class CapevolveError(Exception):
    """Root of every error capevolve raises deliberately."""


class ConfigError(CapevolveError):
    """capevolve.yaml or another config input is missing or invalid."""


class AdapterError(CapevolveError):
    """The adapter cannot be loaded or breaks the contract."""


class CandidateError(CapevolveError):
    """A candidate directory or id is missing or cannot be snapshotted."""


class RunDirError(CapevolveError):
    """A run directory is missing, malformed or fails an integrity check."""


class TestSealError(RunDirError):
    """The held-out test split was already scored."""

    __test__ = False  # not a pytest test class


class GateError(CapevolveError):
    """A gate cannot be computed, or an accept has no passing gate."""


class StoreError(CapevolveError):
    """Rollout storage is unreadable or inconsistent."""


class EngineError(CapevolveError):
    """The execution engine failed as a whole."""


class BudgetError(CapevolveError):
    """A budget cap is reached."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped an evaluation; the message says what is on disk."""


class RecordError(CapevolveError, ValueError):
    """A value that would be recorded is refused."""


class JudgeError(CapevolveError):
    """An LLM judge answered outside its schema: the score is missing, never a 0."""


class JudgeUnavailable(JudgeError):
    """The judge's endpoint failed past every retry: the evaluation is incomplete."""


class ModelError(CapevolveError):
    """A model endpoint refused a call or failed past its retries (``failure``: which kind)."""

    def __init__(self, message: str, failure: str) -> None:
        super().__init__(message)
        self.failure = failure


class ModelUnavailable(ModelError):
    """Retryable failures outlasted the retries or the deadline: never a score."""


class RolloutLimitReached(ModelError):
    """A per-rollout bound was reached; ``bound`` names it."""

    def __init__(self, message: str, bound: str) -> None:
        super().__init__(message, "limit")
        self.bound = bound
