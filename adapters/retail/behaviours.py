"""Which behaviours a policy switches on, and whether the agent follows them on a trial.

Each behaviour is recognised from a rule's words (case-insensitive). A behaviour named by
an emphasised rule (MUST / ALWAYS / NEVER / bold) is followed on every trial; one named only
by a plain rule is followed with probability ``P_FOLLOW_PLAIN``, drawn once per trial from
``random.Random(f"{seed}:{behaviour}")`` so behaviours draw independently and every
candidate meets the same draws on the same (task, trial). Absent behaviours are never
followed. ``narrate`` is the exception: it is the *failure* of claiming an action without
calling the tool, drawn per write when ``act`` is not followed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from enum import StrEnum

from .capability import Rule

P_FOLLOW_PLAIN = 0.65
P_NARRATE = 0.3


class Behaviour(StrEnum):
    """What a rule can switch on."""

    CONFIRM = "confirm"  # ask for an explicit yes before any write
    VERIFY = "verify"  # check the order is on the customer's account first
    PENDING_ONLY = "pending_only"  # refuse to cancel or modify a non-pending order
    ORIGINAL_PAYMENT = "original_payment"  # refund to the original payment method
    REPORT_AMOUNT = "report_amount"  # tell the amount refunded / charged / remaining
    QUIET_AMOUNTS = "quiet_amounts"  # (harmful) never mention amounts
    PRICE_DIFFERENCE = "price_difference"  # compute and report an exchange's difference
    GIFT_BALANCE = "gift_balance"  # check a gift card covers the total before using it
    ESCALATE = "escalate"  # transfer to a human when the customer asks
    ACT = "act"  # never claim an action the tools did not perform


_NEGATIVE = r"\b(?:do not|don't|never|avoid|no need to)\b"
_PATTERNS: dict[Behaviour, tuple[str, ...]] = {
    Behaviour.CONFIRM: (r"\bconfirm",),
    Behaviour.VERIFY: (r"\b(?:verify|identity|belongs? to|on the customer's account)\b",),
    Behaviour.PENDING_ONLY: (r"\bonly pending\b", r"\bdelivered\b.*\bcancel",
                             r"\bcancel.*\b(?:delivered|processed)\b"),
    Behaviour.ORIGINAL_PAYMENT: (r"\boriginal payment",),
    Behaviour.REPORT_AMOUNT: (
        r"\b(?:tell|report|state|give|mention)\b.*\b(?:amount|total|balance)",),
    Behaviour.PRICE_DIFFERENCE: (r"\bprice difference\b",),
    Behaviour.GIFT_BALANCE: (r"\bgift card\b.*\bbalance\b", r"\bbalance\b.*\bgift card\b"),
    Behaviour.ESCALATE: (r"\b(?:human|transfer|escalat)",),
    Behaviour.ACT: (r"\b(?:claim|say)\b.*\b(?:unless|until|before)\b.*\btool",
                    r"\bcall the tool\b"),
}
_QUIET = _NEGATIVE + r".*\b(?:amounts?|numbers|prices?|balances?|totals?)\b"


def recognise(rules: tuple[Rule, ...]) -> dict[Behaviour, bool]:
    """Behaviour -> emphasised? for every behaviour some rule names (absent ones omitted)."""
    found: dict[Behaviour, bool] = {}
    for rule in rules:
        text = rule.text.lower()
        named = {b for b, pats in _PATTERNS.items() if any(re.search(p, text) for p in pats)}
        if re.search(_QUIET, text):
            named = (named - {Behaviour.REPORT_AMOUNT}) | {Behaviour.QUIET_AMOUNTS}
        for behaviour in named:
            found[behaviour] = found.get(behaviour, False) or rule.emphasised
    return found


@dataclass(frozen=True)
class Conduct:
    """The behaviours the agent follows on one trial (decided once, up front)."""

    followed: frozenset[Behaviour]
    seed: int

    @classmethod
    def draw(cls, rules: tuple[Rule, ...], seed: int) -> Conduct:
        """Decide every behaviour for this trial from the rules and the unit's seed."""
        followed = set()
        for behaviour, emphasised in recognise(rules).items():
            if emphasised or random.Random(f"{seed}:{behaviour}").random() < P_FOLLOW_PLAIN:
                followed.add(behaviour)
        return cls(frozenset(followed), seed)

    def __contains__(self, behaviour: Behaviour) -> bool:
        return behaviour in self.followed

    def narrates(self, write_index: int) -> bool:
        """Whether the agent claims write number ``write_index`` without calling the tool."""
        if Behaviour.ACT in self.followed:
            return False
        return random.Random(f"{self.seed}:narrate:{write_index}").random() < P_NARRATE
