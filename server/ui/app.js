// xfsq's dashboard (SPEC §9): a client of the HTTP API like any other. It
// holds no data and no secret of its own: the token the operator gives is
// kept in this tab's sessionStorage and sent as a bearer token, so the API's
// roles and project limits apply to it as to every client. A tenant names
// every project, file and directory shown here, so nothing from the API is
// ever parsed as HTML or SVG markup: every text goes into the page as
// textContent, every chart is built element by element.
"use strict";

const tokenKey = "xfsq-token";
const $ = (id) => document.getElementById(id);
const svgNS = "http://www.w3.org/2000/svg";

// el builds an element; children are elements or strings (text, never HTML).
function el(tag, props, ...children) {
  return build(document.createElement(tag), props, children);
}

// svg builds an SVG element the same way.
function svg(tag, props, ...children) {
  return build(document.createElementNS(svgNS, tag), props, children);
}

function build(e, props, children) {
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null) continue;
    if (k === "class") e.setAttribute("class", v);
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// ---- Figures as the CLI writes them (cmd/xfsq: units.FormatIEC, plural,
// growth, roughAge, when). ----

// iec formats bytes as the CLI does: 1.5 KiB, 50.0 GiB, 512 B.
function iec(n) {
  if (n == null) return "-";
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  if (Math.abs(n) < 1024) return n + " B";
  let v = n, u = -1;
  do { v /= 1024; u++; } while (Math.abs(v) >= 1024 && u < units.length - 1);
  return v.toFixed(1) + " " + units[u];
}

// plural is a count with its noun, as the CLI writes it: 1 file, 2 files.
function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }

// growth is a change in bytes as the report prints it: +1.0 MiB, -512 B, -.
function growth(n) { return n == null ? "-" : (n < 0 ? "-" + iec(-n) : "+" + iec(n)); }

// roughAge is a duration as the report prints an age: 45s, 12m, 3h5m, 4d.
function roughAge(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  if (s < 48 * 3600) return Math.floor(s / 3600) + "h" + Math.floor((s % 3600) / 60) + "m";
  return Math.floor(s / 86400) + "d";
}

// fullIn says when a tree reaches its hard limit at its trend.
function fullIn(seconds) {
  if (seconds == null) return "-";
  return seconds <= 0 ? "full now" : "in " + roughAge(seconds);
}

const pad = (n) => String(n).padStart(2, "0");
const zoneName = (d) => (new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(d).find((p) => p.type === "timeZoneName") || {}).value || "";

// when shows a time as the CLI does (2006-01-02 15:04:05 MST), in the
// browser's zone.
function when(s) {
  if (!s) return "-";
  const d = s instanceof Date ? s : new Date(s);
  if (isNaN(d)) return "-";
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + " " + zoneName(d);
}

// bar is a usage bar: amber above 80 %, red at or above 100 %.
function bar(fraction) {
  const b = el("div", { class: "bar" }, el("span"));
  if (fraction == null) { b.title = "no limit"; return b; }
  const pct = fraction * 100;
  b.firstChild.style.width = Math.min(pct, 100).toFixed(1) + "%";
  if (pct >= 100) b.classList.add("red");
  else if (pct > 80) b.classList.add("amber");
  b.title = pct.toFixed(1) + " %";
  b.dataset.percent = pct.toFixed(1);
  return b;
}

function percent(fraction) { return fraction == null ? "no limit" : (fraction * 100).toFixed(1) + " %"; }

// safeName is a tenant's name made visible as the CLI prints it
// (internal/safetext.Name): control characters, bidi overrides and other
// format characters, and line separators are written as escapes (\n,
// \x01, \u{202e}), a backslash doubled, so that a name can neither hide
// nor reorder what the page shows beside it. safeLine keeps backslashes, for
// xfsq's own text quoting a name.
function safeName(s) { return escapeText(s, true); }
function safeLine(s) { return escapeText(s, false); }

function escapeText(s, backslash) {
  return String(s ?? "").replace(/[\x00-\x1f\x7f-\x9f\\\u2028\u2029]|\p{Cf}/gu, (c) => {
    const cp = c.codePointAt(0);
    switch (c) {
      case "\\": return backslash ? "\\\\" : c;
      case "\n": return "\\n";
      case "\t": return "\\t";
      case "\r": return "\\r";
      case "\x1b": return "\\e";
    }
    return cp < 0x20 || cp === 0x7f ? "\\x" + cp.toString(16).padStart(2, "0") : "\\u{" + cp.toString(16).padStart(4, "0") + "}";
  });
}

// ---- The API ----

class APIError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || "HTTP " + status);
    this.status = status;
    this.problem = problem;
  }
}

// api asks the API with the token; a 401 asks for a token again.
async function api(path, opts = {}) {
  const token = sessionStorage.getItem(tokenKey);
  if (!token) { showLogin(""); throw new APIError(401, { detail: "no token given" }); }
  const headers = { Authorization: "Bearer " + token, Accept: "application/json" };
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method: opts.method || "GET", headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body), cache: "no-store" });
  let body = null;
  try { body = await resp.json(); } catch (_) { body = {}; }
  if (resp.status === 401) {
    sessionStorage.removeItem(tokenKey);
    showLogin(body.detail || "the token is not valid");
  }
  if (!resp.ok) throw new APIError(resp.status, body || {});
  return body;
}

// optional is an answer the page can do without (a route this server may
// not have, a figure a reader may not see): null instead of an error.
async function optional(path) {
  try { return await api(path); } catch (err) { if (err.status === 401) throw err; return null; }
}

function showLogin(why) {
  for (const m of document.querySelectorAll("main")) m.hidden = true;
  $("login").hidden = false;
  $("signout").hidden = true;
  $("refresh").hidden = true;
  $("refreshed").textContent = "";
  $("login-error").textContent = why || "";
  $("token").focus();
}

function showError(err) {
  if (err instanceof APIError && err.status === 401) return; // the login form says it
  $("error").textContent = err.message;
  $("error").hidden = false;
}

const navOf = { overview: "nav-overview", storage: "nav-storage", project: "nav-storage", events: "nav-events", health: "nav-health", hosts: "nav-hosts", "host-view": "nav-hosts" };

