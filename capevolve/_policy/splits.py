"""Only ``finalize`` scores the held-out test split."""

from __future__ import annotations

from capevolve.errors import ConfigError, TestSealError
from capevolve.kinds import Split

_WHY = {
    "evaluate": "only `capevolve finalize` scores it, once",
    "diagnose": "only train and val can be diagnosed",
}


def refuse_test(split: Split | str, verb: str) -> Split:
    """``split`` as a Split; TestSealError for test, ConfigError if unknown."""
    try:
        value = Split(split)
    except ValueError:
        raise ConfigError(f"{verb}: split {split!r}: expected train or val") from None
    if value == Split.TEST:
        raise TestSealError(f"{verb}: the test split is held out; "
                            f"{_WHY.get(verb, 'only `capevolve finalize` scores it, once')}")
    return value
