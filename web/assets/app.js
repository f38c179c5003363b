// memorylab serve: the dashboard's page. Every piece of run text goes into
// the page as text (textContent), never as markup; the one exception is the
// progress chart, an SVG the server renders with its text escaped
// (report.Morning.SVG), and the Content-Security-Policy forbids any script
// but this file.
"use strict";

const state = { running: [], tails: {}, curves: {}, view: "", metric: "", goal: "" };

// el builds an element: attrs are properties or attributes, children are
// nodes or strings (strings become text nodes).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(path) {
  const res = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  let body;
  try { body = await res.json(); } catch { body = { error: res.status + " " + res.statusText }; }
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

// A replicate group as " ± sd (n=N)", or "" for a run without one.
const spread = (g) => (g ? ` ± ${Number(g.sd).toPrecision(2)} (n=${g.n})` : "");
const fmt = (v, digits) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits ?? 6).replace(/\.?0+$/, (m) => (m.startsWith(".") ? "" : m)));
const num = (v) => (v === null || v === undefined ? "–" : String(+Number(v).toFixed(6)));
const time = (ts) => (ts || "").replace("T", " ").replace("Z", "");
const runLink = (id, label) => el("a", { href: "#/run/" + encodeURIComponent(id), class: "mono", text: label || id });
const statusBadge = (s) => el("span", { class: "status " + s, text: s });
const dirtyMark = (dirty) => (dirty ? el("span", { class: "dirty", title: "ran with uncommitted changes to tracked files", text: " *" }) : null);
const short = (s, n) => (s && s.length > n ? s.slice(0, n - 1) + "…" : s || "");

function banner(msg) {
  const b = document.getElementById("banner");
  b.hidden = !msg;
  b.textContent = msg || "";
}

function table(headers, rows) {
  return el("table", {}, el("thead", {}, el("tr", {}, headers.map((h) => (h instanceof Node ? el("th", {}, h) : el("th", { text: h }))))),
    el("tbody", {}, rows));
}

// ---- routing -------------------------------------------------------------

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  const name = parts[0] || "overview";
  state.view = name;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.nav === name);
  const view = document.getElementById("view");
  const show = (p) => p.catch((err) => view.replaceChildren(el("p", { class: "banner", text: err.message })));
  switch (name) {
    case "runs": return show(renderRuns(view, params));
    case "run": return show(renderRun(view, decodeURIComponent(parts.slice(1).join("/"))));
    case "compare": return show(renderCompare(view, params));
    case "lineages": return show(renderLineages(view));
    default: return show(renderOverview(view));
  }
}

// ---- overview ------------------------------------------------------------

// arcmemoBoard renders the ArcMemo board: one table per puzzle set, one row
// per configuration (see `memorylab arcmemo board`).
function arcmemoBoard(a) {
  const sd = (s) => (!s || !s.n ? "–" : s.n < 2 ? num(s.mean) : `${num(s.mean)} ± ${num(s.sd)}`);
  const out = [el("h2", { text: "ArcMemo board" }),
    el("p", { class: "muted", text: `${a.runs} runs, ${a.runs_imported_in_window} imported in the window; a run is ranked by its final pass, only within its puzzle set.` })];
  for (const s of (a.board && a.board.puzzle_sets) || []) {
    out.push(el("h3", { text: `Puzzle set ${s.puzzle_set} (${s.puzzles} puzzles)` }));
    out.push(table(["config", "n", "official %", "solved", "solved by pass", "oracle@k", "memory in prompt", "vs baseline"],
      s.rows.map((r) => el("tr", {}, el("td", { text: r.config }), el("td", { class: "num", text: String(r.n) }), el("td", { class: "num", text: sd(r.official_pct) }),
        el("td", { class: "num", text: sd(r.solved) }), el("td", { text: r.solved_by_pass.map(sd).join(" → ") }), el("td", { text: r.oracle_at_k.join(" → ") || "–" }),
        el("td", { text: r.memory_in_prompt + (r.selector_failures ? ` (selector failed ${r.selector_failures} of ${r.selector_calls})` : "") }),
        el("td", { text: r.is_baseline ? "baseline" : r.vs_baseline ? `+${r.vs_baseline.gained} −${r.vs_baseline.lost}, p ${num(r.vs_baseline.p_exact)} (corrected ${num(r.vs_baseline.p_bonferroni)})` : "–" })))));
  }
  return out;
}

