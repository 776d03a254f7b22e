// The graph studio page: plain JavaScript against the JSON API listed in engine/faces/studio/app.py.
// Every piece of text from the server reaches the page through textContent, never innerHTML; the one exception is
// the graph's SVG, which our own server draws with graphviz and which is parsed as XML (its scripts never run).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const LIVE_PAUSE_MS = 350;       // between one observation shown and the next request
const LIVE_BUSY_PAUSE_MS = 900;  // slower while a goto has the device
const TRANSCRIPT_KEEP = 400;     // lines kept in the tail
const GRAPH_ZOOM = 0.6;          // a big graph is unreadable when fitted; start at 60 % and scroll
const PT_TO_PX = 4 / 3;          // graphviz sizes its SVG in points

const state = {
  info: null,
  believed: null,
  live: true,
  liveTimer: null,
  route: [],          // planned hops of the goto being watched: [{from, to, action, li}]
  run: null,          // id of the goto being watched; "pending" until POST /api/goto answers
  early: [],          // events that arrived while the run was pending: [handler, data]
  author: {frame: null, width: 0, height: 0, box: null, drag: null},
  transcriptSeq: 0,
  zoom: GRAPH_ZOOM,   // a scale, or null to fit the panel's width
};

const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------------------------------------ helpers

function say(text, isError = false) {
  const line = $("message");
  line.textContent = text;
  line.classList.toggle("error", isError);
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

function setBelieved(page) {
  state.believed = page || null;
  $("believed-page").textContent = page || "unknown";
  for (const node of document.querySelectorAll("#graph g.node")) {
    node.classList.toggle("believed", node.dataset.page === state.believed);
  }
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
  setBelieved(state.believed);
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
    for (const hop of planned.hops || []) {
      const li = el("li", `${hop.from} → ${hop.to}  ${describeAction(hop.action)}`, "planned");
      li.dataset.from = hop.from;
      li.dataset.to = hop.to;
      list.append(li);
      state.route.push({...hop, li});
    }
    if (!(planned.hops || []).length) list.append(el("li", "already there", "planned"));
    markRoute([planned.src, ...(planned.hops || []).map((h) => h.to)], page);
  } catch (error) {
    list.append(el("li", error.message, "step"));
  }
}

async function startGoto(page) {
  await showRoute(page);
  $("hops").replaceChildren();
  const result = $("goto-result");
  result.className = "running";
  result.textContent = `going to ${page}…`;
  state.run = "pending";
  state.early = [];
  try {
    const started = await postJSON("/api/goto", {page});
    state.run = started.run;
    $("goto-run").textContent = `run ${started.run}`;
    say(`goto ${page} started (run ${started.run})`);
    for (const [handler, data] of state.early.splice(0)) handler(data);
  } catch (error) {
    state.run = null;
    result.className = "fail";
    result.textContent = error.message;
    say(error.message, true);
  }
}

// True when an event belongs to another run than the one watched; one that comes before POST /api/goto has
// answered (the worker thread can be quicker than the response) is kept and replayed.
function notOurs(handler, data) {
  if (state.run === "pending") {
    state.early.push([handler, data]);
    return true;
  }
  return state.run !== null && data.run !== state.run;
}

function onHop(data) {
  if (notOurs(onHop, data)) return;
  const li = el("li", `${data.from ?? "?"} → ${data.to}  ${describeAction(data.action)}`, "hop");
  li.dataset.to = data.to;
  $("hops").append(li);
  const planned = state.route.find((h) => !h.li.classList.contains("done") && h.to === data.to);
  if (planned) planned.li.classList.add("done");
}

function onStep(data) {
  if (notOurs(onStep, data)) return;
  const what = data.kind === "dismiss" ? `dismissed ${data.popup || data.name || "a popup"}` : `unknown screen: trying ${data.rung || ""}`;
  $("hops").append(el("li", what, "step"));
}

