"""pharmacy_refill: a pharmacy's refill assistant answering patients' messages.

The agent looks the patient and the prescription up, checks interactions, submits the
refill (or asks the prescriber for a renewal) and tells the patient when to pick it up.
The reviewer is a pharmacist who writes one line: a dated opener, then the findings run
together with semicolons, in no fixed order. Score parts: safety, fulfilment, message.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec, ref  # noqa: E402

READ = frozenset({"lookup_patient", "get_prescription", "check_interactions",
                  "get_stock"})
USUAL = ("lookup_patient", "get_prescription", "check_interactions", "get_stock",
         "submit_refill", "schedule_pickup")

KINDS = (
    Kind("refill", "Hi, can I get my {drug} refilled? Rx {rx}.", USUAL,
         "Your refill of {drug} is confirmed. It will be ready for pickup {pickup}.", 4),
    Kind("early", "I'm going away next week, can I refill my {drug} early? Rx {rx}.",
         USUAL, "Your early refill is approved. {drug} will be ready {pickup}.", 2),
    Kind("expired", "Please refill {drug}, Rx {rx}. I think it ran out of refills.",
         ("lookup_patient", "get_prescription", "request_renewal", "send_message"),
         "Your prescription has no refills left, so we've asked Dr. {doctor} to renew it. "
         "We'll text you once it's approved.", 2),
    Kind("new_med", "Dr. {doctor} sent in a new prescription for {drug}. When can I get "
         "it?", USUAL, "Your new prescription for {drug} is ready {pickup}. A pharmacist "
         "can go over how to take it when you come in.", 2),
)

FAULTS = (
    Fault("interaction", "interaction", "safety", (
        "no interaction screen was run against the patient's current {other}",
        "{drug} was dispensed without checking it against {other}, which the patient "
        "also takes",
        "the drug-drug check was skipped even though the profile lists {other}"),
        kinds=("refill", "new_med"),
        calls=("lookup_patient", "get_prescription", "get_stock", "submit_refill",
               "schedule_pickup"), weight=3),
    Fault("controlled", "controlled", "safety", (
        "{drug} is a controlled substance and may not be refilled before day 28",
        "early refills of scheduled medicines need the prescriber's sign-off, which was "
        "not obtained",
        "this was released {days} days early although state rules forbid early fills of "
        "controlled drugs"), kinds=("early",), weight=3),
    Fault("renewal", "renewal", "fulfilment", (
        "Rx {rx} has zero refills remaining; the fill should have waited for a renewal",
        "the prescription had expired and the agent filled it instead of contacting Dr. "
        "{doctor}",
        "a refill went out on a prescription with no refills left"),
        kinds=("expired",), calls=("lookup_patient", "get_prescription", "submit_refill",
                                   "schedule_pickup"),
        reply="Your refill of {drug} is confirmed. It will be ready for pickup {pickup}.",
        weight=3),
    Fault("narrated_refill", "submit_refill", "fulfilment", (
        "nothing is in the fill queue for Rx {rx} although the patient was told it is "
        "ready",
        "the refill was never submitted; the message promising a pickup is wrong",
        "the patient will arrive to find no {drug}: no fill order exists"),
        kinds=("refill", "new_med"),
        calls=("lookup_patient", "get_prescription", "check_interactions", "get_stock",
               "send_message"),
        reply="Your {drug} has been refilled and will be ready {pickup}.", weight=2),
    Fault("stock", "stock", "fulfilment", (
        "{drug} is out of stock at this branch until {restock}; the pickup time given "
        "cannot be met",
        "the shelf count for {drug} is zero, yet same-day pickup was promised",
        "inventory was not considered: the branch has none of this medicine before "
        "{restock}"), kinds=("refill", "early"),
        calls=("lookup_patient", "get_prescription", "check_interactions", "submit_refill",
               "schedule_pickup"), weight=2),
    Fault("pickup", "pickup window", "message", (
        "the reply does not say when the order can be collected",
        "the patient is not given a pickup time",
        "no collection window is mentioned"),
        kinds=("refill", "early"), reply="Your refill of {drug} is confirmed.", weight=2,
        credit=0.5),
    Fault("counseling", "counsel", "message", (
        "a first fill of {drug} should come with an offer of pharmacist counseling",
        "the message never offers to explain how to take the new medicine",
        "new-medication counseling was not offered to the patient"),
        kinds=("new_med",), reply="Your new prescription for {drug} is ready {pickup}.",
        weight=2, credit=0.5),
)

DRUGS = ("lisinopril 10 mg", "metformin 500 mg", "atorvastatin 20 mg", "sertraline 50 mg",
         "zolpidem 10 mg", "amoxicillin 500 mg", "levothyroxine 75 mcg")
OTHERS = ("warfarin", "clarithromycin", "fluconazole", "tramadol", "lithium")
DOCTORS = ("Okafor", "Lindqvist", "Ramirez", "Chen", "Novak")
PICKUPS = ("today after 4 pm", "tomorrow morning", "on Thursday after noon")


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    return {"drug": rng.choice(DRUGS), "other": rng.choice(OTHERS), "rx": ref(rng, "RX", 7),
            "doctor": rng.choice(DOCTORS), "pickup": rng.choice(PICKUPS),
            "days": str(rng.randint(3, 12)), "restock": rng.choice(("Monday", "next week")),
            "ref": ref(rng, "PT", 6)}


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """One line: a dated opener, the findings in random order joined by semicolons."""
    findings = [c.text for c in causes]
    rng.shuffle(findings)
    day = rng.randint(1, 28)
    return f"Pharmacist review {day:02d}/11: " + "; ".join(findings) + "."


SPEC = Spec("pharmacy_refill", KINDS, FAULTS, ("safety", "fulfilment", "message"), READ,
            facts, layout, ("Pharmacist review: dispensed correctly, message complete.",))


class PharmacyRefillAdapter(SimAdapter):
    """The pharmacy refill assistant (see the module docstring)."""

    spec = SPEC
