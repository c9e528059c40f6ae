"""The retail project with a real model: re-exports ``OpenAIRetailAdapter``.

:class:`capevolve_adapters.openai_agent.adapter.OpenAIRetailAdapter` is installed with
capevolve, so this project works wherever it is copied. The model: ``models.agent`` in
capevolve.yaml (see docs/models.md).
"""

from __future__ import annotations

from capevolve_adapters.openai_agent.adapter import OpenAIRetailAdapter

__all__ = ["OpenAIRetailAdapter"]