function onResult(data) {
  if (notOurs(onResult, data)) return;
  const result = $("goto-result");
  const hops = data.hops ?? $("hops").querySelectorAll("li.hop").length;
  const ms = typeof data.elapsed_ms === "number" ? ` in ${Math.round(data.elapsed_ms)} ms` : "";
  if (data.ok) {
    result.className = "ok";
    result.textContent = `verified: ${data.observed || data.page} (${hops} hops${ms})`;
    for (const hop of state.route) hop.li.classList.add("done");
    setBelieved(data.observed || data.page);
  } else {
    result.className = "fail";
    result.textContent = `${data.status}: ${data.text || "failed"}`;
  }
  result.dataset.run = String(data.run);
  markRoute([], null);
  say(result.textContent, !data.ok);
}

function connectEvents() {
  const source = new EventSource("/api/events");
  const parse = (handler) => (event) => {
    try {
      handler(JSON.parse(event.data));
    } catch (error) {
      console.error("bad event", event.type, error);
    }
  };
  source.addEventListener("hop", parse(onHop));
  source.addEventListener("step", parse(onStep));
  source.addEventListener("result", parse(onResult));
  source.addEventListener("transcript", parse((data) => addTranscript(data.lines || [])));
  source.addEventListener("dropped", parse((data) => say(`${data.count} events were dropped (slow page)`, true)));
  source.onopen = () => document.body.classList.add("connected");
  source.onerror = () => document.body.classList.remove("connected");
}

// ------------------------------------------------------------------------------------------------ transcript

function summarise(line) {
  const skip = new Set(["seq", "ts", "kind"]);
  const parts = [];
  for (const [key, value] of Object.entries(line)) {
    if (skip.has(key) || value === null || value === undefined) continue;
    const text = typeof value === "object" ? JSON.stringify(value) : String(value);
    parts.push(`${key}=${text.length > 120 ? text.slice(0, 117) + "…" : text}`);
  }
  return parts.join(" ");
}

function transcriptLine(line) {
  const bad = line.ok === false || /fail|error|stuck/.test(String(line.kind)) ;
  const row = el("div", null, bad ? "tline bad" : "tline");
  row.append(el("span", line.seq, "seq"), el("span", line.kind, "kind"), el("span", summarise(line), "rest"));
  return row;
}

function addTranscript(lines) {
  const tail = $("transcript");
  const fresh = lines.filter((line) => Number(line.seq || 0) > state.transcriptSeq);
  if (!fresh.length) return;
  if (tail.querySelector("p.muted")) tail.replaceChildren();
  for (const line of fresh) {
    tail.append(transcriptLine(line));
    state.transcriptSeq = Math.max(state.transcriptSeq, Number(line.seq || 0));
  }
  while (tail.childElementCount > TRANSCRIPT_KEEP) tail.firstElementChild.remove();
  if (fresh.some((line) => /^(proposal|learned_demoted)/.test(String(line.kind)))) loadProposals();
  if ($("transcript-follow").checked) tail.scrollTop = tail.scrollHeight;
}

async function loadTranscript() {
  try {
    const body = await api("/api/transcript?since=0&limit=200");
    if (!body.enabled) {
      $("transcript").replaceChildren(el("p", "this session writes no transcript", "muted"));
      return;
    }
    addTranscript(body.lines || []);
  } catch (error) {
    $("transcript").replaceChildren(el("p", `no transcript: ${error.message}`, "muted"));
  }
}

// ------------------------------------------------------------------------------------------------ bundles

async function loadBundles() {
  const list = $("bundles");
  list.replaceChildren();
  try {
    const body = await api("/api/bundles");
    if (!body.bundles.length) list.append(el("li", "no error bundles", "muted"));
    for (const bundle of body.bundles) {
      const li = el("li");
      const link = el("a", bundle.name);
      link.addEventListener("click", () => openBundle(bundle.name));
      li.append(link, el("span", `  ${bundle.frames} frames, ${new Date(bundle.mtime * 1000).toLocaleString()}`, "muted"));
      list.append(li);
    }
  } catch (error) {
    list.append(el("li", error.message, "muted"));
  }
}

