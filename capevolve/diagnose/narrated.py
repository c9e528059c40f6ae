"""narrated_without_action: a final message that claims a state change no tool call made."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, NamedTuple

import orjson

from capevolve.diagnose.jsontext import load_or_none

READ_VERBS = frozenset("""
get list search find read lookup look fetch view show query count describe check calculate
compute retrieve load inspect verify validate browse preview estimate summarize think peek
see explore scan select filter sort compare lookup locate print display
""".split())

_STATE = (r"(?:updated|cancell?ed|refunded|changed|modified|booked|rebooked|created|deleted|"
          r"removed|added|processed|submitted|sent|issued|applied|saved|scheduled|"
          r"rescheduled|confirmed|transferred|reset|exchanged|returned|placed|completed|"
          r"upgraded|downgraded|credited|charged|reserved|assigned|activated|deactivated|"
          r"enabled|disabled|approved|granted|revoked|renewed|paid|recorded|stored|posted|"
          r"uploaded|moved|replaced|fixed|resolved|edited|renamed|archived|escalated|"
          r"requested|initiated|notified|emailed|shipped|voided|reimbursed|refilled)")
STATE_PATTERN = _STATE  # the state verbs a claim names, as a regex group
_ADVERBS = r"(?:(?:now|already|just|also|successfully|been)\s+)*"
_CLAIM = re.compile(
    rf"\b(?:(?:has|have|had|was|were|is|are|been|got)\s+{_ADVERBS}{_STATE}"
    rf"|(?:i|we)(?:'ve|\s+have)?\s+{_ADVERBS}{_STATE}|successfully\s+{_STATE}"
    rf"|will\s+now\s+(?:be\s+{_STATE}|ship))\b",
    re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no|cannot|unable|n't)\b|n't\b", re.IGNORECASE)
_NAME_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


@lru_cache(maxsize=4096)
def leading_verb(name: str) -> str:
    """The first word of a tool name in any case style, lowercased."""
    parts = _NAME_PARTS.findall(name.rsplit(".", 1)[-1])
    return parts[0].lower() if parts else ""


def call_mutates(name: str, mutates: bool | None) -> bool:
    """Whether a call changes state: ``mutates`` when set, else inferred from the name."""
    if mutates is not None:
        return bool(mutates)
    return leading_verb(name) not in READ_VERBS


class Call(NamedTuple):
    """One recorded tool call: name, explicit ``mutates`` flag, argument names."""

    name: str
    mutates: bool | None
    fields: tuple[str, ...] = ()  # argument names, when the arguments are an object


_load = load_or_none


def _fields(arguments: Any) -> tuple[str, ...]:
    if isinstance(arguments, str):
        arguments = _load(arguments) if arguments.lstrip().startswith("{") else None
    # the keys of a parsed JSON object are strings
    return tuple(sorted(arguments)) if isinstance(arguments, dict) else ()


@lru_cache(maxsize=65536)
def _plain_call(name: str, flag: bool | None, keys: tuple[str, ...]) -> Call:
    return Call(name, flag, tuple(sorted(keys)))


def calls_of(data: Any) -> list[Call]:
    """The calls of a parsed ``tool_calls`` value (object items with a truthy ``name``)."""
    if not isinstance(data, list):
        return []
    calls = []
    for c in data:
        if isinstance(c, dict) and (name := c.get("name")):
            flag = c.get("mutates")
            calls.append(Call(name if type(name) is str else str(name),
                              flag if isinstance(flag, bool) else None,
                              _fields(c.get("arguments"))))
    return calls


def column_calls(tool_calls: str | None) -> list[Call]:
    """:func:`calls_of` the ``tool_calls`` column's JSON."""
    if not tool_calls:
        return []
    try:
        data = orjson.loads(tool_calls)
    except orjson.JSONDecodeError:  # not JSON, or JSON orjson does not read (NaN, ...)
        return calls_of(_load(tool_calls))
    if type(data) is not list:
        return []
    calls: list[Call] = []
    append = calls.append
    for c in data:
        if type(c) is dict:
            name, flag, args = c.get("name"), c.get("mutates"), c.get("arguments")
            if type(name) is str and name and (flag is None or flag is True or flag is False) \
                    and type(args) is dict:  # the usual shape (True is never taken for 1)
                append(_plain_call(name, flag, tuple(args)))
                continue
        return calls_of(_load(tool_calls))  # an unusual item: the exact parse decides
    return calls


