"""Enumerations for every decision, status and kind capevolve records."""

from __future__ import annotations

from enum import StrEnum

SEED_ID = "seed"
"""The candidate id of the seed capability."""


class Split(StrEnum):
    """The three frozen splits of a run."""

    TRAIN = "train"
    VAL = "val"
    TEST = "test"


class ErrorKind(StrEnum):
    """Why a rollout has no reward: missing data, never a 0."""

    ADAPTER = "adapter"  # the adapter returned a Rollout with ``error`` set
    EXCEPTION = "exception"  # run_target raised
    SCORE = "score"  # score() raised or returned an invalid Score
    TIMEOUT = "timeout"  # run_target exceeded engine.timeout_s
    CRASH = "crash"  # the worker process died while running the unit
    INVALID_VALUE = "invalid_value"  # a value the row may not hold (the error names the field)


class ModelFailure(StrEnum):
    """Why a model call failed."""

    QUOTA = "quota"  # 429 past every retry (rate limit or exhausted quota)
    AUTH = "auth"  # 401 / 403: the key is refused
    UNREACHABLE = "unreachable"  # no connection, or no answer within the call's deadline
    SERVER = "server"  # 5xx past every retry
    CONTEXT_LENGTH = "context_length"  # the prompt does not fit the model's context
    BAD_REQUEST = "bad_request"  # any other refusal of the request
    LIMIT = "limit"  # a per-rollout bound (tokens, turns, cost) was reached


class Decision(StrEnum):
    """The outcome of a gate."""

    ACCEPT = "accept"
    REJECT = "reject"
    INDECISIVE = "indecisive"


class Confidence(StrEnum):
    """How a measured difference should be read."""

    SIGNIFICANT = "significant"  # |t| >= the two-sided 95% t-quantile for the df, or exact
    WITHIN_NOISE = "within_noise"  # |delta| >= min_delta but not shown beyond the noise
    NEGLIGIBLE = "negligible"  # |delta| < min_delta (or no move at all)


class GatePolicy(StrEnum):
    """Which rule moves the best."""

    STRICT = "strict"  # accept only a gain shown beyond noise (the strict rule)
    KEEP_BEST = "keep-best"  # keep a move in the goal's direction that passes the audit,
    # with a confidence label (the keep-best rule)


class GoalDirection(StrEnum):
    """Which way the goal's metric should move."""

    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


class EvalStatus(StrEnum):
    """Lifecycle of one evaluation (evals/<eval_id>.json)."""

    RUNNING = "running"
    COMPLETE = "complete"  # every planned unit has a stored row
    INCOMPLETE = "incomplete"  # stopped early (crash, budget); resumable
    INTERRUPTED = "interrupted"  # shown, never stored: running, but its process is gone


class EvalPurpose(StrEnum):
    """What an evaluation is for; only a complete ``gate`` one may decide."""

    GATE = "gate"  # the full split from trial 0: what a gate reads (records without one)
    PROBE = "probe"  # a subset, to see whether a hypothesis can move its targets
    SCREEN = "screen"  # a subset (a minibatch) an optimizer may kill a child on
    CONFIRM = "confirm"  # new trials only (first_trial = n), pooled by confirm


class Standing(StrEnum):
    """How far to trust an accepted move."""

    SIGNIFICANT = "significant"  # accepted with a significant label at its gate
    TENTATIVE = "tentative"  # kept without one, and no confirmation made it significant
    CONFIRMED = "confirmed"  # kept tentatively, then a confirmation labelled it significant


class GateMode(StrEnum):
    """Which test a gate uses."""

    PAIRED = "paired"  # paired differences over tasks scored on both sides
    WELCH = "welch"  # unpaired (Welch) comparison of the two task-mean samples


class AlphaSpending(StrEnum):
    """How the gate's false-accept probability alpha is spent."""

    PER_GATE = "per_gate"  # every gate may falsely accept with probability <= alpha
    RUN = "run"  # alpha / budget.max_iterations per gate: the whole loop <= alpha
    CONFIRM = "confirm"  # screen then confirm on fresh trials, each at
    # sqrt(alpha / budget.max_iterations): the whole loop <= alpha


class EngineKind(StrEnum):
    """Which execution engine runs the rollouts."""

    RAY = "ray"
    LOCAL = "local"


class SpendRole(StrEnum):
    """Who spent."""

    RUNNER = "runner"  # the rollouts (Rollout.tokens / cost_usd)
    SCORER = "scorer"  # scoring and LLM judges
    OPTIMIZER = "optimizer"  # the proposer of edits


class EventKind(StrEnum):
    """Kinds of records in events.jsonl."""

    RUN_CREATED = "run_created"
    SNAPSHOT = "snapshot"
    EVAL_STARTED = "eval_started"
    EVAL_FINISHED = "eval_finished"
    GATE = "gate"
    ACCEPT = "accept"
    REJECT = "reject"
    SET_BEST = "set_best"
    SPEND = "spend"
    FINALIZE_STARTED = "finalize_started"
    FINALIZED = "finalized"
    NOTE = "note"
    DIAGNOSIS_ANNOTATED = "diagnosis_annotated"
    TAMPER = "tamper"  # a candidate touched protected paths; refused before any rollout
    NO_CHANGE = "no_change"  # an iteration whose change could not be scored; best carried
    PART_WRITTEN = "part_written"  # a Parquet part was renamed into place (sha256, rows)
    QUARANTINED = "quarantined"  # `capevolve quarantine` moved bad files aside
    PARTS_COMPACTED = "parts_compacted"  # an evaluation's parts became one (new parts, retired)


class SealStatus(StrEnum):
    """Lifecycle of the test seal (seal.json)."""

    STARTED = "started"  # taken: test scoring may be under way
    COMPLETE = "complete"  # the test scores are final


class TestVerdict(StrEnum):
    """What the held-out test says about the val gain."""

    __test__ = False  # not a pytest test class

    CONFIRMED = "confirmed"  # the test delta's 95% CI lies above 0
    NOT_CONFIRMED = "not_confirmed"  # the CI contains 0: the test cannot tell
    CONTRADICTED = "contradicted"  # the CI lies below 0: the best is worse on test
    NO_EDIT = "no_edit"  # the best is the seed: there is no gain to confirm
    NOT_MEASURED = "not_measured"  # the test evaluation is incomplete: no delta, no CI


class EvaluatorKind(StrEnum):
    """The metric of a dataset project's evaluator."""

    EXACT = "exact"  # output == expected
    NORMALIZED_EXACT = "normalized_exact"  # equal after case, punctuation, whitespace folding
    TOKEN_F1 = "token_f1"  # F1 of normalised token bags
    SET_OVERLAP = "set_overlap"  # Jaccard overlap of two item sets
    REGEX = "regex"  # the output matches a pattern (the evaluator's, or the expected value)
    NUMERIC = "numeric"  # |output - expected| within a tolerance
    JSON_FIELD = "json_field"  # one field of a JSON output equals the expected one
    PYTHON = "python"  # a project function module:function
    JUDGE = "judge"  # an LLM judge against a rubric (not deterministic)

    @property
    def deterministic(self) -> bool:
        """Whether the metric is a pure function of (output, expected)."""
        return self is not EvaluatorKind.JUDGE
