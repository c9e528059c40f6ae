"""Deterministic train/val/test splits from task-id hashes, frozen with a checksum."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from capevolve.config import SplitsConfig
from capevolve.errors import ConfigError, RunDirError
from capevolve.kinds import Split


@dataclass(frozen=True)
class Splits:
    """The frozen id lists of a run."""

    train: tuple[str, ...]
    val: tuple[str, ...]
    test: tuple[str, ...]
    seed: int

    def ids(self, split: Split | str) -> tuple[str, ...]:
        """One split's task ids, in task order."""
        return getattr(self, Split(split).value)

    def payload(self) -> dict:
        """The checksummed part of splits.json."""
        return {"seed": self.seed, "test": list(self.test), "train": list(self.train),
                "val": list(self.val)}

    def checksum(self) -> str:
        """sha256 of the canonical :meth:`payload`."""
        canonical = json.dumps(self.payload(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def _unit_position(task_id: str, seed: int) -> float:
    digest = hashlib.sha256(f"{seed}:{task_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def make_splits(task_ids: list[str], config: SplitsConfig, project_root: Path) -> Splits:
    """Assign every task to exactly one split, deterministically; ConfigError otherwise."""
    if config.ids_file:
        splits = _splits_from_file(project_root / config.ids_file, config.seed)
    else:
        ranked = sorted(task_ids, key=lambda t: (_unit_position(t, config.seed), t))
        n = len(ranked)
        n_val = max(1, round(config.val * n))
        n_test = max(1, round(config.test * n))
        if n_val + n_test > n:
            raise ConfigError(f"splits: {n} tasks are too few for a val and a test split")
        chosen_val = set(ranked[:n_val])
        chosen_test = set(ranked[n_val : n_val + n_test])
        order = list(task_ids)
        splits = Splits(
            train=tuple(t for t in order if t not in chosen_val and t not in chosen_test),
            val=tuple(t for t in order if t in chosen_val),
            test=tuple(t for t in order if t in chosen_test),
            seed=config.seed,
        )
    _assert_partition(splits, task_ids)
    return splits


def _splits_from_file(path: Path, seed: int) -> Splits:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Splits(train=tuple(data.get("train", [])), val=tuple(data["val"]),
                      test=tuple(data["test"]), seed=seed)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"splits.ids_file: cannot read {path}: {exc}") from None


def _assert_partition(splits: Splits, task_ids: list[str]) -> None:
    parts = [*splits.train, *splits.val, *splits.test]
    if len(parts) != len(set(parts)):
        raise ConfigError("splits: a task id appears in more than one split")
    if set(parts) != set(task_ids):
        unknown = sorted(set(parts) - set(task_ids))[:5]
        missing = sorted(set(task_ids) - set(parts))[:5]
        raise ConfigError(f"splits: do not cover the tasks (unknown {unknown}, missing {missing})")
    if not splits.val or not splits.test:
        raise ConfigError("splits: val and test must both be non-empty")


def write_splits(splits: Splits, path: Path) -> None:
    """Write splits.json with its checksum."""
    data = {**splits.payload(), "checksum": splits.checksum()}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def read_splits(path: Path) -> Splits:
    """Read splits.json; a checksum mismatch is a RunDirError."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        splits = Splits(train=tuple(data["train"]), val=tuple(data["val"]),
                        test=tuple(data["test"]), seed=int(data["seed"]))
        recorded = data["checksum"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RunDirError(f"{path}: unreadable splits file ({exc})") from None
    if splits.checksum() != recorded:
        raise RunDirError(f"{path}: checksum mismatch: the splits were edited after freezing")
    return splits