function show(id) {
  $("error").hidden = true;
  $("login").hidden = true;
  $("signout").hidden = false;
  $("refresh").hidden = false;
  $("refreshed").textContent = "as of " + when(new Date());
  for (const m of document.querySelectorAll("main")) m.hidden = m.id !== id;
  for (const a of document.querySelectorAll("header nav a")) {
    if (a.id === navOf[id]) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function fill(tbody, rows) { tbody.replaceChildren(...rows); }

function projectHash(name) { return "#/storage/" + encodeURIComponent(name); }

// projectRow is a table row that opens a project, by mouse or by keyboard
// (the project's name is a link, so Tab reaches it).
function projectRow(name, cells) {
  return el("tr", { class: "link", "data-project": name, on: { click: (ev) => { if (!ev.target.closest("a")) location.hash = projectHash(name); } } },
    el("td", { class: "name" }, el("a", { href: projectHash(name) }, safeName(name))), ...cells);
}

let overviewCache = null; // the last overview read, for the hosts link and filters

// ---- Overview ----

async function overview() {
  // The summary: the disk and the few projects this page draws, not
  // every project's line (megabytes at 10,000 projects).
  const ov = await api("/v1/workspace/storage/summary");
  show("overview");
  $("host").textContent = ov.host + " · " + ov.root;
  const d = ov.disk;
  const used = d.total_bytes - d.free_bytes;
  $("disk-bar").replaceWith(Object.assign(bar(d.total_bytes ? used / d.total_bytes : null), { id: "disk-bar" }));
  $("disk-text").textContent = iec(used) + " used of " + iec(d.total_bytes) + ", " + iec(d.free_bytes) + " free" +
    (d.unowned_bytes != null ? ", " + iec(d.unowned_bytes) + " in no project" : "");
  $("disk-insight").textContent = diskInsight(d);
  $("backend").textContent = "Quotas: " + ov.backend.kind + (ov.backend.enforced ? " (enforced by the kernel)" : " (not enforced by the kernel: " + ov.backend.reason + ")");
  fill($("top").tBodies[0], ov.fullest.map((p) => projectRow(p.project, [
    el("td", {}, iec(p.workspace_bytes)), el("td", {}, p.quota_bytes ? iec(p.quota_bytes) : "no limit"),
    el("td", {}, bar(p.quota_used), percent(p.quota_used))])));
  drawGrowers(ov.growers);
  await Promise.all([serverWidget(), diskChart(ov)]);
}

// diskInsight is the disk's full-in, reclaimable and overcommit line, from
// the fields a server that computes them answers; "" from one that does not.
function diskInsight(d) {
  const parts = [];
  if ("full_in_seconds" in d) parts.push(d.full_in_seconds == null ? "not filling" : "full " + fullIn(d.full_in_seconds) + " at its trend");
  if (d.reclaimable_bytes != null) parts.push(iec(d.reclaimable_bytes) + " reclaimable by the sweep policies");
  if (d.promised_bytes != null) parts.push(iec(d.promised_bytes) + " promised by the limits" + (d.overcommit_ratio != null ? " (" + d.overcommit_ratio.toFixed(2) + "× the disk)" : "") +
    (d.unlimited_trees ? ", " + plural(d.unlimited_trees, "tree", "trees") + " without a limit" : ""));
  return parts.join("; ");
}

// serverWidget shows the host's health; a server without it says so.
async function serverWidget() {
  const dl = $("server-facts");
  let h;
  try {
    h = await api("/v1/system/health");
  } catch (err) {
    dl.replaceChildren(el("dt", {}, "health"), el("dd", {}, err.status === 404 ? "not served by this server" : err.message));
    return;
  }
  const facts = [["status", h.status]];
  if (h.cpu) facts.push(["load", [h.cpu.load1, h.cpu.load5, h.cpu.load15].map((v) => (v ?? 0).toFixed(2)).join(" / ") + " on " + plural(h.cpu.cores, "core", "cores")]);
  if (h.memory) facts.push(["memory", iec(h.memory.available_bytes) + " available of " + iec(h.memory.total_bytes)]);
  const root = h.disk && h.disk.paths && h.disk.paths[0];
  if (root) facts.push(["free space", iec(root.available_bytes) + " of " + iec(root.total_bytes) + " (" + (root.free_percent ?? 0).toFixed(1) + " % free)"]);
  if (h.docker) facts.push(["Docker", dockerText(h.docker)]);
  dl.replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { class: k === "status" ? "status-" + v : "" }, v)]));
}

function dockerText(d) {
  if (d.error) return d.error;
  return plural(d.images, "image", "images") + ", " + iec(d.images_bytes) + "; " + d.containers_running + " of " + plural(d.containers_total, "container", "containers") + " running";
}

// ---- Charts (SVG, built element by element) ----

const chartW = 720, chartH = 220, margin = { l: 64, r: 12, t: 10, b: 26 };

// historyPoints is how many points a chart asks for a series at most: one
// a pixel of its width (the server keeps each span's peak).
const historyPoints = 720;

// maxDots is how many points of a series get a dot of their own.
const maxDots = 96;

// lineChart draws series of [time, bytes] points and horizontal limit
// lines; a series with fewer than two points is drawn as dots.
function lineChart(box, series, limits, label) {
  const pts = series.flatMap((s) => s.points);
  if (pts.length === 0) {
    box.replaceChildren(el("p", { class: "muted" }, "No history yet: the scheduled snapshot pass records one point an hour."));
    return;
  }
  const t0 = Math.min(...pts.map((p) => p[0])), t1 = Math.max(...pts.map((p) => p[0]), t0 + 3600e3);
  const top = Math.max(1, ...pts.map((p) => p[1]), ...limits.map((l) => l.bytes)) * 1.05;
  const x = (t) => margin.l + (t - t0) / (t1 - t0) * (chartW - margin.l - margin.r);
  const y = (v) => chartH - margin.b - v / top * (chartH - margin.t - margin.b);
  const g = svg("svg", { viewBox: `0 0 ${chartW} ${chartH}`, role: "img", "aria-label": label, class: "line-chart" }, svg("title", {}, label));
  for (const f of [0, 0.5, 1]) {
    g.append(svg("line", { x1: margin.l, x2: chartW - margin.r, y1: y(top * f / 1.05), y2: y(top * f / 1.05), class: "grid" }),
      svg("text", { x: margin.l - 4, y: y(top * f / 1.05) + 4, class: "axis", "text-anchor": "end" }, iec(Math.round(top * f / 1.05))));
  }
  g.append(svg("text", { x: margin.l, y: chartH - 6, class: "axis" }, when(new Date(t0)).slice(5, 16)),
    svg("text", { x: chartW - margin.r, y: chartH - 6, class: "axis", "text-anchor": "end" }, when(new Date(t1)).slice(5, 16)));
  for (const l of limits) {
    g.append(svg("line", { x1: margin.l, x2: chartW - margin.r, y1: y(l.bytes), y2: y(l.bytes), class: "limit " + l.kind }),
      svg("text", { x: chartW - margin.r - 2, y: y(l.bytes) - 3, class: "axis " + l.kind, "text-anchor": "end" }, l.label + " " + iec(l.bytes)));
  }
  series.forEach((s, i) => {
    const sorted = [...s.points].sort((a, b) => a[0] - b[0]);
    if (sorted.length > 1) g.append(svg("polyline", { points: sorted.map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" "), class: "series s" + i, "data-series": s.name }));
    // A dot (with its figure on hover) per point while they are few; of
    // a long history only the newest, the line says the rest.
    for (const p of sorted.length <= maxDots ? sorted : sorted.slice(-1)) g.append(svg("circle", { cx: x(p[0]), cy: y(p[1]), r: 2.5, class: "dot s" + i }, svg("title", {}, s.name + ": " + iec(p[1]) + " at " + when(new Date(p[0])))));
  });
  const legend = el("p", { class: "legend" }, ...series.map((s, i) => el("span", { class: "key s" + i }, s.name)));
  box.replaceChildren(g, legend);
}

