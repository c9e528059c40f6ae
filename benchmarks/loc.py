"""Counts a Python package's lines and its docstring prose.

`python benchmarks/loc.py [capevolve]` prints one JSON object: files, total lines, lines that
are neither blank nor comment-only, code lines (those, less docstrings), docstring lines and
words, and docstring words per code line. A docstring is any string statement: a module's,
class's or function's, and an attribute's (the string under a field), counted apart too.
"""

from __future__ import annotations

import ast
import io
import json
import sys
import tokenize
from pathlib import Path

OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _docstrings(tree: ast.AST) -> list[tuple[int, int, str, bool]]:
    """(first line, last line, text, is an attribute docstring) of every string statement."""
    firsts = {id(node.body[0]) for node in ast.walk(tree) if isinstance(node, OWNERS) and node.body}
    return [
        (node.lineno, node.end_lineno or node.lineno, node.value.value, id(node) not in firsts)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]


def count_file(path: Path) -> dict[str, int]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    docs = _docstrings(ast.parse(text))
    doc_lines = {n for start, end, _, _ in docs for n in range(start, end + 1)}
    comment_only = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and not lines[tok.start[0] - 1][: tok.start[1]].strip():
            comment_only.add(tok.start[0])
    kept = [n for n, line in enumerate(lines, 1) if line.strip() and n not in comment_only]
    return {
        "files": 1,
        "total_lines": len(lines),
        "nonblank_noncomment_lines": len(kept),
        "code_lines": sum(1 for n in kept if n not in doc_lines),
        "docstring_lines": len(doc_lines),
        "docstring_words": sum(len(doc.split()) for _, _, doc, _ in docs),
        "attribute_docstring_words": sum(len(doc.split()) for _, _, doc, attr in docs if attr),
    }


def main(root: str = "capevolve") -> dict[str, float]:
    totals: dict[str, float] = {}
    for path in sorted(Path(root).rglob("*.py")):
        for key, value in count_file(path).items():
            totals[key] = totals.get(key, 0) + value
    words, code = totals["docstring_words"], totals["code_lines"]
    totals["docstring_words_per_code_line"] = round(words / code, 3)
    totals["without_attribute_docstrings"] = round(
        (words - totals["attribute_docstring_words"]) / code, 3
    )
    return totals


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:]), indent=1))
