"""The retail project's adapter: the offline retail environment from ``adapters/retail``.

capevolve imports this file by path (in the driver and in every Ray worker); it puts the
repository's ``adapters/`` folder on ``sys.path`` (found relative to this file, so it works
from any working directory) and re-exports :class:`retail.adapter.RetailAdapter`.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ADAPTERS = str(Path(__file__).resolve().parents[2] / "adapters")
if _ADAPTERS not in sys.path:
    sys.path.insert(0, _ADAPTERS)

from retail.adapter import RetailAdapter

__all__ = ["RetailAdapter"]
