"""Which texts :func:`json.loads` accepts, decided for a whole column at once.

A trajectory file holds each JSON column as stored when it is valid JSON, else as a
string, so every failing rollout's trace (kilobytes each) needs a verdict. Parsing them
all in Python only to throw the values away costs more than the rest of the file. Here
DuckDB's ``json_valid`` (C++, off the interpreter) reads the column first, and a text it
accepts counts as accepted without Python when nothing in it reaches past what both
parsers accept alike. DuckDB's parser accepts more than ``json.loads`` in four ways --
trailing commas, ``nan`` / ``inf`` literals in any case, integers beyond Python's 4,300
digits, and nesting deeper than Python's recursion -- so a text that shows any of them
anywhere (inside a string too: the check is on the raw text, so it only ever sends more
texts to Python) is decided by :func:`capevolve.diagnose.jsontext.is_json`. Everything
DuckDB refuses is decided by Python as well (it refuses some texts Python accepts, such
as a lone surrogate escape). The verdicts are therefore exactly ``is_json``'s.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from capevolve.diagnose.jsontext import is_json

BRACKETS = 400
"""A text with more opening brackets than this (a possible nesting depth) goes to Python."""

_BEYOND = (
    r"regexp_matches(t, '(?:^|[\[,:])\s*[-+]?\s*(?i:nan|inf)')"  # nan / inf, any case
    r" OR regexp_matches(t, ',\s*[\]}]')"  # a trailing comma
    r" OR regexp_matches(t, '[0-9]{1000}')"  # a long digit run (Python: 4,300 at most)
    f" OR length(t) - length(replace(replace(t, '[', ''), '{{', '')) > {BRACKETS}"
)


def accepted(*columns: list[str | None]) -> list[list[bool]]:
    """Per column, per text, whether ``json.loads`` accepts it (None: False), exactly as
    ``is_json`` says; one in-memory DuckDB connection for all the columns."""
    out: list[list[bool]] = []
    con = duckdb.connect(":memory:")
    try:
        for texts in columns:
            verdict = [False] * len(texts)
            if texts:
                con.register("texts", pa.table({"i": pa.array(range(len(texts)), pa.int64()),
                                                "t": pa.array(texts, pa.large_string())}))
                sure = con.execute(f"SELECT i FROM texts WHERE t IS NOT NULL AND "
                                   f"json_valid(t) AND NOT ({_BEYOND})").fetchnumpy()["i"]
                con.unregister("texts")
                for i in sure.tolist():
                    verdict[i] = True
            out.append([v or (t is not None and is_json(t))
                        for v, t in zip(verdict, texts, strict=True)])
    finally:
        con.close()
    return out
