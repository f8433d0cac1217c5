// planweave's page: runs, a question box, and one run's plan as it is compiled and run, built
// from the run's event stream; no library, no build step.  Every text a model, a tool or a
// person wrote is put in the page with textContent or as an SVG text node's data, never as HTML.
//
// The token: asked for here, kept in sessionStorage (this tab only), sent as an Authorization
// header.  EventSource cannot send headers, so the event stream is read with fetch(): the
// response body is parsed as Server-Sent Events here, and a dropped stream is taken up again
// with Last-Event-ID, as EventSource would.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "planweave-token";
const state = { runs: [], runId: null, run: null, follow: null, needsToken: false, admin: false, plan: null };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return node;
}

// ------------------------------------------------------------------ talking to the server

function headers(extra) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...(extra || {}) };
}

class Unauthorized extends Error {}

async function api(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  if (response.status === 401) throw new Unauthorized("the token was refused");
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error((data.error && data.error.message) || `HTTP ${response.status}`);
  return data;
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

// Follows one run's events until the stream ends (the run finished or paused) or `stop()`.
function follow(runId, after, onEvent, onEnd) {
  const abort = new AbortController();
  let lastId = after;
  let stopped = false;
  let retry = 500;  // ms before reconnecting; the server says how long (`retry:`)
  (async () => {
    for (let attempt = 0; !stopped; attempt++) {
      let ended = false;
      try {
        const extra = lastId === null ? {} : { "Last-Event-ID": lastId };
        const response = await fetch(`/runs/${encodeURIComponent(runId)}/events`, {
          headers: headers(extra), signal: abort.signal, cache: "no-store",
        });
        if (response.status === 401) throw new Unauthorized("the token was refused");
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer = (buffer + value).replace(/\r\n?/g, "\n");
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const event = parseBlock(block);
            if (event.retry !== null) retry = event.retry;
            if (event.data === null) continue;
            attempt = -1;  // this connection worked: the next wait starts from `retry` again
            if (event.id !== null) lastId = event.id;
            onEvent(event.data);
          }
        }
        ended = true;
      } catch (error) {
        if (stopped || abort.signal.aborted) return;
        if (error instanceof Unauthorized) { askToken(error.message); return; }
      }
      if (ended) { onEnd(lastId); return; }
      await sleep(Math.min(5000, retry * 2 ** attempt));
    }
  })();
  return {
    stop() { stopped = true; abort.abort(); },
    get lastId() { return lastId; },
  };
}

// One block of the stream: its id, retry (ms) and JSON data, each null when absent or unusable.
function parseBlock(block) {
  let id = null;
  let retry = null;
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") data.push(value);
    else if (name === "id") id = value;
    else if (name === "retry" && /^[0-9]+$/.test(value)) retry = Number(value);
  }
  let parsed = null;
  if (data.length) {
    try { parsed = JSON.parse(data.join("\n")); } catch { parsed = null; }
  }
  return { id, retry, data: parsed };
}

// ------------------------------------------------------------------ the token

function askToken(message) {
  state.needsToken = true;
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("token").focus();
}

async function start() {
  try {
    const health = await api("GET", "/healthz");
    // Who the token is (`GET /me`): a user, an admin, or the server's operator.
    const me = await api("GET", "/me");
    state.admin = me.role === "admin";
    const who = me.user === null ? "operator" : `${me.user}${state.admin ? " (admin)" : ""}`;
    $("server").textContent = `model ${health.model} · signed in as ${who}`;
  } catch (error) {
    if (error instanceof Unauthorized) {
      askToken(sessionStorage.getItem(TOKEN_KEY) ? "the token was refused" : "");
      return;
    }
    $("server").textContent = `cannot reach the server: ${error.message}`;
    return;
  }
  $("login").hidden = true;
  $("app").hidden = false;
  $("forget").hidden = !sessionStorage.getItem(TOKEN_KEY);
  await refreshRuns();
  await refreshPlans();
  const wanted = location.hash.slice(1);
  if (wanted) openRun(wanted);
}

$("login").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  start();
});

$("forget").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  location.reload();
});

// ------------------------------------------------------------------ runs and questions

// The model answers one LLM call at a time (the embedded model): a run whose call waits for it
// shows how many calls are ahead, in the list (`model_wait`) and in its own view (its events).
const waitText = (ahead) => `waiting for the model — ${ahead} ahead`;
// A cost, where the run's settings price the model (`--price`): dollars to the millionth.
const costText = (cost) => (typeof cost === "number" ? ` · $${cost.toFixed(6)}` : "");