async function renderOverview(view) {
  const o = await api("/api/overview");
  const m = o.morning;
  state.metric = m.metric; state.goal = m.goal;
  state.running = o.running;
  const h = m.headline;
  const champ = h.champion;
  const out = [el("h1", { text: `Overview — ${m.metric} (${m.goal === "max" ? "higher" : "lower"} is better)` })];
  if (m.arcmemo) out.push(...arcmemoBoard(m.arcmemo)); // an ArcMemo store leads with its board (issue 28)
  out.push(el("div", { class: "card headline" },
    el("p", {}, `${h.runs} runs in the last ${num(m.window_hours)} h: `, statusBadge("keep"), ` ${h.keep}  `, statusBadge("discard"), ` ${h.discard}  `, statusBadge("crash"), ` ${h.crash}`),
    champ ? el("p", {}, "Champion ", el("strong", { text: `${m.metric} ${fmt(champ.value)}` }), el("span", { class: "muted", text: champ.replicates ? ` (group ${fmt(champ.replicates.mean)}${spread(champ.replicates)})` : "" }), " — ", runLink(champ.run_id), " ", champ.description,
      h.change_vs_before_window !== null && h.change_vs_before_window !== undefined ? el("span", { class: "muted", text: ` (change vs before the window: ${num(h.change_vs_before_window)})` }) : null,
      h.champion_reachable_from_head ? el("span", { class: "muted", text: ` · on HEAD: ${h.champion_reachable_from_head}` }) : null)
      : el("p", { class: "muted", text: "No champion yet." }),
    el("p", { class: "plateau" + (m.plateau.on_plateau ? " on" : ""), text: m.plateau.message }),
    ...(m.champions_by_puzzle_set || []).map((c) => el("p", {}, `Champion of puzzle set ${c.puzzle_set}: ${m.metric} ${fmt(c.value)}${spread(c.replicates)} — `, runLink(c.run_id), " ", c.description)),
    (m.champions_by_hardware || []).length ? el("p", { text: m.champions_by_hardware.map((c, i) => `${i ? "on" : "Champion on"} ${c.hardware}: ${fmt(c.value)}${spread(c.replicates)}`).join("; ") }) : null,
    el("p", { class: "muted noise", text: m.noise ? `Noise${m.noise.hardware ? " on " + m.noise.hardware : ""}: sd ${Number(m.noise.sd).toPrecision(3)} (${m.noise.groups} replicate groups, ${m.noise.runs} runs)${m.margin ? "; tie margin " + Number(m.margin.value).toPrecision(3) + " (2 sd)" : ""}` : (m.noise_hint || "") })));
  out.push(el("section", { id: "now-running" }, runningPanel()));
  out.push(el("h2", { text: "Progress chart" }));
  const fig = el("figure", { class: "chart", id: "chart", dataset: { points: String(o.points) } });
  fig.innerHTML = o.chart_svg; // rendered and escaped by the server (report.Morning.SVG)
  fig.append(el("figcaption", { text: `${m.metric} over the window's runs: discarded runs faint, kept runs labelled, the line is the running best; crashes below the axis.` }));
  out.push(fig);
  out.push(el("h2", { text: "Decision queue" }));
  out.push(m.decision_queue.length ? table(["priority", "next action", "run", "status", m.metric, "summary"],
    m.decision_queue.map((q) => el("tr", {}, el("td", { text: q.priority }), el("td", { text: q.next_action }), el("td", {}, runLink(q.run_id)),
      el("td", {}, statusBadge(q.status), dirtyMark(q.dirty)), el("td", { class: "num", text: fmt(q.value) }), el("td", { text: q.summary }))))
    : el("p", { class: "muted", text: "Nothing waiting for a decision." }));
  out.push(el("h2", { text: "Champion board" }));
  out.push(table(["role", "run", m.metric, "Δ to champion", "memory GB", "description"],
    m.champion_board.map((b) => el("tr", {}, el("td", { text: b.role }), el("td", {}, b.run_id ? runLink(b.run_id) : "–"), el("td", { class: "num", text: fmt(b.value) }),
      el("td", { class: "num", text: num(b.delta_to_champion) }), el("td", { class: "num", text: num(b.memory_gb) }), el("td", { text: b.description })))));
  out.push(el("h2", { text: "What was swept" }));
  const swept = m.what_was_swept || [];
  out.push(swept.length ? table(["parameter", "file", "runs", "values", "best value", `best ${m.metric}`, "champion's value"],
    swept.map((p) => el("tr", {}, el("td", { class: "mono", text: p.name }), el("td", { class: "mono", text: p.file }), el("td", { class: "num", text: String(p.runs) }),
      el("td", { class: "num", text: String(p.values) }), el("td", { class: "mono", text: p.best_value }), el("td", { class: "num", text: fmt(p.best) }),
      el("td", { class: "mono", text: p.champion_value || "–" }))))
    : el("p", { class: "muted", text: "No parameter edits read from the code of the window's runs." }));
  if (m.swarm) out.push(...swarmPanel(m.swarm)); // issue 29.6
  out.push(el("h2", { text: "Recent runs" }));
  out.push(table(["time", "run", "status", m.metric, "description"],
    (m.recent_ledger || []).map((r) => el("tr", {}, el("td", { class: "mono", text: time(r.timestamp_utc) }), el("td", {}, runLink(r.run_id)),
      el("td", {}, statusBadge(r.status), dirtyMark(r.dirty)), el("td", { class: "num", text: fmt(r.value) }), el("td", { text: r.description })))));
  view.replaceChildren(...out);
}

