// capevolve view: the page's script. Every stored value is shown with textContent, never
// as markup (candidate output, feedback and traces are untrusted text).
"use strict";

const $ = (id) => document.getElementById(id);
const state = { candidates: [], lastOk: 0, tab: "overview" };

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function num(value, digits = 3) {
  return value === null || value === undefined ? "—" : Number(value).toFixed(digits);
}

function meanSe(mean, se) {
  if (mean === null || mean === undefined) return "not measured";
  return se === null || se === undefined ? num(mean) : `${num(mean)} ± ${num(se)}`;
}

async function api(path) {
  const response = await fetch(path, { cache: "no-store" });
  const payload = await response.json();
  if (!response.ok) throw new Error(payload.error || response.statusText);
  return payload;
}

function showError(err) { $("error").textContent = err ? String(err.message || err) : ""; }

function fillTable(table, headers, rows, onClick) {
  table.replaceChildren();
  const head = el("tr");
  headers.forEach((h) => head.appendChild(el("th", h)));
  table.appendChild(head);
  rows.forEach((row) => {
    const tr = el("tr");
    row.cells.forEach((cell) => {
      const td = el("td", cell.text, cell.cls);
      tr.appendChild(td);
    });
    if (onClick) {
      tr.classList.add("clickable");
      tr.addEventListener("click", () => {
        table.querySelectorAll("tr.selected").forEach((r) => r.classList.remove("selected"));
        tr.classList.add("selected");
        onClick(row.item);
      });
    }
    table.appendChild(tr);
  });
}

function setCandidates(candidates) {
  const ids = candidates.map((c) => c.id);
  if (ids.join() === state.candidates.join()) return;
  state.candidates = ids;
  for (const id of ["f-candidate", "c-a", "c-b", "d-a", "d-b"]) {
    const select = $(id);
    const keep = select.value;
    select.replaceChildren();
    if (id === "f-candidate") select.appendChild(el("option", "any")).value = "";
    ids.forEach((cid) => { select.appendChild(el("option", cid)).value = cid; });
    if (keep && ids.includes(keep)) select.value = keep;
  }
  if (ids.length > 1) {
    if (!$("c-b").dataset.touched) $("c-b").value = ids[ids.length - 1];
    if (!$("d-b").dataset.touched) $("d-b").value = ids[ids.length - 1];
  }
}

function renderOverview(data) {
  const s = data.status;
  $("run-title").textContent = `run ${s.run_id} (${s.project})`;
  const summary = $("summary");
  summary.replaceChildren();
  const best = s.best_val || {};
  const lines = [
    `best ${s.best_id}: val ${meanSe(best.mean, best.stderr)}`,
    `metric calls ${s.spent.metric_calls}; tokens ${s.spent.tokens || "not recorded"}; ` +
      `cost ${s.spent.cost_usd === null ? "not recorded" : "$" + num(s.spent.cost_usd, 4)}`,
    `stop condition: ${s.stop_condition || "—"}`,
    s.final ? `final: ${s.final.verdict_text || s.final.verdict}` : "test not scored yet",
  ];
  lines.forEach((line) => summary.appendChild(el("div", line)));
  setCandidates(data.candidates);
  fillTable($("candidates"), ["id", "role", "parent", "decision", "gate delta", "note", "files"],
    data.candidates.map((c) => ({ item: c, cells: [
      { text: c.id + (c.best ? " (best)" : "") }, { text: c.role || "" },
      { text: c.parent || "" },
      { text: (c.decision || (c.gate ? "gated: " + c.gate.decision : ""))
              + (c.standing ? " (" + c.standing + ")" : "") },
      { text: c.gate ? num(c.gate.delta) : "—", cls: "num" }, { text: c.note || "" },
      { text: c.files, cls: "num" }] })));
  fillTable($("evaluations"), ["evaluation", "status", "mean ± SE", "tasks scored", "rows"],
    data.evaluations.map((e) => ({ item: e, cells: [
      { text: e.eval_id }, { text: e.status }, { text: meanSe(e.mean, e.stderr), cls: "num" },
      { text: e.n_scored === null ? "—" : `${e.n_scored}/${e.n_tasks}`, cls: "num" },
      { text: e.status === "running" ? `${e.rows_on_disk} on disk` : (e.n_rows ?? "—"),
        cls: "num" }] })), (e) => {
        $("f-split").value = e.split; $("f-candidate").value = e.candidate_id;
        selectTab("trials"); loadTrials();
      });
  fillTable($("events"), ["at", "kind", "candidate"],
    data.recent_events.map((e) => ({ item: e, cells: [
      { text: e.at || e.ts || "" }, { text: e.kind }, { text: e.candidate_id || "" }] })));
}

