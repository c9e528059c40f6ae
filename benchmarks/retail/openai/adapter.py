"""The retail project with a real model: re-exports ``openai_agent.adapter.OpenAIRetailAdapter``.

Puts the repository's ``adapters/`` folder on ``sys.path`` (relative to this file) so the
driver and every Ray worker import the same packages. Settings: ``CAPEVOLVE_OPENAI_*``
environment variables (see adapters/openai_agent/README.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

_ADAPTERS = str(Path(__file__).resolve().parents[3] / "adapters")
if _ADAPTERS not in sys.path:
    sys.path.insert(0, _ADAPTERS)

from openai_agent.adapter import OpenAIRetailAdapter

__all__ = ["OpenAIRetailAdapter"]
