"""claimed_without_matching_action: a final message claims a specific change a tool of that
action family could make, and no mutating call of the rollout made it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from capevolve.diagnose.narrated import Call, call_mutates, claims_in, final_message
from capevolve.diagnose.signature import stem

GENERIC_STATES = frozenset("""
updated changed modified processed submitted applied saved completed confirmed fixed
resolved edited recorded stored posted requested initiated set reset ship shipped
""".split())
VERDICTS = frozenset({"approved", "granted"})
IRREGULAR = {"paid": "pay", "sent": "send", "made": "make", "put": "put"}
_GROUPS = (
    "escalate transfer handoff hand human forward route",
    "refund credit reimburse repay",
    "cancel void revoke terminate",
    "book rebook reserve schedule reschedule",
    "send email notify message mail",
    "delete remove purge",
    "create add insert open register",
    "charge bill pay invoice",
    "return exchange swap",
    "ship dispatch deliver",
    "upgrade downgrade change modify update",
)
FAMILIES: dict[str, frozenset[str]] = {}
for _group in _GROUPS:
    _members = frozenset(stem(w) for w in _group.split())
    for _word in _members:
        FAMILIES[_word] = FAMILIES.get(_word, frozenset()) | _members
_NAME_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def family(verb: str) -> frozenset[str]:
    """The stems a claimed verb matches (its own when it has no family)."""
    root = stem(IRREGULAR.get(verb.lower(), verb.lower()))
    return FAMILIES.get(root, frozenset({root}))


@lru_cache(maxsize=4096)
def name_words(name: str) -> frozenset[str]:
    """The stemmed words of a tool name."""
    return frozenset(stem(p.lower()) for p in _NAME_PARTS.findall(name))


def is_specific(verb: str) -> bool:
    """A claimed verb naming a particular action, neither generic nor a verdict."""
    return verb not in GENERIC_STATES and verb not in VERDICTS


def makeable(verbs: Iterable[str], words: frozenset[str]) -> tuple[str, ...]:
    """The claimed verbs whose family holds one of ``words``."""
    return tuple(v for v in verbs if family(v) & words)


def unmatched_claims(output: str | None, calls: list[Call], trace: str | None,
                     tools: Iterable[str] | None = None) -> list[str]:
    """The specific claimed verbs no mutating call matches (only those ``tools`` could make, when
    given)."""
    writes = [c for c in calls if call_mutates(c.name, c.mutates)]
    if not writes:
        return []
    claims = [v for v in claims_in(final_message(output, trace)) if is_specific(v)]
    if not claims:
        return []
    words = [name_words(c.name) for c in writes]
    missing = sorted({v for v in claims if not any(family(v) & w for w in words)})
    if tools is None:
        return missing
    return list(makeable(missing, frozenset().union(*map(name_words, tools))))


def claimed_without_matching_action(output: str | None, calls: list[Call],
                                    trace: str | None = None,
                                    tools: Iterable[str] | None = None) -> bool:
    """The module's rule for one rollout."""
    return bool(unmatched_claims(output, calls, trace, tools))
