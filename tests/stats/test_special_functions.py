"""The t / normal quantiles and tails come from scipy.special with scipy.stats' own numbers.

``t_quantile`` and ``t_tail`` skip importing scipy.stats (0.4 s of every gate); they must
return exactly the floats ``scipy.stats.t`` / ``scipy.stats.norm`` return, to the last bit,
since the gate records them (k_se, alpha, p-values).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from capevolve.stats.power import t_quantile, t_tail

DFS = (None, 1.0, 2.0, 3.0, 9.0, 19.0, 99.0, 19_999.0, 1.5, 7.31, 1e6)


def test_quantiles_equal_scipy_stats_bit_for_bit() -> None:
    """Every q of a dense grid and every df gives scipy.stats' ppf exactly."""
    rng = np.random.default_rng(3)
    qs = [0.5, 0.8, 0.95, 0.975, 0.99, 1 - 0.05 / 100, 1e-9, 1 - 1e-12,
          *rng.random(200).tolist()]
    t_quantile.cache_clear()
    for df in DFS:
        for q in qs:
            want = float(norm.ppf(q)) if df is None else float(student_t.ppf(q, df))
            assert t_quantile(q, df) == want and str(t_quantile(q, df)) == str(want), (q, df)


def test_tails_equal_scipy_stats_bit_for_bit() -> None:
    """Every x (0, tiny, huge, random) and every df gives scipy.stats' sf exactly."""
    rng = np.random.default_rng(4)
    xs = [0.0, 1e-300, 0.5, 1.0, 1.645, 1.96, 2.0, 8.0, 40.0, 1e6,
          *(rng.random(200) * 6).tolist()]
    for df in DFS:
        for x in xs:
            want = float(norm.sf(x)) if df is None else float(student_t.sf(x, df))
            assert t_tail(x, df) == want, (x, df)


@pytest.mark.slow
def test_a_gate_s_numbers_do_not_load_scipy_stats() -> None:
    """The comparison, its p-value and the critical value a gate needs leave scipy.stats
    unimported (its import costs several times scipy.special's)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from capevolve.stats import paired_comparison, t_quantile\n"
        "c = paired_comparison({'a': 1.0, 'b': 0.5, 'c': 0.9}, {'a': 0.5, 'b': 0.5, 'c': 0.1})\n"
        "assert c.p_value is not None and t_quantile(0.95, 2) > 2.9\n"
        "print('scipy.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