// chartData reads a chart's history; a failure is said in the chart's
// place, not over the whole view (a 401 asks for a token, as everywhere).
async function chartData(box, path) {
  try {
    return await api(path);
  } catch (err) {
    if (err.status === 401) throw err;
    box.replaceChildren(el("p", { class: "muted" }, "The history could not be read: " + safeLine(err.message)));
    return null;
  }
}

// diskChart draws the disk's used bytes at each scheduled pass over the
// snapshot window (GET /v1/workspace/storage/history), and now.
async function diskChart(ov) {
  const h = await chartData($("disk-chart"), "/v1/workspace/storage/history?points=" + historyPoints);
  if (!h) return;
  const total = h.total_bytes || ov.disk.total_bytes;
  const points = (h.points || []).map((p) => [Date.parse(p.at), p.bytes]).filter((p) => !isNaN(p[0]));
  points.push([Date.parse(ov.generated_at) || Date.now(), total - ov.disk.free_bytes]);
  lineChart($("disk-chart"), [{ name: "used on the disk", points }], [{ bytes: total, kind: "hard", label: "size" }], "Disk used over the snapshot window");
}

// drawGrowers draws the projects that grew most in 24 hours (the
// summary's, in order).
function drawGrowers(rows) {
  const box = $("growers");
  if (rows.length === 0) { box.replaceChildren(el("p", { class: "muted" }, "No project grew in 24 h (or there is less than a day of history).")); return; }
  const rowH = 24, w = 480, lw = 150;
  const max = rows[0].growth["24h"];
  const g = svg("svg", { viewBox: `0 0 ${w} ${rows.length * rowH + 4}`, role: "img", "aria-label": "Top growers in 24 h", class: "bars" }, svg("title", {}, "Top growers in 24 h"));
  rows.forEach((p, i) => {
    const bw = Math.max(2, (w - lw - 90) * p.growth["24h"] / max);
    const a = svg("a", { href: projectHash(p.project), "data-project": p.project },
      svg("text", { x: lw - 6, y: i * rowH + 16, "text-anchor": "end", class: "label" }, clip(safeName(p.project), 22)),
      svg("rect", { x: lw, y: i * rowH + 4, width: bw, height: rowH - 8, class: "grow" }),
      svg("text", { x: lw + bw + 4, y: i * rowH + 16, class: "axis" }, growth(p.growth["24h"]) + (p.full_in_seconds != null ? ", full " + fullIn(p.full_in_seconds) : "")),
      svg("title", {}, safeName(p.project) + ": " + growth(p.growth["24h"]) + " in 24 h"));
    g.append(a);
  });
  box.replaceChildren(g);
}

function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

// ---- Projects table ----

// The columns of the projects table: how each shows and sorts. A column
// whose figure this server does not answer (full-in, reclaimable) is shown
// with "-" and sorts last.
const columns = [
  { key: "project", label: "project", value: (p) => p.project, text: null },
  { key: "workspace", label: "workspace", value: (p) => p.workspace_bytes, text: (p) => iec(p.workspace_bytes) },
  { key: "cache", label: "cache", value: (p) => p.cache_bytes, text: (p) => iec(p.cache_bytes) },
  { key: "quota", label: "quota", value: (p) => p.quota_bytes || null, text: (p) => p.quota_bytes ? iec(p.quota_bytes) : "no limit" },
  { key: "used", label: "used", value: (p) => p.quota_used, cell: (p) => [bar(p.quota_used), percent(p.quota_used)] },
  { key: "growth24h", label: "growth 24 h", value: (p) => p.growth && p.growth["24h"], text: (p) => growth(p.growth && p.growth["24h"]) },
  { key: "growth7d", label: "growth 7 d", value: (p) => p.growth && p.growth["7d"], text: (p) => growth(p.growth && p.growth["7d"]) },
  { key: "fullin", label: "full in", value: (p) => p.full_in_seconds, text: (p) => fullIn(p.full_in_seconds) },
  { key: "reclaimable", label: "reclaimable", value: (p) => p.reclaimable_bytes, text: (p) => p.reclaimable_bytes == null ? "-" : iec(p.reclaimable_bytes) },
  { key: "activity", label: "last activity", value: (p) => p.last_activity_at ? Date.parse(p.last_activity_at) : null, text: (p) => when(p.last_activity_at) },
  { key: "swept", label: "last sweep", value: (p) => table.swept.has(p.project) ? Date.parse(table.swept.get(p.project)) : null, text: (p) => when(table.swept.get(p.project)) },
];

// table is the projects table's state: every project read, the filters,
// the order and the page shown.
const table = { all: [], swept: new Map(), shown: [], sort: "used", desc: true, page: 0 };

async function storage() {
  const [ov, swept] = await Promise.all([api("/v1/workspace/storage"), lastSweeps()]);
  overviewCache = ov;
  const start = performance.now();
  show("storage");
  $("host").textContent = ov.host + " · " + ov.root;
  table.all = ov.projects;
  table.swept = swept;
  drawHeader();
  drawProjects();
  document.body.dataset.renderMs = (performance.now() - start).toFixed(1);
}

function drawHeader() {
  const tr = $("projects").tHead.rows[0];
  tr.replaceChildren(...columns.map((c) => {
    const sorted = table.sort === c.key;
    return el("th", { "aria-sort": sorted ? (table.desc ? "descending" : "ascending") : "none", "data-key": c.key },
      el("button", { type: "button", class: "sort", on: { click: () => sortBy(c.key) } }, c.label, el("span", { class: "arrow", "aria-hidden": "true" }, sorted ? (table.desc ? " ▼" : " ▲") : "")));
  }));
}

function sortBy(key) {
  if (table.sort === key) table.desc = !table.desc;
  else { table.sort = key; table.desc = key !== "project"; }
  table.page = 0;
  drawHeader();
  drawProjects();
  $("projects").tHead.querySelector(`th[data-key="${key}"] button`).focus();
}