// The swarm: runs by host, each machine's last sync, the claims in flight.
function swarmPanel(sw) {
  const out = [el("h2", { text: "The swarm" })];
  out.push(table(["host", "runs in window", "kept", "runs", "last run"],
    sw.hosts.map((h) => el("tr", {}, el("td", { class: "mono", text: h.host || "(not recorded)" }), el("td", { class: "num", text: String(h.in_window) }),
      el("td", { class: "num", text: String(h.kept_in_window) }), el("td", { class: "num", text: String(h.runs) }), el("td", { class: "mono", text: time(h.last_run_utc) })))));
  if (sw.syncs.length) out.push(table(["machine", "last sync"],
    sw.syncs.map((s) => el("tr", {}, el("td", { class: "mono", text: s.machine }), el("td", { class: "mono", text: time(s.when) })))));
  out.push(sw.claims.length ? table(["claimed since", "host", "expires", "idea in flight"],
    sw.claims.map((c) => el("tr", {}, el("td", { class: "mono", text: time(c.start) }), el("td", { class: "mono", text: c.host }),
      el("td", { class: "mono", text: time(c.expires) }), el("td", { text: c.description }))))
    : el("p", { class: "muted", text: "No claims in flight." }));
  return out;
}

function runningPanel() {
  if (!state.running.length) return el("p", { class: "muted", id: "running-none", text: "Nothing training right now." });
  return state.running.map((r) => {
    const key = `${r.host}-${r.pid}`;
    const pre = el("pre", { class: "tail", id: "tail-" + key });
    pre.textContent = state.tails[key] || "";
    return el("div", { class: "card running", dataset: { key } },
      el("p", {}, el("strong", { text: "Now training: " }), r.description, " ", el("span", { class: "mono muted", text: r.commit })),
      el("p", { class: "muted" }, "elapsed ", el("span", { class: "elapsed", dataset: { started: r.started_utc } }), ` · ${r.command} · output in ${r.log_path}`),
      el("div", { class: "live-curve", id: "curve-" + key }, state.curves[key] ? curveChart("live-curve-" + key, [{ label: r.description, curve: state.curves[key] }]) : ""),
      pre);
  });
}

function refreshRunning() {
  const sec = document.getElementById("now-running");
  if (sec) sec.replaceChildren(...[runningPanel()].flat());
  tickElapsed();
}

