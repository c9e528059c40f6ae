"""The one test-split refusal shared by evaluate and diagnose."""

import pytest

from capevolve._policy.splits import refuse_test
from capevolve.errors import ConfigError, TestSealError
from capevolve.kinds import Split


@pytest.mark.parametrize("verb", ["evaluate", "diagnose"])
def test_test_split_is_refused_by_name(verb):
    """``test`` (as text or enum) is a TestSealError naming the verb; train and val pass."""
    for split in ("test", Split.TEST):
        with pytest.raises(TestSealError, match=f"^{verb}: the test split is held out"):
            refuse_test(split, verb)
    assert refuse_test("val", verb) is Split.VAL
    assert refuse_test(Split.TRAIN, verb) is Split.TRAIN


def test_unknown_split_is_a_config_error():
    """A misspelt split is one ConfigError line, never a bare ValueError."""
    with pytest.raises(ConfigError, match="'tset'"):
        refuse_test("tset", "evaluate")
