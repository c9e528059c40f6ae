"""The site's generated references cover the whole CLI and every capevolve.yaml key, each
key documented; the performance page takes its figures from `make bench`'s file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from docs.pagecheck import command_tree
from pydantic import BaseModel, Field

REPO = Path(__file__).resolve().parents[2]


def _load_hook():
    spec = importlib.util.spec_from_file_location("docs_reference_hook",
                                                  REPO / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


hook = _load_hook()


def _command_paths(node, path=("capevolve",)):
    yield " ".join(path)
    for name, sub in getattr(node, "commands", {}).items():
        yield from _command_paths(sub, (*path, name))


def test_the_cli_reference_has_every_command_and_option():
    page = hook.cli_markdown()
    tree = command_tree()
    assert page.startswith("# CLI reference\n")
    for path in list(_command_paths(tree))[1:]:
        assert f"`{path}`" in page, path
    for name in ("--candidate", "--run-dir", "--k-se", "--proposer", "--json"):
        assert f"`{name}" in page or f", {name}" in page, name


def test_the_config_reference_has_every_key_of_every_section():
    from capevolve.config import EngineConfig, EvaluatorConfig, GateConfig, ProjectConfig

    sections = {s.path: s for s in hook.config_sections()}
    assert {"", "splits", "gate", "goal", "budget", "engine", "dataset", "evaluators[]"} \
        <= set(sections)
    for path, model in (("", ProjectConfig), ("gate", GateConfig), ("engine", EngineConfig),
                        ("evaluators[]", EvaluatorConfig)):
        assert [k.name for k in sections[path].keys] == list(model.model_fields)
    page = hook.config_markdown()
    assert "| `min_delta` | number (>= `0`) | `0.02` |" in page
    assert "| `mode` | `paired` or `welch` | `paired` |" in page


def test_every_config_key_carries_a_docstring():
    """The reference is made from field docstrings: a key without one is undocumented."""
    missing = [f"{s.path or '<top>'}.{k.name}" for s in hook.config_sections()
               for k in s.keys if not k.doc]
    assert not missing, f"config keys without a field docstring: {missing}"


def test_a_nested_section_and_a_missing_docstring_are_seen(monkeypatch):
    class Inner(BaseModel):
        """An inner section."""

        depth: int = Field(2, ge=1)
        """How deep."""
        undocumented: str = "x"

    class Outer(BaseModel):
        inner: Inner = Inner()
        """The inner section."""
        many: list[Inner] = []
        """Several."""

    import capevolve.config

    monkeypatch.setattr(capevolve.config, "ProjectConfig", Outer)
    sections = {s.path: s for s in hook.config_sections()}
    assert set(sections) == {"", "inner"}  # one model is shown once, at its first path
    keys = {k.name: k for k in sections["inner"].keys}
    assert keys["depth"].type == "integer (>= `1`)" and keys["depth"].doc == "How deep."
    assert keys["undocumented"].doc == ""


def test_the_rollout_schema_table_lists_every_column():
    from capevolve._store.rollouts.schema import ROLLOUT_SCHEMA

    table = hook.rollout_schema_markdown()
    for field in ROLLOUT_SCHEMA:
        assert f"| `{field.name}` | `{field.type}` |" in table
    assert "null when errored" in table
    storage = (REPO / "docs" / "storage.md").read_text(encoding="utf-8")
    assert storage.count(hook.SCHEMA_MARK) == 1


def test_the_performance_page_includes_the_bench_figures():
    page = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    assert '--8<-- "benchmarks/perf/figures.md"' in page
    figures = (REPO / "benchmarks" / "perf" / "figures.md").read_text(encoding="utf-8")
    assert figures.count("<!-- bench:start -->") == 1 and "| script | figure |" in figures
