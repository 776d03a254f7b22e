// The graph studio page: plain JavaScript against the JSON API listed in engine/faces/studio/app.py. This file holds
// the helpers, the message log, the live view, the graph and its runs, the transcript and the error bundles;
// authoring.js, recognize.js, proposals.js and draft.js hold one panel each (loaded after it, called once the page is
// loaded).
// Every piece of text from the server reaches the page through textContent, never innerHTML; the one exception is
// the graph's SVG, which our own server draws with graphviz and which is parsed as XML (its scripts never run).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const LIVE_PAUSE_MS = 350;       // between one observation shown and the next request
const LIVE_BUSY_PAUSE_MS = 900;  // slower while a goto has the device
const TRANSCRIPT_KEEP = 400;     // lines kept in the tail
const GRAPH_ZOOM = 0.6;          // a big graph is unreadable when fitted; start at 60 % and scroll
const PT_TO_PX = 4 / 3;          // graphviz sizes its SVG in points
const LOG_KEEP = 500;            // messages kept in the log panel
const LOG_SAVED = 200;           // of which a reload keeps (sessionStorage)
let TAB = tabId();               // this tab's id: a run belongs to the tab that started it (see claimTabId)

const state = {
  info: null,
  believed: null,
  observed: null,
  live: true,
  liveTimer: null,
  route: [],          // planned hops of the goto being watched: [{from, to, action, li}]
  run: null,          // id of this tab's goto being watched; "pending" until POST /api/goto (or /api/run) answers
  runSeen: 0,         // the last event number (n) of that run shown: a replayed snapshot skips what was shown
  early: [],          // events that arrived while the run was pending: [handler, data]
  log: [],            // the messages kept for a reload: [{t, level, text, n}]
  author: {frame: null, width: 0, height: 0, box: null, drag: null},
  transcriptSeq: 0,
  zoom: GRAPH_ZOOM,   // a scale, or null to fit the panel's width
};

const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------------------------------------ helpers

// The tab's id, kept in sessionStorage: it survives a reload of this tab, and every other tab has its own.
function tabId() {
  const key = "studio-tab";
  let id = sessionStorage.getItem(key);
  if (!id || !/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
    id = window.crypto && crypto.randomUUID ? crypto.randomUUID() : `t${Date.now()}${Math.random().toString(36).slice(2)}`;
    sessionStorage.setItem(key, id);
  }
  return id;
}

// A message: shown on the top line, and kept in the log panel (a repeat of the last one counts up instead).
function say(text, isError = false) {
  const line = $("message");
  line.textContent = text;
  line.classList.toggle("error", isError);
  addLog(text, isError ? "error" : "info");
}

function addLog(text, level, when = Date.now(), count = 1, save = true) {
  const list = $("log");
  const last = list.lastElementChild;
  if (last && last.dataset.text === text && last.dataset.level === level) {
    last.dataset.count = String(Number(last.dataset.count) + count);
    last.querySelector(".count").textContent = ` ×${last.dataset.count}`;
    last.querySelector("time").textContent = new Date(when).toLocaleTimeString();
    if (state.log.length) Object.assign(state.log[state.log.length - 1], {t: when, n: Number(last.dataset.count)});
  } else {
    const li = el("li", null, `log-${level}`);
    Object.assign(li.dataset, {text, level, count: String(count)});
    li.append(el("time", new Date(when).toLocaleTimeString()), el("span", text, "text"),
      el("span", count > 1 ? ` ×${count}` : "", "count"));
    list.append(li);
    while (list.childElementCount > LOG_KEEP) list.firstElementChild.remove();
    state.log.push({t: when, level, text, n: count});
    state.log.splice(0, Math.max(0, state.log.length - LOG_SAVED));
  }
  $("log-count").textContent = String(list.childElementCount);
  if ($("log-follow").checked) list.scrollTop = list.scrollHeight;
  if (save) {
    try {
      sessionStorage.setItem("studio-log", JSON.stringify(state.log));
    } catch (error) {
      console.warn("the log could not be saved", error);
    }
  }
}