let runsAt = 0;  // when the list was last asked for (ms, performance.now())

async function refreshRuns() {
  runsAt = performance.now();
  try {
    state.runs = (await api("GET", "/runs?limit=50")).runs;
  } catch (error) {
    if (error instanceof Unauthorized) askToken(error.message);
    return;
  }
  const list = $("runs");
  list.replaceChildren();
  for (const run of state.runs) {
    const counts = run.tasks || {};
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    const took = run.wall_s == null ? "" : ` · ${run.wall_s.toFixed(2)} s`;
    const item = el("li", { "data-id": run.id },
      el("span", { class: "q" }, run.question),
      statusBadge(run.status, counts.failed || 0), " ",
      el("span", { class: "muted counts" }, `${counts.done || 0}/${total} tasks${took}`));
    if (run.model_wait) item.append(" ", el("span", { class: "badge wait" }, waitText(run.model_wait.ahead)));
    // An admin sees every user's runs: each says whose it is.
    const owner = (run.settings || {}).user;
    if (state.admin) item.append(" ", el("span", { class: "muted owner" }, owner == null ? "operator" : owner));
    if (run.id === state.runId) item.classList.add("selected");
    item.addEventListener("click", () => openRun(run.id));
    list.append(item);
  }
}

// A run's status as a badge: a finished run with failed tasks says how many, in amber.
function statusBadge(status, failed, node) {
  const badge = node || el("span", {});
  const failing = status === "finished" && failed > 0;
  badge.textContent = failing ? `finished, ${failed} failed` : status.replace("_", " ");
  badge.className = `badge s-${failing ? "finished-failed" : status}`;
  return badge;
}

// The list's entry of the run shown here, brought up to date from its events (the list itself
// is asked for every few seconds).
function renderListed(run) {
  const item = [...$("runs").children].find((li) => li.dataset.id === run.id);
  if (!item) return;
  const tasks = [...run.tasks.values()];
  const failed = tasks.filter((t) => t.status === "failed").length;
  const done = tasks.filter((t) => t.status === "done").length;
  statusBadge(run.status, failed, item.querySelector(".badge:not(.wait)"));
  const took = run.live ? "" : ` · ${run.now.toFixed(2)} s`;
  item.querySelector(".counts").textContent = `${done}/${tasks.length} tasks${took}`;
}

$("ask").addEventListener("submit", async (e) => {
  e.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  const body = { question, mode: $("mode").value };
  if ($("approve").value) body.approve = $("approve").value;
  $("ask-error").textContent = "";
  try {
    const started = await api("POST", "/runs", body);
    $("question").value = "";
    openRun(started.id);
    refreshRuns();
  } catch (error) {
    $("ask-error").textContent = error.message;
  }
});

// ------------------------------------------------------------------ named plans

// The named plans (`GET /plans`); choosing one shows a field per parameter, and running it
// starts a run of the plan with those values (each read as its parameter's type by the server).
async function refreshPlans() {
  let plans;
  try {
    plans = (await api("GET", "/plans")).plans;
  } catch (error) {
    return;
  }
  const list = $("plans");
  list.replaceChildren();
  for (const plan of plans) {
    const item = el("li", { "data-name": plan.name },
      el("span", { class: "q" }, plan.name), " ",
      el("span", { class: "muted" }, `v${plan.version}`));
    item.addEventListener("click", () => choosePlan(plan));
    list.append(item);
  }
}

function choosePlan(plan) {
  state.plan = plan;
  $("plan-name").textContent = `${plan.name} v${plan.version}`;
  const fields = $("plan-params");
  fields.replaceChildren();
  for (const [name, type] of Object.entries(plan.params)) {
    fields.append(el("label", {}, `${name} `,
      el("input", { "data-param": name, "aria-label": name, placeholder: type })));
  }
  $("plan-error").textContent = "";
  $("plan-run").hidden = false;
}

$("plan-run").addEventListener("submit", async (e) => {
  e.preventDefault();
  const plan = state.plan;
  if (!plan) return;
  const params = {};
  for (const input of $("plan-params").querySelectorAll("input")) {
    if (input.value !== "") params[input.dataset.param] = input.value;  // empty: not given
  }
  $("plan-error").textContent = "";
  try {
    const started = await api("POST", `/plans/${encodeURIComponent(plan.name)}/runs`, { params });
    openRun(started.id);
    refreshRuns();
  } catch (error) {
    $("plan-error").textContent = error.message;
  }
});

