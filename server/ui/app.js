// xfsq's dashboard (SPEC §9): a client of the HTTP API like any other. It
// holds no data and no secret of its own: the token the operator gives is
// kept in this tab's sessionStorage and sent as a bearer token, so the API's
// roles and project limits apply to it as to every client. A tenant names
// every file and directory shown here, so nothing from the API is ever
// parsed as HTML: every text goes into the page as textContent.
"use strict";

const tokenKey = "xfsq-token";
const $ = (id) => document.getElementById(id);

// el builds an element; children are elements or strings (text, never HTML).
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c ?? "")));
  return e;
}

// iec formats bytes as the CLI does: 1.5 KiB, 50.0 GiB, 512 B.
function iec(n) {
  if (n == null) return "—";
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  if (Math.abs(n) < 1024) return n + " B";
  let v = n, u = -1;
  do { v /= 1024; u++; } while (Math.abs(v) >= 1024 && u < units.length - 1);
  return v.toFixed(1) + " " + units[u];
}

// plural is a count with its noun, as the CLI writes it: 1 file, 2 files.
function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }

function signed(n) { return n == null ? "—" : (n > 0 ? "+" : n < 0 ? "−" : "") + iec(Math.abs(n)); }

// when shows a time in the browser's zone, with the zone named.
function when(s) {
  if (!s) return "—";
  const d = new Date(s);
  return isNaN(d) ? "—" : d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
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

function show(id) {
  $("error").hidden = true;
  $("login").hidden = true;
  $("signout").hidden = false;
  $("refresh").hidden = false;
  $("refreshed").textContent = "as of " + new Date().toLocaleTimeString(undefined, { timeZoneName: "short" });
  for (const m of document.querySelectorAll("main")) m.hidden = m.id !== id;
}

function fill(tbody, rows) { tbody.replaceChildren(...rows); }

// share is what decides a project's place among the top ones.
function share(p) { return p.quota_used ?? 0; }

async function overview() {
  const ov = await api("/v1/workspace/storage");
  show("overview");
  $("host").textContent = ov.host + " · " + ov.root;
  const used = ov.disk.total_bytes - ov.disk.free_bytes;
  $("disk-bar").replaceWith(Object.assign(bar(ov.disk.total_bytes ? used / ov.disk.total_bytes : null), { id: "disk-bar" }));
  $("disk-text").textContent = iec(used) + " used of " + iec(ov.disk.total_bytes) + ", " + iec(ov.disk.free_bytes) + " free" +
    (ov.disk.unowned_bytes != null ? ", " + iec(ov.disk.unowned_bytes) + " in no project" : "");
  $("backend").textContent = "Quotas: " + ov.backend.kind + (ov.backend.enforced ? " (enforced by the kernel)" : " (not enforced by the kernel: " + ov.backend.reason + ")");
  const top = [...ov.projects].sort((a, b) => share(b) - share(a) || b.workspace_bytes - a.workspace_bytes).slice(0, 5);
  fill($("top").tBodies[0], top.map((p) => el("tr", { class: "link", "data-project": p.project, on: { click: () => { location.hash = "#/storage/" + encodeURIComponent(p.project); } } },
    el("td", {}, p.project), el("td", {}, iec(p.workspace_bytes)), el("td", {}, p.quota_bytes ? iec(p.quota_bytes) : "no limit"),
    el("td", {}, bar(p.quota_used), percent(p.quota_used)))));
  serverWidget();
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
  if (h.docker) facts.push(["Docker", h.docker.error ? h.docker.error : plural(h.docker.images, "image", "images") + ", " + iec(h.docker.images_bytes) + "; " + h.docker.containers_running + " of " + plural(h.docker.containers_total, "container", "containers") + " running"]);
  dl.replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { class: k === "status" ? "status-" + v : "" }, v)]));
}

async function storage() {
  const [ov, swept] = await Promise.all([api("/v1/workspace/storage"), lastSweeps()]);
  show("storage");
  $("host").textContent = ov.host + " · " + ov.root;
  fill($("projects").tBodies[0], ov.projects.map((p) => el("tr", { class: "link", "data-project": p.project, on: { click: () => { location.hash = "#/storage/" + encodeURIComponent(p.project); } } },
    el("td", {}, p.project), el("td", {}, iec(p.workspace_bytes)), el("td", {}, iec(p.cache_bytes)),
    el("td", {}, p.quota_bytes ? iec(p.quota_bytes) : "no limit"), el("td", {}, bar(p.quota_used), percent(p.quota_used)),
    el("td", {}, signed(p.growth["24h"])), el("td", {}, signed(p.growth["7d"])), el("td", {}, when(p.last_activity_at)),
    el("td", {}, when(swept.get(p.project))))));
}

// lastSweeps maps each project to when a sweep last ran over it, from the
// journal's storage.swept records (the newest first).
async function lastSweeps() {
  const out = new Map();
  try {
    const page = await api("/v1/workspace/storage/events?type=storage.swept&limit=500");
    for (const e of page.events) for (const p of (e.payload && e.payload.projects) || []) if (!out.has(p)) out.set(p, e.recorded_at);
  } catch (err) {
    if (err.status === 401) throw err;
  }
  return out;
}

