"""Protected paths: the defaults, a project's globs, and what counts as a change."""

from capevolve._policy.protect import DEFAULT_PROTECTED, protected_changes, protected_patterns
from capevolve.config import SCORE_DATA_PATTERNS


def test_protected_changes_sees_modify_add_remove():
    """Modifying, adding or removing a protected file is reported; other edits are not."""
    seed = {"gold/a.json": "1", "p.md": "x", "gold/b.json": "2"}
    cand = {"gold/a.json": "9", "p.md": "changed", "gold/new.json": "3"}
    assert protected_changes(seed, cand, ["gold/*"]) == ["gold/a.json", "gold/b.json",
                                                          "gold/new.json"]
    assert protected_changes(seed, seed, ["gold/*"]) == []


def test_defaults_cover_score_data_splits_and_config_and_add_project_globs():
    """A scorer renamed into a sub-folder, a gold file, splits.json and capevolve.yaml are
    protected by default; a project's own glob is added, never replacing the defaults."""
    patterns = protected_patterns(["prompts/locked_*.md"])
    assert set(SCORE_DATA_PATTERNS) <= set(DEFAULT_PROTECTED) <= set(patterns)
    seed = {"tools/tools.py": "a"}
    cand = {"tools/tools.py": "b", "tools/my_scorer.py": "x", "data/gold.json": "y",
            "splits.json": "z", "capevolve.yaml": "w", "prompts/locked_1.md": "v"}
    assert protected_changes(seed, cand, patterns) == [
        "capevolve.yaml", "data/gold.json", "prompts/locked_1.md", "splits.json",
        "tools/my_scorer.py"]