// ------------------------------------------------------------------ one run

function newRun(id) {
  return {
    id, question: "", status: "running", tasks: new Map(), llm: new Map(), notes: [],
    answer: "", finalAnswer: null, error: null, cache: null, awaiting: null, now: 0,
    clockAt: performance.now(), live: true, waits: new Map(),
    usage: { calls: 0, prompt: 0, completion: 0, cost: null },
  };
}

function openRun(id) {
  if (state.follow) state.follow.stop();
  state.runId = id;
  state.run = newRun(id);
  location.hash = id;
  $("run").hidden = false;
  $("detail").hidden = true;
  for (const item of $("runs").children) item.classList.toggle("selected", item.dataset.id === id);
  listen(state.run, null);
  render();
}

function listen(run, after) {
  run.live = true;
  state.follow = follow(run.id, after, (event) => {
    apply(run, event);
    schedule();
    // The list shows the wait too: bring it up to date when this run's place changes.
    if (event.kind === "model_waiting" || event.kind === "model_acquired") refreshRuns();
  }, () => {
    run.live = false;
    run.waits.clear();
    render();
    refreshRuns();
  });
}

function task(run, id) {
  let t = run.tasks.get(id);
  if (!t) {
    t = { id, tool: "", call: "", deps: [], status: "pending", start: null, end: null, note: "" };
    run.tasks.set(id, t);
  }
  return t;
}

function apply(run, e) {
  if (typeof e.t === "number") {
    run.now = Math.max(run.now, e.t);
    run.clockAt = performance.now();
  }
  switch (e.kind) {
    case "run_started": run.question = e.question; run.status = "running"; break;
    case "run_resumed": run.status = "running"; run.awaiting = null; break;
    case "task_planned": Object.assign(task(run, e.task_id), {
      tool: e.tool, call: e.call, deps: e.deps || [], status: "pending", note: "" }); break;
    case "task_started":
      if (e.item != null) break;  // a fan-out's element: its task's row counts them as they end
      Object.assign(task(run, e.task_id), {
      status: "running", start: e.start, end: null }); break;
    case "task_finished": case "task_failed": case "task_skipped": case "task_cancelled": {
      const t = task(run, e.task_id);
      if (e.item != null) {
        t.itemsDone = (t.itemsDone || 0) + 1;
        t.note = `${t.itemsDone} element(s) ended` + (e.kind === "task_failed" ? ", one failed" : "");
        break;
      }
      t.status = e.kind.slice(5).replace("finished", "done");
      if (e.start != null) t.start = e.start;
      t.end = e.end != null ? e.end : (t.start != null ? e.t : null);
      if (e.error && e.error.message) t.note = e.error.message;
      if (e.reused) t.note = "kept from an earlier session";
      break;
    }
    case "task_recovery":
      task(run, e.task_id).note = `${e.pattern} after ${e.category}: ${e.error}`;
      run.notes.push(`task ${e.task_id}: ${e.pattern} after ${e.category}`);
      break;
    case "llm_call_started":
      run.llm.set(`${e.seq}`, {
        key: `${e.seq}`, purpose: e.purpose, model: e.model, start: e.t, end: null, call: e.call,
        session: e.session, replayed: e.replayed, messages: e.messages || [] });
      break;
    case "llm_call_finished": {
      const open = [...run.llm.values()].find((c) => c.end === null && c.call === e.call);
      const start = e.replayed ? e.t : e.t - (e.duration || 0);
      run.waits.delete(e.call);
      const c = open || { key: `f${e.seq}`, purpose: e.purpose, model: e.model, start, call: e.call,
        session: e.session, replayed: e.replayed, messages: [] };
      Object.assign(c, { end: e.t, prompt_tokens: e.prompt_tokens, completion_tokens: e.completion_tokens,
        duration: e.duration, error: e.error, cost: e.cost });
      if (!open) run.llm.set(c.key, c);
      run.usage.calls += 1;
      run.usage.prompt += e.prompt_tokens || 0;
      run.usage.completion += e.completion_tokens || 0;
      if (typeof e.cost === "number") run.usage.cost = (run.usage.cost || 0) + e.cost;
      break;
    }
    // A call waiting for the model: how many calls are ahead of it (by call), until it has it.
    case "model_waiting": run.waits.set(e.call, e.ahead); break;
    case "model_acquired": run.waits.delete(e.call); break;
    case "llm_replay_diverged": run.notes.push(`${e.purpose} call ${e.call}: its recorded response answered another request, asked again`); break;
    case "llm_retry": run.notes.push(`${e.purpose} call ${e.call}: ${e.category}, retry in ${e.delay.toFixed(1)} s`); break;
    case "plan_invalid": run.notes.push(`invalid plan: ${(e.error && e.error.text) || ""}`); break;
    case "replan": run.notes.push(`replan ${e.plan_round}: ${e.reason}`); break;
    case "cache_hit": run.cache = `plan from the cache (template ${e.template_id})`; break;
    case "cache_adapted": run.cache = `planned from a cached example (template ${e.template_id})`; break;
    case "plan_awaiting_approval":
      run.status = "awaiting_approval";
      run.awaiting = e;
      for (const w of e.tasks) task(run, w.id).note = "awaiting approval";
      break;
    case "plan_approved":
      for (const id of e.dropped || []) run.tasks.delete(id);
      run.notes.push(`approved${Object.keys(e.edits || {}).length ? `, edited ${Object.keys(e.edits).join(", ")}` : ""}${(e.dropped || []).length ? `, dropped ${e.dropped.join(", ")}` : ""}`);
      for (const t of run.tasks.values()) if (t.note === "awaiting approval") t.note = "";
      break;
    case "plan_rejected": run.notes.push(`rejected: ${e.reason}`); break;
    case "answer_delta": run.answer += e.text; break;
    case "answer_ungrounded": run.answer = ""; break;
    case "answer": run.finalAnswer = e.answer; break;
    case "run_finished":
      run.status = e.status;
      run.waits.clear();
      if (e.answer != null) run.finalAnswer = e.answer;
      run.error = e.error ? e.error.text || e.error.message : null;
      for (const t of run.tasks.values()) {
        if (t.status === "pending" || t.status === "running") t.status = "cancelled";
      }
      break;
    default: break;
  }
}

