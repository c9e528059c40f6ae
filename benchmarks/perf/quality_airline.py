"""A second diagnose-quality benchmark, worded unlike retail: airline rebooking support.

Rows are written straight into a run dir (real Parquet), each failing trial with known
causes. Nothing about it follows retail's scorer: no part labels in the feedback (the
parts are only in ``score_parts``: itinerary / policy / reply), a grader preamble on about
85% of failures only, findings as free prose in random order, three phrasings per cause
that share little beyond the cause's own words, template words shared *across* causes
(passenger, reply, fare, flight, booking, transfer), quoted booking references, flight
numbers, dates and amounts. Two causes are mechanical: a rebooking narrated with only read
calls (narrated_without_action), and an escalation claimed while the only write was a note
(claimed_without_matching_action). About a third of the failing tasks have two causes,
and trials of a task fail or pass independently (flaky tasks, consistent ones).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

from diagnose_quality import Item

from capevolve._store.rollouts.writer import write_part
from capevolve._store.rundir import RunDir
from capevolve._store.splits import Splits

PREAMBLE = "Airline support rubric v3 -- grader notes for this conversation:"
PASS_FEEDBACK = "All checks passed: the itinerary, the policy and the reply are correct."
# rule -> (score part, phrasings, tool calls of a trial showing it, final message)
CAUSES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], str]] = {
    "verify_identity": ("policy", (
        "The booking {ref} was changed before the passenger's identity was verified.",
        "No identity check happened before modifying reservation {ref}.",
        "Identity of the traveller was never verified prior to the change of flight {fl}."),
        ("get_booking", "change_flight"), "Your flight has been changed to {fl}."),
    "fare_difference": ("reply", (
        "The reply does not mention the fare difference of ${amt}.",
        "Fare difference (${amt}) was not communicated to the passenger.",
        "The passenger was never told the fare difference between the old and new flight."),
        ("get_booking", "search_flights", "change_flight"),
        "Your flight has been changed to {fl}."),
    "refund_credit": ("itinerary", (
        "Issued a cash refund on a non-refundable fare; policy allows only a travel credit.",
        "A refund of ${amt} went to the card although ticket {ref} is non-refundable.",
        "Non-refundable ticket {ref} was refunded instead of turned into travel credit."),
        ("get_booking", "issue_refund"), "I've refunded ${amt} to your card."),
    "wrong_date": ("itinerary", (
        "Rebooked onto flight {fl} on the wrong date (the passenger asked for {date}).",
        "The new flight's date does not match the date the passenger requested.",
        "change_flight used a departure date other than the requested {date}."),
        ("get_booking", "search_flights", "change_flight"),
        "Your flight has been changed to {fl}."),
    "bag_fee": ("itinerary", (
        "A checked-bag fee of ${amt} was charged although the fare includes one bag.",
        "Charged for a checked bag that the fare already covers.",
        "The included baggage allowance was ignored and a bag fee of ${amt} added."),
        ("get_booking", "add_bag"), "Your checked bag has been added (fee ${amt})."),
    "seat_told": ("reply", (
        "The assigned seat {seat} was not stated in the reply.",
        "The reply never says which seat was assigned.",
        "Seat assignment ({seat}) was left out of the final message."),
        ("get_booking", "assign_seat"), "All set, enjoy your trip."),
    "medical_transfer": ("policy", (
        "A request for medical assistance must go to a specialist agent, but no transfer "
        "happened.",
        "The passenger needed medical assistance and was not transferred to a specialist.",
        "Medical-assistance requests require a specialist handoff; none was made."),
        ("get_booking", "add_bag"), "Your checked bag has been added (fee ${amt})."),
    "narrated_rebook": ("itinerary", (
        "The itinerary is unchanged even though the final message says the flight was "
        "rebooked.",
        "No change is recorded in booking {ref}, yet the reply claims the rebooking is done.",
        "Booking {ref} still shows the original flight; the reply said otherwise."),
        ("get_booking", "search_flights"), "Your flight has been rebooked to {fl}."),
    "claimed_escalation": ("policy", (
        "The reply says the case was escalated, but only a note was added; nobody took over.",
        "Escalation was announced to the passenger without any handoff to a supervisor.",
        "A supervisor escalation was promised as done; the booking only got an internal "
        "note."),
        ("get_booking", "add_note"), "I've escalated your case to a supervisor."),
}
WEIGHTS = {"verify_identity": 5, "fare_difference": 5, "refund_credit": 3, "wrong_date": 3,
           "bag_fee": 3, "seat_told": 3, "medical_transfer": 2, "narrated_rebook": 2,
           "claimed_escalation": 2}
READ_ONLY = ("get_booking", "search_flights")


def _fill(text: str, rng: random.Random) -> str:
    ref = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(6))
    return text.format(ref=f'"{ref}"', fl=f"LX{rng.randint(100, 999)}",
                       amt=f"{rng.randint(20, 400)}.{rng.randint(0, 99):02d}",
                       date=f"2025-0{rng.randint(1, 9)}-{rng.randint(10, 28)}",
                       seat=f"{rng.randint(1, 40)}{rng.choice('ABCDEF')}")


def _trial_row(rng: random.Random, causes: list[str]) -> tuple[dict, list[tuple[str, str]]]:
    """Feedback, parts, calls and final message of one trial failing with ``causes``."""
    sentences = [(rule, _fill(rng.choice(CAUSES[rule][1]), rng)) for rule in causes]
    rng.shuffle(sentences)
    parts = {"itinerary": 1.0, "policy": 1.0, "reply": 1.0}
    for rule in causes:
        parts[CAUSES[rule][0]] = 0.0
    main = causes[0]
    tools = list(CAUSES[main][2])
    final = _fill(CAUSES[main][3], rng)
    if main in ("narrated_rebook", "claimed_escalation"):  # the mechanism decides the calls
        pass
    elif len(causes) > 1 and any(c in ("narrated_rebook", "claimed_escalation")
                                 for c in causes):
        other = next(c for c in causes if c in ("narrated_rebook", "claimed_escalation"))
        tools, final = list(CAUSES[other][2]), _fill(CAUSES[other][3], rng)
    calls = [{"name": t, "arguments": {"booking": "x"},
              "mutates": False if t in READ_ONLY else None} for t in tools]
    preamble = PREAMBLE + " " if rng.random() < 0.85 else ""
    feedback = preamble + " ".join(text for _, text in sentences)
    return ({"feedback": feedback, "score_parts": json.dumps(parts), "output": final,
             "tool_calls": json.dumps(calls),
             "reward": round(sum(parts.values()) / 3, 6)}, sentences)


def build_run(root: Path, n_tasks: int = 60, trials: int = 3,
              seed: int = 7) -> tuple[RunDir, list[Item]]:
    """A run dir whose seed has failing val rollouts with known causes, and the items."""
    rng = random.Random(seed)
    ids = [f"air_{i:03d}" for i in range(n_tasks)]
    t0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    (root / "seed").mkdir(parents=True)
    (root / "seed" / "prompt.md").write_text("help passengers")
    manifest = {"run_id": "airline", "project_dir": str(root / "none"),
                "config": {"name": "airline", "adapter": "adapter.py:Adapter",
                           "capability_path": "seed"},
                "created_at": t0.isoformat(), "versions": {}, "seed": 0, "host": "bench",
                "n_tasks": n_tasks + 2}
    run = RunDir.create(root / "run", manifest, Splits(train=("x0",), val=tuple(ids),
                                                       test=("z0",), seed=0), root / "seed")
    rules, weights = list(WEIGHTS), list(WEIGHTS.values())
    rows, items = [], []
    for task in ids:
        causes = rng.choices(rules, weights)
        if rng.random() < 0.35:
            extra = rng.choices(rules, weights)[0]
            if CAUSES[extra][0] != CAUSES[causes[0]][0]:
                causes.append(extra)
        fail_p = rng.choice((0.5, 1.0, 1.0))
        for trial in range(trials):
            if task.endswith(("0", "5")) or rng.random() > fail_p:
                row = {"feedback": PASS_FEEDBACK, "reward": 1.0, "output": "All set.",
                       "score_parts": json.dumps({"itinerary": 1.0, "policy": 1.0,
                                                  "reply": 1.0}),
                       "tool_calls": json.dumps([{"name": "get_booking", "arguments": {},
                                                  "mutates": False}])}
            else:
                row, sentences = _trial_row(rng, causes)
                items += [Item(task, trial, None, text, rule) for rule, text in sentences]
            rows.append({"schema_version": 1, "run_id": "airline", "eval_id": "val__seed__k3",
                         "split": "val", "candidate_id": "seed", "candidate_hash": "h",
                         "task_id": task, "trial": trial, "seed": len(rows), "attempts": 1,
                         "inputs": json.dumps(f"help with {task}"),
                         "finished_at": t0 + dt.timedelta(seconds=len(rows)), **row})
    write_part(rows, run.layout.partition("val", "seed") / "val__seed__k3-airline-00000.parquet")
    return run, items
