"""payroll_query: an HR analyst agent answering questions about pay from the payroll system.

Every call is a read: the agent finds the employee or the department, pulls payslips and
the pay rules, and answers with a figure. The grader is a model asked for JSON; its
feedback is the JSON text: {"verdict": "incorrect", "problems": [...]}, one string per
problem, worded freely. Score parts: figure, scope, explanation.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec, ref  # noqa: E402

READ = frozenset({"find_employee", "get_payslips", "get_pay_rules", "list_department",
                  "get_contract"})

KINDS = (
    Kind("net_pay", "What was {name}'s net pay in {month}?",
         ("find_employee", "get_payslips"), "{name}'s net pay in {month} was ${net}.", 3),
    Kind("overtime", "How much overtime did {dept} pay in {month}?",
         ("list_department", "get_payslips", "get_pay_rules"),
         "{dept} paid ${amount} of overtime in {month}.", 3),
    Kind("headcount_cost", "What does {dept} cost per month in salaries?",
         ("list_department", "get_payslips", "get_contract"),
         "{dept} costs ${amount} a month in gross salaries for {heads} people.", 2),
    Kind("bonus", "Did {name} get the Q{q} bonus, and how much?",
         ("find_employee", "get_payslips", "get_pay_rules"),
         "Yes, {name} received a Q{q} bonus of ${bonus}, paid with the {month} salary.", 2),
)

FAULTS = (
    Fault("gross_net", "net", "figure", (
        "The answer is the gross amount; net pay is after tax and social charges.",
        "Taxes and contributions were not deducted from the {month} figure.",
        "Gross salary reported where the question asked for take-home pay."),
        kinds=("net_pay",), weight=3),
    Fault("leavers", "leavers", "scope", (
        "People who left {dept} before {month} are still counted.",
        "The department list includes former employees.",
        "Terminated staff were not filtered out of the {dept} total."),
        kinds=("overtime", "headcount_cost"), weight=3),
    Fault("contractors", "contractors", "scope", (
        "Contractor invoices were added to the salary cost.",
        "External contractors are not employees and must be left out of payroll figures.",
        "The {dept} figure mixes in agency staff paid through invoices."),
        kinds=("headcount_cost", "overtime"), weight=2),
    Fault("overtime_rate", "time and a half", "figure", (
        "Overtime hours were valued at the normal hourly rate instead of 1.5x.",
        "The overtime premium is missing: hours were paid as regular time.",
        "Hours beyond 40 a week earn time and a half; the calculation used the base "
        "rate."), kinds=("overtime",), weight=2),
    Fault("bonus_month", "paid in", "figure", (
        "The Q{q} bonus is paid the month after the quarter ends, not in {month}.",
        "The wrong payslip was read for the bonus; it appears one month later.",
        "Bonus looked up in the quarter's last month, where it is never paid."),
        kinds=("bonus",), weight=2),
    Fault("privacy", "aggregate", "explanation", (
        "Individual salaries of {dept} members were listed in the answer.",
        "The reply exposes what named colleagues earn.",
        "Per-person pay must not be disclosed; only the total may be given."),
        kinds=("headcount_cost", "overtime"),
        reply="{dept} costs ${amount} a month: {name} earns ${net}, and the others are "
              "listed below.", weight=2, credit=0.0),
    Fault("period", "which month", "explanation", (
        "The answer does not say which month the figure covers.",
        "No period is given with the number.",
        "It is unclear whether the amount is for {month} or year to date."),
        kinds=("net_pay", "overtime"), reply="The amount was ${amount}.", weight=2,
        credit=0.5),
)

NAMES = ("Priya Raman", "Tomasz Wojcik", "Aisha Bello", "Henrik Lund", "Marta Silva")
DEPTS = ("Logistics", "Customer Care", "Engineering", "Finance", "Facilities")
MONTHS = ("January", "March", "June", "September", "November")


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    return {"name": rng.choice(NAMES), "dept": rng.choice(DEPTS), "month": rng.choice(MONTHS),
            "q": str(rng.randint(1, 4)), "net": f"{rng.randint(2100, 6400):,}",
            "amount": f"{rng.randint(8, 480) * 1000:,}", "heads": str(rng.randint(6, 60)),
            "bonus": f"{rng.randint(5, 40) * 100:,}", "ref": ref(rng, "EMP", 5)}


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """The judge's JSON: a verdict and one string per problem, in the order given."""
    return json.dumps({"verdict": "incorrect", "problems": [c.text for c in causes]})


SPEC = Spec("payroll_query", KINDS, FAULTS, ("figure", "scope", "explanation"), READ, facts,
            layout, ('{"verdict": "correct", "problems": []}',))


class PayrollQueryAdapter(SimAdapter):
    """The payroll analyst (see the module docstring)."""

    spec = SPEC
