"""An offline retail customer-support environment in the style of tau-bench's retail domain.

Public entry points: :class:`RetailAdapter` (the deterministic policy agent as the target),
``store`` (the shipped data), ``reference_tools`` (the canonical tools), ``scorer`` and
``capability`` (loading a candidate's ``policy/policy.md`` and ``tools/tools.py``).
"""

from __future__ import annotations

__all__ = ["RetailAdapter"]


def __getattr__(name: str):
    if name == "RetailAdapter":
        from .adapter import RetailAdapter

        return RetailAdapter
    raise AttributeError(name)
