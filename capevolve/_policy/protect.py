"""Protected paths: which files a candidate may not add, edit or remove (pure).

The defaults cover the files the scores depend on (``capevolve.config.SCORE_DATA_PATTERNS``:
scorers, gold and answer data), the frozen splits and the project config; a project adds
its own globs with ``protected_paths``. Paths are relative to the candidate directory.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

from capevolve.config import SCORE_DATA_PATTERNS

DEFAULT_PROTECTED = (*SCORE_DATA_PATTERNS, "splits.json", "*/splits.json", "capevolve.yaml")


def protected_patterns(extra: Iterable[str]) -> list[str]:
    """The defaults plus a project's ``protected_paths``."""
    return [*DEFAULT_PROTECTED, *extra]


def protected_changes(seed_digests: Mapping[str, str], candidate_digests: Mapping[str, str],
                      patterns: Iterable[str]) -> list[str]:
    """Protected files the candidate modified, added or removed relative to the seed,
    sorted (``{relative path: sha256}`` digests on both sides)."""
    patterns = list(patterns)
    return [rel for rel in sorted(set(seed_digests) | set(candidate_digests))
            if any(fnmatch.fnmatch(rel, pattern) for pattern in patterns)
            and seed_digests.get(rel) != candidate_digests.get(rel)]


def protected_collisions(rels: Iterable[str], patterns: Iterable[str]) -> list[tuple[str, str]]:
    """``(path, pattern)`` for each of a seed capability's files (relative paths) that a
    protected pattern covers, sorted: no edit to such a file can ever be evaluated."""
    patterns = list(patterns)
    return [(rel, next(p for p in patterns if fnmatch.fnmatch(rel, p))) for rel in sorted(rels)
            if any(fnmatch.fnmatch(rel, p) for p in patterns)]
