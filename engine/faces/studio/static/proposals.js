// The graph studio: the Proposals panel (popups learned from the vision model, accepted into the graph or rejected).
"use strict";

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

function foundBy(p) {
  // Who found what closed it: the dismissal search (no model), the vision model, an agent's tap, the back key.
  return {search: "the search (no model)", model: "the vision model", agent: "an agent's tap",
    "back key": "the back key"}[p.found_by] || "the vision model";
}

function proposalCard(p) {
  const card = el("article", null, "proposal");
  card.dataset.name = p.name;
  card.dataset.foundBy = p.found_by || "model";
  const side = el("div", null, "proposal-side");
  const crop = el("img", null, "proposal-crop");
  crop.alt = `${p.name}: its template crop`;
  if (p.crop_url) crop.src = p.crop_url;
  const facts = el("dl", null, "facts proposal-facts");
  const rows = [["name", p.name], ["label", p.label], ["found by", foundBy(p)], ["shown on", p.shown_on], ["sightings", p.sightings],
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

