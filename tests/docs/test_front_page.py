"""README.md is a front page, and the package and docs cite rules, not documents or issue
numbers a maintainer cannot open."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MAX_README_BYTES = 10_240
UNCITABLE = re.compile(r"(?<![a-z])(?:seed[ _-]?0\d\d|repro(?:duction)?[ _-]?\d+"
                       r"|issue[ _-]?#?\d+)", re.IGNORECASE)


def test_the_readme_fits_in_ten_kilobytes():
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, f"README.md is {size} bytes (at most {MAX_README_BYTES})"


def test_the_readme_keeps_the_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    for command in ("make demo", "make test"):
        assert any(line.split("#")[0].strip() == command for line in lines), command


def _cited(paths: list[Path], root: Path = REPO) -> list[str]:
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(root)}:{number}: {m.group(0)}"
                      for m in UNCITABLE.finditer(line)]
    return found


def test_no_page_or_module_cites_a_document_or_issue_number():
    files = [README, *sorted((REPO / "docs").rglob("*.md")),
             *(f for folder in ("capevolve", "adapters", "benchmarks", "tests")
               for f in sorted((REPO / folder).rglob("*.py")) if f != Path(__file__))]
    cited = _cited(files)
    assert not cited, "name the rule instead:\n" + "\n".join(cited)


def test_the_citation_check_finds_each_form(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("the seed 001 rule\nseed-003's probe\nRepro 4: x\n"
                    "test_reproduction_2_x\nsee issue 10\nIssue #9\nseeds 0 to 3, issued 4\n")
    found = [hit.rsplit(": ", 1)[1] for hit in _cited([page], root=tmp_path)]
    assert found == ["seed 001", "seed-003", "Repro 4", "reproduction_2", "issue 10", "Issue #9"]


def test_the_readme_links_only_to_files_that_exist():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\((?!https?://|#)([^)#\s]+)", text)
    assert len(targets) >= 10
    missing = [t for t in targets if not (REPO / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