function restoreLog() {
  let saved = [];
  try {
    saved = JSON.parse(sessionStorage.getItem("studio-log") || "[]");
  } catch (error) {
    saved = [];
  }
  for (const entry of Array.isArray(saved) ? saved : []) {
    if (entry && typeof entry.text === "string") addLog(entry.text, entry.level === "error" ? "error" : "info",
      Number(entry.t) || Date.now(), Number(entry.n) || 1, false);
  }
}

async function api(path, options = {}) {
  const response = await fetch(path, {cache: "no-store", ...options});
  const kind = response.headers.get("content-type") || "";
  const body = kind.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    const message = body && body.error ? body.error : `${response.status} ${response.statusText}`;
    const error = new Error(message);
    error.status = response.status;
    error.body = body;
    throw error;
  }
  return body;
}

function postJSON(path, body) {
  return api(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  return node;
}

function fmtScore(score) {
  return typeof score === "number" ? score.toFixed(3) : "–";
}

function fmtBox(box) {
  return Array.isArray(box) ? `[${box.join(", ")}]` : "–";
}

function describeAction(action) {
  if (action === null || action === undefined) return "";
  if (typeof action === "string") return action;
  const {type, ...rest} = action;
  const parts = Object.entries(rest)
    .filter(([, v]) => v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0))
    .map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`);
  return [type || "action", ...parts].join(" ");
}

// JSON with one key per line and short arrays (boxes, colours) kept on one line.
function prettyJSON(value) {
  return JSON.stringify(value, null, 2).replace(/\[\s+([^\[\]{}]*?)\s+\]/g, (_, inner) => `[${inner.replace(/\s+/g, " ")}]`);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ------------------------------------------------------------------------------------------------ info

async function loadInfo() {
  const info = await api("/api/info");
  state.info = info;
  $("game").textContent = info.game;
  $("server").textContent = info.server;
  $("resolution").textContent = (info.resolution || []).join("×");
  setBelieved(info.believed_page);
  if (info.unavailable) say(info.unavailable, true);
}

// The graph follows the device: the believed page filled, the observed page outlined.
function markPages() {
  for (const node of document.querySelectorAll("#graph g.node")) {
    node.classList.toggle("believed", node.dataset.page === state.believed);
    node.classList.toggle("observed", node.dataset.page === state.observed);
  }
}

function setBelieved(page) {
  state.believed = page || null;
  $("believed-page").textContent = page || "unknown";
  markPages();
}

function setObserved(page) {
  state.observed = page || null;
  $("observed-page").textContent = page || "none";
  markPages();
}

// ------------------------------------------------------------------------------------------------ live view

async function liveStep() {
  let busy = false;
  try {
    const obs = await api("/api/observe");
    busy = Boolean(obs.busy);
    await showFrame(obs.frame_url);
    drawEvidence(obs);
    showObservation(obs);
  } catch (error) {
    $("obs-state").textContent = `no observation: ${error.message}`;
    addLog(`live view: ${error.message}`, "error");
    busy = true;
  }
  return busy;
}

function showFrame(url) {
  const img = $("frame");
  return new Promise((resolve) => {
    img.onload = () => resolve(true);
    img.onerror = () => resolve(false);
    img.src = url;
  });
}

function drawEvidence(obs) {
  const overlay = $("overlay");
  const width = obs.width || (state.info && state.info.resolution[0]) || 1280;
  const height = obs.height || (state.info && state.info.resolution[1]) || 720;
  overlay.setAttribute("viewBox", `0 0 ${width} ${height}`);
  overlay.setAttribute("preserveAspectRatio", "none");
  overlay.replaceChildren();
  let boxes = 0;
  for (const ev of obs.evidence || []) {
    if (!Array.isArray(ev.box) || ev.box.length !== 4) continue;
    const [x1, y1, x2, y2] = ev.box;
    const cls = ev.hit ? "hit" : "miss";
    const nearRight = x1 > width * 0.7;
    const group = svgEl("g", {class: `evidence ${cls}`, "data-signature": ev.signature});
    const title = svgEl("title");
    title.textContent = `${ev.signature} (${ev.channel}) ${ev.hit ? "hit" : "miss"} ${fmtScore(ev.score)}`;
    group.append(title);
    group.append(svgEl("rect", {class: cls, x: x1, y: y1, width: Math.max(1, x2 - x1), height: Math.max(1, y2 - y1)}));
    const label = svgEl("text", {class: cls, x: nearRight ? x2 - 2 : x1 + 2, y: y1 > 22 ? y1 - 5 : y2 + 18,
      "text-anchor": nearRight ? "end" : "start"});
    label.textContent = `${ev.signature} ${ev.channel} ${fmtScore(ev.score)}`;
    group.append(label);
    overlay.append(group);
    boxes += 1;
  }
  overlay.dataset.boxes = String(boxes);
}

function showObservation(obs) {
  $("obs-page").textContent = obs.page || "none";
  $("obs-popups").textContent = (obs.popups || []).join(", ") || "none";
  $("obs-confidence").textContent = fmtScore(obs.confidence);
  const flags = [];
  if (obs.loading) flags.push("loading");
  if (obs.black_frame) flags.push("black frame");
  if ((obs.ambiguous || []).length) flags.push(`ambiguous: ${obs.ambiguous.join(", ")}`);
  if (obs.busy) flags.push("busy (a goto runs)");
  $("obs-state").textContent = flags.join("; ") || "ok";
  $("looks-per-second").textContent = String(obs.looks_per_second ?? 0);
  if (obs.page !== state.observed) setObserved(obs.page);
  if (obs.believed_page !== state.believed) {
    setBelieved(obs.believed_page);
    showNode(obs.believed_page);
  }
  const body = $("evidence").tBodies[0];
  body.replaceChildren();
  for (const ev of obs.evidence || []) {
    const row = el("tr", null, ev.hit ? "hit" : "miss");
    row.append(el("td", ev.hit ? "✓" : "✗", "mark"), el("td", ev.text ? `${ev.signature} “${ev.text}”` : ev.signature),
      el("td", ev.channel), el("td", fmtScore(ev.score)), el("td", fmtBox(ev.box)));
    body.append(row);
  }
}

async function liveLoop() {
  while (true) {
    if (!state.live || document.hidden) {  // a hidden tab does not keep the device busy
      await sleep(300);
      continue;
    }
    const busy = await liveStep();
    await sleep(busy ? LIVE_BUSY_PAUSE_MS : LIVE_PAUSE_MS);
  }
}

function toggleLive() {
  state.live = !state.live;
  $("live-toggle").textContent = state.live ? "Pause" : "Resume";
}

// ------------------------------------------------------------------------------------------------ graph and goto

async function loadGraph() {
  const holder = $("graph");
  let text;
  try {
    text = await api("/api/graph.svg");
  } catch (error) {
    holder.replaceChildren(el("p", `no graph drawing: ${error.message}`));
    return;
  }
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = doc.documentElement;
  if (!svg || svg.nodeName !== "svg") {
    holder.replaceChildren(el("p", "the graph drawing could not be read"));
    return;
  }
  for (const script of svg.querySelectorAll("script, foreignObject")) script.remove();
  const node = document.importNode(svg, true);
  node.id = "graph-svg";
  holder.replaceChildren(node);
  for (const group of node.querySelectorAll("g.node")) {
    const title = group.querySelector("title");
    if (!title) continue;
    const page = title.textContent.trim();
    group.dataset.page = page;
    group.id = `node-${page}`;
    group.setAttribute("role", "button");
    group.addEventListener("click", () => startGoto(page));
  }
  for (const group of node.querySelectorAll("g.edge")) {
    const title = group.querySelector("title");
    if (title) group.dataset.edge = title.textContent.trim();
  }
  applyZoom();
  markPages();
  showNode(state.believed);
}

function applyZoom() {
  const svg = $("graph-svg");
  if (!svg) return;
  const box = svg.viewBox.baseVal;
  svg.removeAttribute("height");
  svg.style.width = state.zoom === null || !box ? "100%" : `${Math.round(box.width * PT_TO_PX * state.zoom)}px`;
}

function zoom(factor) {
  const fitted = $("graph-svg") ? $("graph-svg").getBoundingClientRect().width : 0;
  const box = $("graph-svg") ? $("graph-svg").viewBox.baseVal : null;
  const current = state.zoom ?? (box && box.width ? fitted / (box.width * PT_TO_PX) : GRAPH_ZOOM);
  state.zoom = factor === null ? null : Math.min(2, Math.max(0.1, current * factor));
  applyZoom();
}

function showNode(page) {
  const node = page ? document.querySelector(`#graph g.node[data-page="${CSS.escape(page)}"]`) : null;
  if (!node) return;
  const holder = $("graph");
  const nodeBox = node.getBoundingClientRect();
  const holderBox = holder.getBoundingClientRect();
  holder.scrollLeft += nodeBox.left + nodeBox.width / 2 - (holderBox.left + holderBox.width / 2);
  holder.scrollTop += nodeBox.top + nodeBox.height / 2 - (holderBox.top + holderBox.height / 2);
}