// collate orders names as localeCompare does, with one collator made
// once: localeCompare makes one at each call, most of a sort's time at
// 10,000 projects.
const collate = new Intl.Collator().compare;

// filtered is the projects the search and the filters keep, in the order
// chosen; a missing figure sorts last either way.
function filtered() {
  const q = $("search").value.trim().toLowerCase();
  const overSoft = $("f-over-soft").checked;
  const overPct = parseFloat($("f-over-pct").value);
  const staleDays = $("f-stale").checked ? Math.max(1, parseFloat($("f-stale-days").value) || 7) : 0;
  const staleBefore = Date.now() - staleDays * 86400e3;
  const keep = table.all.filter((p) => (!q || p.project.toLowerCase().includes(q)) &&
    (!overSoft || (p.quota_soft_bytes > 0 && p.workspace_bytes > p.quota_soft_bytes)) &&
    (isNaN(overPct) || (p.quota_used != null && p.quota_used * 100 >= overPct)) &&
    (!staleDays || !p.last_activity_at || Date.parse(p.last_activity_at) < staleBefore));
  const col = columns.find((c) => c.key === table.sort) || columns[0];
  const dir = table.desc ? -1 : 1;
  const vals = new Map(keep.map((p) => [p, col.value(p)]));
  keep.sort((a, b) => {
    const va = vals.get(a), vb = vals.get(b);
    if (va == null || vb == null) return va == null && vb == null ? collate(a.project, b.project) : va == null ? 1 : -1;
    const c = typeof va === "string" ? collate(va, vb) : va - vb;
    return c * dir || collate(a.project, b.project);
  });
  return keep;
}

function drawProjects() {
  table.shown = filtered();
  const size = parseInt($("page-size").value, 10) || 50;
  const pages = Math.max(1, Math.ceil(table.shown.length / size));
  table.page = Math.min(table.page, pages - 1);
  const from = table.page * size;
  const rows = table.shown.slice(from, from + size);
  fill($("projects").tBodies[0], rows.map((p) => projectRow(p.project, columns.slice(1).map((c) => el("td", {}, ...(c.cell ? c.cell(p) : [c.text(p)]))))));
  const n = table.shown.length;
  $("projects-count").textContent = n === table.all.length ? plural(n, "project", "projects") : plural(n, "project", "projects") + " of " + table.all.length + " match";
  $("page-text").textContent = n ? (from + 1) + "–" + (from + rows.length) + " of " + n : "";
  $("page-prev").disabled = table.page === 0;
  $("page-next").disabled = table.page >= pages - 1;
}

// lastSweeps maps each project to when a sweep last ran over it, from the
// journal's storage.swept records (the newest first).
async function lastSweeps() {
  const out = new Map();
  const page = await optional("/v1/workspace/storage/events?type=storage.swept&limit=500");
  for (const e of (page && page.events) || []) for (const p of (e.payload && e.payload.projects) || []) if (!out.has(p)) out.set(p, e.recorded_at);
  return out;
}

// ---- A project ----

let current = null; // the project shown, its reviewed plan, its treemap position

async function projectView(name) {
  const id = encodeURIComponent(name);
  const [ps, evs, leases] = await Promise.all([api("/v1/workspace/storage/projects/" + id + "?depth=4"), api(evictionsPage(id, "")),
    optional("/v1/workspace/storage/projects/" + id + "/leases")]);
  show("project");
  current = { name, plan: null, seen: new Set(), next: "", trail: [] };
  $("project-name").textContent = safeName(name);
  fill($("trees").tBodies[0], ps.trees.map(treeRow));
  const ws = ps.trees.find((t) => t.area === "workspace") || ps.trees[0];
  $("tree").replaceChildren(ws && ws.tree ? node(ws.tree, true) : el("p", {}, "no snapshot of this tree yet: the next snapshot pass walks it"));
  current.trail = ws && ws.tree ? [ws.tree] : [];
  drawTreemap();
  fill($("top-files").tBodies[0], ((ws && ws.top_files) || []).map((f) => el("tr", {}, el("td", { class: "path" }, safeName(f.path)), el("td", {}, iec(f.size_bytes)))));
  drawLeases(leases);
  $("evictions").tBodies[0].replaceChildren();
  showEvictions(evs);
  $("plan").hidden = true;
  $("sweep-result").textContent = "";
  await Promise.all([projectChart(name), projectDiff(id)]);
}

function treeRow(t) {
  const grace = [t.bytes_grace_ends_at, t.inodes_grace_ends_at].filter(Boolean).sort()[0];
  const graceText = !grace ? "-" : (Date.parse(grace) <= Date.now() ? "ended " : "until ") + when(grace);
  const limits = (t.inodes_soft ? "soft " + t.inodes_soft : "") + (t.inodes_soft && t.inodes_hard ? ", " : "") + (t.inodes_hard ? "hard " + t.inodes_hard : "");
  const over = t.bytes_soft && t.used_bytes > t.bytes_soft;
  return el("tr", { "data-area": t.area, class: over ? "over-soft" : null },
    el("td", {}, t.area), el("td", {}, iec(t.used_bytes)), el("td", {}, t.bytes_soft ? iec(t.bytes_soft) + (over ? " (over)" : "") : "no limit"),
    el("td", {}, t.bytes_hard ? iec(t.bytes_hard) : "no limit"),
    el("td", {}, bar(t.bytes_hard ? t.used_bytes / t.bytes_hard : null), t.bytes_hard ? (100 * t.used_bytes / t.bytes_hard).toFixed(1) + " %" : ""),
    el("td", {}, graceText), el("td", {}, String(t.used_inodes)), el("td", {}, limits || "no limit"),
    el("td", {}, fullIn(t.full_in_seconds)), el("td", {}, t.reclaimable_bytes == null ? "-" : iec(t.reclaimable_bytes)),
    el("td", {}, t.stale ? when(t.usage_walked_at) + " (stale)" : when(t.usage_walked_at || t.snapshot_at)));
}

function drawLeases(leases) {
  const rows = (leases || []).map((l) => el("tr", { "data-run": l.run }, el("td", {}, l.run),
    el("td", {}, when(l.expires_at) + (l.active ? " (in " + roughAge((Date.parse(l.expires_at) - Date.now()) / 1000) + ")" : "")),
    el("td", {}, l.active ? (l.kept_longer ? "held (kept longer)" : "held") : "expired")));
  fill($("leases").tBodies[0], rows);
  $("leases").hidden = rows.length === 0;
  $("leases-none").hidden = rows.length !== 0;
  if (leases == null) $("leases-none").textContent = "Leases could not be read.";
}