async function openBundle(name) {
  try {
    const bundle = await api(`/api/bundles/${encodeURIComponent(name)}`);
    $("bundle-view").hidden = false;
    $("bundle-name").textContent = bundle.result ? `${bundle.name}: ${summarise(bundle.result)}` : bundle.name;
    const frames = $("bundle-frames");
    frames.replaceChildren();
    for (const url of bundle.frames) {
      const img = el("img");
      img.src = url;
      img.alt = url.split("/").pop();
      img.title = img.alt;
      frames.append(img);
    }
    $("bundle-transcript").textContent = bundle.transcript.map((l) => `${l.seq} ${l.kind} ${summarise(l)}`).join("\n");
  } catch (error) {
    say(error.message, true);
  }
}

// ------------------------------------------------------------------------------------------------ proposals

async function loadProposals() {
  const holder = $("proposals");
  try {
    const body = await api("/api/proposals");
    const notes = [body.note || (body.folder ? `waiting in ${body.folder}` : ""), ...(body.warnings || [])];
    $("proposals-note").textContent = notes.filter(Boolean).join("  ·  ");
    holder.replaceChildren(...body.proposals.map(proposalCard));
    if (!body.proposals.length) holder.append(el("p", "no proposal waits for review", "muted"));
    holder.dataset.count = String(body.proposals.length);
  } catch (error) {
    holder.replaceChildren(el("p", `no proposals: ${error.message}`, "muted"));
  }
}

// The frame with the crop's area outlined and the tap marked, in frame pixels (the SVG is scaled with the image).
function proposalStage(p) {
  const [width, height] = (state.info && state.info.resolution) || [1280, 720];
  const stage = el("div", null, "stage proposal-stage");
  const img = el("img", null, "proposal-frame");
  img.alt = `${p.name}: the screen it was learned on`;
  const overlay = svgEl("svg", {class: "proposal-overlay", viewBox: `0 0 ${width} ${height}`,
    preserveAspectRatio: "none"});
  img.onload = () => overlay.setAttribute("viewBox", `0 0 ${img.naturalWidth} ${img.naturalHeight}`);
  if (p.frame_url) img.src = p.frame_url;
  if (Array.isArray(p.area) && p.area.length === 4) {
    const [x1, y1, x2, y2] = p.area;
    overlay.append(svgEl("rect", {class: "area", x: x1, y: y1, width: x2 - x1, height: y2 - y1}));
  }
  if (Array.isArray(p.tap) && p.tap.length === 2) {
    const [x, y] = p.tap;
    overlay.append(svgEl("circle", {class: "tap", cx: x, cy: y, r: 9}),
      svgEl("path", {class: "tap", d: `M ${x - 16} ${y} H ${x + 16} M ${x} ${y - 16} V ${y + 16}`}));
  }
  stage.append(img, overlay);
  return stage;
}

function proposalCard(p) {
  const card = el("article", null, "proposal");
  card.dataset.name = p.name;
  const side = el("div", null, "proposal-side");
  const crop = el("img", null, "proposal-crop");
  crop.alt = `${p.name}: its template crop`;
  if (p.crop_url) crop.src = p.crop_url;
  const facts = el("dl", null, "facts proposal-facts");
  const rows = [["name", p.name], ["label", p.label], ["shown on", p.shown_on], ["sightings", p.sightings],
    ["collision", fmtScore(p.collision)], ["tap", fmtBox(p.tap)], ["area", fmtBox(p.area)],
    ["last seen", p.last_seen]];
  for (const [key, value] of rows) facts.append(el("dt", key), el("dd", value ?? "–"));
  const accept = el("button", "Accept", "accept");
  const reject = el("button", "Reject", "reject");
  accept.type = reject.type = "button";
  accept.disabled = !p.yaml;
  accept.addEventListener("click", () => reviewProposal(p.name, "accept", card));
  reject.addEventListener("click", () => reviewProposal(p.name, "reject", card));
  const buttons = el("div", null, "row");
  buttons.append(accept, reject);
  side.append(crop, facts, el("pre", p.yaml || "", "snippet proposal-yaml"), buttons);
  card.append(proposalStage(p), side);
  return card;
}

