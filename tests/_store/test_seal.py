"""The seal's liveness is its own flock: held while the finalize runs, dropped when it
completes, fails or dies; the O_EXCL creation still lets exactly one taker through."""

from __future__ import annotations

import os
import signal
import time

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


def test_a_forked_child_does_not_keep_the_seal(run):
    """A child forked while this process holds the seal closes its copy: once released, a
    retry takes the seal although the child is still alive."""
    seal.burn(run.layout, best_id=SEED_ID, baseline_id=SEED_ID)
    child = os.fork()
    if child == 0:  # the forked child lives on without touching the seal
        time.sleep(5)
        os._exit(0)
    try:
        seal.release(run.layout)
        assert seal.burn(run.layout, best_id=SEED_ID, baseline_id=SEED_ID).retry_of
    finally:
        seal.release(run.layout)
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_a_finalize_that_failed_before_any_test_row_can_be_retried_in_process(run):
    """finalize whose engine fails releases its seal: a retry sets it aside and scores."""
    with pytest.raises(EngineError):
        finalize(run, engine=_BrokenEngine(), spend_test_ids=True)
    assert seal.read_seal(run.layout).status == SealStatus.STARTED
    assert not run.layout.final.exists()
    final = finalize(RunDir.open(run.root), spend_test_ids=True)
    assert final["best_id"] == SEED_ID
    assert len(list(run.root.glob("seal.aborted-*.json"))) == 1
    assert seal.read_seal(run.layout).status == SealStatus.COMPLETE


def test_a_complete_seal_is_final(run):
    """After a complete finalize, no burn gets through and the seal stays complete."""
    finalize(run, spend_test_ids=True)
    before = run.layout.seal.read_bytes()
    with pytest.raises(TestSealError, match="already scored"):
        seal.burn(run.layout, best_id=SEED_ID, baseline_id=SEED_ID)
    assert run.layout.seal.read_bytes() == before


def test_a_resumed_seal_must_name_the_same_measurement(run):
    """With test rows on disk, a retry resumes only the best and baseline the dead seal
    names: a burn for another best is refused and leaves the dead seal in place."""
    taken = seal.burn(run.layout, best_id="cand_x", baseline_id=SEED_ID)
    seal.release(run.layout)  # the finalize died
    part = run.layout.partition("test", "cand_x") / "test__cand_x__k2-dead-00000.parquet"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"PAR1")  # rows are on disk (only their presence is judged here)
    with pytest.raises(TestSealError, match="scores best 'cand_x' against 'seed'"):
        seal.burn(run.layout, best_id=SEED_ID, baseline_id=SEED_ID)
    assert seal.read_seal(run.layout) == taken
    resumed = seal.burn(run.layout, best_id="cand_x", baseline_id=SEED_ID)
    try:
        assert resumed.retry_of and (resumed.best_id, resumed.baseline_id) == ("cand_x", SEED_ID)
    finally:
        seal.release(run.layout)
