"""The curated public surface is sorted and locked."""

import capevolve

EXPECTED = [
    "Adapter", "AdapterError", "BudgetError", "CandidateError", "CapevolveError",
    "ConfigError", "EngineError", "GateError", "Rollout", "RunDir", "RunDirError", "Score",
    "StoreError", "Task", "TestSealError", "ToolCall", "TransientError",
]


def test_all_is_sorted_and_locked():
    """__all__ is sorted and equals the reviewed list (changing it is a deliberate act)."""
    assert capevolve.__all__ == sorted(capevolve.__all__)
    assert capevolve.__all__ == EXPECTED


def test_every_public_name_resolves():
    """Every name in __all__ is importable from the package root."""
    for name in capevolve.__all__:
        assert getattr(capevolve, name) is not None


def test_errors_share_one_root():
    """Every public error derives from CapevolveError; TestSealError is a RunDirError."""
    for name in capevolve.__all__:
        obj = getattr(capevolve, name)
        if isinstance(obj, type) and name.endswith("Error") and name != "TransientError":
            assert issubclass(obj, capevolve.CapevolveError)
    assert issubclass(capevolve.TestSealError, capevolve.RunDirError)
