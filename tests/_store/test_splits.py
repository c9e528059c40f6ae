"""Deterministic, frozen, checksummed splits."""

import json

import pytest

from capevolve._store.splits import make_splits, read_splits, write_splits
from capevolve.config import SplitsConfig
from capevolve.errors import ConfigError, RunDirError

IDS = [f"task-{i}" for i in range(100)]


def test_partition_is_complete_and_disjoint(tmp_path):
    """val + train + test == all tasks, no overlap, sizes follow the fractions."""
    splits = make_splits(IDS, SplitsConfig(), tmp_path)
    together = splits.train + splits.val + splits.test
    assert sorted(together) == sorted(IDS) and len(set(together)) == len(IDS)
    assert (len(splits.train), len(splits.val), len(splits.test)) == (50, 25, 25)


def test_assignment_ignores_task_order_and_depends_on_seed(tmp_path):
    """The same ids in another order land in the same splits; another seed moves them."""
    a = make_splits(IDS, SplitsConfig(), tmp_path)
    b = make_splits(list(reversed(IDS)), SplitsConfig(), tmp_path)
    c = make_splits(IDS, SplitsConfig(seed=7), tmp_path)
    assert set(a.val) == set(b.val) and set(a.test) == set(b.test)
    assert set(a.val) != set(c.val)


def test_checksum_detects_a_hand_edit(tmp_path):
    """Editing splits.json after freezing is detected on read."""
    path = tmp_path / "splits.json"
    write_splits(make_splits(IDS, SplitsConfig(), tmp_path), path)
    assert read_splits(path).val
    data = json.loads(path.read_text())
    data["val"][0], data["test"][0] = data["test"][0], data["val"][0]
    path.write_text(json.dumps(data))
    with pytest.raises(RunDirError, match="checksum mismatch"):
        read_splits(path)


def test_ids_file_must_cover_the_tasks(tmp_path):
    """An explicit ids_file is used as is, and must partition the tasks."""
    (tmp_path / "ids.json").write_text(json.dumps(
        {"train": IDS[:50], "val": IDS[50:75], "test": IDS[75:]}))
    splits = make_splits(IDS, SplitsConfig(ids_file="ids.json"), tmp_path)
    assert splits.val == tuple(IDS[50:75])
    (tmp_path / "ids.json").write_text(json.dumps({"val": IDS[:10], "test": IDS[10:20]}))
    with pytest.raises(ConfigError, match="do not cover"):
        make_splits(IDS, SplitsConfig(ids_file="ids.json"), tmp_path)


def test_too_few_tasks_is_a_config_error(tmp_path):
    """One task cannot make both a val and a test split."""
    with pytest.raises(ConfigError):
        make_splits(["only"], SplitsConfig(), tmp_path)
