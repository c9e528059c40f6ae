"""expense_review: a finance agent approving or rejecting the lines of expense reports.

The agent reads the report and the travel policy, approves or rejects each line, flags a
report for audit when it must, and sends the employee the decision; its replies say the
report "has been approved" and that the payment "is scheduled for the next payroll" (payroll
pays it: no tool of the agent's schedules anything). The grader lists its findings as
bullets, one per offending line with the line's merchant and amount, under a "Review of
report" header, and ends with a count. Score parts: compliance, amounts, audit,
communication.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec, money, ref  # noqa: E402

READ = frozenset({"get_report", "get_policy", "get_employee"})
REVIEW = ("get_report", "get_policy", "approve_item", "approve_item", "reject_item",
          "send_decision")

KINDS = (
    Kind("travel", "Please review expense report {rid} from {employee} (trip to {city}, "
         "{n} lines, ${total}).", REVIEW,
         "Your expense report {rid} has been approved. ${total} is scheduled for the next "
         "payroll run.", 3),
    Kind("mixed", "Expense report {rid} ({employee}, {n} lines) is waiting for review.",
         REVIEW, "Report {rid} reviewed: {n} lines approved, one rejected as a personal "
         "expense. The reimbursement is scheduled for the next payroll.", 2),
    Kind("large", "{employee} submitted report {rid} for the {city} offsite, ${big} in "
         "total.", ("get_report", "get_policy", "flag_for_audit", "approve_item",
                    "send_decision"),
         "Your expense report {rid} has been approved and sent to audit, as reports above "
         "$5,000 are.", 1),
)

FAULTS = (
    Fault("receipt", "receipt", "compliance", (
        "- Line {line} ({merchant}, ${amt}): approved without a receipt; anything over $75 "
        "needs one.",
        "- Line {line} ({merchant}, ${amt}): no receipt attached, so it cannot be paid yet.",
        "- Line {line} ({merchant}, ${amt}): the missing receipt should have been requested "
        "before approval."), weight=3),
    Fault("alcohol", "alcohol", "compliance", (
        "- Line {line} ({bar}, ${amt2}): the bar tab is alcohol, which is never "
        "reimbursable.",
        "- Line {line} ({bar}, ${amt2}): drinks were approved; the policy excludes alcohol.",
        "- Line {line} ({bar}, ${amt2}): alcoholic beverages should have been rejected."),
        kinds=("travel", "mixed"), weight=2),
    Fault("per_diem", "per diem", "amounts", (
        "- Line {line} ({restaurant}, ${meal}): dinner exceeds the ${limit} meal allowance "
        "for {city}; only ${limit} should be paid.",
        "- Line {line} ({restaurant}, ${meal}): paid in full although meals are capped at "
        "${limit} a day in {city}.",
        "- Line {line} ({restaurant}, ${meal}): the per diem for {city} is ${limit}; the "
        "excess should have been cut."), kinds=("travel", "large"), weight=3),
    Fault("duplicate", "duplicate", "amounts", (
        "- Lines {line} and {line2} ({merchant}, ${amt}): the same charge appears twice and "
        "both were paid.",
        "- Lines {line} and {line2} ({merchant}, ${amt}): duplicate submission, only one "
        "should be reimbursed.",
        "- Lines {line} and {line2} ({merchant}, ${amt}): one charge was claimed twice."),
        weight=2),
    Fault("mileage", "mileage", "amounts", (
        "- Line {line} (mileage, {miles} mi): paid at 0.70 a mile; the policy rate is 0.67.",
        "- Line {line} (mileage, {miles} mi): the per-mile rate used is above the current "
        "0.67 allowance.",
        "- Line {line} (mileage, {miles} mi): reimbursed with last year's car rate instead "
        "of 0.67."), kinds=("travel",), weight=2),
    Fault("audit", "audit", "audit", (
        "- Report total ${big} is above the $5,000 threshold and should have been flagged "
        "for audit.",
        "- Reports over $5,000 go to internal audit; this one (${big}) was approved "
        "directly.",
        "- No audit referral although the report exceeds $5,000."), kinds=("large",),
        calls=("get_report", "get_policy", "approve_item", "send_decision"),
        reply="Your expense report {rid} has been approved. ${big} is scheduled for the "
        "next payroll run.", weight=3),
    Fault("rejection_reason", "reason", "communication", (
        "- The employee is not told which line was rejected or why.",
        "- Decision message omits the rejected line and its reason.",
        "- The rejection reason was never communicated to the employee."),
        kinds=("mixed",), reply="Report {rid} has been processed.", weight=2, credit=0.5),
)

EMPLOYEES = ("Jordan Lee", "Priya Raman", "Marco Rossi", "Hannah Schmidt", "Kwame Mensah")
CITIES = ("Chicago", "London", "Singapore", "Austin", "Berlin", "Toronto")
MERCHANTS = ("Marriott Downtown", "Delta Air Lines", "Uber", "Hertz", "Staples", "Hilton")
BARS = ("The Rusty Anchor", "Skyline Lounge", "Hotel bar")
RESTAURANTS = ("Nobu", "Chez Marie", "The Capital Grille", "Sakura House")


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    line = rng.randint(2, 9)
    return {"rid": ref(rng, "EXP"), "employee": rng.choice(EMPLOYEES),
            "city": rng.choice(CITIES), "n": str(rng.randint(4, 12)),
            "total": f"{rng.randint(400, 4800):,}.{rng.randint(0, 99):02d}",
            "big": f"{rng.randint(5100, 14000):,}.{rng.randint(0, 99):02d}",
            "line": str(line), "line2": str(line + rng.randint(1, 3)),
            "merchant": rng.choice(MERCHANTS), "amt": money(rng, 80, 900),
            "bar": rng.choice(BARS), "amt2": money(rng, 25, 140),
            "restaurant": rng.choice(RESTAURANTS), "meal": money(rng, 95, 260),
            "limit": str(rng.choice((75, 80, 90))), "miles": str(rng.randint(40, 420)),
            "ref": ref(rng, "EXP")}


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """A header, one bullet per finding (in the report's line order, as given), a count."""
    n = len(causes)
    return "\n".join([f"Review of report: {n} issue{'s' if n > 1 else ''} found.",
                      *(c.text for c in causes), "Please correct and resubmit."])


SPEC = Spec("expense_review", KINDS, FAULTS, ("compliance", "amounts", "audit",
                                              "communication"),
            READ, facts, layout, ("Review of report: no issues found.",))


class ExpenseReviewAdapter(SimAdapter):
    """The expense reviewer (see the module docstring)."""

    spec = SPEC