async function refreshOverview() {
  try {
    renderOverview(await api("/api/overview"));
    state.lastOk = Date.now();
    showError(null);
  } catch (err) { showError(err); }
  const live = $("live");
  const age = (Date.now() - state.lastOk) / 1000;
  live.textContent = state.lastOk ? `live · updated ${age < 1 ? "now" : age.toFixed(0) + " s ago"}`
    : "not connected";
  live.classList.toggle("stale", age > 6);
}

async function loadClusters() {
  const split = $("f-split").value, cand = $("f-candidate").value;
  const select = $("f-cluster");
  select.replaceChildren(el("option", "any"));
  select.firstChild.value = "";
  if (!split || !cand) return;
  try {
    const clusters = await api(`/api/clusters?split=${encodeURIComponent(split)}` +
      `&candidate=${encodeURIComponent(cand)}`);
    clusters.forEach((c) => {
      select.appendChild(el("option", `${c.signature} (${c.size})`)).value = c.signature;
    });
  } catch (err) { showError(err); }
}

async function loadTrials() {
  const params = new URLSearchParams();
  for (const [key, id] of [["split", "f-split"], ["candidate", "f-candidate"],
    ["outcome", "f-outcome"], ["cluster", "f-cluster"], ["task", "f-task"]]) {
    if ($(id).value) params.set(key, $(id).value);
  }
  try {
    const data = await api("/api/trials?" + params.toString());
    $("trials-count").textContent = `${data.rows.length} trials${data.truncated ? " (first ones)" : ""}`;
    fillTable($("trials"), ["evaluation", "task", "trial", "reward", "error", "feedback"],
      data.rows.map((r) => ({ item: r, cells: [
        { text: r.eval_id }, { text: r.task_id }, { text: r.trial, cls: "num" },
        { text: num(r.reward), cls: "num" }, { text: r.error_kind || "" },
        { text: r.feedback || "" }] })), showTrial);
    showError(null);
  } catch (err) { showError(err); }
}

function detailBlock(parent, title, value) {
  parent.appendChild(el("h3", title));
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  parent.appendChild(el("pre", text === undefined || text === null ? "—" : text));
}

async function renderTrial(target, row) {
  const t = await api(`/api/trial?eval=${encodeURIComponent(row.eval_id)}` +
    `&task=${encodeURIComponent(row.task_id)}&trial=${row.trial}`);
  target.replaceChildren(el("h3", `${t.candidate_id} · ${t.task_id} · trial ${t.trial} · ` +
    `reward ${num(t.reward)}`));
  detailBlock(target, "output", t.output);
  detailBlock(target, "feedback", t.feedback);
  detailBlock(target, "score parts", t.score_parts);
  detailBlock(target, "tool calls", t.tool_calls);
  detailBlock(target, "trace", t.trace);
  if (t.error || t.error_kind) detailBlock(target, `error (${t.error_kind})`, t.error);
  detailBlock(target, "inputs", t.inputs);
}

async function showTrial(row) {
  try { await renderTrial($("trial-detail"), row); showError(null); } catch (err) { showError(err); }
}