let pending = false;
function schedule() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; render(); });
}

function runClock(run) {
  if (!run.live || run.status !== "running") return run.now;
  return run.now + (performance.now() - run.clockAt) / 1000;
}

function render() {
  const run = state.run;
  if (!run) return;
  const now = runClock(run);
  $("run-question").textContent = run.question || (state.runs.find((r) => r.id === run.id) || {}).question || run.id;
  const failed = [...run.tasks.values()].filter((t) => t.status === "failed").length;
  statusBadge(run.status, failed, $("run-status"));
  const u = run.usage;
  $("run-llm").textContent = u.calls
    ? `${u.calls} LLM call${u.calls === 1 ? "" : "s"} · ${u.prompt}+${u.completion} tokens${costText(u.cost)}` : "";
  $("run-cache").hidden = !run.cache;
  $("run-cache").textContent = run.cache || "";
  const ahead = run.waits.size ? Math.min(...run.waits.values()) : null;
  $("run-wait").hidden = ahead === null;
  $("run-wait").textContent = ahead === null ? "" : waitText(ahead);
  $("run-clock").textContent = `${now.toFixed(2)} s`;
  $("cancel").hidden = !(run.status === "running" && run.live);
  renderTasks(run, now);
  renderListed(run);
  renderDag(run);
  renderApproval(run);
  const notes = $("notes");
  notes.replaceChildren(...run.notes.map((n) => el("li", {}, n)));
  $("answer").textContent = run.finalAnswer != null ? run.finalAnswer : run.answer;
  $("run-error").textContent = run.error || "";
}

