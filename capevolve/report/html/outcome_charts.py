"""Outcome charts as inline SVG: pass^k against k, the final test delta, spend over time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from capevolve.report.html.svg import Scale, el, esc, figure, padded, title, x_axis, y_axis

L, R, T, B = 56, 16, 28, 44
PALETTE = ("#2166ac", "#1a9850", "#d73027", "#7b3294", "#f1a340", "#35978f", "#8c510a")


def _none(text: str) -> str:
    return f'<p class="empty">{esc(text)}</p>'


def pass_k(tables: dict[str, dict[str, float]], final: dict[str, Any] | None) -> str:
    """pass^k against k per val evaluation, and both test sides (dashed) when finalized."""
    series = [(f"{cid} (val)", t, False) for cid, t in tables.items() if t]
    if final:
        for side in ("test", "test_baseline"):
            table = (final.get(side) or {}).get("pass_k") or {}
            if table:
                series.append((f"{final[side]['candidate_id']} (test)", table, True))
    if not series:
        return _none("No pass^k recorded (no complete evaluation yet).")
    w, h = 520, 280
    ks = sorted({int(k) for _, t, _ in series for k in t})
    xs = Scale(min(ks), max(max(ks), min(ks) + 1), L + 10, w - 150)
    ys = Scale(0.0, 1.0, h - B, T)
    body = [y_axis(ys, L, w - L - 140, "pass^k"), x_axis(xs, h - B, "k (trials)", ks, "{:.0f}")]
    for i, (name, table, dashed) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        pts = sorted((int(k), v) for k, v in table.items())
        body.append(el("polyline", points=" ".join(f"{xs(k)},{ys(v)}" for k, v in pts),
                       fill="none", stroke=colour, stroke_width=2,
                       stroke_dasharray="5 3" if dashed else None, class_="mark"))
        body += [el("circle", title(f"{name}: pass^{k} = {v:.3f}"), cx=xs(k), cy=ys(v), r=3.5,
                    fill=colour, class_="mark") for k, v in pts]
        body.append(el("text", esc(name), x=w - 140, y=T + 14 * i + 4, font_size=10,
                       fill=colour))
    return figure(w, h, "".join(body), "pass^k against k", "pass-k")


def final_delta(final: dict[str, Any] | None) -> str:
    """The paired test delta (best - seed) with its 95% CI, and the verdict."""
    if final is None:
        return _none("Not finalized: the test split has not been scored.")
    if final.get("delta") is None:
        missing = "; ".join(final.get("missing") or []) or "no delta"
        return _none(f"Test delta not measured ({missing}). {final.get('verdict_text', '')}")
    ci = final.get("ci95")
    w, h = 520, 120
    values = [0.0, final["delta"]] + (ci or []) + ([final["val_delta"]]
                                                   if final.get("val_delta") is not None else [])
    xs = Scale(*padded(values, 0.15), L, w - R)
    y = 50
    body = [el("line", x1=xs(0), x2=xs(0), y1=20, y2=80, stroke="#555", stroke_dasharray="3 3"),
            el("text", "0", x=xs(0), y=18, text_anchor="middle", font_size=10),
            x_axis(xs, 85, "test delta, best - seed (95% CI)", [xs.lo, xs.hi], "{:+.2f}")]
    if ci:
        body.append(el("line", title(f"95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}]"), x1=xs(ci[0]),
                       x2=xs(ci[1]), y1=y, y2=y, stroke="#2166ac", stroke_width=3,
                       class_="mark"))
    body.append(el("circle", title(f"test delta {final['delta']:+.3f}"), cx=xs(final["delta"]),
                   cy=y, r=6, fill="#2166ac", class_="mark"))
    if final.get("val_delta") is not None:
        vx = xs(final["val_delta"])
        body.append(el("path", title(f"val gain {final['val_delta']:+.3f}"),
                       d=f"M{vx},{y - 14}l5,-8h-10z", fill="#f1a340", class_="mark"))
    body.append(el("text", esc(f"verdict: {final.get('verdict')}"), x=w - R, y=16,
                   text_anchor="end", font_size=12,
                   font_weight="bold"))
    return figure(w, h, "".join(body), "final test delta", "final-delta")


def _seconds(ts: str, t0: datetime) -> float:
    return (datetime.fromisoformat(ts) - t0).total_seconds()


def spend(data: dict[str, Any], created_at: str) -> str:
    """Cumulative rollouts and tokens (cost when recorded) since the run was created."""
    series = data["series"]
    if not series:
        return _none("No spend recorded yet.")
    t0 = datetime.fromisoformat(created_at)
    w, h = 520, 260
    times = [_seconds(p["ts"], t0) for p in series]
    xs = Scale(0.0, max(max(times), 1.0), L + 10, w - R - 120)
    lines = [("metric_calls", "rollouts", "#2166ac")]
    if data["tokens_recorded"]:
        lines.append(("tokens", "tokens", "#1a9850"))
    if data["cost_recorded"]:
        lines.append(("cost_usd", "cost (USD)", "#d73027"))
    body = [x_axis(xs, h - B, "seconds since the run was created",
                   [xs.lo, xs.hi / 2, xs.hi], "{:.0f}")]
    for i, (key, name, colour) in enumerate(lines):
        top = max(p[key] for p in series) or 1
        ys = Scale(0.0, top, h - B, T)
        if i == 0:
            body.append(y_axis(ys, L, w - L - R - 120, "rollouts (others: scaled to max)",
                               "{:.0f}"))
        pts = " ".join(f"{xs(x)},{ys(p[key])}" for x, p in zip(times, series, strict=True))
        body.append(el("polyline", points=pts, fill="none", stroke=colour, stroke_width=2,
                       class_="mark"))
        body += [el("circle", title(f"{name}: {p[key]:g} at {x:.0f} s"), cx=xs(x),
                    cy=ys(p[key]), r=2.5, fill=colour, class_="mark")
                 for x, p in zip(times, series, strict=True)]
        body.append(el("text", esc(f"{name} (max {top:g})"), x=w - R - 112, y=T + 14 * i,
                       font_size=10, fill=colour))
    return figure(w, h, "".join(body), "spend over time", "spend")
