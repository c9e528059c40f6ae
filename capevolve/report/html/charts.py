"""The report's charts as inline SVG; every data mark has ``class="mark"`` and a hover title.
The run's course (best val, lineage, heat map, gate forest), then its outcome (pass^k against
k, the final test delta, spend over time)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from capevolve.report.html.svg import (
    DECISION_COLOURS,
    Scale,
    el,
    empty,
    esc,
    figure,
    padded,
    ramp,
    title,
    x_axis,
    y_axis,
)
from capevolve.report.words import num

L, R, T, B = 56, 16, 28, 44  # plot margins
PALETTE = ("#2166ac", "#1a9850", "#d73027", "#7b3294", "#f1a340", "#35978f", "#8c510a")


def _marker(x: float, y: float, decision: str, tip: str) -> str:
    colour = DECISION_COLOURS.get(decision, "#333")
    if decision == "reject":
        d = f"M{x - 5},{y - 5}L{x + 5},{y + 5}M{x - 5},{y + 5}L{x + 5},{y - 5}"
        return el("path", title(tip), d=d, stroke=colour, stroke_width=2.5, class_="mark")
    if decision == "tampered":
        d = f"M{x},{y - 6}L{x + 6},{y + 5}L{x - 6},{y + 5}Z"
        return el("path", title(tip), d=d, fill=colour, class_="mark")
    return el("circle", title(tip), cx=x, cy=y, r=5, fill=colour, class_="mark")


def best_over_iterations(steps: list[dict[str, Any]]) -> str:
    """Best val mean after each decision with 95% CI bars, and each candidate's val mean
    as a decision marker."""
    pts = [s for s in steps if s["best"]["mean"] is not None]
    if not pts:
        return empty("No complete val evaluation of the best yet: nothing to plot.")
    w, h = 640, 300
    values = [v for s in steps for side in ("best", "candidate")
              for v in ([s[side]["mean"]] + (s[side]["ci95"] or [])) if v is not None]
    ys = Scale(*padded(values), h - B, T)
    xs = Scale(0, max(1, len(steps) - 1), L + 10, w - R - 10)
    body = [y_axis(ys, L, w - L - R, "val mean (95% CI)"),
            x_axis(xs, h - B, "iteration (decision)", [s["iteration"] for s in steps], "{:.0f}")]
    line = " ".join(f"{xs(s['iteration'])},{ys(s['best']['mean'])}" for s in pts)
    body.append(el("polyline", points=line, fill="none", stroke="#2166ac", stroke_width=2,
                   class_="mark"))
    for s in pts:
        x, ci = xs(s["iteration"]), s["best"]["ci95"]
        if ci:
            body.append(el("line", title(f"best {s['best_id']}: 95% CI [{ci[0]:.3f}, "
                                         f"{ci[1]:.3f}]"), x1=x, x2=x, y1=ys(ci[0]),
                           y2=ys(ci[1]), stroke="#2166ac", stroke_width=1.5, class_="mark"))
    for s in steps:
        mean = s["candidate"]["mean"]
        x = xs(s["iteration"]) + (4 if s["decision"] != "baseline" else 0)
        value = "not measured" if mean is None else f"{mean:.3f}"
        tip = (f"iteration {s['iteration']}: {s['candidate_id']} {s['decision']}, val "
               f"{value}; best after: {s['best_id']}")
        # a candidate with no val mean (refused before any rollout) sits on the x axis
        y = ys(ys.lo) - 7 if mean is None else ys(mean)
        body.append(_marker(x, y, s["decision"], tip))
    legend = "".join(
        _marker(L + 150 + i * 84, 12, d, d) + el("text", d, x=L + 160 + i * 84, y=16,
                                                font_size=10)
        for i, d in enumerate(("baseline", "accept", "reject", "tampered", "no_change")))
    return figure(w, h, "".join(body) + legend, "best val over iterations", "best-val")


def lineage_tree(candidates: list[dict[str, Any]]) -> str:
    """Each candidate under its parent, by decision; dashed: a parent taken from the gate."""
    if not candidates:
        return empty("No candidates.")
    by_id = {c["id"]: c for c in candidates}

    def depth(cid: str, seen: frozenset[str] = frozenset()) -> int:
        parent = by_id[cid]["parent"]
        if parent is None or parent not in by_id or parent in seen:
            return 0
        return 1 + depth(parent, seen | {cid})

    levels = {c["id"]: depth(c["id"]) for c in candidates}
    order = {c["id"]: i for i, c in enumerate(candidates)}
    w = max(360, 110 * len(candidates) + L)
    h = 70 * (max(levels.values()) + 1) + 40
    pos = {cid: (L + order[cid] * 100 + 20, 30 + 70 * lvl) for cid, lvl in levels.items()}
    body = []
    for c in candidates:
        parent = c["parent"]
        if parent in pos:
            (x0, y0), (x1, y1) = pos[parent], pos[c["id"]]
            body.append(el("line", x1=x0, y1=y0, x2=x1, y2=y1, stroke="#888",
                           stroke_dasharray="4 3" if c["parent_source"] == "gate" else None))
    for c in candidates:
        x, y = pos[c["id"]]
        colour = DECISION_COLOURS.get(c["decision"], "#333")
        tip = f"{c['id']} ({c['decision']}), parent {c['parent'] or '—'}"
        body.append(el("circle", title(tip), cx=x, cy=y, r=9, fill=colour, class_="mark"))
        body.append(el("text", esc(c["id"]), x=x, y=y + 24, text_anchor="middle",
                       font_size=10))
    return figure(w, h, "".join(body), "candidate lineage", "lineage")


def heatmap(heat: dict[str, Any], kept_good: list[str], best_id: str) -> str:
    """Per-task val means (tasks down, candidates across); ``+`` kept good, ``!`` regression."""
    cands, tasks = heat["candidates"], heat["tasks"]
    if not cands or not tasks:
        return empty("No complete val evaluation: no per-task means to show.")
    cw, ch, left, top = 64, 14, 70, 40
    w, h = left + cw * len(cands) + 20, top + ch * len(tasks) + 30
    body = [el("text", esc(c), x=left + i * cw + cw / 2, y=top - 8, text_anchor="middle",
               font_size=10, font_weight="bold" if c == best_id else None)
            for i, c in enumerate(cands)]
    good = set(kept_good)
    for j, task in enumerate(tasks):
        y = top + j * ch
        body.append(el("text", esc(task), x=left - 4, y=y + ch - 3, text_anchor="end",
                       font_size=9))
        for i, cid in enumerate(cands):
            value = heat["means"].get(cid, {}).get(task)
            regress = task in heat["regressions"].get(cid, [])
            flag = "!" if regress else ("+" if cid == best_id and task in good else "")
            tip = (f"{task} / {cid}: {num(value)}" + (" (regression)" if regress else "")
                   + (" (kept good)" if flag == "+" else ""))
            x = left + i * cw
            body.append(el("rect", title(tip), x=x, y=y, width=cw - 2, height=ch - 2,
                           fill=ramp(value), class_="mark"))
            if flag:
                body.append(el("text", flag, x=x + cw - 9, y=y + ch - 4, font_size=9,
                               font_weight="bold"))
    return figure(w, h, "".join(body), "candidate by task heat map", "heatmap")


def forest(gates: list[dict[str, Any]]) -> str:
    """One row per gate: delta with 95% CI, the accept threshold tick, confidence, decision."""
    rows = [g for g in gates if g.get("delta") is not None]
    if not rows:
        return empty("No gate with a measured delta yet.")
    w, rh, left = 680, 26, 190
    h = T + rh * len(rows) + B
    values = [0.0] + [v for g in rows for v in ([g["delta"]] + (g["ci95"] or [])
                                                + [g["threshold"] or 0.0])]
    xs = Scale(*padded(values), left, w - 150)
    body = [el("line", x1=xs(0), x2=xs(0), y1=T - 6, y2=h - B, stroke="#555",
               stroke_dasharray="3 3"),
            el("text", "0", x=xs(0), y=T - 10, text_anchor="middle", font_size=10),
            x_axis(xs, h - B, "delta vs the best (val)", [xs.lo, xs.hi], "{:+.2f}")]
    for i, g in enumerate(rows):
        y = T + i * rh + rh / 2
        colour = DECISION_COLOURS.get(g["decision"], "#333")
        label = f"{g['candidate_id']} vs {g['best_id']}" + (" (expl.)" if g.get(
            "exploratory") else "")
        body.append(el("text", esc(label), x=left - 8, y=y + 4, text_anchor="end",
                       font_size=10))
        if g["ci95"]:
            lo, hi = g["ci95"]
            body.append(el("line", title(f"95% CI [{lo:+.3f}, {hi:+.3f}]"), x1=xs(lo),
                           x2=xs(hi), y1=y, y2=y, stroke=colour, stroke_width=2,
                           class_="mark"))
        if g["threshold"] is not None:
            tx = xs(g["threshold"])
            body.append(el("line", title(f"accept needs delta > {g['critical']:.3f} x SE = "
                                         f"{g['threshold']:+.3f}"), x1=tx, x2=tx, y1=y - 7,
                           y2=y + 7, stroke="#000", stroke_width=1.5, class_="mark"))
        tip = (f"delta {g['delta']:+.3f}, SE {num(g.get('se'))}, {g.get('confidence')}, "
               f"{g['decision']}")
        body.append(el("circle", title(tip), cx=xs(g["delta"]), cy=y, r=4.5, fill=colour,
                       class_="mark"))
        body.append(el("text", esc(f"{g['decision']} · {g.get('confidence') or '—'}"),
                       x=w - 145, y=y + 4, font_size=10, fill=colour))
    return figure(w, h, "".join(body), "gate forest plot", "forest")


def pass_k(tables: dict[str, dict[str, float]], final: dict[str, Any] | None) -> str:
    """pass^k against k per val evaluation, and both test sides (dashed) when finalized."""
    series = [(f"{cid} (val)", t, False) for cid, t in tables.items() if t]
    if final:
        for side in ("test", "test_baseline"):
            table = (final.get(side) or {}).get("pass_k") or {}
            if table:
                series.append((f"{final[side]['candidate_id']} (test)", table, True))
    if not series:
        return empty("No pass^k recorded (no complete evaluation yet).")
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


def final_delta(final: dict[str, Any]) -> str:
    """A finalized run's paired test delta (best - seed) with its 95% CI, and the verdict."""
    if final.get("delta") is None:
        missing = "; ".join(final.get("missing") or []) or "no delta"
        return empty(f"Test delta not measured ({missing}). {final.get('verdict_text', '')}")
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


def spend(data: dict[str, Any], created_at: str) -> str:
    """Cumulative rollouts and tokens (cost when recorded) since the run was created."""
    series = data["series"]
    if not series:
        return empty("No spend recorded yet.")
    t0 = datetime.fromisoformat(created_at)
    w, h = 520, 260
    times = [(datetime.fromisoformat(p["ts"]) - t0).total_seconds() for p in series]
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
