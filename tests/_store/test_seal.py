"""The seal's liveness is its own flock: held while the finalize runs, dropped when it
completes, fails or dies; the O_EXCL creation still lets exactly one taker through."""

from __future__ import annotations

import pytest

from capevolve._loop.finalize import finalize
from capevolve._store import seal
from capevolve._store.rundir import RunDir
from capevolve.errors import EngineError, TestSealError
from capevolve.kinds import SEED_ID, SealStatus


class _BrokenEngine:
    """An engine that fails as a whole before running anything."""

    def run(self, job, units, sink, limit=None, ledger=None):
        raise EngineError("the cluster went away")

    def close(self) -> None:
        pass


def test_a_held_seal_refuses_a_second_taker_in_the_same_process(run):
    """While this process holds the seal, another burn is refused as 'already running'."""
    taken = seal.burn(run.layout, best_id=SEED_ID, baseline_id=SEED_ID)
    try:
        assert taken.status == SealStatus.STARTED
        with pytest.raises(TestSealError, match="already running"):
            seal.burn(run.layout, best_id=SEED_ID, baseline_id=SEED_ID)
    finally:
        seal.release(run.layout)
    assert not list(run.root.glob("seal.aborted-*"))


def test_a_finalize_that_failed_before_any_test_row_can_be_retried_in_process(run):
    """finalize whose engine fails releases its seal: a retry sets it aside and scores."""
    with pytest.raises(EngineError):
        finalize(run, engine=_BrokenEngine())
    assert seal.read_seal(run.layout).status == SealStatus.STARTED
    assert not run.layout.final.exists()
    final = finalize(RunDir.open(run.root))
    assert final["best_id"] == SEED_ID
    assert len(list(run.root.glob("seal.aborted-*.json"))) == 1
    assert seal.read_seal(run.layout).status == SealStatus.COMPLETE


def test_a_complete_seal_is_final(run):
    """After a complete finalize, no burn gets through and the seal stays complete."""
    finalize(run)
    before = run.layout.seal.read_bytes()
    with pytest.raises(TestSealError, match="already scored"):
        seal.burn(run.layout, best_id=SEED_ID, baseline_id=SEED_ID)
    assert run.layout.seal.read_bytes() == before