function renderTasks(run, now) {
  const spans = [...run.tasks.values(), ...run.llm.values()].filter((s) => s.start != null);
  const scale = Math.max(now, ...spans.map((s) => (s.end != null ? s.end : now)), 0.001);
  renderAxis(scale);
  const bar = (start, end, color, cls) => {
    const track = el("div", { class: "track" });
    if (start != null) {
      const b = el("div", { class: `bar ${cls || ""}` });
      const stop = end != null ? end : now;
      b.style.left = `${(100 * start) / scale}%`;
      b.style.width = `${Math.max(0.3, (100 * (stop - start)) / scale)}%`;
      if (color) b.style.background = `var(--${color})`;
      track.append(b);
    }
    return track;
  };
  const rows = [];
  for (const t of [...run.tasks.values()].sort((a, b) => a.id - b.id)) {
    const took = t.start == null ? "" : `${((t.end != null ? t.end : now) - t.start).toFixed(2)} s`;
    const row = el("tr", { class: "task", "data-task": String(t.id), "data-status": t.status },
      el("td", {}, String(t.id)),
      el("td", { class: "call" }, t.call),
      el("td", {}, t.deps.map((d) => `$${d}`).join(" ")),
      el("td", {}, el("span", { class: `badge s-${t.status}` }, t.status),
        t.note ? el("div", { class: "note" }, t.note) : ""),
      el("td", {}, bar(t.start, t.end, t.status === "running" ? "running" : t.status)),
      el("td", { class: "muted" }, took));
    row.addEventListener("click", () => showTask(run.id, t.id));
    rows.push(row);
  }
  for (const c of run.llm.values()) {
    const took = c.end == null ? "" : `${(c.end - c.start).toFixed(2)} s`;
    const tokens = c.end == null ? "" : `${c.prompt_tokens || 0}+${c.completion_tokens || 0} tokens${costText(c.cost)}`;
    const row = el("tr", { class: "llm", "data-llm": c.key },
      el("td", {}, ""), el("td", {}, `LLM ${c.purpose}${c.replayed ? " (replayed)" : ""}`),
      el("td", {}, ""),
      el("td", {}, c.end != null ? tokens : run.waits.has(c.call) ? waitText(run.waits.get(c.call)) : "streaming"),
      el("td", {}, bar(c.start, c.end, null, "llm")), el("td", { class: "muted" }, took));
    row.addEventListener("click", () => showLLM(run, c));
    rows.push(row);
  }
  $("tasks").tBodies[0].replaceChildren(...rows);
}

// Seconds along the timeline: a tick every 0.1, 0.2, 0.5, 1, 2, 5... s, at most five.
function renderAxis(scale) {
  const steps = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
  const step = steps.find((x) => scale / x <= 4) || scale / 4;
  const ticks = [];
  for (let v = 0; v <= scale + 1e-9; v += step) {
    const tick = el("span", { class: "tick" }, `${Number(v.toFixed(1))} s`);
    tick.style.left = `${(100 * v) / scale}%`;
    ticks.push(tick);
  }
  $("axis").replaceChildren(...ticks);
}

// Node placement: layered left to right, a task one column right of its rightmost input, and
// in its column below the tasks that came before it.  A task's inputs are earlier tasks, so a
// task that arrives (the planner still streaming, or a replan) never moves one already drawn.
const NODE_W = 170, NODE_H = 40, LABEL_CHARS = 24, COL_GAP = 40, ROW_GAP = 10, MARGIN = 8;

function layoutDag(tasks) {
  const rank = new Map(), rows = [], at = new Map();
  for (const t of tasks) {
    const r = Math.max(-1, ...t.deps.filter((d) => rank.has(d)).map((d) => rank.get(d))) + 1;
    rank.set(t.id, r);
    rows[r] = (rows[r] || 0) + 1;
    at.set(t.id, { x: MARGIN + r * (NODE_W + COL_GAP), y: MARGIN + (rows[r] - 1) * (NODE_H + ROW_GAP) });
  }
  const edges = [];
  for (const t of tasks) {
    const to = at.get(t.id);
    for (const d of t.deps) {
      const from = at.get(d);
      if (!from) continue;
      const a = { x: from.x + NODE_W, y: from.y + NODE_H / 2 }, b = { x: to.x, y: to.y + NODE_H / 2 };
      edges.push({ a, b });
    }
  }
  const width = 2 * MARGIN + rows.length * NODE_W + (rows.length - 1) * COL_GAP;
  const height = 2 * MARGIN + Math.max(...rows.map((n) => n || 0)) * (NODE_H + ROW_GAP) - ROW_GAP;
  return { at, edges, width, height };
}

