"""An adapter record built wrong, in one line: the bad field, the name it probably meant and
the record's fields.
"""

from __future__ import annotations

import difflib

from pydantic import ValidationError

from capevolve.adapter import Rollout, Score, Task, ToolCall

RECORDS = {cls.__name__: cls for cls in (Task, Rollout, ToolCall, Score)}


def record_error(exc: BaseException) -> str | None:
    """The one-line message, or None when ``exc`` is not a validation error of a record."""
    if not isinstance(exc, ValidationError) or exc.title not in RECORDS:
        return None
    fields = list(RECORDS[exc.title].model_fields)
    found = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or exc.title
        if error["type"] == "extra_forbidden":
            near = difflib.get_close_matches(where, fields, n=1, cutoff=0.5)
            found.append(f"unknown field {where!r}"
                         + (f" (did you mean {near[0]!r}?)" if near else ""))
        else:
            found.append(f"{where}: {error['msg']}")
    return (f"{exc.title}: {'; '.join(found)}; {exc.title} fields: {', '.join(fields)} "
            "(docs/adapter.md, The records)")
