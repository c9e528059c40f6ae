"""freight_quotes: a logistics agent quoting shipments from a carrier's tariff tables.

Every call is a read: the agent looks the lane and the tariff up, the fuel index, the
exchange rate, computes a price and answers with it. The grader is a pricing analyst who
writes short prose: a sentence naming the quote, then each problem opened with "Found,",
"Also," or "Finally," in the order found. Several causes end in a wrong total, so their
explanations share words (price, quote, total, charge). Score parts: price, route, reply.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec, money, ref  # noqa: E402

READ = frozenset({"lookup_lane", "get_tariff", "get_fuel_index", "convert_currency",
                  "get_account"})
BASE = ("get_account", "lookup_lane", "get_tariff", "get_fuel_index")

KINDS = (
    Kind("ftl", "Quote a full truckload {origin} to {dest}, {weight} kg, pickup {day}.",
         BASE, "Full truckload {origin} to {dest}: {currency} {total}, transit {transit} "
         "days, quote valid until {valid}.", 3),
    Kind("ltl", "Price for 4 pallets ({weight} kg, 120x100x160 cm) from {origin} to "
         "{dest}?", BASE, "4 pallets {origin} to {dest}: {currency} {total} all-in, "
         "transit {transit} days, valid until {valid}.", 3),
    Kind("hazmat", "We need to move {weight} kg of class 3 flammable liquids {origin} to "
         "{dest}. Price?", (*BASE, "get_tariff"),
         "Hazardous load {origin} to {dest}: {currency} {total} including the ADR "
         "surcharge, transit {transit} days, valid until {valid}.", 2),
    Kind("export", "Quote ocean freight for a 40ft container {origin} to {dest}.",
         (*BASE, "convert_currency"), "40ft container {origin} to {dest}: {currency} "
         "{total}, transit {transit} days, valid until {valid}.", 2),
)

FAULTS = (
    Fault("fuel", "fuel index", "price", (
        "the fuel surcharge uses last month's index, so the total is {diff} too low",
        "price is off by {diff}: the diesel surcharge was not updated to the current "
        "index",
        "a stale fuel adjustment was applied to the quote"), weight=3),
    Fault("dimensional", "dimensional", "price", (
        "the pallets were charged by actual weight, but their volume makes the "
        "chargeable weight higher",
        "the quote ignores volumetric weight; the bulky pallets cost more than "
        "{weight} kg",
        "chargeable weight should be the dimensional figure, not the scale weight"),
        kinds=("ltl",), weight=3),
    Fault("adr", "hazardous", "price", (
        "the dangerous-goods surcharge is missing from the total",
        "class 3 freight carries an ADR fee that was not added to the price",
        "the quote leaves out the hazmat handling charge"),
        kinds=("hazmat",), weight=3),
    Fault("currency", "currency", "price", (
        "the account is billed in EUR but the total was given in USD",
        "wrong currency: the customer's contract is in euros",
        "no conversion was made to the account's billing currency"),
        kinds=("export", "ftl"), calls=BASE, weight=2),
    Fault("lane", "lane", "route", (
        "the tariff of the {wrong} lane was used instead of {origin} to {dest}",
        "wrong origin terminal: the price comes from the {wrong} table",
        "the route looked up does not match the shipment's origin"), weight=2),
    Fault("transit", "transit time", "reply", (
        "the answer gives a price but no transit time",
        "the customer is not told how many days delivery takes",
        "missing delivery lead time"),
        reply="{origin} to {dest}: {currency} {total}, valid until {valid}.", weight=2,
        credit=0.5),
    Fault("validity", "valid until", "reply", (
        "the quote has no expiry date",
        "no validity period is stated, so the price could be held to indefinitely",
        "the reply should say how long the offer stands"),
        reply="{origin} to {dest}: {currency} {total}, transit {transit} days.", weight=2,
        credit=0.5),
)

CITIES = ("Rotterdam", "Hamburg", "Lyon", "Milan", "Warsaw", "Barcelona", "Antwerp",
          "Prague")


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    origin, dest, wrong = rng.sample(CITIES, 3)
    return {"origin": origin, "dest": dest, "wrong": f"{wrong}-{dest}",
            "weight": str(rng.randint(8, 240) * 100), "day": rng.choice(("Monday",
                                                                          "Wednesday")),
            "currency": "EUR", "total": money(rng, 900, 9800), "diff": money(rng, 20, 400),
            "transit": str(rng.randint(2, 21)), "valid": rng.choice(("the 30th", "Friday")),
            "ref": ref(rng, "Q", 7)}


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """A sentence naming the quote, then the problems opened with "Found,", "Also," or
    "Finally,"."""
    head = rng.choice(("Quote checked against the tariff.",
                       "I re-priced this shipment and the quote is not right."))
    texts = [f"{'Found' if i == 0 else 'Finally' if i == len(causes) - 1 else 'Also'}, "
             f"{c.text}." for i, c in enumerate(causes)]
    return " ".join([head, *texts])


SPEC = Spec("freight_quotes", KINDS, FAULTS, ("price", "route", "reply"), READ, facts,
            layout, ("Quote checked against the tariff: price, route and reply are right.",))


class FreightQuotesAdapter(SimAdapter):
    """The freight quoting agent (see the module docstring)."""

    spec = SPEC