// projectChart draws each tree's stored snapshots over the snapshot window
// (GET …/history, thinned by the server to each span's peak) and its usage
// now, with the workspace's limits as lines.
async function projectChart(name) {
  const h = await chartData($("project-chart"), "/v1/workspace/storage/projects/" + encodeURIComponent(name) + "/history?points=" + historyPoints);
  if (!h || !current || current.name !== name) return;
  const now = Date.parse(h.generated_at) || Date.now();
  const series = h.trees.map((t) => ({ name: t.area, points: [...t.points.map((p) => [Date.parse(p.at), p.bytes]), [now, t.used_bytes]] }));
  const ws = h.trees.find((t) => t.area === "workspace");
  const limits = [];
  if (ws && ws.bytes_soft) limits.push({ bytes: ws.bytes_soft, kind: "soft", label: "workspace soft" });
  if (ws && ws.bytes_hard) limits.push({ bytes: ws.bytes_hard, kind: "hard", label: "workspace hard" });
  const partial = h.trees.reduce((n, t) => n + t.partial, 0);
  lineChart($("project-chart"), series, limits, "Usage of " + safeName(name) + "'s trees over the snapshot window");
  if (partial) $("project-chart").append(el("p", { class: "muted" }, plural(partial, "snapshot", "snapshots") + " left out: the walk ran out of its budget and undercounts."));
}

// diffLists are a diff's lists as the page shows them: the figure each
// row gives, and what it says.
const diffLists = [
  ["grew", "Grew most", (r) => growth(r.change_bytes) + " (" + iec(r.from_bytes) + " → " + iec(r.to_bytes) + ")"],
  ["shrank", "Shrank most", (r) => growth(r.change_bytes) + " (" + iec(r.from_bytes) + " → " + iec(r.to_bytes) + ")"],
  ["new", "New", (r) => iec(r.to_bytes)],
  ["gone", "Gone", (r) => iec(r.from_bytes)],
];

// projectDiff shows what changed in the workspace in 24 hours, from the
// stored snapshots (GET …/diff); when no snapshot that old is kept yet it
// says so, as the API does.
async function projectDiff(id) {
  const box = $("diff");
  let d;
  try {
    d = await api("/v1/workspace/storage/projects/" + id + "/diff?since=24h");
  } catch (err) {
    if (err.status === 401) throw err;
    box.replaceChildren(el("p", { class: "muted", id: "diff-none" }, err.status === 404 ? safeLine(err.message) : "What changed could not be read: " + safeLine(err.message)));
    $("diff-section").hidden = false;
    return;
  }
  const parts = [el("p", { id: "diff-summary" }, growth(d.change_bytes) + " in the " + d.area + " from " + when(d.from_at) + " (" + iec(d.from_bytes) + ") to " +
    when(d.to_at) + " (" + iec(d.to_bytes) + ")" + (d.partial ? "; the newest walk ran out of its budget, so what it did not reach reads as shrunk" : ""))];
  for (const [key, title, figure] of diffLists) {
    const rows = d[key] || [];
    if (!rows.length) continue;
    parts.push(el("h4", {}, title), el("div", { class: "scroll" }, el("table", { "data-diff": key }, el("tbody", {}, ...rows.map((r) =>
      el("tr", { "data-path": r.path }, el("td", { class: "path" }, safeName(r.path)), el("td", {}, figure(r))))))));
  }
  if (parts.length === 1) parts.push(el("p", { class: "muted" }, "No directory grew or shrank, nothing new or gone."));
  box.replaceChildren(...parts);
  $("diff-section").hidden = false;
}

// node renders one directory of the drill-down tree, its children folded.
function node(n, open) {
  const label = el("summary", {}, safeName(n.path), el("span", { class: "size" }, iec(n.size_bytes) + ", " + plural(n.total_files, "file", "files") + ", newest " + when(n.newest_modified_at)));
  const d = el("details", { "data-path": n.path }, label);
  if (open) d.open = true;
  for (const c of n.children || []) d.append(node(c, false));
  return d;
}

// ---- The treemap: where the bytes are, drillable ----

function drawTreemap() {
  const box = $("treemap");
  const trail = current.trail;
  const crumbs = $("treemap-path");
  crumbs.replaceChildren(...trail.flatMap((n, i) => [i ? " / " : "", i === trail.length - 1 ? el("span", {}, n.path === "." ? "(top)" : safeName(base(n.path))) :
    el("button", { type: "button", class: "crumb", on: { click: () => { current.trail = trail.slice(0, i + 1); drawTreemap(); } } }, n.path === "." ? "(top)" : safeName(base(n.path)))]));
  const at = trail[trail.length - 1];
  if (!at) { box.replaceChildren(el("p", { class: "muted" }, "No snapshot of the workspace yet.")); return; }
  const kids = (at.children || []).filter((c) => c.size_bytes > 0).map((c) => ({ n: c, size: c.size_bytes }));
  const rest = at.size_bytes - kids.reduce((s, k) => s + k.size, 0);
  if (rest > 0) kids.push({ n: null, size: rest });
  const W = 720, H = 300;
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "group", "aria-label": "Where the bytes are in " + at.path, class: "treemap" });
  if (!kids.length) { box.replaceChildren(el("p", { class: "muted" }, "Empty.")); return; }
  for (const r of squarify(kids.sort((a, b) => b.size - a.size), 0, 0, W, H)) {
    const n = r.item.n;
    const name = n ? safeName(base(n.path)) + "/" : "files here and smaller entries";
    const title = (n ? safeName(n.path) : name) + ": " + iec(r.item.size) + (n ? ", " + plural(n.total_files, "file", "files") : "");
    const drill = n && n.children && n.children.length ? () => { current.trail = [...trail, n]; drawTreemap(); $("treemap").querySelector("[tabindex]")?.focus(); } : null;
    const cell = svg("g", { class: "cell" + (n ? "" : " rest") + (drill ? " drill" : ""), "data-path": n ? n.path : "", tabindex: drill ? "0" : null, role: drill ? "button" : null, "aria-label": title },
      svg("rect", { x: r.x, y: r.y, width: Math.max(0, r.w - 1), height: Math.max(0, r.h - 1) }), svg("title", {}, title));
    if (r.w > 40 && r.h > 16) cell.append(svg("text", { x: r.x + 4, y: r.y + 14 }, clip(name, Math.floor(r.w / 7))));
    if (r.w > 40 && r.h > 32) cell.append(svg("text", { x: r.x + 4, y: r.y + 28, class: "axis" }, iec(r.item.size)));
    if (drill) {
      cell.addEventListener("click", drill);
      cell.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); drill(); } });
    }
    g.append(cell);
  }
  box.replaceChildren(g);
}

function base(p) { const i = p.lastIndexOf("/"); return i < 0 ? p : p.slice(i + 1); }

