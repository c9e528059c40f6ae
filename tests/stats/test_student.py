"""Student t and normal tails and quantiles from scipy.special: the numbers scipy.stats
gives, bit for bit, without loading scipy.stats."""

from __future__ import annotations

import subprocess
import sys

import pytest

from capevolve.stats.student import t_ppf, t_sf


@pytest.mark.parametrize("df", [None, 1, 2, 3.5, 9, 29, 120.25, 1e6])
def test_the_same_numbers_as_scipy_stats(df):
    from scipy.stats import norm
    from scipy.stats import t as student_t

    for x in (-3.0, -0.5, 0.0, 0.7, 1.68, 1.83, 2.5, 8.0):
        want = norm.sf(x) if df is None else student_t.sf(x, df)
        assert t_sf(x, df) == float(want)
    for q in (0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.9999):
        want = norm.ppf(q) if df is None else student_t.ppf(q, df)
        assert t_ppf(q, df) == float(want)


def test_a_gate_s_numbers_do_not_load_scipy_stats():
    """The comparison, its p-value and the critical value a gate needs leave scipy.stats
    unimported (its import is several times scipy.special's)."""
    code = (
        "import sys\n"
        "from capevolve.stats import paired_comparison, t_quantile\n"
        "c = paired_comparison({'a': 1.0, 'b': 0.5, 'c': 0.9}, {'a': 0.5, 'b': 0.5, 'c': 0.1})\n"
        "assert c.p_value is not None and t_quantile(0.95, 2) > 2.9\n"
        "print('scipy.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