async function reviewProposal(name, verb, card) {
  for (const button of card.querySelectorAll("button")) button.disabled = true;
  const status = $("proposals-status");
  const fired = $("proposals-fired");
  fired.replaceChildren();
  status.className = "";
  status.textContent = `${verb === "accept" ? "accepting" : "rejecting"} ${name}…`;
  try {
    const done = await api(`/api/proposals/${encodeURIComponent(name)}/${verb}`, {method: "POST"});
    status.className = "ok";
    status.textContent = verb === "reject" ? `rejected ${done.rejected}` : `accepted ${done.accepted}: written to ` +
      `${done.graph_file}; ${done.adopted ? "the live session uses it now" : "a new session will use it"}`;
  } catch (error) {
    status.className = "fail";
    status.textContent = `${verb} ${name}: ${error.message}`;
    for (const where of (error.body && error.body.fired) || []) fired.append(el("li", where));
  }
  say(status.textContent, status.className === "fail");
  await loadProposals();
  if (verb === "accept") loadInfo().catch(() => {});  // the graph's popups changed
}

// ------------------------------------------------------------------------------------------------ authoring

function useFrame(saved) {
  const author = state.author;
  author.frame = saved.name;
  author.width = saved.width || 0;
  author.height = saved.height || 0;
  author.box = null;
  const img = $("author-frame");
  img.onload = () => {
    author.width = img.naturalWidth;
    author.height = img.naturalHeight;
    const overlay = $("author-overlay");
    overlay.setAttribute("viewBox", `0 0 ${author.width} ${author.height}`);
    overlay.setAttribute("preserveAspectRatio", "none");
    $("author-stage").classList.add("loaded");
    drawBox(null);
  };
  img.src = saved.url || `/api/frames/${encodeURIComponent(saved.name)}`;
  $("author-frame-name").textContent = saved.name;
  loadFrameList(saved.name);
}

async function capture() {
  try {
    useFrame(await api("/api/capture", {method: "POST"}));
    say("captured the screen");
  } catch (error) {
    say(`capture failed: ${error.message}`, true);
  }
}

async function upload(event) {
  const file = event.target.files[0];
  if (!file) return;
  try {
    const saved = await api("/api/upload", {method: "POST", headers: {"Content-Type": file.type || "image/png"}, body: file});
    useFrame(saved);
    say(`uploaded ${file.name}`);
  } catch (error) {
    say(`upload failed: ${error.message}`, true);
  } finally {
    event.target.value = "";
  }
}

async function loadFrameList(selected) {
  try {
    const body = await api("/api/frames");
    const list = $("frame-list");
    list.replaceChildren(el("option", "saved frames…"));
    list.firstElementChild.value = "";
    for (const name of body.frames) {
      const option = el("option", name);
      option.value = name;
      option.selected = name === selected;
      list.append(option);
    }
  } catch (error) {
    say(error.message, true);
  }
}

function framePoint(event) {
  const img = $("author-frame");
  const rect = img.getBoundingClientRect();
  const {width, height} = state.author;
  const x = Math.round(((event.clientX - rect.left) / rect.width) * width);
  const y = Math.round(((event.clientY - rect.top) / rect.height) * height);
  return [Math.min(Math.max(x, 0), width), Math.min(Math.max(y, 0), height)];
}

function boxOf(a, b) {
  return [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[0], b[0]), Math.max(a[1], b[1])];
}

function drawBox(box) {
  const rect = $("author-box");
  const [x1, y1, x2, y2] = box || [0, 0, 0, 0];
  rect.setAttribute("x", x1);
  rect.setAttribute("y", y1);
  rect.setAttribute("width", x2 - x1);
  rect.setAttribute("height", y2 - y1);
  $("box-coords").textContent = box ? `[${box.join(", ")}]  ${x2 - x1}×${y2 - y1}` : "none";
  updateCutButton();
}

function startDrag(event) {
  if (!state.author.frame || !state.author.width || event.button !== 0) return;
  event.preventDefault();
  state.author.drag = framePoint(event);
  drawBox(boxOf(state.author.drag, state.author.drag));
}

