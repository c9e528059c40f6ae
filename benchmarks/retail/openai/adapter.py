"""The retail project with a real model: re-exports ``OpenAIRetailAdapter``.

:class:`capevolve_adapters.openai_agent.adapter.OpenAIRetailAdapter` is installed with
capevolve, so this project works wherever it is copied. Settings: ``CAPEVOLVE_OPENAI_*``
environment variables (see adapters/openai_agent/README.md).
"""

from __future__ import annotations

from capevolve_adapters.openai_agent.adapter import OpenAIRetailAdapter

__all__ = ["OpenAIRetailAdapter"]
