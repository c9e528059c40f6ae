"""car_rental: a car-rental agent handling bookings, extensions and damage reports.

The agent looks the rental and the fleet up, books or extends, opens damage claims,
charges deposits and answers the customer. The grader is an operations lead who writes
"Issues:" and one asterisk line per issue, each opening with a short heading of her own
("Deposit -", "Claim:", ...), in the order she noticed them. Score parts: booking,
charges, claim, reply.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec, money, ref  # noqa: E402

READ = frozenset({"get_rental", "search_fleet", "get_customer", "get_price_list"})

KINDS = (
    Kind("book", "I'd like a {car_class} in {city} from {start} for {days} days.",
         ("get_customer", "search_fleet", "get_price_list", "create_booking",
          "hold_deposit"),
         "You're all set: a {car_class} in {city} from {start}, {days} days, ${total}. "
         "Booking {ref}.", 3),
    Kind("extend", "Can I keep car {plate} ({ref}) {extra} more days?",
         ("get_rental", "search_fleet", "get_price_list", "extend_rental"),
         "Done: rental {ref} now ends {extra} days later, ${extra_cost} added.", 2),
    Kind("damage", "I scratched the door of {plate} in a car park, what now?",
         ("get_rental", "open_damage_claim", "request_photos"),
         "I've opened damage claim {claim}; please upload photos of the scratch. Your "
         "cover pays for it above the ${excess} excess.", 2),
    Kind("young_driver", "I'm 22, can I rent a {car_class} in {city} from {start}?",
         ("get_customer", "search_fleet", "get_price_list", "create_booking",
          "hold_deposit"),
         "Yes: a {car_class} in {city} from {start}, with the young-driver fee included, "
         "${total}. Booking {ref}.", 2),
)

FAULTS = (
    Fault("deposit", "deposit", "charges", (
        "Deposit - none was held on the card, so the car leaves with no security",
        "Deposit: the ${deposit} pre-authorisation was never taken",
        "No hold placed before pickup; policy needs ${deposit} blocked on the card"),
        kinds=("book", "young_driver"),
        calls=("get_customer", "search_fleet", "get_price_list", "create_booking"),
        weight=3),
    Fault("young_fee", "young-driver", "charges", (
        "Young driver fee missing from the ${total} quoted",
        "Under-25 surcharge (${fee}/day) not added",
        "Age surcharge - the renter is 22 and paid the standard rate"),
        kinds=("young_driver",), weight=3),
    Fault("availability", "fleet", "booking", (
        "Booked a {car_class} that {city} has none of on {start}",
        "Fleet check skipped: no {car_class} free at that branch",
        "Availability - the class promised is sold out for those dates"),
        kinds=("book",),
        calls=("get_customer", "get_price_list", "create_booking", "hold_deposit"),
        weight=2),
    Fault("next_booking", "next booking", "booking", (
        "Extension clashes with the car's next rental on day {extra}",
        "{plate} is reserved by another customer after the current end date",
        "Overlap - extending ran into a booking that starts before the new return date"),
        kinds=("extend",), weight=2),
    Fault("claim_photos", "photos", "claim", (
        "Claim: no photos requested, the assessor cannot price it",
        "Damage claim {claim} opened without asking for pictures",
        "Evidence - the customer was not asked to upload images of the scratch"),
        kinds=("damage",), calls=("get_rental", "open_damage_claim"),
        reply="I've opened damage claim {claim}. Your cover pays for it above the "
              "${excess} excess.", weight=3),
    Fault("narrated_claim", "open_damage_claim", "claim", (
        "Claim: nothing was opened, the customer was given a number that does not exist",
        "No damage record exists for {plate} although a claim number was promised",
        "The reply cites claim {claim}, but no claim was filed"),
        kinds=("damage",), calls=("get_rental", "request_photos"), weight=2),
    Fault("excess", "excess", "reply", (
        "Reply does not state the ${excess} the customer still pays",
        "The excess amount is missing from the answer",
        "Customer not told about the excess"),
        kinds=("damage",), reply="I've opened damage claim {claim}; please upload photos "
                                 "of the scratch.", weight=2, credit=0.5),
    Fault("total", "total price", "reply", (
        "Reply gives no total price",
        "The customer is not told what the rental costs",
        "Price - no amount in the confirmation"),
        kinds=("book", "young_driver"), reply="You're all set. Booking {ref}.", weight=2,
        credit=0.5),
)

CLASSES = ("compact", "SUV", "minivan", "convertible", "estate")
CITIES = ("Lisbon", "Porto", "Seville", "Valencia", "Nice")


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    return {"car_class": rng.choice(CLASSES), "city": rng.choice(CITIES),
            "start": rng.choice(("June 3", "July 14", "August 2")),
            "days": str(rng.randint(2, 14)), "extra": str(rng.randint(1, 5)),
            "total": money(rng, 120, 1400), "extra_cost": money(rng, 40, 300),
            "deposit": str(rng.choice((300, 500, 800))), "fee": str(rng.choice((15, 20, 25))),
            "excess": str(rng.choice((600, 900, 1200))), "plate": f"{rng.randint(10, 99)}-"
            f"{rng.choice('ABCDEFG')}{rng.choice('HJKLMN')}-{rng.randint(10, 99)}",
            "claim": ref(rng, "DC", 6), "ref": ref(rng, "RN", 7)}


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """"Issues:" and one asterisk line per issue, in the order given."""
    return "\n".join(["Issues:", *(f"* {c.text}" for c in causes)])


SPEC = Spec("car_rental", KINDS, FAULTS, ("booking", "charges", "claim", "reply"), READ,
            facts, layout, ("Issues: none",))


class CarRentalAdapter(SimAdapter):
    """The car-rental desk (see the module docstring)."""

    spec = SPEC
