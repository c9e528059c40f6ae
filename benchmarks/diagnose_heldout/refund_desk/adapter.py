"""refund_desk: a customer-service agent deciding refund requests.

The agent looks the order and the refund policy up, then issues the refund, escalates it,
or declines it, and tells the customer. Its usual reply to an accepted request opens with
"Your refund request is approved." -- a verdict, not an action of its own. The grader is a
rubric model writing prose: an "Assessment:" opener on most failures, the findings in
random order, and now and then a closing line that says nothing specific. Score parts:
decision, amount, process, reply.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec, money, ref  # noqa: E402

READ = frozenset({"lookup_order", "get_refund_policy", "get_customer"})
CALM = ("lookup_order", "get_refund_policy", "issue_refund", "add_case_note")

KINDS = (
    Kind("damaged", "Hi, order {ref} ({item}, ${paid}) arrived broken. Can I get my money "
         "back?", CALM,
         "Your refund request is approved. ${due} will be back on your {card} within 5-7 "
         "business days.", 3),
    Kind("change_of_mind", "I want to return {item} from order {ref}; I changed my mind. "
         "Paid ${paid} plus ${ship} shipping.", CALM,
         "Your refund request is approved. We'll refund ${due} to your {card}; expect it in "
         "5-7 business days.", 3),
    Kind("high_value", "Order {ref}: the {item} (${paid}) stopped working after a week. I'd "
         "like a refund.", ("lookup_order", "get_refund_policy", "escalate_to_supervisor",
                            "add_case_note"),
         "Your refund request is approved pending a supervisor's sign-off; you'll hear from "
         "us within 24 hours.", 2),
    Kind("ineligible", "Please refund order {ref} ({item}), it's not what I expected.",
         ("get_customer", "lookup_order", "get_refund_policy", "add_case_note"),
         "I'm sorry, your refund request has been declined: this purchase isn't eligible "
         "under our policy.", 2),
)

FAULTS = (
    Fault("restocking_fee", "restocking", "amount", (
        "The refund of ${paid} should have been ${due}: the 15% restocking fee for opened "
        "electronics was not deducted.",
        "Amount is off; opened electronics carry a 15% restocking fee, so the customer "
        "should get ${due}, not ${paid}.",
        "Refunded the full ${paid} although section 4.2 of the policy takes a restocking "
        "fee off opened electronics."), kinds=("change_of_mind", "damaged"), weight=3),
    Fault("shipping", "shipping", "amount", (
        "Original shipping of ${ship} was refunded although the item was not defective.",
        "The refund included the ${ship} delivery charge, which is only returned for faulty "
        "goods.",
        "Postage (${ship}) is non-refundable on change-of-mind returns but was added to the "
        "total."), kinds=("change_of_mind",), weight=2),
    Fault("final_sale", "clearance", "decision", (
        "Order {ref} is a clearance purchase (final sale) and should have been refused, but "
        "the refund was granted.",
        "Clearance items are final sale per policy; approving this request was a mistake.",
        "The {item} was bought in the clearance section, which is non-refundable, yet the "
        "agent said yes."), kinds=("damaged", "change_of_mind"), weight=2),
    Fault("perishable", "photo", "decision", (
        "Perishable groceries are refundable only with a photo of the damage; the agent "
        "approved without asking for one.",
        "No photo evidence was requested before refunding a perishable item.",
        "For food the policy requires a picture of the spoilage before any money goes back; "
        "none was collected."), kinds=("damaged",), weight=2),
    Fault("digital", "download", "decision", (
        "The e-book had already been downloaded, so it is not eligible for a refund, but the "
        "request went through.",
        "Digital goods that were downloaded cannot be refunded; the agent refunded anyway.",
        "Downloaded content is excluded by section 6, so this should have been declined."),
        kinds=("change_of_mind",), weight=2),
    Fault("window", "30-day", "decision", (
        "The purchase is {days} days old, outside the 30-day return window, yet the refund "
        "was approved.",
        "Return window of 30 days had passed ({days} days since delivery); the request "
        "should have been turned down.",
        "Delivered {days} days ago, past the refund window; accepting it breaks policy."),
        weight=2),
    Fault("escalation", "supervisor", "process", (
        "Refunds above $500 need a supervisor's sign-off; the agent issued ${paid} without "
        "escalating.",
        "This ${paid} refund should have gone to a supervisor first, but no escalation "
        "happened.",
        "High-value refund paid out directly instead of being sent up for approval."),
        kinds=("high_value",), calls=CALM,
        reply="Your refund request is approved. ${paid} is on its way to your {card}.",
        weight=3),
    Fault("timeline", "business days", "reply", (
        "The reply does not tell the customer when the money will arrive.",
        "Customer was not given the 5-7 business day timeline.",
        "Nothing in the message says how long the refund takes to show up on the card."),
        kinds=("damaged", "change_of_mind"),
        reply="Your refund request is approved. Thanks for shopping with us!", weight=2,
        credit=0.5),
    Fault("narrated", "issue_refund", "process", (
        "No refund transaction exists for order {ref} even though the customer was told "
        "it was issued.",
        "The reply says the money was sent back, but issue_refund was never called.",
        "Nothing was actually paid back; the confirmation in the reply is false."),
        kinds=("damaged", "change_of_mind"),
        calls=("lookup_order", "get_refund_policy", "add_case_note"),
        reply="Your refund of ${due} has been issued to your {card}.", weight=2),
    Fault("ineligible_reason", "explain", "reply", (
        "The decline does not say why: the customer should hear that the item is past "
        "the return window.",
        "Refusal given without the reason (order older than 30 days).",
        "The customer was refused with no explanation of the policy behind it."),
        kinds=("ineligible",), weight=2, credit=0.5),
)

ITEMS = ("wireless earbuds", "espresso machine", "trail running shoes", "organic coffee "
         "beans", "e-book bundle", "4K monitor", "winter jacket", "smart thermostat",
         "yoga mat", "cast-iron skillet")
CARDS = ("Visa ending 4412", "Mastercard ending 0391", "PayPal balance", "Amex ending 1007")


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    paid = money(rng, 520, 1400) if kind == "high_value" else money(rng, 18, 480)
    return {"ref": ref(rng, "ORD", 7), "item": rng.choice(ITEMS), "paid": paid,
            "due": f"{float(paid) * 0.85:.2f}", "ship": money(rng, 4, 19),
            "card": rng.choice(CARDS), "days": str(rng.randint(34, 90))}


OPENERS = ("Assessment:", "Assessment: the handling has problems.", "Assessment:")
CLOSERS = ("Overall the handling does not meet the refund policy.",
           "Please review the policy before the next case.")


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """A rubric model's prose: an opener on most failures, findings in random order, a
    closing line on some."""
    sentences = [c.text for c in causes]
    rng.shuffle(sentences)
    if rng.random() < 0.85:
        sentences.insert(0, rng.choice(OPENERS))
    if rng.random() < 0.4:
        sentences.append(rng.choice(CLOSERS))
    return " ".join(sentences)


SPEC = Spec("refund_desk", KINDS, FAULTS, ("decision", "amount", "process", "reply"), READ,
            facts, layout, ("The decision, the amount and the reply all follow the refund "
                            "policy.", "Correct outcome; the customer was told everything "
                            "they need."))


class RefundDeskAdapter(SimAdapter):
    """The refund desk (see the module docstring)."""

    spec = SPEC
