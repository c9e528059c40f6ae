"""Loading a candidate capability: ``policy/policy.md`` (rules) and ``tools/tools.py`` (tools).

Contracts:

- ``policy/policy.md`` is UTF-8 markdown; each bullet line (``-``, ``*``, ``+``, ``1.``) is one
  rule. A rule is *emphasised* when it contains MUST, ALWAYS or NEVER in capitals or bold
  ``**text**``. The file must hold at least one rule, no empty bullet and no unclosed code
  fence.
- ``tools/tools.py`` defines ``READ_TOOLS`` and ``WRITE_TOOLS`` (tuples of names) and a
  function ``name(db, **arguments)`` for each (see ``reference_tools``). It is compiled from
  its source (no import, no ``__pycache__`` written into the read-only snapshot).

Any problem raises :class:`CapabilityError` whose message names the file and line; the
adapter turns it into ``Rollout(error=...)``, never a crash of the evaluation.
"""

from __future__ import annotations

import hashlib
import re
import threading
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

POLICY_FILE = "policy/policy.md"
TOOLS_FILE = "tools/tools.py"
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])(?:\s+(.*))?$")
_EMPHASIS = re.compile(r"\b(?:MUST|ALWAYS|NEVER)\b|\*\*[^*]+\*\*")
_CACHE: dict[str, types.ModuleType] = {}
_LOCK = threading.Lock()


class CapabilityError(Exception):
    """A candidate file is missing or malformed; the message is ``file:line: problem``."""


@dataclass(frozen=True)
class Rule:
    """One policy bullet."""

    line: int
    text: str
    emphasised: bool


@dataclass(frozen=True)
class Capability:
    """A loaded candidate: its policy text and rules, and its tools module."""

    policy_text: str
    rules: tuple[Rule, ...]
    tools: types.ModuleType

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Every tool the candidate offers, reads first."""
        return tuple(self.tools.READ_TOOLS) + tuple(self.tools.WRITE_TOOLS)


def _read(path: Path, rel: str) -> str:
    if not path.is_file():
        raise CapabilityError(f"{rel}:1: file is missing from the candidate")
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CapabilityError(f"{rel}:{line}: not UTF-8 text ({exc.reason})") from None


def parse_policy(text: str, rel: str = POLICY_FILE) -> tuple[Rule, ...]:
    """The rules of a policy; raises CapabilityError with the line of the first problem."""
    rules, fence_line = [], None
    for n, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fence_line = None if fence_line else n
            continue
        if fence_line:
            continue
        match = _BULLET.match(line)
        if match is None or re.match(r"^\s*(?:---+|\*\*\*+)\s*$", line):
            continue
        body = (match.group(1) or "").strip()
        if not body:
            raise CapabilityError(f"{rel}:{n}: empty bullet (a rule needs text)")
        rules.append(Rule(n, body, bool(_EMPHASIS.search(body))))
    if fence_line:
        raise CapabilityError(f"{rel}:{fence_line}: code fence is never closed")
    if not rules:
        raise CapabilityError(f"{rel}:1: no rules found (write each rule as a '- ' bullet)")
    return tuple(rules)


def _compile_tools(source: str, path: Path, rel: str) -> types.ModuleType:
    module = types.ModuleType("candidate_tools")
    module.__file__ = str(path)
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise CapabilityError(f"{rel}:{exc.lineno or 1}: SyntaxError: {exc.msg}") from None
    try:
        exec(code, module.__dict__)  # noqa: S102 - the candidate's own tool code
    except Exception as exc:  # noqa: BLE001 - any import-time failure is the candidate's
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
        line = frames[-1].lineno if frames else 1
        raise CapabilityError(f"{rel}:{line}: {type(exc).__name__} while loading: {exc}") \
            from None
    for attr in ("READ_TOOLS", "WRITE_TOOLS"):
        names = getattr(module, attr, None)
        if not isinstance(names, (tuple, list)) or not all(isinstance(n, str) for n in names):
            raise CapabilityError(f"{rel}:1: {attr} must be a tuple of tool names")
        for name in names:
            if not callable(getattr(module, name, None)):
                line = _line_of(source, attr)
                raise CapabilityError(f"{rel}:{line}: {attr} names {name!r}, which is not "
                                      "a function defined in the file")
    return module


def _line_of(source: str, word: str) -> int:
    return next((n for n, line in enumerate(source.splitlines(), 1) if word in line), 1)


def load_tools(candidate: Path) -> types.ModuleType:
    """The candidate's tools module, compiled once per distinct source text."""
    path = Path(candidate) / TOOLS_FILE
    source = _read(path, TOOLS_FILE)
    key = hashlib.sha256(source.encode()).hexdigest()
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = _compile_tools(source, path, TOOLS_FILE)
        return _CACHE[key]


def load_capability(candidate: Path) -> Capability:
    """Policy and tools of ``candidate``; raises CapabilityError naming file and line."""
    text = _read(Path(candidate) / POLICY_FILE, POLICY_FILE)
    return Capability(policy_text=text, rules=parse_policy(text), tools=load_tools(candidate))
