"""What a documentation page names, checked against the code.

A page names a command when a fenced shell block or an inline code span holds
``capevolve ...`` (or ``cap-evolve ...``, or a span starting with a top-level command name
followed by an option); an option when such a command carries ``--name``, or a span starts
with ``--name``; a capevolve.yaml key in a ``yaml`` block (every ``yaml`` block is a
capevolve.yaml or a fragment of one, unless its fence names another file with
``title="..."``) or in a span such as ``gate.min_delta``; a Python name in a span or a
``python`` block such as ``capevolve.open_run``. Each must exist in the Typer app, the
config models or the package.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import shlex
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer.main
import yaml
from pydantic import BaseModel, ValidationError

from capevolve.cli.app import app
from capevolve.config import ProjectConfig

FENCE = re.compile(r"^(?P<indent> *)(?P<mark>```+|~~~+)(?P<info>[^\n]*)$")
SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
PROGRAMS = ("capevolve", "cap-evolve")
SHELL_LANGS = {"", "bash", "sh", "shell", "console", "zsh"}
DOTTED_KEY = re.compile(r"^(?P<path>[a-z_]+(?:\.[a-z_]+)+)(?::\s.*)?$")
FILE_SUFFIXES = {"py", "json", "jsonl", "md", "yaml", "yml", "parquet", "txt", "html", "toml"}
PY_NAME = re.compile(r"\bcapevolve\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$|^\.\.\.$")
ROOT_OPTIONS = {"--help", "-h", "--version", "-V"}


@dataclass(frozen=True)
class Fence:
    lang: str
    info: str
    body: str
    line: int


def fences_and_prose(text: str) -> tuple[list[Fence], list[tuple[int, str]]]:
    """The fenced blocks of a Markdown text, and its other lines (numbered from 1)."""
    fences: list[Fence] = []
    prose: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        start, mark, body = i, m["mark"], []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(mark):
            body.append(lines[i][len(m["indent"]):])
            i += 1
        info = m["info"].strip()
        fences.append(Fence(info.split(" ")[0].lower(), info, "\n".join(body), start + 1))
        i += 1
    return fences, prose


def spans(prose: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Inline code spans of the prose lines (a span may run onto the next line)."""
    numbered = list(prose)
    for index, (number, line) in enumerate(numbered):
        joined = line
        if line.count("`") % 2 and index + 1 < len(numbered):
            joined = line + " " + numbered[index + 1][1]
        for m in SPAN.finditer(joined):
            if m.start() < len(line):
                yield number, m.group(2).strip()


def shell_commands(body: str) -> Iterator[list[str]]:
    """The words of each ``capevolve ...`` command of a shell block (continuation lines
    joined; quotes, comments and ``&&``, ``;``, ``|`` taken as the shell takes them)."""
    text = re.sub(r"\\\n\s*", " ", body)
    for line in text.splitlines():
        lexer = shlex.shlex(line.strip().removeprefix("$ "), posix=True,
                            punctuation_chars=";&|")
        lexer.whitespace_split, lexer.commenters = True, "#"
        try:
            words = list(lexer)
        except ValueError:  # an unclosed quote: take the words as they stand
            words = line.split()
        command: list[str] = []
        for word in [*words, ";"]:
            if word and set(word) <= set(";&|"):
                if command and command[0] in PROGRAMS:
                    yield command
                command = []
            else:
                command.append(word)


def command_tree() -> Any:
    """The click command of the Typer app (groups have ``commands``, commands ``params``)."""
    return typer.main.get_command(app)


def options_of(command: Any) -> set[str]:
    names = {"--help", "-h"}
    for param in command.params:
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return {n for n in names if n.startswith("-")}


def all_options(tree: Any) -> set[str]:
    found = set(options_of(tree))
    for sub in getattr(tree, "commands", {}).values():
        found |= all_options(sub)
    return found


def check_command(words: list[str], tree: Any) -> list[str]:
    """Problems with the words of one ``capevolve ...`` command (none when it exists)."""
    tokens = [w.lstrip("([").rstrip(")],") for w in words[1:]]
    node, path = tree, ["capevolve"]
    problems = []
    for token in tokens:
        if token.startswith("-") and not re.match(r"^-\d", token):
            name = token.split("=", 1)[0]
            allowed = options_of(node) | (ROOT_OPTIONS if node is tree else set())
            if name not in allowed:
                problems.append(f"`{' '.join(path)}` has no option {name}")
            continue
        commands = getattr(node, "commands", None)
        if commands is None:
            continue  # an argument or an option's value
        if PLACEHOLDER.match(token) or token.startswith("$"):
            break  # `capevolve COMMAND --help`: a placeholder for any command
        if token not in commands:
            problems.append(f"`{' '.join(path)}` has no command {token!r}")
            break
        node, path = commands[token], [*path, token]
    return problems


