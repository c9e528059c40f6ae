"""The bad-input table, row by row, through the real `capevolve` console script.

Every row of ``tests/cli/bad_inputs.py`` (a bad capevolve.yaml value, a bad argument, a
path that must not be used, a hand-edited or truncated record) runs in a subprocess
whose stdout is a pipe: it must end with exactly one ``error: ...`` line naming the file,
field or value, exit code 2, no traceback, and every stored file as it was (no
half-created run dir). A handful of rows, one per kind of input, run in the quick tier;
the whole table is the slow tier (and the bad-input table of benchmarks/perf/reliability.py).
"""

from __future__ import annotations

import pytest
from cli.bad_inputs import Case, Env, all_cases, build_base, run_case

QUICK = {
    "config num_trials=true", "config max_usd=.inf", "config nested 5,000 deep (lists)",
    "config capability_path /etc", "unknown option", "missing option --json",
    "evaluate --candidate ../x", "evaluate --candidate a snapshot path",
    "evaluate --candidate symlink to /etc", "evaluate --candidate dangling symlink",
    "reject --note not UTF-8", "init into /proc", "record: event without kind (status)",
    "record: event spend metric_calls 'abc' (status)", "record: eval truncated (status)",
}
CASES = all_cases()


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Env:
    """One project and run dir with a seed baseline, copied for every row."""
    return build_base(tmp_path_factory.mktemp("bad-input-base"))


def test_the_table_has_the_rows_it_promises():
    """At least 147 distinct bad inputs, and every quick row exists."""
    names = {c.name for c in CASES}
    assert len(names) == len(CASES) >= 147
    assert QUICK <= names


@pytest.mark.slow
@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.name, marks=() if c.name in QUICK else (pytest.mark.slow,))
    for c in CASES])
def test_a_bad_input_is_one_line_exit_2_and_loses_nothing(case: Case, base: Env, tmp_path):
    """One ``error:`` line naming what is wrong, exit 2, no traceback, nothing changed."""
    outcome = run_case(case, base, tmp_path / "case")
    detail = f"{case.name}: exit {outcome.exit_code}\n{outcome.stderr}"
    assert not outcome.traceback, detail
    assert outcome.one_line, detail
    assert outcome.named, f"{case.needle!r} not named\n{detail}"
    assert outcome.intact, f"a stored file changed\n{detail}"
