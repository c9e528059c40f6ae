"""sales_lookup: an analyst agent answering sales questions from a reporting warehouse.

The agent lists tables, runs SQL and answers with one figure; every call is a read. The
grader re-runs a reference query and writes what it compared (the reference and the
reported figure, both numbers) before its explanation, with no part labels; the score
parts (value, scope, format) are only in the score. Several causes end in the same wrong
total, so their explanations share words (revenue, total, region, quarter).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec  # noqa: E402

READ = frozenset({"list_tables", "describe_table", "run_query", "get_fx_rates"})
QUERY = ("list_tables", "describe_table", "run_query")

KINDS = (
    Kind("revenue", "What was net revenue for {region} in Q{q} FY{year}?",
         (*QUERY, "get_fx_rates", "run_query"),
         "Net revenue for {region} in Q{q} FY{year} was ${value}M.", 3),
    Kind("top_product", "Which product line sold the most in {region} last quarter, and "
         "how much?", QUERY, "{product} led {region} with ${value}M in net sales.", 2),
    Kind("growth", "How much did {region} grow quarter over quarter in Q{q} FY{year}?",
         (*QUERY, "run_query"), "{region} grew {pct}% quarter over quarter in Q{q} "
         "FY{year}.", 2),
)

FAULTS = (
    Fault("gross_vs_net", "returns", "value", (
        "Returns were not subtracted, so gross revenue was reported instead of net.",
        "The figure includes refunded orders; net revenue excludes them.",
        "Answer used the gross_amount column where the question asks for sales after "
        "returns."), weight=3),
    Fault("fiscal_calendar", "fiscal", "scope", (
        "Q{q} was read as a calendar quarter, but the company's fiscal year starts in May.",
        "Wrong period: fiscal quarters are offset from calendar ones and the query used "
        "calendar dates.",
        "The date filter covers calendar Q{q} rather than fiscal Q{q} FY{year}."),
        kinds=("revenue", "growth"), weight=3),
    Fault("currency", "convert", "value", (
        "Amounts in EUR and GBP were summed without converting to USD.",
        "No currency conversion: local-currency totals were added as if they were dollars.",
        "The total mixes currencies; each country's sales must be turned into USD at the "
        "month's rate first."), kinds=("revenue", "top_product"), calls=QUERY, weight=3),
    Fault("partner_channel", "partner", "scope", (
        "The {region} filter also picked up rows tagged {region}-Partner, which belong to "
        "the channel segment.",
        "Region filter was too broad: partner-channel sales were counted in {region}.",
        "Included channel-partner revenue that a direct-sales figure must leave out."),
        weight=2),
    Fault("units", "thousands", "format", (
        "The value is reported in thousands without saying so.",
        "Unit missing: the number is in thousands of dollars but reads as dollars.",
        "Magnitude is ambiguous, the reply gives {thousands} with no K or thousand."),
        reply="Net revenue for {region} in Q{q} FY{year} was {thousands}.", kinds=("revenue",),
        weight=2, credit=0.5),
    Fault("test_accounts", "test accounts", "value", (
        "Internal test accounts (customer_type = 'test') were not excluded.",
        "Orders placed by QA test customers inflate the total.",
        "The sum counts test-account orders that the reporting rules drop."), weight=2),
    Fault("growth_base", "base quarter", "value", (
        "Growth was divided by the current quarter instead of the previous one.",
        "The percentage uses the wrong base: quarter-over-quarter growth divides by the "
        "prior quarter.",
        "Reported {pct}% but computed against this quarter's revenue, not last quarter's."),
        kinds=("growth",), weight=2),
)

REGIONS = ("EMEA", "APAC", "LATAM", "North America", "DACH", "Nordics")
PRODUCTS = ("Cloud Storage", "Analytics Suite", "Edge Devices", "Support Plans")


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    value = rng.uniform(0.8, 40.0)
    return {"region": rng.choice(REGIONS), "q": str(rng.randint(1, 4)),
            "year": str(rng.choice((2024, 2025))), "value": f"{value:.2f}",
            "thousands": f"{value * 1000:,.0f}", "product": rng.choice(PRODUCTS),
            "pct": f"{rng.uniform(-8, 25):.1f}", "ref": f"Q-{rng.randint(100, 999)}"}


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """The checker's comparison line, then the explanations in random order."""
    expected = rng.uniform(1, 40)
    got = expected * rng.uniform(1.05, 1.6)
    sentences = [c.text for c in causes]
    rng.shuffle(sentences)
    head = (f"Reference query returned {expected:,.3f}M; the answer reported {got:,.3f}M."
            if parts["value"] < 1 or parts["scope"] < 1 else
            "Reference query result matches the figure.")
    return " ".join([head, *sentences])


SPEC = Spec("sales_lookup", KINDS, FAULTS, ("value", "scope", "format"), READ, facts,
            layout, ("Reference query result matches the figure. Period, scope and unit "
                     "are right.",))


class SalesLookupAdapter(SimAdapter):
    """The sales analyst (see the module docstring)."""

    spec = SPEC