def check_span(span: str, tree: Any) -> list[str]:
    """Problems with an inline code span that names a command, option or config key."""
    words = span.split()
    if words[0] in PROGRAMS:
        return check_command(words, tree)
    if words[0] in tree.commands and len(words) > 1 and words[1].startswith("--"):
        return check_command(["capevolve", *words], tree)
    if span.startswith("--"):
        names = [t.split("=", 1)[0] for t in re.findall(r"--[A-Za-z0-9-]+(?:=\S*)?", span)]
        known = all_options(tree) | ROOT_OPTIONS
        return [f"no capevolve command has the option {n}" for n in names if n not in known]
    m = DOTTED_KEY.match(span)
    if m and m["path"].split(".")[0] in section_names():
        parts = m["path"].split(".")
        if parts[-1] in FILE_SUFFIXES:
            return []
        return key_problems(parts)
    return []


def section_names() -> set[str]:
    return {name for name, info in ProjectConfig.model_fields.items() if _model_of(info.annotation)}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def key_problems(parts: list[str]) -> list[str]:
    """Problems with a dotted capevolve.yaml key path such as ``gate.min_delta``."""
    model: type[BaseModel] | None = ProjectConfig
    for depth, part in enumerate(parts):
        if model is None or part not in model.model_fields:
            return [f"capevolve.yaml has no key {'.'.join(parts[:depth + 1])}"]
        model = _model_of(model.model_fields[part].annotation)
    return []


def yaml_problems(body: str) -> list[str]:
    """Problems with a capevolve.yaml block: unknown keys at any depth, bad section values."""
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        return [f"the YAML does not parse: {str(exc).splitlines()[0]}"]
    if not isinstance(data, dict):
        return ["the YAML block is not a mapping"]
    problems = _mapping_problems(data, ProjectConfig, [])
    whole = {"name", "capability_path"} <= set(data) and ({"adapter", "dataset"} & set(data))
    if whole and not problems:  # a whole capevolve.yaml: its cross-key rules too
        problems = _validation_problems(ProjectConfig, data, [])
    return problems


def _mapping_problems(data: dict, model: type[BaseModel], path: list[str]) -> list[str]:
    problems = []
    for key, value in data.items():
        where = [*path, str(key)]
        if key not in model.model_fields:
            problems.append(f"capevolve.yaml has no key {'.'.join(where)}")
            continue
        nested = _model_of(model.model_fields[key].annotation)
        if nested is None:
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                found = _mapping_problems(item, nested, where)
                problems += found
                if not found:
                    problems += _validation_problems(nested, item, where)
    return problems


def _validation_problems(model: type[BaseModel], value: dict, path: list[str]) -> list[str]:
    try:
        model.model_validate(value)
    except ValidationError as exc:
        return [f"{'.'.join([*path, *map(str, e['loc'])]) or 'capevolve.yaml'}: {e['msg']}"
                for e in exc.errors()]
    return []


def python_name_problems(text: str) -> list[str]:
    """``capevolve.x.y`` names that are neither a module nor an attribute of one."""
    problems = []
    for m in PY_NAME.finditer(text):
        dotted = m.group(1)
        if dotted.split(".")[0] in {"yaml"}:
            continue
        if not _resolves("capevolve." + dotted):
            problems.append(f"capevolve.{dotted} does not exist")
    return problems


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or an attribute path of one. A module whose import
    needs an extra that is not installed counts as existing (its attributes go unchecked)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(name) is None:
                continue
        except (ImportError, ValueError):
            continue
        try:
            obj: Any = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional dependency missing
            return True
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`((?:,\s*`::test_\w+`)*)")


def cited_test_problems(text: str, repo: Path) -> list[str]:
    """``tests/x.py::test_y`` (and ``, `::test_z` `` after it) that name no such test."""
    problems = []
    for m in TEST_REF.finditer(text):
        path = repo / m.group(1)
        source = path.read_text(encoding="utf-8") if path.is_file() else ""
        for name in [m.group(2), *re.findall(r"::(test_\w+)", m.group(3))]:
            if not re.search(rf"^\s*(?:async )?def {name}\b", source, re.M):
                problems.append(f"{m.group(1)} has no test {name}")
    return problems


def page_problems(text: str, tree: Any) -> list[str]:
    """Every problem of one Markdown page, each prefixed with its line number."""
    fences, prose = fences_and_prose(text)
    problems = []
    for fence in fences:
        if fence.lang in SHELL_LANGS:
            for command in shell_commands(fence.body):
                problems += [f"{fence.line}: {p}" for p in check_command(command, tree)]
        elif fence.lang in ("yaml", "yml") and "title=" not in fence.info:
            problems += [f"{fence.line}: {p}" for p in yaml_problems(fence.body)]
        elif fence.lang == "python":
            problems += [f"{fence.line}: {p}" for p in python_name_problems(fence.body)]
    for number, span in spans(prose):
        problems += [f"{number}: {p}" for p in check_span(span, tree)]
        problems += [f"{number}: {p}" for p in python_name_problems(span)]
    return problems
