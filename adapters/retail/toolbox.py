"""Executing tool calls against a per-rollout database, as a real environment would.

A :class:`ToolBox` binds a candidate's tools module to one private database copy. Every
call is recorded (``ToolCall`` plus a ``tool`` message). The agent always gets an answer:
an unknown tool name, bad arguments or a refusal raised by the tool come back as a tool
error text, never as an exception. ``tool_schemas`` derives OpenAI-style function schemas
from the tools' signatures and docstrings.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from capevolve.adapter import ToolCall

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               dict: "object", list: "array"}


@dataclass
class ToolResult:
    """What the agent sees after a call: ``value`` on success, ``error`` text otherwise."""

    value: Any = None  # JSON data
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def text(self) -> str:
        """The result as the agent reads it (JSON, or ``Error: ...``)."""
        return f"Error: {self.error}" if self.error else json.dumps(self.value, sort_keys=True)


@dataclass
class ToolBox:
    """The candidate's tools bound to one database copy; records every call in order."""

    tools: types.ModuleType
    db: dict
    calls: list[ToolCall] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.tools.READ_TOOLS) + tuple(self.tools.WRITE_TOOLS)

    def is_write(self, name: str) -> bool:
        return name in tuple(self.tools.WRITE_TOOLS)

    def call(self, name: str, arguments: dict | None = None) -> ToolResult:
        """Run tool ``name``; refusals, unknown names and bad arguments become errors."""
        arguments = dict(arguments or {})
        known = name in self.names
        self.calls.append(ToolCall(name=name, arguments=arguments,
                                   mutates=self.is_write(name) if known else None))
        if not known:
            result = ToolResult(error=f"unknown tool {name!r}; available tools: "
                                      f"{', '.join(self.names)}")
        else:
            try:
                result = ToolResult(value=getattr(self.tools, name)(self.db, **arguments))
            except (ValueError, KeyError, LookupError) as exc:
                result = ToolResult(error=str(exc).strip("'\"") or type(exc).__name__)
            except TypeError as exc:
                result = ToolResult(error=f"bad arguments for {name}: {exc}")
            except Exception as exc:  # noqa: BLE001 - a crashing tool is an error the agent sees
                result = ToolResult(error=f"{name} failed: {type(exc).__name__}: {exc}")
        self.messages.append({"role": "tool", "name": name, "arguments": arguments,
                              "content": result.text(), "ok": result.ok,
                              "write": self.is_write(name)})
        return result


def _json_type(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation) or annotation
    schema: dict[str, Any] = {"type": _JSON_TYPES.get(origin, "string")}
    args = typing.get_args(annotation)
    if origin is list:
        schema["items"] = {"type": _JSON_TYPES.get(args[0], "string") if args else "string"}
    return schema


def tool_schemas(tools: types.ModuleType) -> list[dict]:
    """OpenAI ``tools=[{type: function, function: {...}}]`` for every tool of the module."""
    schemas = []
    for name in tuple(tools.READ_TOOLS) + tuple(tools.WRITE_TOOLS):
        fn = getattr(tools, name)
        try:
            hints = typing.get_type_hints(fn)
        except Exception:  # noqa: BLE001 - unresolvable hints fall back to strings
            hints = {}
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "db"]
        props = {p.name: _json_type(hints.get(p.name, str)) for p in params}
        required = [p.name for p in params if p.default is inspect.Parameter.empty]
        schemas.append({"type": "function", "function": {
            "name": name, "description": inspect.getdoc(fn) or name,
            "parameters": {"type": "object", "properties": props, "required": required}}})
    return schemas