// node renders one directory of the drill-down tree, its children folded.
function node(n, open) {
  const label = el("summary", {}, n.path, el("span", { class: "size" }, iec(n.size_bytes) + ", " + plural(n.total_files, "file", "files") + ", newest " + when(n.newest_modified_at)));
  const d = el("details", { "data-path": n.path }, label);
  if (open) d.open = true;
  for (const c of n.children || []) d.append(node(c, false));
  return d;
}

let current = null; // the project shown, and its reviewed plan

async function projectView(name) {
  const id = encodeURIComponent(name);
  const [ps, evs] = await Promise.all([api("/v1/workspace/storage/projects/" + id + "?depth=3"), api(evictionsPage(id, ""))]);
  show("project");
  current = { name, plan: null, seen: new Set(), next: "" };
  $("project-name").textContent = name;
  fill($("trees").tBodies[0], ps.trees.map((t) => el("tr", { "data-area": t.area },
    el("td", {}, t.area), el("td", {}, iec(t.used_bytes)), el("td", {}, t.bytes_hard ? iec(t.bytes_hard) : "no limit"),
    el("td", {}, bar(t.bytes_hard ? t.used_bytes / t.bytes_hard : null), t.bytes_hard ? (100 * t.used_bytes / t.bytes_hard).toFixed(1) + " %" : ""),
    el("td", {}, String(t.used_inodes)), el("td", {}, t.stale ? when(t.usage_walked_at) + " (stale)" : when(t.usage_walked_at || t.snapshot_at)))));
  const ws = ps.trees.find((t) => t.area === "workspace") || ps.trees[0];
  $("tree").replaceChildren(ws && ws.tree ? node(ws.tree, true) : el("p", {}, "no snapshot of this tree yet: the next snapshot pass walks it"));
  fill($("top-files").tBodies[0], ((ws && ws.top_files) || []).map((f) => el("tr", {}, el("td", { class: "path" }, f.path), el("td", {}, iec(f.size_bytes)))));
  $("evictions").tBodies[0].replaceChildren();
  showEvictions(evs);
  $("plan").hidden = true;
  $("sweep-result").textContent = "";
}

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
    return el("tr", {}, el("td", {}, when(e.recorded_at)), el("td", { class: "path" }, r.path), el("td", {}, r.state),
      el("td", {}, iec(r.freed_bytes ?? r.bytes)), el("td", {}, [r.reason, r.policy].filter(Boolean).join(": ")), el("td", {}, e.actor));
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

async function dryRun() {
  const name = current.name;
  $("sweep-result").textContent = "";
  try {
    const plan = await api("/v1/workspace/storage/projects/" + encodeURIComponent(name) + "/sweep", { method: "POST", body: { dry_run: true } });
    if (!current || current.name !== name) return;
    current.plan = plan;
    $("plan").hidden = false;
    $("plan-summary").textContent = plural(plan.entries.length, "entry", "entries") + ", " + iec(plan.planned_bytes) + " would be deleted; plan " + plan.plan_id + ", valid until " + when(plan.expires_at);
    fill($("plan-entries").tBodies[0], plan.entries.map((e) => el("tr", {}, el("td", { class: "path" }, e.path), el("td", {}, iec(e.size_bytes)), el("td", {}, e.reason))));
    $("apply").disabled = plan.entries.length === 0;
  } catch (err) {
    $("sweep-result").textContent = refusal(err);
  }
}

async function apply() {
  const { name, plan } = current;
  if (!plan) return;
  $("apply").disabled = true;
  try {
    const res = await api("/v1/workspace/storage/projects/" + encodeURIComponent(name) + "/sweep", { method: "POST", body: { plan_id: plan.plan_id } });
    await projectView(name); // the history, the tree and the figures after it
    $("sweep-result").textContent = "Swept: " + plural(res.deleted.length, "entry", "entries") + " deleted, " + iec(res.freed_bytes) + " freed, " + res.skipped.length + " skipped.";
  } catch (err) {
    $("sweep-result").textContent = refusal(err);
  }
}

function refusal(err) {
  if (err.status === 403) return "Refused: " + err.message + " (sweeping needs an operator's token).";
  return "Refused: " + err.message;
}

async function route() {
  if (!sessionStorage.getItem(tokenKey)) { showLogin(""); return; }
  const h = location.hash.replace(/^#/, "") || "/";
  try {
    if (h.startsWith("/storage/")) await projectView(decodeURIComponent(h.slice("/storage/".length)));
    else if (h === "/storage") await storage();
    else await overview();
  } catch (err) {
    showError(err);
  }
  document.body.dataset.ready = h; // for the browser tests: this view is drawn
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(tokenKey, $("token").value.trim());
    $("token").value = "";
    route();
  });
  $("signout").addEventListener("click", () => { sessionStorage.removeItem(tokenKey); showLogin(""); });
  $("dry-run").addEventListener("click", dryRun);
  $("apply").addEventListener("click", apply);
  $("evictions-more").addEventListener("click", olderEvictions);
  $("refresh").addEventListener("click", route);
  window.addEventListener("hashchange", route);
  route();
});
