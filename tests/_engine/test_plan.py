"""Work units and their seeds."""

import hashlib

from capevolve._engine.plan import derive_seed, plan_units


def test_seed_is_sha256_of_run_seed_task_and_trial():
    """The unit seed is the documented sha256 derivation, stable across processes."""
    expected = int.from_bytes(hashlib.sha256(b"0:t1:2").digest()[:8], "big") >> 1
    assert derive_seed(0, "t1", 2) == expected
    assert derive_seed(0, "t1", 2) != derive_seed(1, "t1", 2) != derive_seed(0, "t1", 3)
    assert 0 <= derive_seed(5, "x", 0) < 2**63


def test_plan_skips_done_units_in_task_major_order():
    """Planning lists every missing (task, trial) once, task-major."""
    units = plan_units(["a", "b"], 2, 0, done={("a", 1)})
    assert [u.key for u in units] == [("a", 0), ("b", 0), ("b", 1)]
