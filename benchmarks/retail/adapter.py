"""The retail project's adapter: the offline retail environment of ``capevolve_adapters``.

capevolve imports this file by path (in the driver and in every worker); it re-exports
:class:`capevolve_adapters.retail.RetailAdapter`, which is installed with capevolve, so this
project works wherever it is copied.
"""

from __future__ import annotations

from capevolve_adapters.retail.adapter import RetailAdapter

__all__ = ["RetailAdapter"]
