"""The one tolerance: ties are decided by the rule's wording, never by float rounding."""

import numpy as np
import pytest

from capevolve._policy.gate.labels import confidence
from capevolve._policy.gate.thresholds import (
    TOLERANCE,
    all_equal,
    at_least,
    below,
    exceeds,
    pass_count_columns,
    passes,
    require_finite,
)
from capevolve.errors import GateError
from capevolve.kinds import Confidence


def test_ties_do_not_exceed_but_are_at_least():
    """a == b up to float noise: not "a > b", but "a >= b"; beyond the tolerance both move."""
    assert 0.12 - 0.10 < 0.02 and 0.1 + 0.2 > 0.3
    assert at_least(0.12 - 0.10, 0.02) and not below(0.12 - 0.10, 0.02)
    assert not exceeds(0.1 + 0.2, 0.3)
    assert exceeds(0.3 + 10 * TOLERANCE, 0.3) and below(0.3 - 10 * TOLERANCE, 0.3)


def test_pass_threshold_counts_with_the_tolerance():
    """A reward a hair below the threshold passes; pass counts feed pass^k."""
    assert passes(1.0 - 1e-12, 1.0) and not passes(0.99, 1.0) and passes(0.8, 0.75)
    n_passed, n_valid = pass_count_columns(np.array([1, 1, 0, 0]),
                                           np.array([0.7, 0.8, 1.0 - 1e-12, 0.7]), 1.0, 2)
    assert n_passed.tolist() == [1, 0] and n_valid.tolist() == [2, 2]
    n_passed, _ = pass_count_columns(np.array([0, 0]), np.array([0.7, 0.8]), 0.75, 1)
    assert n_passed.tolist() == [1]


def test_all_equal_and_require_finite():
    """all_equal ignores float noise; non-finite numbers are a GateError naming them."""
    assert all_equal([0.7 - 0.5, 0.9 - 0.7]) and not all_equal([0.2, 0.2001]) and all_equal([])
    for bad in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(GateError, match="--current"):
            require_finite(bad, "--current")
    assert require_finite(1, "x") == 1.0


def test_labels_at_the_boundaries():
    """min_delta ties reach it; |t| at the quantile is significant; unknown SE is noise."""
    from scipy import stats

    assert confidence(0.12 - 0.10, 0.0, None, 0.02, exact=True) is Confidence.SIGNIFICANT
    assert confidence(0.0199, 0.0, None, 0.02, exact=True) is Confidence.NEGLIGIBLE
    assert confidence(0.0, 0.0, None, 0.0, exact=True) is Confidence.NEGLIGIBLE
    q = stats.t.ppf(0.975, 9)
    assert confidence(q * 0.1, 0.1, 9, 0.0, exact=False) is Confidence.SIGNIFICANT
    assert confidence(0.99 * q * 0.1, 0.1, 9, 0.0, exact=False) is Confidence.WITHIN_NOISE
    assert confidence(-2.0 * 0.1, 0.1, None, 0.0, exact=False) is Confidence.SIGNIFICANT
    assert confidence(2.0 * 0.1, 0.1, 9, 0.0, exact=False) is Confidence.WITHIN_NOISE
    assert confidence(0.5, None, 9, 0.1, exact=False) is Confidence.WITHIN_NOISE
    assert confidence(0.5, 0.0, 9, 0.1, exact=False) is Confidence.WITHIN_NOISE
