"""Prices of model calls: from config, else the shipped ``genai-prices`` table."""

from __future__ import annotations

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

    million = 1_000_000
    try:
        found = calc_price(Usage(input_tokens=million, output_tokens=million), model,
                           provider_api_url=base_url)
    except LookupError:
        if base_url is None:
            return None
        try:  # a gateway or self-hosted URL: the model id alone
            found = calc_price(Usage(input_tokens=million, output_tokens=million), model)
        except LookupError:
            return None
    return Price(input=float(found.input_price), output=float(found.output_price))
