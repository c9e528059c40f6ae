"""The site's generated reference pages, made from the code at every build.

``reference/cli.md`` is Typer's own Markdown of the ``capevolve`` app (``python -m typer
capevolve.cli.app utils docs``); ``reference/config.md`` is a table per capevolve.yaml
section, walked from :class:`capevolve.config.ProjectConfig` through every nested model,
with each key's type, default, bounds and field docstring. Neither file is committed, so
neither can drift from the code. mkdocs runs :func:`on_files` (``hooks:`` in mkdocs.yml);
the tests import :func:`config_sections` and :func:`cli_markdown` directly.
"""

from __future__ import annotations

import ast
import enum
import inspect
import json
import subprocess
import sys
import textwrap
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

CLI_PAGE, CONFIG_PAGE = "reference/cli.md", "reference/config.md"
SCHEMA_MARK = "<!-- generated: rollout-schema -->"
"""Where storage.md shows the rollout rows' columns (filled by :func:`on_page_markdown`)."""


@dataclass(frozen=True)
class Key:
    """One capevolve.yaml key of a section, as the reference shows it."""

    name: str
    type: str
    default: str
    doc: str


@dataclass(frozen=True)
class Section:
    """One model: its path in capevolve.yaml (``""`` for the top level)."""

    path: str
    model: type[BaseModel]
    keys: tuple[Key, ...]


def attribute_docs(model: type[BaseModel]) -> dict[str, str]:
    """The docstring under each field of ``model`` and its bases (the nearest wins)."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, nxt in zip(body, body[1:], strict=False):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)):
                docs[stmt.target.id] = " ".join(inspect.cleandoc(nxt.value.value).split())
    return docs


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def type_name(annotation: Any) -> str:
    """A reader's name for a field type: enum and Literal values spelled out."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in args)
    if origin is typing.Literal:
        return " or ".join(f"`{a}`" for a in args)
    if origin in (list, tuple):
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"mapping to {type_name(args[1])}" if args else "mapping"
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " or ".join(f"`{m.value}`" for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    names = {int: "integer", float: "number", bool: "true or false", str: "string"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _bounds(info: FieldInfo) -> str:
    marks = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<", "min_length": "length >=",
             "pattern": "matches"}
    found = []
    for meta in info.metadata:
        for attr, sign in marks.items():
            value = getattr(meta, attr, None)
            if value is not None:
                found.append(f"{sign} `{value}`")
    return f" ({', '.join(found)})" if found else ""


def default_text(info: FieldInfo) -> str:
    """The default as it would be written in YAML; ``required`` when there is none."""
    if info.is_required():
        return "required"
    value = info.default_factory() if info.default_factory else info.default  # type: ignore[call-arg]
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, str) and value.replace("_", "").replace("-", "").isalnum():
        return f"`{value}`"
    return f"`{json.dumps(value)}`"


def config_sections() -> list[Section]:
    """Every capevolve.yaml section, the top level first, then nested ones in key order."""
    from capevolve.config import ProjectConfig

    sections: list[Section] = []
    queue: list[tuple[str, type[BaseModel]]] = [("", ProjectConfig)]
    seen: set[type[BaseModel]] = set()
    while queue:
        path, model = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        docs = attribute_docs(model)
        keys = []
        for name, info in model.model_fields.items():
            keys.append(Key(name, type_name(info.annotation) + _bounds(info),
                            default_text(info), docs.get(name, "")))
            for nested in _models_in(info.annotation):
                many = typing.get_origin(info.annotation) is list
                queue.append((f"{path}{name}{'[]' if many else ''}.", nested))
        sections.append(Section(path.rstrip("."), model, tuple(keys)))
    return sections


def config_markdown() -> str:
    """reference/config.md."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|") or "—"

    out = ["# capevolve.yaml reference", "",
           "Generated when the site is built, from the pydantic models of "
           "`capevolve/config.py` (each key's field docstring). Unknown keys are errors "
           "that name their path; numbers are strict (`true`, `'3'`, `.nan`, `.inf` are "
           "refused).", ""]
    for section in config_sections():
        title = f"`{section.path}`" if section.path else "Top level"
        out += [f"## {title}", "", " ".join((section.model.__doc__ or "").split()), "",
                "| key | type | default | meaning |", "|---|---|---|---|"]
        out += [f"| `{k.name}` | {cell(k.type)} | {cell(k.default)} | {cell(k.doc)} |"
                for k in section.keys]
        out.append("")
    return "\n".join(out)


def cli_markdown() -> str:
    """reference/cli.md: Typer's Markdown of the app, under the page's own title."""
    done = subprocess.run(
        [sys.executable, "-m", "typer", "capevolve.cli.app", "utils", "docs",
         "--name", "capevolve"], capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    if not lines or not lines[0].startswith("# "):
        raise RuntimeError(f"typer utils docs printed no page: {done.stderr[-500:]}")
    intro = ["# CLI reference", "",
             "Generated when the site is built, from the Typer app (`capevolve.cli.app`): "
             "the same text as `capevolve COMMAND --help`. `cap-evolve` is an alias.", ""]
    return "\n".join(intro + lines[1:]) + "\n"


def rollout_schema_markdown() -> str:
    """The Parquet columns of a rollout row: name, Arrow type, nullable, the schema's note."""
    from capevolve._store.rollouts import schema

    notes: dict[str, str] = {}
    for line in inspect.getsource(schema).splitlines():
        head, _, comment = line.partition("  # ")
        if "pa.field(" in head and comment:
            notes[head.split('"')[1]] = comment.strip()
    rows = [f"| `{f.name}` | `{f.type}` | {'yes' if f.nullable else 'no'} | "
            f"{notes.get(f.name, '')} |" for f in schema.ROLLOUT_SCHEMA]
    return "\n".join([f"Schema version {schema.SCHEMA_VERSION} (every row's `schema_version`, "
                      "and the files' metadata).", "",
                      "| column | Arrow type | null allowed | note |", "|---|---|---|---|",
                      *rows])


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs hook: fill storage.md's generated column table."""
    if SCHEMA_MARK in markdown:
        return markdown.replace(SCHEMA_MARK, rollout_schema_markdown())
    return markdown


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the two generated pages to the site's files."""
    from mkdocs.structure.files import File

    for path, text in ((CLI_PAGE, cli_markdown()), (CONFIG_PAGE, config_markdown())):
        files.append(File.generated(config, path, content=text))
    return files