function tickElapsed() {
  for (const e of document.querySelectorAll(".elapsed")) {
    const s = Math.max(0, Math.floor((Date.now() - Date.parse(e.dataset.started)) / 1000));
    e.textContent = `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  }
}
setInterval(tickElapsed, 1000);


// ---- training curves -------------------------------------------------------
// Curves come parsed from the server (ledger's one curve parser: archived in
// curve.json, or live from a running training's output); this only draws.

const SVGNS = "http://www.w3.org/2000/svg";
const TIME_SERIES = ["total_time", "elapsed", "time", "wall_time", "walltime"];
const CURVE_COLORS = ["#0969da", "#cf222e", "#2da44e", "#8250df"];
const curveWall = { on: false };

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// curveSeriesName is the series to draw: loss when any curve has it.
function curveSeriesName(curves) {
  if (curves.some((c) => c && c.series && c.series.loss)) return "loss";
  const c = curves.find((c) => c && c.series);
  return c ? Object.keys(c.series).filter((n) => !TIME_SERIES.includes(n)).sort()[0] || Object.keys(c.series)[0] : "";
}

// curvePoints is [[x, y]] of name against the step, or the wall clock
// (seconds, joined by step) when wall is set and the curve has a time series.
function curvePoints(curve, name, wall) {
  const pts = (curve.series || {})[name] || [];
  if (!wall) return pts;
  const tn = TIME_SERIES.find((n) => curve.series[n]);
  if (!tn) return pts;
  const at = new Map(curve.series[tn].map((p) => [p[0], p[1]]));
  return pts.filter((p) => at.has(p[0])).map((p) => [at.get(p[0]), p[1]]);
}

// curveChart draws lines [{label, curve, died}] as one SVG with a legend and
// a step / wall-clock switch; id names the figure.
function curveChart(id, lines) {
  const fig = el("figure", { class: "curve", id });
  const draw = () => {
    lines = lines.filter((l) => l.curve && l.curve.series);
    if (!lines.length) { fig.replaceChildren(el("p", { class: "muted", text: "no training curve" })); return; }
    const name = curveSeriesName(lines.map((l) => l.curve));
    const hasTime = lines.some((l) => TIME_SERIES.some((n) => l.curve.series[n]));
    const wall = curveWall.on && hasTime;
    const sets = lines.map((l) => curvePoints(l.curve, name, wall));
    const all = sets.flat();
    const W = 640, H = 220, L = 52, R = 12, T = 10, B = 28;
    const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${name} per ${wall ? "second" : "step"}` });
    if (all.length) {
      let [x0, x1] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
      let [y0, y1] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
      if (x1 === x0) { x0 -= 1; x1 += 1; }
      if (y1 === y0) { y0 -= 1; y1 += 1; }
      const X = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R), Y = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
      svg.append(svgEl("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }), svgEl("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
      svg.append(svgEl("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "tick" }, num(y1)), svgEl("text", { x: L - 4, y: H - B, "text-anchor": "end", class: "tick" }, num(y0)));
      svg.append(svgEl("text", { x: L, y: H - 8, class: "tick" }, num(x0)), svgEl("text", { x: W - R, y: H - 8, "text-anchor": "end", class: "tick" }, `${num(x1)} ${wall ? "s" : "steps"}`));
      sets.forEach((pts, i) => {
        if (!pts.length) return;
        const color = CURVE_COLORS[i % CURVE_COLORS.length];
        svg.append(svgEl("polyline", { points: pts.map((p) => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(" "), fill: "none", stroke: color, "stroke-width": 1.6, class: "curve-line", "data-points": pts.length }));
        if (lines[i].died) { // where the crash died
          const [px, py] = [X(pts[pts.length - 1][0]), Y(pts[pts.length - 1][1])];
          svg.append(svgEl("path", { d: `M${px - 4} ${py - 4}L${px + 4} ${py + 4}M${px - 4} ${py + 4}L${px + 4} ${py - 4}`, stroke: "#cf222e", "stroke-width": 2, class: "curve-died" }, undefined));
        }
      });
    }
    const legend = el("figcaption", { class: "muted" }, `${name} per ${wall ? "second (wall clock)" : "step"}: `,
      lines.map((l, i) => el("span", { class: "curve-key", dataset: { color: String(i) } }, el("span", { class: "swatch swatch-" + (i % CURVE_COLORS.length) }), ` ${l.label}${l.died ? " (crashed here ✕)" : ""} `)));
    const toggle = hasTime ? el("label", { class: "curve-x" }, el("input", { type: "checkbox", checked: curveWall.on, onchange: (e) => { curveWall.on = e.target.checked; draw(); } }), " wall-clock x") : null;
    fig.replaceChildren(svg, legend, toggle || "");
  };
  draw();
  return fig;
}

// ---- runs ----------------------------------------------------------------

async function renderRuns(view, params) {
  const q = new URLSearchParams(params);
  if (!q.has("sort") && !q.get("q")) { q.set("sort", "time"); q.set("order", "desc"); } // newest first; a search ranks by relevance
  const res = await api("/api/runs?" + q.toString());
  state.metric = res.metric;
  const set = (k, v) => {
    const p = new URLSearchParams(params);
    if (v) p.set(k, v); else p.delete(k);
    if (k !== "page") p.delete("page");
    location.hash = "#/runs?" + p.toString();
  };
  const input = (name, placeholder, type) => el("input", { type: type || "text", name, placeholder, value: params.get(name) || "",
    onchange: (e) => set(name, e.target.value.trim()) });
  const status = el("select", { name: "status", onchange: (e) => set("status", e.target.value) },
    ["", "keep", "discard", "crash"].map((s) => el("option", { value: s, selected: params.get("status") === s, text: s || "any status" })));
  const sortBy = (key) => el("button", { type: "button", onclick: () => {
    const p = new URLSearchParams(params);
    const desc = p.get("sort") === key && p.get("order") !== "desc";
    p.set("sort", key); if (desc) p.set("order", "desc"); else p.delete("order");
    location.hash = "#/runs?" + p.toString();
  }, text: key === "metric" ? res.metric : key });
  const rows = res.rows.map((r) => el("tr", { dataset: { run: r.run_id } },
    el("td", { class: "mono hide-narrow", text: time(r.timestamp_utc) }),
    el("td", {}, runLink(r.run_id, short(r.run_id, 28))),
    el("td", {}, statusBadge(r.status), dirtyMark(r.dirty)),
    el("td", { class: "num", title: r.replicates ? `replicate group: mean ${fmt(r.replicates.mean)}${spread(r.replicates)}` : null }, fmt(r.value),
      r.replicates ? el("span", { class: "muted hide-narrow", text: spread(r.replicates) }) : null),
    el("td", { class: "num hide-narrow", text: num(r.memory_gb) }),
    el("td", { class: "hide-narrow", text: r.family || "" }),
    el("td", { class: "hide-narrow", text: (r.tags || []).join(", ") }),
    el("td", { text: r.description })));
  const pager = el("div", { class: "filters" },
    el("button", { class: "page", type: "button", disabled: res.page <= 1, onclick: () => set("page", String(res.page - 1)), text: "← previous" }),
    el("span", { id: "page-info", text: `page ${res.page} of ${res.pages} · ${res.matched} of ${res.total} runs` }),
    el("button", { class: "page", type: "button", disabled: res.page >= res.pages, onclick: () => set("page", String(res.page + 1)), text: "next →" }));
  view.replaceChildren(
    el("h1", { text: "Runs" }),
    el("div", { class: "filters" },
      input("q", "search descriptions (novelty index)", "search"), status, input("family", "family"), input("tag", "tag"), input("since", "since (e.g. 16h)")),
    Object.assign(table([sortBy("time"), "run", sortBy("status"), sortBy("metric"), sortBy("memory"), sortBy("family"), "tags", "description"], rows), { className: "runs" }),
    pager);
}

// ---- one run -------------------------------------------------------------

function diffView(text) {
  const pre = el("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    let cls = "";
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ")) cls = "file";
    else if (line.startsWith("@@")) cls = "hunk";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    pre.append(cls ? el("span", { class: cls, text: line }) : document.createTextNode(line + "\n"));
  }
  return pre;
}

async function renderRun(view, id) {
  const d = await api("/api/runs/" + encodeURIComponent(id));
  const r = d.record;
  const metric = state.metric || Object.keys(r.metrics || {})[0] || "";
  const kv = (pairs) => el("dl", { class: "kv" }, pairs.filter((p) => p[1] !== undefined && p[1] !== null && p[1] !== "").flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]));
  const out = [el("h1", {}, "Run ", el("span", { class: "mono", text: r.run_id }))];
  const lin = d.lineage;
  out.push(el("div", { class: "card", id: "run-meta" }, kv([
    ["status", el("span", {}, statusBadge(r.status), r.dirty ? el("span", { class: "dirty", text: " * ran with uncommitted changes (train.patch is what ran)" }) : null)],
    ["time", time(r.timestamp_utc)],
    ["description", r.description],
    ["hypothesis", r.hypothesis],
    ["family", r.family],
    ["tags", (r.tags || []).join(", ")],
    ["commit", d.commit ? el("span", { class: "mono", text: d.commit + (d.pinned ? "  (pinned)" : "") }) : r.commit],
    ["parent", d.parent],
    ["branch", r.branch],
    ["lineage", lin ? (lin.state === "known" ? `root ${short(lin.root, 12)}, ${lin.depth} kept run(s) in the chain` : lin.state) : r.lineage_root],
    ["on HEAD", d.reachable_from_head],
    ["notes", r.notes],
  ])));
  out.push(el("p", {}, el("a", { href: `#/compare?a=champion&b=${encodeURIComponent(r.run_id)}`, text: "compare with the champion →" })));
  if (d.curve) {
    out.push(el("h2", { text: "Training curve" }));
    out.push(curveChart("run-curve", [{ label: r.description || r.run_id, curve: d.curve, died: r.status === "crash" }]));
  }
  const metrics = Object.entries(r.metrics || {});
  out.push(el("h2", { text: "Metrics" }));
  out.push(metrics.length ? table(["metric", "value"], metrics.map(([k, v]) => el("tr", {}, el("td", { text: k }), el("td", { class: "num", text: v === null ? "–" : String(v) }))))
    : el("p", { class: "muted", text: "none recorded" }));
  const g = r.novelty_guard;
  if (g) {
    out.push(el("h2", { text: "Novelty verdict" }));
    out.push(el("p", {}, `${g.classification || "?"} — decision ${(g.policy && g.policy.decision) || "?"}`, g.policy && g.policy.rationale ? el("span", { class: "muted", text: ` (${g.policy.rationale})` }) : null));
    const matches = g.top_matches || [];
    if (matches.length) out.push(table(["score", "run", "status", "description"], matches.map((m) => el("tr", {},
      el("td", { class: "num", text: Number(m.score).toFixed(3) }), el("td", {}, m.run_id ? runLink(m.run_id) : "–"), el("td", {}, statusBadge(m.status || "")), el("td", { text: m.description })))));
  }
  if (r.error) {
    out.push(el("h2", { text: "Crash" }));
    out.push(el("p", { class: "status crash", text: r.error.summary || "crash" }));
    if ((r.error.tail || []).length) out.push(el("pre", { text: r.error.tail.join("\n") }));
  }
  if (d.decision_packet) {
    out.push(el("h2", { text: "Decision packet" }));
    out.push(el("pre", { text: JSON.stringify(d.decision_packet, null, 2) }));
  }
  out.push(el("h2", { text: "Code change" }));
  if (d.diff_error) out.push(el("p", { class: "muted", text: "diff unavailable: " + d.diff_error }));
  else if (!d.diff) out.push(el("p", { class: "muted", text: "no changes" }));
  else out.push(el("div", { id: "diff" }, diffView(d.diff)));
  out.push(el("h2", { text: "run.log" }));
  if (d.log_error) out.push(el("p", { class: "muted", text: d.log_error }));
  else if (d.log_tail) {
    if (d.log_cut_off) out.push(el("p", { class: "muted", text: `the last ${d.log_tail.length} bytes of ${d.log_bytes}` }));
    out.push(el("pre", { id: "run-log", text: d.log_tail }));
  } else out.push(el("p", { class: "muted", text: "not archived" }));
  view.replaceChildren(...out);
}

