"""clinic_booking: a front-desk agent that books, moves and cancels clinic appointments.

The grader is a scheduling QA checklist: a header line, then one labelled line per score
part (``booking:``, ``policy:``, ``message:``), a part without a problem written as a pass
line ("no issues found"). Two faults are mechanical: a slot put on hold while the patient
is told it is booked, and a move announced with only searches made.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec, ref  # noqa: E402

READ = frozenset({"find_patient", "search_slots", "check_insurance", "get_referrals"})
BOOK = ("find_patient", "check_insurance", "search_slots", "book_appointment",
        "send_confirmation")

KINDS = (
    Kind("new_visit", "Hello, this is {patient}. I need to see {doctor} about my {reason}, "
         "ideally {day}.", BOOK,
         "Your appointment with {doctor} is confirmed for {day} at {time} (Pacific time). "
         "Please arrive 10 minutes early.", 3),
    Kind("specialist", "{patient} here, my GP said I should see a cardiologist. Can you "
         "find me something {day}?",
         ("find_patient", "get_referrals", "check_insurance", "search_slots",
          "book_appointment", "send_confirmation"),
         "You're all set with {doctor} (cardiology) on {day} at {time} Pacific. Bring your "
         "referral letter.", 2),
    Kind("lab", "Can I get my blood test done {day}? Name's {patient}.", BOOK,
         "Your lab appointment is confirmed for {day} at {time} Pacific. Please don't eat "
         "for 12 hours before.", 2),
    Kind("move", "Hi, {patient}: I can't make my appointment, can we move it to {day}?",
         ("find_patient", "search_slots", "reschedule_appointment", "send_confirmation"),
         "Done: your visit with {doctor} is now on {day} at {time} Pacific.", 2),
    Kind("cancel", "Please cancel my appointment tomorrow morning, {patient}.",
         ("find_patient", "cancel_appointment", "charge_late_fee", "send_confirmation"),
         "Your appointment has been cancelled. As it was within 24 hours, a $40 late fee "
         "applies.", 1),
)

FAULTS = (
    Fault("double_booking", "overlap", "booking", (
        "Slot {time} on {day} overlaps the patient's existing appointment with {other}.",
        "The new appointment clashes with one already on the patient's calendar ({day} "
        "{time}).",
        "Booked on top of an existing visit: the patient is already seen at {time} that "
        "day."), kinds=("new_visit", "lab", "move"), weight=3),
    Fault("referral", "referral", "policy", (
        "A cardiology visit requires a GP referral on file; none was checked before "
        "booking.",
        "Specialist appointment made without verifying the referral.",
        "No referral on record for this specialist booking and the agent did not ask for "
        "one."), kinds=("specialist",), calls=BOOK, weight=3),
    Fault("insurance", "coverage", "policy", (
        "Insurance eligibility was not verified before the visit was scheduled.",
        "The patient's {plan} coverage was not confirmed prior to booking.",
        "Coverage check skipped: the plan on file ({plan}) may not include this service."),
        kinds=("new_visit", "specialist", "lab"),
        calls=("find_patient", "search_slots", "book_appointment", "send_confirmation"),
        weight=3),
    Fault("timezone", "time zone", "message", (
        "The confirmation states {time} Eastern, but the clinic runs on Pacific time.",
        "Appointment time was given in the wrong time zone.",
        "Time zone in the message does not match the clinic's local time (Pacific)."),
        kinds=("new_visit", "specialist", "move"),
        reply="Your appointment with {doctor} is confirmed for {day} at {time} Eastern.",
        weight=2, credit=0.5),
    Fault("fasting", "fasting", "message", (
        "Lab work needs 12 hours of fasting and the patient was not told.",
        "The fasting instructions for the blood test were left out of the message.",
        "Patient should have been reminded not to eat for 12 hours before the draw."),
        kinds=("lab",), reply="Your lab appointment is confirmed for {day} at {time} "
        "Pacific.", weight=3, credit=0.5),
    Fault("hold_only", "book_appointment", "booking", (
        "The slot was only put on hold and expires in 15 minutes; no appointment exists.",
        "Nothing was booked: the agent placed a temporary hold instead of a booking.",
        "A hold on {day} {time} is not an appointment; the booking step is missing."),
        kinds=("new_visit", "lab"),
        calls=("find_patient", "check_insurance", "search_slots", "hold_slot"),
        reply="Your appointment has been booked for {day} at {time}.", weight=2),
    Fault("late_fee", "late fee", "policy", (
        "Late cancellation (under 24 hours) was processed without applying the $40 fee.",
        "The $40 late-cancellation charge should have been applied.",
        "Cancelling within 24 hours of the visit carries a fee; it was waived with no "
        "authority to do so."), kinds=("cancel",),
        calls=("find_patient", "cancel_appointment", "send_confirmation"),
        reply="Your appointment has been cancelled.", weight=2),
    Fault("narrated_move", "reschedule_appointment", "booking", (
        "The appointment is still at its original time; no change was recorded.",
        "The calendar shows the old slot although the patient was told the visit moved.",
        "Moving the visit was announced but never carried out."), kinds=("move",),
        calls=("find_patient", "search_slots"),
        reply="Your appointment has been rescheduled to {day} at {time}.", weight=2),
)

PATIENTS = ("Maria Gonzalez", "Tom Becker", "Aisha Khan", "Liam O'Neill", "Yuki Tanaka",
            "Grace Okafor", "Peter Novak")
DOCTORS = ("Dr Patel", "Dr Lindqvist", "Dr Osei", "Dr Moreau", "Dr Chen")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "next Monday",
        "next Wednesday")
REASONS = ("back pain", "persistent cough", "annual check-up", "skin rash", "migraines")
PLANS = ("BlueShield PPO", "Kaiser HMO", "Aetna Select", "Medicare Part B")


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    doctor, other = rng.sample(DOCTORS, 2)
    return {"ref": ref(rng, "APT"), "patient": rng.choice(PATIENTS), "doctor": doctor,
            "other": other, "day": rng.choice(DAYS), "reason": rng.choice(REASONS),
            "time": f"{rng.randint(8, 16)}:{rng.choice(('00', '15', '30', '45'))}",
            "plan": rng.choice(PLANS)}


PASS_LINE = {"booking": "booking: no issues found.", "policy": "policy: no issues found.",
             "message": "message: no issues found."}


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """The QA checklist: a header, then a line per part in a fixed order."""
    lines = [f"Scheduling QA review #{rng.randint(1000, 9999)}"]
    for part in ("booking", "policy", "message"):
        mine = [c.text for c in causes if c.part == part]
        lines.append(f"{part}: {' '.join(mine)}" if mine else PASS_LINE[part])
    return "\n".join(lines)


SPEC = Spec("clinic_booking", KINDS, FAULTS, ("booking", "policy", "message"), READ, facts,
            layout, ("Scheduling QA review: booking: no issues found.\npolicy: no issues "
                     "found.\nmessage: no issues found.",))


class ClinicBookingAdapter(SimAdapter):
    """The clinic front desk (see the module docstring)."""

    spec = SPEC
