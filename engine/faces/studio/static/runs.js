// The graph studio: gotos and their runs. A run belongs to the tab that started it (TAB, kept in sessionStorage):
// its hops are listed here and ticked once a look verifies them; another tab's run is only labelled; a reloaded
// tab reattaches to its run (GET /api/run). The graph follows every run's looks (believed and observed page).
"use strict";

// A tab the browser duplicated starts with a copy of sessionStorage, so with the id of the tab it came from. Before
// anything uses the id, ask the other tabs of this studio whether one has it; one that does answers, and this tab
// takes a new id. Every tab keeps answering for its own id.
const TAB_CHANNEL = window.BroadcastChannel ? new BroadcastChannel("studio-tabs") : null;
const TAB_ASK_MS = 200;

async function claimTabId() {
  if (!TAB_CHANNEL) return;
  const answered = new Promise((resolve) => {
    const listen = (event) => {
      if (event.data && event.data.taken === TAB) resolve(true);
    };
    TAB_CHANNEL.addEventListener("message", listen);
    setTimeout(() => { TAB_CHANNEL.removeEventListener("message", listen); resolve(false); }, TAB_ASK_MS);
  });
  TAB_CHANNEL.postMessage({ask: TAB});
  if (await answered) {
    sessionStorage.removeItem("studio-tab");
    TAB = tabId();
    say("this tab was duplicated from another: it takes an id of its own");
  }
}

if (TAB_CHANNEL) {
  TAB_CHANNEL.addEventListener("message", (event) => {
    if (event.data && event.data.ask === TAB) TAB_CHANNEL.postMessage({taken: TAB});
  });
}

function addPlanned(hop) {
  const li = el("li", `${hop.from ?? "?"} → ${hop.to}  ${describeAction(hop.action)}`, "planned");
  li.dataset.from = hop.from ?? "";
  li.dataset.to = hop.to;
  $("route").append(li);
  state.route.push({...hop, li});
}

function watchRun(run, page) {
  state.run = run;
  state.runSeen = 0;
  $("goto-run").textContent = `run ${run} (this tab)`;
  $("goto-run").dataset.run = String(run);
  const result = $("goto-result");
  result.className = "running";
  result.textContent = `going to ${page}…`;
  delete result.dataset.run;
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
    const started = await postJSON("/api/goto", {page, tab: TAB});
    watchRun(started.run, page);
    say(`goto ${page} started (run ${started.run})`);
  } catch (error) {
    state.run = null;
    result.className = "fail";
    result.textContent = error.message;
    say(error.message, true);
  }
  replayEarly();
}

function replayEarly() {
  for (const [handler, data] of state.early.splice(0)) handler(data);
}

// Whether an event is one of this tab's watched run, not yet shown. Another tab's run is labelled as such; an
// event that comes before POST /api/goto (or /api/run) has answered is kept and replayed.
function ours(handler, data) {
  if (data.tab !== TAB) {
    otherRun(handler, data);
    return false;
  }
  if (state.run === "pending") {
    state.early.push([handler, data]);
    return false;
  }
  if (state.run === null || data.run !== state.run) return false;
  if (typeof data.n === "number") {
    if (data.n <= state.runSeen) return false;
    state.runSeen = data.n;
  }
  return true;
}

function otherRun(handler, data) {
  const label = $("other-run");
  const who = `another tab's run ${data.run} → ${data.target || data.page || "?"}`;
  let what = "";
  if (handler === onHop) what = `hop ${data.hop}: ${data.from ?? "?"} → ${data.to} (tried)`;
  else if (handler === onLook) what = data.verdict === "verified" && data.expected ? `verified ${data.expected}` : `saw ${data.observed || "no page"}`;
  else if (handler === onStep) what = data.kind;
  else if (handler === onResult) what = data.ok ? `ended: verified ${data.observed || data.page}` : `ended: ${data.status}`;
  label.hidden = false;
  label.dataset.run = String(data.run);
  label.textContent = `${who}: ${what}`;
  label.classList.toggle("ended", handler === onResult);
}

