"""hotel_desk: a hotel's reservations agent changing and cancelling guests' stays.

The agent looks the reservation up, checks availability and the rate plan, modifies or
cancels the booking, adjusts the folio and answers the guest. Its usual reply opens with
"Your request is confirmed." The grader is a checklist tool: one bullet per finding,
tagged with the area in brackets ("- [billing] ..."), worded by whoever filled it in.
Score parts: reservation, billing, guest.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec, money, ref  # noqa: E402

READ = frozenset({"get_reservation", "check_availability", "get_rate_plan", "get_guest"})

KINDS = (
    Kind("change_dates", "Can I move my stay {conf} to arrive {new_date} instead? Same "
         "room please.", ("get_reservation", "check_availability", "get_rate_plan",
                          "modify_booking", "adjust_folio"),
         "Your request is confirmed. Your stay now starts {new_date}; new confirmation "
         "number {new_conf}. The nightly rate is ${rate}.", 3),
    Kind("cancel", "I need to cancel reservation {conf}, sorry.",
         ("get_reservation", "get_rate_plan", "cancel_booking", "adjust_folio",
          "reverse_points"),
         "Your request is confirmed: reservation {conf} is cancelled and ${refund} will be "
         "refunded to your card.", 3),
    Kind("upgrade", "Is there any chance of a suite upgrade for {conf}? Happy to pay.",
         ("get_reservation", "check_availability", "get_rate_plan", "modify_booking",
          "adjust_folio"),
         "Your request is confirmed: you're upgraded to a junior suite for ${extra} more "
         "per night. New confirmation number {new_conf}.", 2),
    Kind("late_checkout", "Could I check out late on my last day ({conf})?",
         ("get_reservation", "get_guest", "add_note"),
         "Your request is confirmed: late checkout until 2 pm is noted on {conf}.", 2),
)

FAULTS = (
    Fault("rate", "rate plan", "billing", (
        "the new nights were priced at the old rate of ${old_rate} instead of ${rate}",
        "rate not re-quoted after the date change; the folio still shows ${old_rate} per "
        "night",
        "billing kept the original nightly price although the new dates fall in a "
        "different season"), kinds=("change_dates",), weight=3),
    Fault("penalty", "penalty", "billing", (
        "cancelled within 48 hours of arrival, so one night (${rate}) should have been "
        "kept as a penalty",
        "full refund given on a late cancellation; the late-cancel fee was not applied",
        "the guest cancelled inside the penalty window and was refunded everything"),
        kinds=("cancel",), weight=3),
    Fault("points", "points", "billing", (
        "the {points} loyalty points earned for this stay were not taken back",
        "points credited for {conf} remain on the member account after the cancellation",
        "loyalty balance not reversed"),
        kinds=("cancel",), calls=("get_reservation", "get_rate_plan", "cancel_booking",
                                  "adjust_folio"), weight=2),
    Fault("availability", "availability", "reservation", (
        "no suite is free on those nights, but the upgrade was promised",
        "the agent never checked inventory before confirming the suite",
        "upgrade confirmed on dates where the suite category is sold out"),
        kinds=("upgrade",), calls=("get_reservation", "get_rate_plan", "modify_booking",
                                   "adjust_folio"), weight=3),
    Fault("narrated_change", "modify_booking", "reservation", (
        "the booking still shows the old arrival date; it was never modified",
        "the guest was told the dates moved, but reservation {conf} is unchanged",
        "no change was made in the system although the reply says so"),
        kinds=("change_dates",), calls=("get_reservation", "check_availability",
                                        "get_rate_plan", "add_note"),
        reply="Your stay has been moved to {new_date}.", weight=2),
    Fault("confirmation", "confirmation number", "guest", (
        "the guest needs the new confirmation number and did not get it",
        "reply omits the updated confirmation code",
        "no reference for the modified booking was sent"),
        kinds=("change_dates", "upgrade"), reply="Your request is confirmed. See you soon!",
        weight=2, credit=0.5),
    Fault("checkout_time", "checkout time", "guest", (
        "the reply does not say until when the room can be kept",
        "late checkout granted but the hour is missing from the answer",
        "the guest is not told the new departure time"),
        kinds=("late_checkout",), reply="Your request is confirmed: late checkout is noted.",
        weight=2, credit=0.5),
)


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    rate = money(rng, 140, 420)
    return {"conf": ref(rng, "HX", 8), "new_conf": ref(rng, "HX", 8),
            "new_date": rng.choice(("March 3", "April 17", "May 9", "June 22")),
            "rate": rate, "old_rate": money(rng, 90, 139), "refund": money(rng, 300, 1800),
            "extra": money(rng, 40, 120), "points": str(rng.randint(8, 60) * 100),
            "ref": ref(rng, "HX", 8)}


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """A bullet per finding, tagged with its area, in random order."""
    lines = [f"- [{c.part}] {c.text}" for c in causes]
    rng.shuffle(lines)
    return "\n".join(lines)


SPEC = Spec("hotel_desk", KINDS, FAULTS, ("reservation", "billing", "guest"), READ, facts,
            layout, ("- no findings",))


class HotelDeskAdapter(SimAdapter):
    """The hotel reservations desk (see the module docstring)."""

    spec = SPEC