def _walk(node: Any) -> Iterator[dict]:
    """Every dict inside a JSON value (depth-first, document order)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(v for v in reversed(item.values()) if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(v for v in reversed(item) if isinstance(v, (dict, list)))


def trace_calls(trace: str | None) -> list[Call]:
    """OpenAI-style calls anywhere in the trace: ``tool_calls`` lists and ``function_call``."""
    if not trace or ('"tool_calls"' not in trace and '"function_call"' not in trace):
        return []
    calls = []
    for node in _walk(_load(trace)):
        items = node.get("tool_calls")
        items = items if isinstance(items, list) else []
        if isinstance(node.get("function_call"), dict):
            items = [*items, node["function_call"]]
        for item in items:
            if not isinstance(item, dict):
                continue
            inner = item.get("function")
            fn = inner if isinstance(inner, dict) else item
            if fn.get("name"):
                flag = item.get("mutates", fn.get("mutates"))
                calls.append(Call(str(fn["name"]), flag if isinstance(flag, bool) else None,
                                  _fields(fn.get("arguments"))))
    return calls


_NAME_VALUE = re.compile(r'"name"\s*:\s*"([^"\\]*)"')
_ESCAPE_U = re.compile(r"\\u")  # searched by re: faster than `in` where "\\" is common


def trace_may_write(trace: str | None) -> bool:
    """False only when no call :func:`trace_calls` finds in ``trace`` can mutate; True means
    "parse to know"."""
    if not trace or ('"tool_calls"' not in trace and '"function_call"' not in trace):
        return False
    if '"mutates"' in trace or _ESCAPE_U.search(trace):
        return True
    names = _NAME_VALUE.findall(trace)
    if len(names) != trace.count('"name"'):
        return True
    return any(leading_verb(n) not in READ_VERBS for n in names)


def final_message(output: str | None, trace: str | None) -> str:
    """The output or, when it is blank, the trace's last assistant text."""
    if output and not output.isspace():  # (strip's whitespace: no stripped copy made)
        return output
    messages = [n for n in _walk(_load(trace)) if n.get("role") == "assistant"
                and isinstance(n.get("content"), str) and n["content"].strip()]
    return messages[-1]["content"] if messages else ""


@lru_cache(maxsize=16384)
def claims_in(message: str) -> tuple[str, ...]:
    """The state verbs the message says happened, lowercased, in order (negations excluded)."""
    found = []
    for match in _CLAIM.finditer(message):
        before = message[max(0, match.start() - 12):match.end()]
        if not _NEGATION.search(before):
            found.append(match.group().lower().split()[-1])
    return tuple(found)


def claims_state_change(message: str) -> bool:
    """True when the message claims a state change."""
    return bool(claims_in(message))


def rollout_calls(tool_calls: str | None, trace: str | None) -> list[Call]:
    """The ``tool_calls`` column's calls, else the trace's."""
    return column_calls(tool_calls) or trace_calls(trace)


def narrated_without_action(output: str | None, calls: list[Call],
                            trace: str | None = None) -> bool:
    """The module's rule for one rollout; a rollout without call records is never flagged."""
    if any(call_mutates(c.name, c.mutates) for c in calls):
        return False
    if not claims_state_change(final_message(output, trace)):
        return False
    if calls and not trace_may_write(trace):
        return True  # a record, and no mutating call in the trace either
    more = trace_calls(trace)
    if not calls and not more:
        return False  # no tool-call record: missing data, never flagged
    return not any(call_mutates(c.name, c.mutates) for c in more)