// ---- compare -------------------------------------------------------------

async function renderCompare(view, params) {
  const a = params.get("a") || "champion", b = params.get("b") || "latest";
  const form = el("form", { class: "filters", onsubmit: (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    location.hash = `#/compare?a=${encodeURIComponent(f.get("a"))}&b=${encodeURIComponent(f.get("b"))}`;
  } }, el("input", { name: "a", value: a, "aria-label": "first run" }), el("span", { text: "vs" }), el("input", { name: "b", value: b, "aria-label": "second run" }),
  el("button", { class: "page", type: "submit", text: "compare" }));
  const out = [el("h1", { text: "Compare" }), form];
  try {
    const c = await api(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
    const text = c.text.split("\n");
    const cut = text.findIndex((l) => l.startsWith("diff ") || l.startsWith("--- "));
    out.push(el("pre", { id: "compare-text", text: (cut >= 0 ? text.slice(0, cut) : text).join("\n") }));
    // /api/compare is compare --json: the diff is code_diff (issue 31.3).
    if (c.code_diff) out.push(el("h2", { text: "Code diff" }), el("div", { id: "compare-diff" }, diffView(c.code_diff)));
    else if (c.code_diff_note) out.push(el("p", { class: "muted", id: "compare-diff-note", text: `code diff: ${c.code_diff_note}` }));
    // The training curves of A and B (and the champion) overlaid.
    const ids = [[c.a.run_id, "A"], [c.b.run_id, "B"], ["champion", "champion"]];
    const shown = await Promise.all(ids.map(([id]) => api("/api/runs/" + encodeURIComponent(id)).catch(() => null)));
    const lines = [], seen = new Set();
    shown.forEach((d, i) => {
      if (!d || seen.has(d.record.run_id)) return;
      seen.add(d.record.run_id);
      lines.push({ label: `${ids[i][1]} ${short(d.record.run_id, 24)}`, curve: d.curve, died: d.record.status === "crash" });
    });
    if (lines.some((l) => l.curve)) out.push(el("h2", { text: "Training curves" }), curveChart("compare-curves", lines));
  } catch (err) {
    out.push(el("p", { class: "banner", text: err.message }));
  }
  view.replaceChildren(...out);
}

// ---- lineages ------------------------------------------------------------

async function renderLineages(view) {
  const res = await api("/api/lineages");
  const out = [el("h1", { text: "Lineages" }), el("p", { class: "muted", text: "Chains of kept runs from git ancestry, the best first: each kept run grew from the one before it." })];
  if (!res.chains.length) out.push(el("p", { class: "muted", text: "No kept chain yet." }));
  for (const c of res.chains) {
    const steps = [];
    c.steps.forEach((s, i) => {
      if (i) steps.push(el("span", { class: "arrow", text: "→" }));
      steps.push(el("span", { class: "step", title: s.run_id }, runLink(s.run_id, s.description || short(s.run_id, 24)), " ", fmt(s.value)));
    });
    out.push(el("div", { class: "card" }, el("p", {}, `root ${short(c.root, 12)} · best ${res.metric} ${fmt(c.best)} · tip on HEAD: ${c.reachable_from_head}`), el("div", { class: "chain" }, steps)));
  }
  view.replaceChildren(...out);
}

// ---- live updates ----------------------------------------------------------

function connect() {
  const live = document.getElementById("live");
  const es = new EventSource("/api/events");
  es.onopen = () => { live.textContent = "live"; live.className = "live on"; };
  es.onerror = () => { live.textContent = "reconnecting…"; live.className = "live off"; };
  const on = (name, fn) => es.addEventListener(name, (e) => fn(JSON.parse(e.data)));
  on("ledger", (d) => {
    live.textContent = `live · ${d.runs.length} new run(s)`;
    if (state.view === "overview" || state.view === "runs") route();
  });
  on("reset", () => route());
  on("running", (runs) => {
    const ended = state.running.length > runs.length;
    state.running = runs;
    refreshRunning();
    if (ended && state.view === "overview") route();
  });
  on("tail", (t) => {
    state.tails[t.key] = (t.reset ? "" : state.tails[t.key] || "") + t.data;
    if (state.tails[t.key].length > 32768) state.tails[t.key] = state.tails[t.key].slice(-32768);
    const pre = document.getElementById("tail-" + t.key);
    if (pre) { pre.textContent = state.tails[t.key]; pre.scrollTop = pre.scrollHeight; }
  });
  on("curve", (c) => {
    state.curves[c.key] = c.curve;
    const box = document.getElementById("curve-" + c.key);
    if (box) box.replaceChildren(curveChart("live-curve-" + c.key, [{ label: "now training", curve: c.curve }]));
  });
  on("store", (s) => banner(s.error ? "The store cannot be read: " + s.error : ""));
}

window.addEventListener("hashchange", route);
route();
connect();
