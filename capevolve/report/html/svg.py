"""Minimal inline-SVG building blocks (nothing external); run text goes through :func:`esc`."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

DECISION_COLOURS = {"accept": "#1a9850", "reject": "#d73027", "tampered": "#7b3294",
                    "no_change": "#878787", "baseline": "#2166ac", "pending": "#f1a340",
                    "indecisive": "#f1a340"}


def esc(value: object) -> str:
    """HTML/XML-escaped text of ``value``."""
    return html.escape(str(value), quote=True)


def el(tag: str, body: str = "", **attrs: object) -> str:
    """``<tag a="v">body</tag>``; ``font_size`` is ``font-size``, ``class_`` is ``class``."""
    parts = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"'
                    for k, v in attrs.items() if v is not None)
    return f"<{tag}{parts}>{body}</{tag}>" if body else f"<{tag}{parts}/>"


def empty(text: str) -> str:
    """The paragraph shown instead of a chart or table with nothing to show."""
    return f'<p class="empty">{esc(text)}</p>'


def title(text: object) -> str:
    """A hover tooltip for the enclosing SVG element."""
    return f"<title>{esc(text)}</title>"


@dataclass(frozen=True)
class Scale:
    """Maps ``[lo, hi]`` linearly onto pixels ``[a, b]`` (clamped)."""

    lo: float
    hi: float
    a: float
    b: float

    def __call__(self, value: float) -> float:
        span = self.hi - self.lo or 1.0
        value = min(max(value, self.lo), self.hi)
        return round(self.a + (value - self.lo) / span * (self.b - self.a), 2)


def padded(values: list[float], pad: float = 0.05) -> tuple[float, float]:
    """[lo, hi] around ``values`` plus a margin (0..1 when empty)."""
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    margin = (hi - lo) * pad or max(abs(hi) * pad, 0.05)
    return lo - margin, hi + margin


def y_axis(scale: Scale, x: float, width: float, label: str, fmt: str = "{:.2f}") -> str:
    """Grid, tick labels and label of a vertical scale."""
    out = []
    for value in (scale.lo + (scale.hi - scale.lo) * i / 4 for i in range(5)):  # 5 ticks
        y = scale(value)
        out.append(el("line", x1=x, x2=x + width, y1=y, y2=y, stroke="#e0e0e0"))
        out.append(el("text", esc(fmt.format(value)), x=x - 4, y=y + 3, text_anchor="end",
                      font_size=10, fill="#555"))
    top = min(scale.a, scale.b)
    out.append(el("text", esc(label), x=x, y=top - 8, font_size=11, fill="#333"))
    return "".join(out)


def x_axis(scale: Scale, y: float, label: str, values: Sequence[float],
           fmt: str = "{:g}") -> str:
    """Tick labels at ``values`` and the label of a horizontal scale."""
    out = [el("line", x1=scale.a, x2=scale.b, y1=y, y2=y, stroke="#999")]
    for value in values:
        out.append(el("text", esc(fmt.format(value)), x=scale(value), y=y + 14,
                      text_anchor="middle", font_size=10, fill="#555"))
    out.append(el("text", esc(label), x=(scale.a + scale.b) / 2, y=y + 30,
                  text_anchor="middle", font_size=11, fill="#333"))
    return "".join(out)


def ramp(value: float | None) -> str:
    """Red -> yellow -> green for a mean in [0, 1]; grey for None."""
    if value is None:
        return "#d9d9d9"
    v = min(max(value, 0.0), 1.0)
    stops = [(0.0, (215, 48, 39)), (0.5, (254, 224, 139)), (1.0, (26, 152, 80))]
    for (p0, c0), (p1, c1) in zip(stops, stops[1:], strict=False):
        if v <= p1:
            f = (v - p0) / (p1 - p0)
            return "#" + "".join(f"{round(a + (b - a) * f):02x}"
                                 for a, b in zip(c0, c1, strict=True))
    return "#1a9850"


def figure(width: int, height: int, body: str, label: str, chart: str) -> str:
    """A complete ``<svg>`` with an accessible label and a ``data-chart`` name."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(label)}" '
            f'data-chart="{esc(chart)}">{body}</svg>')
