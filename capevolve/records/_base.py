"""The base of every stored record, and the one way to read one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from capevolve.config_models import one_line
from capevolve.errors import RunDirError

FORMAT_VERSION = 1
"""The format version of every document."""

EVENT_KIND_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
"""A user event kind."""

JsonScalar = str | int | float | bool | None


class Result(BaseModel):
    """Base of the verbs' results: frozen, no unknown keys."""

    # no use_attribute_docstrings: it would parse every model's source at import, and nothing
    # reads the descriptions; defer_build: a validator is built on first use
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON a verb returned: the fields it set."""
        return self.model_dump(mode="json", exclude_unset=True)


class Record(Result):
    """Base of every stored document: a result with finite numbers and a format version."""

    model_config = ConfigDict(allow_inf_nan=False)

    format_version: int = FORMAT_VERSION
    """The document format; readers refuse an unknown one."""

    def to_json(self) -> dict[str, Any]:
        """The JSON form written to disk."""
        return self.model_dump(mode="json")


R = TypeVar("R", bound=Record)


# -- reading --------------------------------------------------------------------------------

def check_version(data: Any, source: str) -> Mapping[str, Any]:
    """``data`` as a mapping of a readable format_version, else RunDirError."""
    if not isinstance(data, Mapping):
        raise RunDirError(f"{source}: not a JSON object")
    version = data.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise RunDirError(f"{source}: format_version {version!r} is not one this capevolve "
                          f"reads (it reads {FORMAT_VERSION})")
    return data


def parse_record(model: type[R], data: Any, source: str) -> R:
    """``data`` as ``model``; a one-line RunDirError naming ``source``."""
    check_version(data, source)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RunDirError(f"{source}: invalid {model.__name__}: {one_line(exc)}") from None