// squarify lays items (largest first) out in the rectangle with cells as
// near square as it can (Bruls, Huizing, van Wijk).
function squarify(items, x, y, w, h) {
  const total = items.reduce((s, i) => s + i.size, 0);
  const scale = (w * h) / total;
  const out = [];
  let rest = items.map((i) => ({ item: i, area: i.size * scale }));
  while (rest.length) {
    const side = Math.min(w, h);
    let row = [rest[0]], worst = ratio(row, side), k = 1;
    while (k < rest.length) {
      const next = ratio([...row, rest[k]], side);
      if (next > worst) break;
      row.push(rest[k]); worst = next; k++;
    }
    rest = rest.slice(k);
    const sum = row.reduce((s, r) => s + r.area, 0);
    const thick = sum / side;
    let off = 0;
    for (const r of row) {
      const len = r.area / thick;
      out.push(w >= h ? { item: r.item, x, y: y + off, w: thick, h: len } : { item: r.item, x: x + off, y, w: len, h: thick });
      off += len;
    }
    if (w >= h) { x += thick; w -= thick; } else { y += thick; h -= thick; }
  }
  return out;
}

function ratio(row, side) {
  const sum = row.reduce((s, r) => s + r.area, 0);
  const max = Math.max(...row.map((r) => r.area)), min = Math.min(...row.map((r) => r.area));
  return Math.max(side * side * max / (sum * sum), (sum * sum) / (side * side * min));
}

// ---- Eviction history ----

// evictionsPage is the journal's eviction records of a project, 50 at a
// time, newest first; cursor (the last page's "next") asks for older ones.
function evictionsPage(id, cursor) {
  return "/v1/workspace/storage/events?type=storage.evicted&project=" + id + "&limit=50" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
}

// showEvictions appends a page of the eviction history. A deletion is
// journalled pending, then settled: shown once, as it ended (the newest
// record of it comes first, on this page or an earlier one).
function showEvictions(page) {
  const deletions = page.events.filter((e) => {
    const r = e.payload || {};
    const key = (r.deletion_id || r.sweep_id || "") + "\u0000" + r.path;
    if (current.seen.has(key)) return false;
    current.seen.add(key);
    return true;
  });
  $("evictions").tBodies[0].append(...deletions.map((e) => {
    const r = e.payload || {};
    return el("tr", {}, el("td", {}, when(e.recorded_at)), el("td", { class: "path" }, safeName(r.path)), el("td", {}, r.state),
      el("td", {}, iec(r.freed_bytes ?? r.bytes)), el("td", {}, safeLine([r.reason, r.policy].filter(Boolean).join(": "))), el("td", {}, e.actor));
  }));
  current.next = page.next || "";
  $("evictions-more").hidden = !current.next;
}

async function olderEvictions() {
  const { name, next } = current;
  if (!next) return;
  $("evictions-more").disabled = true;
  try {
    const page = await api(evictionsPage(encodeURIComponent(name), next));
    if (current && current.name === name && current.next === next) showEvictions(page);
  } catch (err) {
    showError(err);
  } finally {
    $("evictions-more").disabled = false;
  }
}

// ---- Sweeps: a dry run, then exactly that plan, confirmed ----

async function dryRun() {
  const name = current.name;
  $("sweep-result").textContent = "";
  try {
    const plan = await api("/v1/workspace/storage/projects/" + encodeURIComponent(name) + "/sweep", { method: "POST", body: { dry_run: true } });
    if (!current || current.name !== name) return;
    current.plan = plan;
    $("plan").hidden = false;
    const skipped = plan.skipped || [];
    $("plan-summary").textContent = plural(plan.entries.length, "entry", "entries") + ", " + iec(plan.planned_bytes) + " would be deleted; " +
      plural(skipped.length, "entry", "entries") + " left alone; plan " + plan.plan_id + ", valid until " + when(plan.expires_at) +
      (plan.entries.length === 0 && skipped.length === 0 ? ". Nothing is old enough for a retention policy yet." : "");
    fill($("plan-entries").tBodies[0], plan.entries.map((e) => el("tr", {}, el("td", { class: "path" }, safeName(e.path)), el("td", {}, iec(e.size_bytes)), el("td", {}, safeLine([e.reason, e.policy].filter(Boolean).join(": "))))));
    fill($("plan-skipped").tBodies[0], skipped.map((s) => el("tr", {}, el("td", { class: "path" }, safeName(s.path)), el("td", {}, safeLine(s.reason)))));
    $("plan-entries").hidden = plan.entries.length === 0;
    $("plan-skipped").hidden = skipped.length === 0;
    $("plan-oversoft").textContent = (plan.over_soft || []).map((o) => o.area + " is over its soft limit: " + iec(o.used_bytes) + " of " + iec(o.soft_bytes)).join("; ");
    $("apply").disabled = plan.entries.length === 0;
  } catch (err) {
    $("sweep-result").textContent = refusal(err);
  }
}

// apply asks first, naming what goes; only a confirmed plan is swept.
function apply() {
  const { plan } = current;
  if (!plan || plan.entries.length === 0) return;
  $("confirm-text").textContent = "Sweeping deletes " + plural(plan.entries.length, "entry", "entries") + ", " + iec(plan.planned_bytes) + ", from " + current.name + ". A deletion cannot be undone.";
  $("confirm").showModal();
}

async function confirmed() {
  $("confirm").close();
  const { name, plan } = current;
  $("apply").disabled = true;
  try {
    const res = await api("/v1/workspace/storage/projects/" + encodeURIComponent(name) + "/sweep", { method: "POST", body: { plan_id: plan.plan_id } });
    await projectView(name); // the history, the tree, the largest files and the figures after it
    overviewCache = null;
    $("sweep-result").textContent = "Swept: " + plural(res.deleted.length, "entry", "entries") + " deleted, " + iec(res.freed_bytes) + " freed, " + res.skipped.length + " skipped.";
  } catch (err) {
    $("sweep-result").textContent = refusal(err);
  }
}

function refusal(err) {
  if (err.status === 403) return "Refused: " + err.message + " (sweeping needs an operator's token).";
  return "Refused: " + err.message;
}

// ---- Events ----

// eventTypes are the journal's types (journal.Types); a server older than
// one of them refuses it by name.
const eventTypes = ["storage.evicted", "storage.swept", "storage.snapshot", "storage.quota_exceeded", "storage.quota_ok", "quota.changed",
  "project.added", "project.removed", "settings.changed", "doctor.repaired", "root.initialised", "host.retired"];
const events = { next: "", query: "" };

async function eventsView() {
  show("events");
  const q = new URLSearchParams();
  if ($("ev-type").value) q.set("type", $("ev-type").value);
  if ($("ev-project").value.trim()) q.set("project", $("ev-project").value.trim());
  if ($("ev-since").value) q.set("since", $("ev-since").value);
  q.set("limit", "50");
  events.query = q.toString();
  $("event-list").tBodies[0].replaceChildren();
  showEvents(await api("/v1/workspace/storage/events?" + events.query));
}