function markRoute(pages, target) {
  for (const node of document.querySelectorAll("#graph g.node")) {
    node.classList.toggle("on-route", pages.includes(node.dataset.page));
    node.classList.toggle("target", node.dataset.page === target);
  }
}

async function showRoute(page) {
  const list = $("route");
  list.replaceChildren();
  state.route = [];
  $("route-target").textContent = `→ ${page}`;
  try {
    const planned = await api(`/api/route?to=${encodeURIComponent(page)}`);
    for (const hop of planned.hops || []) addPlanned(hop);
    if (!(planned.hops || []).length) list.append(el("li", "already there", "planned"));
    markRoute([planned.src, ...(planned.hops || []).map((h) => h.to)], page);
  } catch (error) {
    list.append(el("li", error.message, "step"));
  }
}

// ------------------------------------------------------------------------------------------------ start

function wire() {
  $("live-toggle").addEventListener("click", toggleLive);
  $("log-clear").addEventListener("click", () => {
    $("log").replaceChildren();
    state.log = [];
    sessionStorage.removeItem("studio-log");
    $("log-count").textContent = "0";
  });
  $("overwrite-yes").addEventListener("click", () => cutTemplate(true));
  $("overwrite-no").addEventListener("click", () => {
    $("overwrite-ask").hidden = true;
    say("kept the existing template: choose another name to cut a new one");
  });
  wireRecognition();
  $("capture").addEventListener("click", capture);
  $("upload-file").addEventListener("change", upload);
  $("frame-list").addEventListener("change", (event) => {
    const name = event.target.value;
    if (name) useFrame({name});
  });
  const stage = $("author-stage");
  stage.addEventListener("mousedown", startDrag);
  window.addEventListener("mousemove", moveDrag);
  window.addEventListener("mouseup", endDrag);
  $("template-name").addEventListener("input", updateCutButton);
  $("cut-template").addEventListener("click", () => cutTemplate(false));  // not the click event: it would say "overwrite"
  $("test-signature").addEventListener("click", testSignature);
  $("validate").addEventListener("click", validate);
  $("bundles-refresh").addEventListener("click", loadBundles);
  $("proposals-refresh").addEventListener("click", loadProposals);
  $("graph-fit").addEventListener("click", () => zoom(null));
  $("graph-zoom-in").addEventListener("click", () => zoom(1.25));
  $("graph-zoom-out").addEventListener("click", () => zoom(0.8));
  $("graph-reload").addEventListener("click", loadGraph);
  wireDraft();
}

async function start() {
  wire();
  restoreLog();
  await claimTabId();
  try {
    await loadInfo();
  } catch (error) {
    say(`the studio server did not answer: ${error.message}`, true);
  }
  connectEvents();
  await reattach();
  loadGraph();
  loadTranscript();
  loadBundles();
  loadProposals();
  loadDraft();
  loadSchedule();
  loadFrameList();
  loadSteps();
  liveLoop();
}

document.addEventListener("DOMContentLoaded", start);
