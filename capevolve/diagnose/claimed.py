"""claimed_without_matching_action: a final message claims a *specific* state change that
none of the rollout's mutating calls performed.

narrated_without_action covers a claim with no mutating call at all. This signature covers
the rest: the agent says "your ticket has been escalated" and did call a write -- but the
write was ``update_note``, not a transfer. Rules:

- the claim: each state verb the final message says happened (``narrated.claimed_states``)
  that is *specific* -- not one of ``GENERIC_STATES`` (updated, changed, processed,
  completed, ... say nothing about which write), reduced to its family
  (``FAMILIES``: escalated ~ transfer / handoff, refunded ~ credit / reimburse, ...);
- the action: a mutating call (``narrated.call_mutates``) matches a claim when a word of
  its name (snake, kebab, dotted or camel case) is in the claim's family;
- flagged when at least one mutating call was recorded and some specific claim has no
  matching one. No mutating call at all is narrated_without_action's case; a rollout with
  no tool-call record is missing data: never flagged.
"""

from __future__ import annotations

import re
from functools import lru_cache

from capevolve.diagnose.narrated import Call, call_mutates, claims_in, final_message
from capevolve.diagnose.signature import stem

GENERIC_STATES = frozenset("""
updated changed modified processed submitted applied saved completed confirmed fixed
resolved edited recorded stored posted requested initiated set reset ship shipped
""".split())
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
    """The stems a claimed verb is matched against (itself when it has no family)."""
    root = stem(IRREGULAR.get(verb.lower(), verb.lower()))
    return FAMILIES.get(root, frozenset({root}))


@lru_cache(maxsize=4096)
def name_words(name: str) -> frozenset[str]:
    """The stemmed words of a tool name."""
    return frozenset(stem(p.lower()) for p in _NAME_PARTS.findall(name))


def unmatched_claims(output: str | None, calls: list[Call], trace: str | None) -> list[str]:
    """The specific claimed verbs no mutating call matches (empty unless flagged)."""
    writes = [c for c in calls if call_mutates(c.name, c.mutates)]
    if not writes:
        return []
    claims = [v for v in claims_in(final_message(output, trace))
              if v not in GENERIC_STATES]
    if not claims:
        return []
    words = [name_words(c.name) for c in writes]
    missing = [v for v in claims if not any(family(v) & w for w in words)]
    return sorted(set(missing))


def claimed_without_matching_action(output: str | None, calls: list[Call],
                                    trace: str | None = None) -> bool:
    """The module's rule over one rollout's final message and recorded calls."""
    return bool(unmatched_claims(output, calls, trace))