// Nodes for tasks, coloured by state; edges from each task to those that use its result.
function renderDag(run) {
  const dag = $("dag");
  const tasks = [...run.tasks.values()].sort((a, b) => a.id - b.id);
  if (!tasks.length) {
    dag.style.height = "0";
    dag.replaceChildren();
    return;
  }
  const { at, edges, width, height } = layoutDag(tasks);
  dag.style.width = `${Math.ceil(width)}px`;
  dag.style.height = `${Math.ceil(height)}px`;
  const marker = svg("marker", {
    id: "arrow", viewBox: "0 0 8 8", refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: "auto",
  });
  marker.append(svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrowhead" }));
  const defs = svg("defs", {});
  defs.append(marker);
  const nodes = [defs];
  for (const { a, b } of edges) {
    const bend = Math.max(20, (b.x - a.x) / 2);
    const d = `M${a.x},${a.y} C${a.x + bend},${a.y} ${b.x - bend},${b.y} ${b.x},${b.y}`;
    nodes.push(svg("path", { d, class: "edge", "marker-end": "url(#arrow)" }));
  }
  for (const t of tasks) {
    const p = at.get(t.id);
    const g = svg("g", { "data-task": t.id });
    const rect = svg("rect", { x: p.x, y: p.y, width: NODE_W, height: NODE_H, rx: 5 });
    rect.style.fill = `var(--${t.status})`;
    // Two lines: the task's tool, then its key argument (two lookups of one country differ
    // by tool, two of one tool by country).
    const clip = (text) => (text.length > LABEL_CHARS ? `${text.slice(0, LABEL_CHARS - 1)}…` : text);
    const tool = svg("text", { x: p.x + 6, y: p.y + 16, class: "tool" });
    tool.textContent = clip(`${t.id}. ${t.tool || t.call.split("(")[0]}`);
    const arg = svg("text", { x: p.x + 6, y: p.y + 31, class: "arg" });
    arg.textContent = clip(keyArgument(t.call));
    const title = svg("title", {});
    title.textContent = `${t.id}. ${t.call}`;
    g.append(rect, tool, arg, title);
    g.addEventListener("click", () => showTask(run.id, t.id));
    nodes.push(g);
  }
  dag.replaceChildren(...nodes);
}

// A call's first argument as written (`population("France", delay=1)` -> France), its quotes
// and its name taken off.
function keyArgument(call) {
  const open = call.indexOf("(");
  if (open < 0) return "";
  const inner = call.slice(open + 1, call.endsWith(")") ? -1 : undefined);
  let depth = 0, quote = null, end = inner.length;
  for (let i = 0; i < inner.length; i++) {
    const ch = inner[i];
    if (quote) { if (ch === "\\") i++; else if (ch === quote) quote = null; continue; }
    if (ch === '"' || ch === "'") quote = ch;
    else if ("([{".includes(ch)) depth++;
    else if (")]}".includes(ch)) depth--;
    else if (ch === "," && depth === 0) { end = i; break; }
  }
  let first = inner.slice(0, end).trim();
  const named = /^[A-Za-z_][A-Za-z0-9_]*\s*=\s*/.exec(first);
  if (named) first = first.slice(named[0].length);
  if (/^(["']).*\1$/s.test(first)) first = first.slice(1, -1);
  return first;
}

// An LLM call: its prompt (from its event), its response, tokens and duration (the journal's
// record of the call, once it has ended).
async function showLLM(run, c) {
  $("detail").hidden = false;
  $("detail-title").textContent = `LLM call ${c.call} (${c.purpose})`;
  let recorded = null;
  if (c.end != null) {
    try {
      const shown = await api("GET", `/runs/${encodeURIComponent(run.id)}`);
      recorded = (shown.llm_calls || []).find((x) => x.call === c.call && (c.session == null || x.session === c.session));
    } catch (error) {
      $("detail-body").textContent = error.message;
      return;
    }
  }
  const parts = [];
  const tokens = c.end == null ? "streaming" : `${c.prompt_tokens || 0}+${c.completion_tokens || 0} tokens${costText(c.cost)}`;
  const took = c.end == null ? "" : ` · ${(c.duration != null ? c.duration : c.end - c.start).toFixed(2)} s`;
  parts.push(`${c.model || ""} · ${tokens}${took}${c.replayed ? " · replayed from the journal" : ""}`);
  parts.push("", "── prompt ──");
  if (!c.messages.length) parts.push("(not recorded)");
  for (const m of c.messages) parts.push(`[${m.role}]`, m.content);
  parts.push("", "── response ──");
  parts.push(recorded && recorded.text != null ? recorded.text : c.end == null ? "(streaming)" : "(not recorded)");
  if (c.error) parts.push("", `error: ${c.error.text || c.error.message}`);
  $("detail-body").textContent = parts.join("\n");
}

async function showTask(runId, taskId) {
  let shown;
  try {
    shown = await api("GET", `/runs/${encodeURIComponent(runId)}`);
  } catch (error) {
    $("detail-body").textContent = error.message;
    return;
  }
  const t = (shown.tasks || []).find((x) => x.id === taskId);
  $("detail").hidden = false;
  $("detail-title").textContent = `task ${taskId}`;
  if (!t) { $("detail-body").textContent = "not recorded yet"; return; }
  const detail = { call: t.call, args: t.args, status: t.status, attempts: t.attempts };
  // What each $N in the arguments stood for: the results of the tasks it used.
  const used = (t.dependencies || []).map((d) => (shown.tasks || []).find((x) => x.id === d));
  if (used.length) {
    detail.inputs = Object.fromEntries(used.filter((u) => u && "result" in u).map((u) => [`$${u.id}`, u.result]));
  }
  if ("result" in t) detail.result = t.result;
  if (t.error) detail.error = t.error;
  if (t.recovery) detail.recovery = t.recovery;
  $("detail-body").textContent = JSON.stringify(detail, null, 2);
}

$("cancel").addEventListener("click", async () => {
  if (state.run) await api("POST", `/runs/${encodeURIComponent(state.run.id)}/cancel`).catch(() => {});
});

// ------------------------------------------------------------------ approval

let approvalShown = null;

function renderApproval(run) {
  const box = $("approval");
  const waiting = run.status === "awaiting_approval" ? run.awaiting : null;
  box.hidden = !waiting;
  if (!waiting || approvalShown === waiting) return;
  approvalShown = waiting;
  $("approval-error").textContent = "";
  $("approval-what").textContent = waiting.approve === "plan"
    ? "Nothing has run yet. Change arguments (JSON values; \"$1\" is task 1's result) or drop tasks, then approve."
    : "These tasks have side effects; the others have run.";
  const rows = [el("tr", {}, el("th", {}, "id"), el("th", {}, "tool"), el("th", {}, "arguments"), el("th", {}, "drop"))];
  for (const w of waiting.tasks) {
    const args = el("div", {});
    for (const [name, value] of Object.entries(w.args)) {
      const input = el("input", { class: "arg", "data-task": String(w.id), "data-arg": name, "aria-label": `task ${w.id} ${name}` });
      input.value = JSON.stringify(value);
      input.dataset.initial = input.value;
      args.append(el("div", {}, el("label", {}, `${name} = `), input));
    }
    const drop = el("input", { type: "checkbox", class: "drop", "data-task": String(w.id), "aria-label": `drop task ${w.id}` });
    rows.push(el("tr", {}, el("td", {}, String(w.id)), el("td", {}, w.tool), el("td", {}, args), el("td", {}, drop)));
  }
  $("approval-tasks").replaceChildren(...rows);
}

$("approve-btn").addEventListener("click", async () => {
  const run = state.run;
  const edits = {};
  try {
    for (const input of $("approval-tasks").querySelectorAll("input.arg")) {
      if (input.value === input.dataset.initial) continue;
      let value;
      try { value = JSON.parse(input.value); } catch {
        throw new Error(`task ${input.dataset.task}, ${input.dataset.arg}: not a JSON value (a text needs "quotes")`);
      }
      (edits[input.dataset.task] ||= {})[input.dataset.arg] = value;
    }
    const drop = [...$("approval-tasks").querySelectorAll("input.drop:checked")].map((c) => Number(c.dataset.task));
    const after = state.follow ? state.follow.lastId : null;
    await api("POST", `/runs/${encodeURIComponent(run.id)}/approve`, { edits, drop });
    run.awaiting = null;
    run.status = "running";
    listen(run, after);
    render();
  } catch (error) {
    $("approval-error").textContent = error.message;
  }
});

$("reject-btn").addEventListener("click", async () => {
  const run = state.run;
  try {
    await api("POST", `/runs/${encodeURIComponent(run.id)}/reject`, { reason: $("reject-reason").value });
    openRun(run.id);
    refreshRuns();
  } catch (error) {
    $("approval-error").textContent = error.message;
  }
});

setInterval(() => { if (state.run && state.run.live && state.run.status === "running") schedule(); }, 200);
// The list every 5 s, every second while a run in it waits for the model.
setInterval(() => {
  if (state.needsToken || $("app").hidden) return;
  const waiting = state.runs.some((r) => r.model_wait);
  if (performance.now() - runsAt >= (waiting ? 1000 : 5000) - 50) refreshRuns();
}, 1000);
start();