function showEvents(page) {
  $("event-list").tBodies[0].append(...page.events.map((e) => el("tr", { "data-type": e.type },
    el("td", {}, when(e.recorded_at)), el("td", {}, e.type), el("td", {}, e.project ? safeName(e.project) : "-"), el("td", {}, e.actor), el("td", { class: "path" }, safeLine(eventText(e))))));
  events.next = page.next || "";
  $("events-more").hidden = !events.next;
  $("events-none").hidden = $("event-list").tBodies[0].rows.length !== 0;
}

// eventText is one line of what an event says, its payload's main fields.
function eventText(e) {
  const p = e.payload || {};
  switch (e.type) {
    case "storage.evicted": return [p.path, p.state, iec(p.freed_bytes ?? p.bytes), [p.reason, p.policy].filter(Boolean).join(": ")].filter(Boolean).join(" · ");
    case "storage.swept": return plural(p.evicted_entries ?? 0, "entry", "entries") + " deleted, " + iec(p.freed_bytes) + " freed" + (p.projects ? " in " + p.projects.join(", ") : "");
    case "storage.snapshot": return plural((p.trees || []).length, "tree", "trees") + " walked, " + iec(p.free_bytes) + " free" + (p.failed ? ", " + p.failed + " failed" : "");
  }
  const parts = [];
  for (const [k, v] of Object.entries(p)) if (v != null && typeof v !== "object") parts.push(k.replace(/_/g, " ") + " " + (k.endsWith("_bytes") ? iec(v) : String(v)));
  return parts.join(", ");
}

async function olderEvents() {
  if (!events.next) return;
  $("events-more").disabled = true;
  try {
    showEvents(await api("/v1/workspace/storage/events?" + events.query + "&cursor=" + encodeURIComponent(events.next)));
  } catch (err) {
    showError(err);
  } finally {
    $("events-more").disabled = false;
  }
}

// ---- Health ----