function moveDrag(event) {
  if (!state.author.drag) return;
  drawBox(boxOf(state.author.drag, framePoint(event)));
}

function endDrag(event) {
  if (!state.author.drag) return;
  const box = boxOf(state.author.drag, framePoint(event));
  state.author.drag = null;
  const big = box[2] - box[0] >= 2 && box[3] - box[1] >= 2;
  state.author.box = big ? box : null;
  drawBox(state.author.box);
}

function updateCutButton() {
  const name = $("template-name").value.trim();
  const ok = Boolean(state.author.frame && state.author.box && /^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name));
  $("cut-template").disabled = !ok;
}

async function cutTemplate() {
  const body = {frame: state.author.frame, box: state.author.box, name: $("template-name").value.trim()};
  try {
    const cut = await postJSON("/api/template", body);
    $("yaml-snippet").textContent = cut.yaml;
    $("template-path").textContent = `written to ${cut.path}`;
    if (cut.signature) $("signature-json").value = prettyJSON(cut.signature);
    say(`cut ${body.name}: paste the YAML into the graph`);
  } catch (error) {
    $("yaml-snippet").textContent = "";
    say(`cut failed: ${error.message}`, true);
  }
}

async function testSignature() {
  let signature;
  try {
    signature = JSON.parse($("signature-json").value);
  } catch (error) {
    say(`the signature is not JSON: ${error.message}`, true);
    return;
  }
  const summary = $("signature-summary");
  const rows = $("signature-results").tBodies[0];
  rows.replaceChildren();
  summary.className = "";
  summary.textContent = "testing…";
  try {
    const result = await postJSON("/api/test-signature", {signature, folder: $("signature-folder").value.trim()});
    summary.textContent = `${result.hits}/${result.total} hit (${Math.round(result.hit_rate * 100)}%)`;
    summary.className = result.total && result.hits === result.total ? "ok" : "";
    for (const frame of result.frames) {
      const row = el("tr", null, frame.hit ? "hit" : "miss");
      row.append(el("td", frame.hit ? "✓" : "✗", "mark"), el("td", frame.file), el("td", fmtScore(frame.score)),
        el("td", fmtBox(frame.box)));
      rows.append(row);
    }
  } catch (error) {
    summary.textContent = error.message;
    summary.className = "fail";
  }
}

async function validate() {
  const summary = $("validate-summary");
  const list = $("problems");
  list.replaceChildren();
  summary.textContent = "validating…";
  try {
    const result = await api("/api/validate");
    summary.textContent = result.summary || (result.ok ? "ok" : `${result.problems.length} problems`);
    summary.className = result.ok ? "ok" : "fail";
    for (const p of result.problems) {
      const where = [p.file, p.line, p.col].filter((v) => v !== null && v !== undefined && v !== "").join(":");
      list.append(el("li", `${where}: ${p.message}`, p.severity === "warning" ? "warning" : "error"));
    }
  } catch (error) {
    summary.textContent = error.message;
    summary.className = "fail";
  }
}

// ------------------------------------------------------------------------------------------------ start

function wire() {
  $("live-toggle").addEventListener("click", toggleLive);
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
  $("cut-template").addEventListener("click", cutTemplate);
  $("test-signature").addEventListener("click", testSignature);
  $("validate").addEventListener("click", validate);
  $("bundles-refresh").addEventListener("click", loadBundles);
  $("proposals-refresh").addEventListener("click", loadProposals);
  $("graph-fit").addEventListener("click", () => zoom(null));
  $("graph-zoom-in").addEventListener("click", () => zoom(1.25));
  $("graph-zoom-out").addEventListener("click", () => zoom(0.8));
  $("graph-reload").addEventListener("click", loadGraph);
}

async function start() {
  wire();
  try {
    await loadInfo();
  } catch (error) {
    say(`the studio server did not answer: ${error.message}`, true);
  }
  connectEvents();
  loadGraph();
  loadTranscript();
  loadBundles();
  loadProposals();
  loadFrameList();
  liveLoop();
}

document.addEventListener("DOMContentLoaded", start);
