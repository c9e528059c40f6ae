"""report.html as one self-contained page (inline CSS, SVG and script; nothing fetched);
the script only sorts tables."""

from __future__ import annotations

from typing import Any

from capevolve.report.html import charts
from capevolve.report.html.svg import DECISION_COLOURS, empty, esc
from capevolve.report.words import gate_power_text, keep_count, num, scored_text, usd

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;
max-width:1180px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid
#ddd;padding-bottom:4px}.meta{color:#555}.grid{display:flex;flex-wrap:wrap;gap:18px}
.warning{background:#fdecea;border:1px solid #c62828;padding:6px 10px}
.card{border:1px solid #e3e3e3;border-radius:6px;padding:10px 12px;background:#fff}
table{border-collapse:collapse;font-size:12.5px;width:100%}th,td{border-bottom:1px solid #eee;
padding:4px 6px;text-align:left;vertical-align:top}th{cursor:pointer;background:#f6f6f6}
.tag{display:inline-block;padding:0 6px;border-radius:8px;color:#fff;font-size:11.5px}
.empty{color:#777;font-style:italic}.verdict{font-size:16px;font-weight:600}
.warn{color:#a33;font-weight:600}
"""

SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function (th, i) {
  th.addEventListener('click', function () {
    var body = th.closest('table').tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir > 0 ? 'asc' : 'desc';
    rows.sort(function (a, b) {
      var x = a.cells[i].textContent, y = b.cells[i].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      if (isNaN(nx) !== isNaN(ny)) { return isNaN(nx) ? 1 : -1; }  // "—" rows last
      return dir * (isNaN(nx) ? x.localeCompare(y) : nx - ny);
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
document.body.dataset.charts = document.querySelectorAll('svg[data-chart]').length;
"""


def _tag(decision: str | None) -> str:
    colour = DECISION_COLOURS.get(decision or "", "#555")
    return f'<span class="tag" style="background:{colour}">{esc(decision or "—")}</span>'


def _table(headers: list[str], rows: list[list[str]], nothing: str) -> str:
    if not rows:
        return empty(nothing)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="sortable"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _diff(stat: dict[str, Any] | None) -> str:
    if stat is None:
        return "—"
    files = len(stat["added"]) + len(stat["removed"]) + len(stat["changed"])
    return esc(f"{files} file(s) vs {stat['against']}: +{stat['lines_added']} "
               f"-{stat['lines_removed']}")


def _scored(val: dict[str, Any]) -> str:
    if val.get("n_tasks") is None:
        return ""
    return "<br><small>" + esc(scored_text(val.get("n_scored"), val["n_tasks"],
                                           val.get("excluded_reasons"))) + "</small>"


def _standing(cand: dict[str, Any]) -> str:
    """An accept's standing beside its tag."""
    state = cand.get("standing")
    if not state:
        return ""
    label = f"{state}: {cand.get('confidence')}" if state == "tentative" else state
    return f' <small class="standing">{esc(label)}</small>'


def _candidates_table(data: dict[str, Any]) -> str:
    rows = []
    shown = {e["candidate_id"]: e for e in data.get("evaluations", []) if e["split"] == "val"}
    for c in data["candidates"]:
        val = c["val"]
        ci = val["ci95"]
        mean = (f"{num(val['mean'])} [{num(ci[0])}, {num(ci[1])}]" if ci
                else num(val["mean"]))
        parent = esc(c["parent"] or "—") + (" <small>(gate)</small>"
                                            if c["parent_source"] == "gate" else "")
        rows.append([esc(c["id"]), parent, _tag(c["decision"]) + _standing(c),
                     "<br>".join(esc(r) for r in c["reasons"]) or "—", esc(c["note"] or "—"),
                     _diff(c["diff_stat"]), esc(gate_power_text(c["power"]) or "—"),
                     esc(mean) + _scored(shown.get(c["id"], {}))])
    return _table(["candidate", "parent", "decision", "reasons", "note", "diff", "power",
                   "val mean [95% CI]"], rows, "No candidates.")


def _clusters_table(diag: dict[str, Any]) -> str:
    doc = diag["val"]
    if doc is None:
        return empty(f"{diag['candidate_id']} was not diagnosed on val (run `capevolve diagnose`).")
    rows = [[esc(c["signature"]), esc(c["size"]), num(c["score_lost"], "{:.2f}"),
             esc(", ".join(f"{k} {v}" for k, v in (c["kinds"] or {}).items())),
             esc(", ".join(c["tasks"] or [])), esc(", ".join(c["tools"] or []) or "—"),
             esc(c["tag"] or "—")] for c in doc["clusters"]]
    head = (f"<p>{esc(doc['failing_tasks'])} failing tasks, {esc(doc['errored_trials'])} "
            f"errored trials, {len(doc['kept_good'] or [])} kept good.</p>")
    return head + _table(["cluster", "size", "score lost", "kinds", "tasks", "tools", "tag"],
                         rows, "No failure clusters.")


def _final_text(final: dict[str, Any] | None) -> str:
    if final is None:
        return empty("Not finalized: the test split has not been scored.")
    test, base = final["test"], final["test_baseline"]
    return (f'<p class="verdict">{esc(final["verdict_text"])}</p>'
            f"<p>test: best {esc(final['best_id'])} {num(test.get('mean'))} ± "
            f"{num(test.get('stderr'))} vs seed {num(base.get('mean'))} ± "
            f"{num(base.get('stderr'))} (n = {esc(final['n_compared'])} tasks)</p>"
            + _reuse_text(final))


def _reuse_text(final: dict[str, Any]) -> str:
    """The test split's reuse, a warning when reused."""
    reuse = final.get("test_reuse")
    if reuse is None:
        return "<p>test reuse: not recorded</p>"
    runs = reuse.get("earlier_runs") or []
    shown = f" (runs {', '.join(runs)})" if runs else ""
    klass = ' class="warn"' if final.get("test_reused") else ""
    return f"<p{klass}>{esc(reuse['message'] + shown)}</p>"


def _spend_text(spend: dict[str, Any]) -> str:
    t = spend["totals"]
    return esc(f"rollouts {t['metric_calls']}; tokens {t['tokens'] or 'not recorded'}; "
               f"cost {usd(t['cost_usd'])}; rollout wall time {t['wall_s']:.1f} s")


def render_html(data: dict[str, Any]) -> str:
    """The whole page for one run's report data."""
    run, final = data["run"], data["final"]
    kept = (data["diagnosis"]["val"] or {}).get("kept_good") or []
    ledger = data["ledger"]
    sections = [
        ("Best val over iterations", charts.best_over_iterations(data["iterations"])),
        ("Lineage", charts.lineage_tree(data["candidates"])),
        ("Gates", charts.forest(data["gates"])
         + f"<p>{esc(ledger['gates'])} gates run, expected false accepts "
           f"{num(ledger['expected_false_accepts'])}{esc(keep_count(ledger))}.</p>"
         + f"<p>The loop guarantees: {esc(ledger.get('guarantee') or 'not recorded')}.</p>"),
        ("Candidate × task (val means)", charts.heatmap(data["heatmap"], kept, run["best_id"])),
        ("pass^k", charts.pass_k(data["pass_k"], final)),
        ("Held-out test", (charts.final_delta(final) if final else "")
         + _final_text(final)),
        ("Spend", charts.spend(data["spend"], run["created_at"])
         + f"<p>{_spend_text(data['spend'])}</p>"),
    ]
    cards = "".join(f'<div class="card"><h2>{esc(name)}</h2>{body}</div>'
                    for name, body in sections)
    splits = " / ".join(f"{k} {v}" for k, v in run["splits"].items())
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>capevolve report: {esc(run['project'])}</title>"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<style>{CSS}</style></head><body>"
        f"<h1>capevolve report: {esc(run['project'])}</h1>"
        f"<p class=\"meta\">run {esc(run['run_id'])} · best <b>{esc(run['best_id'])}</b> · "
        f"splits {esc(splits)} · {esc(run['num_trials'])} trials · stop condition "
        f"{esc(run['stop_condition'] or '—')}</p>"
        + "".join(f'<p class="warning"><b>Warning:</b> {esc(w)}.</p>'
                  for w in run.get("containment") or [])
        + f'<div class="grid">{cards}</div>'
        f"<h2>Candidates</h2>{_candidates_table(data)}"
        f"<h2>Diagnosis of the best ({esc(data['diagnosis']['candidate_id'])})</h2>"
        f"{_clusters_table(data['diagnosis'])}"
        f"<script>{SCRIPT}</script></body></html>\n")