async function healthView() {
  const h = await api("/v1/system/health");
  show("health");
  $("health-status").replaceChildren("Status: ", el("strong", { class: "status-" + h.status }, h.status), ", checked " + when(h.checked_at) + " in " + (h.duration_seconds * 1000).toFixed(0) + " ms");
  const parts = [["disk", h.disk, diskFigures], ["cpu", h.cpu, (c) => "load " + [c.load1, c.load5, c.load15].map((v) => (v ?? 0).toFixed(2)).join(" / ") + " on " + plural(c.cores, "core", "cores") + (c.busy_percent != null ? ", " + c.busy_percent.toFixed(1) + " % busy" : "")],
    ["memory", h.memory, (m) => iec(m.available_bytes) + " available of " + iec(m.total_bytes) + " (" + (m.available_percent ?? 0).toFixed(1) + " %)"],
    ["docker", h.docker, (d) => d.error ? "" : dockerText(d) + "; build cache " + iec(d.build_cache_bytes) + ", volumes " + iec(d.volumes_bytes)],
    ["quota", h.quota, (q) => q.backend.kind + (q.backend.enforced ? ", enforced by the kernel" : ", not enforced" + (q.backend.reason ? ": " + q.backend.reason : "")) +
      (q.accounting != null ? "; accounting " + (q.accounting ? "on" : "off") : "") + (q.enforcement != null ? ", enforcement " + (q.enforcement ? "on" : "off") : "")],
    ["store", h.store, (s) => (s.reachable ? "reachable" : "not reachable") + ", " + (s.latency_seconds * 1000).toFixed(1) + " ms"]];
  fill($("health-parts").tBodies[0], parts.map(([name, p, figures]) => el("tr", { "data-part": name },
    el("td", {}, name), el("td", { class: p ? "status-" + p.status : "" }, p ? p.status : "not configured"),
    el("td", {}, p ? figures(p) : "-"), el("td", {}, p ? [p.reason, p.error, p.fix && "fix: " + p.fix].filter(Boolean).join("; ") : ""))));
  const th = h.thresholds;
  $("health-thresholds").replaceChildren(...(th ? [
    ["free disk space and inodes", "warn below " + th.disk_free_warn_percent + " %, critical below " + th.disk_free_critical_percent + " %"],
    ["available memory", "warn below " + th.memory_available_warn_percent + " %, critical below " + th.memory_available_critical_percent + " %"],
    ["5-minute load per core", "warn above " + th.load_per_core_warn + ", critical above " + th.load_per_core_critical]]
    : [["thresholds", "not said by this server: see the health_* settings (xfsq settings)"]]).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  fill($("health-disks").tBodies[0], ((h.disk && h.disk.paths) || []).map((d) => el("tr", {}, el("td", { class: "path" }, d.path), el("td", {}, d.area || "-"),
    el("td", {}, d.error || iec(d.available_bytes) + " of " + iec(d.total_bytes)), el("td", {}, d.error ? "-" : (d.free_percent ?? 0).toFixed(1) + " %"),
    el("td", {}, d.free_inodes_percent != null ? d.free_inodes_percent.toFixed(1) + " %" : "-"))));
}

function diskFigures(d) {
  const root = d.paths && d.paths[0];
  return root ? iec(root.available_bytes) + " available of " + iec(root.total_bytes) + " on " + root.path + (d.paths.length > 1 ? " and " + plural(d.paths.length - 1, "more filesystem", "more filesystems") : "") : "";
}

// ---- Hosts (a fleet's, from a server that serves them) ----

// hostHash is where a host's figures are shown: this host's own views, or
// another's trees as the shared store holds them.
function hostHash(h) { return h.this ? "#/" : "#/hosts/" + encodeURIComponent(h.host); }

function hostState(h) {
  return h.retired_at ? "retired " + when(h.retired_at) : h.stale ? "stale" : "fresh";
}

function lastSeen(h) {
  return h.last_seen_at ? when(h.last_seen_at) + (h.age_seconds != null ? " (" + roughAge(h.age_seconds) + " ago)" : "") : "never";
}

async function hostsView() {
  const f = await api("/v1/fleet/hosts");
  show("hosts");
  fillHostPicker(f);
  fill($("host-list").tBodies[0], [...(f.hosts || []), ...(f.retired || [])].map((h) => el("tr", { "data-host": h.host, class: h.stale && !h.retired_at ? "stale" : null },
    el("td", {}, el("a", { href: hostHash(h) }, safeName(h.host)), h.this ? " (this one)" : ""),
    el("td", {}, lastSeen(h)), el("td", { class: h.stale && !h.retired_at ? "status-warn" : "" }, hostState(h)), el("td", {}, h.version || "-"),
    el("td", {}, typeof h.backend === "object" && h.backend ? h.backend.kind : (h.backend || "-")), el("td", {}, h.projects == null ? "-" : String(h.projects)))));
}

// hostTrees is the host shown by hostView and its trees.
const hostTrees = { name: "", all: [] };

// hostView shows another host's trees from the shared store
// (GET /v1/fleet/storage?host=), fullest first, with the age of their
// figures; a host that stopped reporting says so above them.
async function hostView(name) {
  const f = await api("/v1/fleet/storage?host=" + encodeURIComponent(name));
  show("host-view");
  const h = (f.hosts || []).find((x) => x.host === name) || { host: name, stale: true };
  $("host-view-name").textContent = safeName(name);
  $("host").textContent = safeName(name) + (h.root ? " · " + h.root : "");
  $("host-view-facts").textContent = "Last seen " + lastSeen(h) + "; " + hostState(h) + "; " + (h.version || "version unknown") + ", " + (h.backend || "backend unknown") +
    (h.root ? ", root " + h.root : "") + "; " + plural(h.projects ?? 0, "project", "projects") + ".";
  $("host-view-stale").hidden = !h.stale;
  $("host-view-stale").textContent = h.stale ? "This host is stale: it has not reported " + (h.last_seen_at ? "since " + lastSeen(h) : "at all") + ", so its figures are at least that old." : "";
  hostTrees.name = name;
  hostTrees.all = [...(f.trees || [])].sort((a, b) => b.percent - a.percent || b.used_bytes - a.used_bytes || a.project.localeCompare(b.project));
  drawHostTrees();
  const pick = $("host-select");
  if (![...pick.options].some((o) => o.value === name)) pick.append(el("option", { value: name }, safeName(name)));
  pick.value = name;
}

// hostRows is how many of a host's trees are drawn at once, fullest first.
const hostRows = 500;

function drawHostTrees() {
  const q = $("host-search").value.trim().toLowerCase();
  const keep = hostTrees.all.filter((t) => !q || t.project.toLowerCase().includes(q));
  fill($("host-trees").tBodies[0], keep.slice(0, hostRows).map((t) => el("tr", { "data-project": t.project, "data-area": t.area },
    el("td", { class: "name" }, safeName(t.project)), el("td", {}, t.area), el("td", {}, iec(t.used_bytes)),
    el("td", {}, t.bytes_hard ? iec(t.bytes_hard) : "no limit"), el("td", {}, bar(t.bytes_hard ? t.used_bytes / t.bytes_hard : null), t.bytes_hard ? t.percent.toFixed(1) + " %" : ""),
    el("td", {}, t.figures_at ? when(t.figures_at) + (t.figures_age_seconds != null ? " (" + roughAge(t.figures_age_seconds) + " ago)" : "") : "never"))));
  $("host-trees-count").textContent = plural(keep.length, "tree", "trees") + (keep.length > hostRows ? ", the " + hostRows + " fullest shown" : "") +
    (q ? " match of " + hostTrees.all.length : "");
}

// fillHostPicker lists the fleet's live hosts in the header's selector;
// it shows only when there is another host to pick.
function fillHostPicker(f) {
  const pick = $("host-select");
  const hosts = f.hosts || [];
  const shown = location.hash.startsWith("#/hosts/") ? decodeURIComponent(location.hash.slice("#/hosts/".length)) : (hosts.find((h) => h.this) || {}).host;
  pick.replaceChildren(...hosts.map((h) => el("option", { value: h.this ? "" : h.host }, safeName(h.host) + (h.this ? " (this one)" : h.stale ? " (stale)" : ""))));
  pick.value = hosts.some((h) => h.host === shown && !h.this) ? shown : "";
  $("host-pick").hidden = hosts.length < 2;
}

// hostsLink shows the Hosts link and the host selector when the server
// serves a fleet's hosts.
async function hostsLink() {
  try {
    fillHostPicker(await api("/v1/fleet/hosts"));
    $("nav-hosts").hidden = false;
  } catch (_) {
    $("nav-hosts").hidden = true;
    $("host-pick").hidden = true;
  }
}

// ---- Routing ----

async function route() {
  if (!sessionStorage.getItem(tokenKey)) { showLogin(""); return; }
  const h = location.hash.replace(/^#/, "") || "/";
  const start = performance.now();
  try {
    if (h.startsWith("/storage/")) await projectView(decodeURIComponent(h.slice("/storage/".length)));
    else if (h === "/storage") await storage();
    else if (h === "/events") await eventsView();
    else if (h === "/health") await healthView();
    else if (h === "/hosts") await hostsView();
    else if (h.startsWith("/hosts/")) await hostView(decodeURIComponent(h.slice("/hosts/".length)));
    else await overview();
  } catch (err) {
    showError(err);
  }
  if (!h.startsWith("/hosts/")) $("host-select").value = "";
  // For the browser tests and the render benchmark: how long this view
  // took, from asking the API to every chart drawn.
  document.body.dataset.viewMs = (performance.now() - start).toFixed(1);
  document.body.dataset.ready = h; // for the browser tests: this view is drawn
}

function redrawProjects() { table.page = 0; drawProjects(); }

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(tokenKey, $("token").value.trim());
    $("token").value = "";
    route();
    hostsLink();
  });
  $("signout").addEventListener("click", () => { sessionStorage.removeItem(tokenKey); showLogin(""); });
  $("dry-run").addEventListener("click", dryRun);
  $("apply").addEventListener("click", apply);
  $("confirm-apply").addEventListener("click", confirmed);
  $("confirm-cancel").addEventListener("click", () => $("confirm").close());
  $("evictions-more").addEventListener("click", olderEvictions);
  $("events-more").addEventListener("click", olderEvents);
  $("event-filters").addEventListener("submit", (ev) => { ev.preventDefault(); eventsView().catch(showError); });
  for (const t of eventTypes) $("ev-type").append(el("option", { value: t }, t));
  for (const id of ["search", "f-over-pct", "f-stale-days"]) $(id).addEventListener("input", redrawProjects);
  for (const id of ["f-over-soft", "f-stale", "page-size"]) $(id).addEventListener("change", redrawProjects);
  $("page-prev").addEventListener("click", () => { table.page--; drawProjects(); });
  $("page-next").addEventListener("click", () => { table.page++; drawProjects(); });
  $("refresh").addEventListener("click", route);
  $("host-select").addEventListener("change", (ev) => { location.hash = ev.target.value ? "#/hosts/" + encodeURIComponent(ev.target.value) : "#/"; });
  $("host-search").addEventListener("input", drawHostTrees);
  window.addEventListener("hashchange", route);
  route();
  if (sessionStorage.getItem(tokenKey)) hostsLink();
});