function onHop(data) {
  if (!ours(onHop, data)) return;
  const li = el("li", null, "hop tried");
  li.append(el("span", `${data.from ?? "?"} → ${data.to}  ${describeAction(data.action)}`), el("span", " (tried)", "how"));
  li.dataset.to = data.to;
  li.dataset.hop = String(data.hop);
  $("hops").append(li);
  if (!state.route.some((h) => !h.li.classList.contains("done") && h.to === data.to)) addPlanned(data);
}

// A look of a run: the graph follows it whoever started the run; this tab's hop is ticked once a look verifies it.
function onLook(data) {
  if (data.observed !== undefined) setObserved(data.observed);
  if (data.believed && data.believed !== state.believed) {
    setBelieved(data.believed);
    showNode(data.believed);
  }
  if (!ours(onLook, data)) return;
  if (data.verdict !== "verified" || !data.expected) return;
  const planned = state.route.find((h) => !h.li.classList.contains("done") && h.to === data.expected);
  if (planned) planned.li.classList.add("done");
  const tried = [...$("hops").querySelectorAll("li.hop.tried")].find((li) => li.dataset.to === data.expected);
  if (tried) {
    tried.classList.replace("tried", "verified");
    tried.querySelector(".how").textContent = " ✓ verified";
  }
}

function onStep(data) {
  if (!ours(onStep, data)) return;
  const what = data.kind === "dismiss" ? `dismissed ${data.popup || data.name || "a popup"}` : `unknown screen: trying ${data.rung || ""}`;
  $("hops").append(el("li", what, "step"));
}

function onResult(data) {
  if (!ours(onResult, data)) return;
  const result = $("goto-result");
  const hops = data.hops ?? $("hops").querySelectorAll("li.hop").length;
  const ms = typeof data.elapsed_ms === "number" ? ` in ${Math.round(data.elapsed_ms)} ms` : "";
  if (data.ok) {
    result.className = "ok";
    result.textContent = `verified: ${data.observed || data.page} (${hops} hops${ms})`;
    setBelieved(data.observed || data.page);
  } else {
    result.className = "fail";
    result.textContent = `${data.status}: ${data.text || "failed"}`;
  }
  if (data.observed !== undefined) setObserved(data.observed);
  result.dataset.run = String(data.run);
  markRoute([], null);
  say(`run ${data.run}: ${result.textContent}`, !data.ok);
  loadSteps();  // the run's looks can be recognised
}

const HANDLERS = {hop: onHop, look: onLook, step: onStep, result: onResult};

// A reloaded tab takes its run back: the one running (its events so far, then the live ones) or its last one.
async function reattach() {
  state.run = "pending";
  let snap;
  try {
    snap = await api(`/api/run?tab=${encodeURIComponent(TAB)}`);
  } catch (error) {
    state.run = null;
    say(`the run could not be asked for: ${error.message}`, true);
    return;
  }
  const mine = snap.current && snap.current.mine ? snap.current : snap.last;
  if (snap.current && !snap.current.mine) {
    otherRun(onHop, {...snap.current, target: snap.current.page, hop: "…", to: "running"});
    $("other-run").textContent = `another tab's run ${snap.current.run} → ${snap.current.page} is running`;
  }
  if (!mine) {
    state.run = null;
    state.early = [];
    return;
  }
  $("route").replaceChildren();
  state.route = [];
  $("route-target").textContent = `→ ${mine.page}`;
  $("hops").replaceChildren();
  watchRun(mine.run, mine.page);
  for (const event of mine.events || []) if (event.event === "hop") addPlanned(event);
  for (const event of mine.events || []) if (HANDLERS[event.event]) HANDLERS[event.event](event);
  if (mine.result) onResult(mine.result);
  replayEarly();
  say(mine.result ? `this tab's last run ${mine.run} → ${mine.page} is shown again`
    : `reattached to this tab's run ${mine.run} → ${mine.page}`);
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
  for (const [name, handler] of Object.entries(HANDLERS)) source.addEventListener(name, parse(handler));
  source.addEventListener("transcript", parse((data) => addTranscript(data.lines || [])));
  source.addEventListener("dropped", parse((data) => say(`${data.count} events were dropped (slow page)`, true)));
  source.onopen = () => document.body.classList.add("connected");
  source.onerror = () => document.body.classList.remove("connected");
}
