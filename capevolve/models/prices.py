"""Prices of model calls: from config, else the shipped ``genai-prices`` table."""

from __future__ import annotations

import contextlib

from pydantic import BaseModel, ConfigDict


class Price(BaseModel):
    """Dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float
    """Per million prompt tokens."""
    output: float
    """Per million completion tokens."""

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Dollars of one call."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


def table_price(model: str, base_url: str | None = None) -> Price | None:
    """The table's price of ``model`` (None: unknown)."""
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    for url in dict.fromkeys((base_url, None)):  # else (a gateway, self-hosted): the id alone
        with contextlib.suppress(LookupError):
            found = calc_price(usage, model, provider_api_url=url)
            return Price(input=float(found.input_price), output=float(found.output_price))
    return None