async function loadCompare() {
  const a = $("c-a").value, b = $("c-b").value, split = $("c-split").value;
  try {
    const r = await api(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}` +
      `&split=${encodeURIComponent(split)}`);
    $("compare-summary").textContent = `${r.a} → ${r.b} on ${r.split}: mean ${num(r.mean_a)} → ` +
      `${num(r.mean_b)}; ${r.improved} tasks up, ${r.worsened} down; ` +
      `${r.flips["fail->pass"].length} fail→pass, ${r.flips["pass->fail"].length} pass→fail`;
    fillTable($("compare"), ["task", r.a, r.b, "delta", "flip", "clusters A", "clusters B"],
      r.tasks.map((t) => ({ item: t, cells: [
        { text: t.task_id }, { text: num(t.mean_a), cls: "num" },
        { text: num(t.mean_b), cls: "num" },
        { text: t.delta === null ? "—" : (t.delta > 0 ? "+" : "") + num(t.delta), cls: "num" },
        { text: t.flip || "", cls: t.flip === "fail->pass" ? "flip-up" : t.flip ? "flip-down" : "" },
        { text: t.clusters_a === null ? "not diagnosed" : t.clusters_a.join(", ") },
        { text: t.clusters_b === null ? "not diagnosed" : t.clusters_b.join(", ") }] })),
      (t) => sideBySide(r, t.task_id));
    showError(null);
  } catch (err) { showError(err); }
}

async function sideBySide(result, task) {
  const box = $("side-by-side");
  box.replaceChildren();
  for (const [cand, evalId] of [[result.a, result.eval_a], [result.b, result.eval_b]]) {
    const column = el("div");
    box.appendChild(column);
    const data = await api(`/api/trials?eval=${encodeURIComponent(evalId)}` +
      `&task=${encodeURIComponent(task)}`);
    column.appendChild(el("h3", `${cand}: ${data.rows.length} trials`));
    for (const row of data.rows) {
      const one = el("div");
      column.appendChild(one);
      await renderTrial(one, row);
    }
  }
}

async function loadDiff() {
  const a = $("d-a").value, b = $("d-b").value;
  try {
    const r = await api(`/api/diff?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
    const box = $("diff");
    box.replaceChildren(el("p", `${r.files_changed} files changed, ${r.insertions} insertions(+),` +
      ` ${r.deletions} deletions(-)`));
    for (const f of r.files) {
      box.appendChild(el("h3", `${f.path} (${f.status}) +${f.added} -${f.removed}`));
      const pre = el("pre");
      if (f.binary) pre.textContent = "binary file differs";
      f.diff.split("\n").forEach((line) => {
        const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add"
          : line.startsWith("-") ? "del" : "";
        pre.appendChild(cls ? el("span", line, cls) : document.createTextNode(line + "\n"));
      });
      box.appendChild(pre);
    }
    showError(null);
  } catch (err) { showError(err); }
}

function selectTab(name) {
  state.tab = name;
  document.querySelectorAll("nav button").forEach((b) => b.classList.toggle("active", b.dataset.tab === name));
  document.querySelectorAll(".tab").forEach((t) => t.classList.toggle("hidden", t.id !== "tab-" + name));
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("nav button").forEach((b) => b.addEventListener("click", () => selectTab(b.dataset.tab)));
  $("f-apply").addEventListener("click", loadTrials);
  $("f-split").addEventListener("change", loadClusters);
  $("f-candidate").addEventListener("change", loadClusters);
  $("c-apply").addEventListener("click", loadCompare);
  $("d-apply").addEventListener("click", loadDiff);
  for (const id of ["c-b", "d-b"]) $(id).addEventListener("change", () => { $(id).dataset.touched = "1"; });
  const hash = new URLSearchParams(location.hash.slice(1));
  refreshOverview().then(() => {
    if (hash.get("tab")) selectTab(hash.get("tab"));
    if (hash.get("tab") === "trials") {
      for (const key of ["split", "candidate", "outcome", "task"]) {
        if (hash.get(key)) $("f-" + key).value = hash.get(key);
      }
      loadClusters().then(loadTrials).then(() => {
        if (hash.get("eval") && hash.get("task") && hash.get("trial")) {
          showTrial({ eval_id: hash.get("eval"), task_id: hash.get("task"),
            trial: Number(hash.get("trial")) });
        }
      });
    } else if (hash.get("tab") === "compare") {
      if (hash.get("a")) $("c-a").value = hash.get("a");
      if (hash.get("b")) $("c-b").value = hash.get("b");
      loadCompare();
    } else if (hash.get("tab") === "diff") {
      if (hash.get("a")) $("d-a").value = hash.get("a");
      if (hash.get("b")) $("d-b").value = hash.get("b");
      loadDiff();
    }
  });
  setInterval(refreshOverview, 2000);
});
