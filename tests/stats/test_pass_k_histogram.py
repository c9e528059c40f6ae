"""pass^k from a histogram of (successes, trials) equals pass^k task by task, bit for bit."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from capevolve.stats import pass_k_table
from capevolve.stats.estimators import pass_k_table_of_histogram


@pytest.mark.parametrize("seed", range(6))
def test_the_histogram_form_gives_the_same_floats(seed):
    """Thousands of tasks with 0 to 7 valid trials: the same keys and the very same
    floats as pass_k_table over the per-task mapping (tasks without a trial dropped)."""
    rng = random.Random(seed)
    counts = {}
    for i in range(rng.choice([1, 7, 3000])):
        n = rng.randint(0 if seed % 2 else 3, 7)
        counts[f"t{i}"] = (rng.randint(0, n), n)
    got = pass_k_table_of_histogram(Counter(counts.values()))
    want = pass_k_table(counts)
    assert list(got) == list(want) and all(got[k] == want[k] for k in want), (got, want)


def test_bad_counts_and_nothing_scored():
    assert pass_k_table_of_histogram({}) == {} == pass_k_table_of_histogram({(0, 0): 5})
    with pytest.raises(ValueError, match="successes"):
        pass_k_table_of_histogram({(3, 2): 1})
