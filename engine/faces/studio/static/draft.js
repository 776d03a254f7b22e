// The graph studio: the Draft panel (an explorer's draft opened with `studio --draft DIR`): each page with its member
// frames and signature boxes; rename, merge, split, drop a link; accept it as graph YAML.
"use strict";

const draft = {view: null, shown: {}, ticked: {}};  // shown: page -> member path in the big frame; ticked: page -> Set

// ------------------------------------------------------------------------------------------------ loading

async function loadDraft() {
  try {
    showDraft(await api("/api/draft"));
  } catch (error) {
    $("draft-panel").hidden = false;
    draftStatus(`the draft cannot be shown: ${error.message}`, "fail");
  }
}

function showDraft(view) {
  const panel = $("draft-panel");
  if (!view.folder) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  draft.view = view;
  const made = view.made || {};
  const facts = [`${view.folder}`, `game ${view.game}`, `${(view.resolution || []).join("×")}`,
    `${view.pages.length} pages, ${view.links.length} links, ${view.popups.length} popups, ${view.loading} loading screens`];
  if (made.minutes) facts.push(`explored ${made.minutes} min, ${made.taps} taps`);
  if (view.original) facts.push("edited (the explorer's own is draft.yaml.orig)");
  $("draft-note").textContent = facts.join("  ·  ");
  $("draft-panel").dataset.rev = view.rev;
  showReview(view.review);
  $("draft-pages").replaceChildren(...view.pages.map(pageCard));
  showLinks(view.links);
  $("draft-popups").replaceChildren(...view.popups.map(popupItem));
  if (!view.popups.length) $("draft-popups").append(el("li", "no popup was seen", "muted"));
}

// A popup: its first frame with its box (dashed) and signatures drawn, and how it was dismissed.
function popupItem(popup) {
  const li = el("li", null, "draft-popup");
  li.dataset.popup = popup.name;
  const stage = draftStage(popup, popup.members.length ? popup.members[0].path : null);
  if (Array.isArray(popup.box)) {
    const [x1, y1, x2, y2] = popup.box;
    stage.querySelector("svg").prepend(svgEl("rect", {class: "box", x: x1, y: y1, width: x2 - x1, height: y2 - y1}));
  }
  li.append(renameRow(popup.name), stage, el("p", `over ${popup.over.join(", ") || "?"}: ${popup.count} frame(s), ` +
    `dismissed by ${describeAction(popup.dismiss) || "nothing that worked"}`, "small"));
  return li;
}

function draftStatus(text, kind) {
  const status = $("draft-status");
  status.className = kind || "";
  status.textContent = text;
  if (text) say(text, kind === "fail");
}

function showReview(items) {
  const list = $("draft-review");
  list.replaceChildren(...items.map((item) => {
    const li = el("li", null, `review-${item.kind}`);
    li.append(el("span", item.kind.replaceAll("_", " "), "kind"), el("span", ` ${item.pages.join(", ")}`, "pages"),
      el("span", item.note ? ` — ${item.note}` : "", "muted"));
    return li;
  }));
  if (!items.length) list.append(el("li", "nothing left to review", "muted"));
}

// ------------------------------------------------------------------------------------------------ a page

// The frame with the page's signature boxes drawn over it, in frame pixels (the SVG scales with the image).
function draftStage(page, path) {
  const [width, height] = draft.view.resolution;
  const stage = el("div", null, "stage draft-stage");
  const img = el("img", null, "draft-frame");
  img.alt = `${page.name}: ${path || "no frame"}`;
  const overlay = svgEl("svg", {class: "draft-overlay", viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none"});
  const member = page.members.find((m) => m.path === path);
  if (member) img.src = member.url;
  page.signatures.forEach((sig, i) => {
    const [x1, y1, x2, y2] = sig.area;
    const label = sig.type === "template" ? `T${i + 1}` : sig.type === "color" ? `C${i + 1}` : `OCR${i + 1}`;
    overlay.append(svgEl("rect", {class: `sig ${sig.type}`, x: x1, y: y1, width: x2 - x1, height: y2 - y1}));
    const text = svgEl("text", {class: `sig ${sig.type}`, x: x1 + 3, y: y1 >= 34 ? y1 - 6 : y2 + 30});
    text.textContent = label;
    overlay.append(text);
  });
  stage.append(img, overlay);
  return stage;
}

function signatureLine(sig, i) {
  const what = sig.type === "template" ? sig.asset : sig.type === "color" ? `rgb ${fmtBox(sig.rgb)}` : `/${sig.pattern}/`;
  return el("li", `${sig.type === "template" ? "T" : sig.type === "color" ? "C" : "OCR"}${i + 1} ${sig.type} ` +
    `${fmtBox(sig.area)} ${what || ""}`, `sig ${sig.type}`);
}

// The name of a page or popup, editable: Rename (or Enter) renames it everywhere the draft names it.
function renameRow(old) {
  const row = el("div", null, "row draft-head");
  const name = el("input", null, "draft-name");
  name.value = old;
  name.setAttribute("aria-label", `new name for ${old}`);
  const rename = el("button", "Rename", "draft-rename");
  rename.type = "button";
  rename.addEventListener("click", () => edit("rename", {old, new: name.value.trim()}));
  name.addEventListener("keydown", (event) => { if (event.key === "Enter") rename.click(); });
  row.append(name, rename);
  return row;
}

function pageCard(page) {
  const card = el("article", null, "draft-page");
  card.dataset.page = page.name;
  const ticked = draft.ticked[page.name] || new Set();
  draft.ticked[page.name] = ticked;
  if (!page.members.some((m) => m.path === draft.shown[page.name])) draft.shown[page.name] = page.members.length ?
    page.members[0].path : null;

  const head = renameRow(page.name);
  head.append(el("span", [page.title ? `“${page.title}”` : "no title read", `${page.count} frame(s)`,
    `${page.visits} visit(s)`, `links ${page.links_out} out, ${page.links_in} in`, page.loading ? "loading" : ""]
    .filter(Boolean).join(" · "), "muted small"));

  const thumbs = el("div", null, "draft-thumbs");
  for (const member of page.members) {
    const label = el("label", null, "draft-thumb");
    label.classList.toggle("shown", member.path === draft.shown[page.name]);
    label.title = member.path;
    const box = el("input");
    box.type = "checkbox";
    box.checked = ticked.has(member.path);
    box.setAttribute("aria-label", `take ${member.path} into the new page`);
    box.dataset.path = member.path;
    box.addEventListener("change", () => {
      if (box.checked) ticked.add(member.path); else ticked.delete(member.path);
      updateSplit(card, page);
    });
    const img = el("img");
    img.src = member.url;
    img.alt = member.path;
    img.loading = "lazy";
    img.addEventListener("click", (event) => {
      event.preventDefault();  // a click on the picture shows it; the box ticks it
      draft.shown[page.name] = member.path;
      const big = card.querySelector("img.draft-frame");
      big.src = member.url;
      big.alt = `${page.name}: ${member.path}`;
      for (const other of thumbs.querySelectorAll(".draft-thumb")) other.classList.toggle("shown", other === label);
    });
    label.append(img, box);
    thumbs.append(label);
  }
  if (page.count > page.members.length) thumbs.append(el("span", `+${page.count - page.members.length} more`, "muted"));

  const merge = el("div", null, "row");
  const other = el("select", null, "draft-merge-other");
  other.setAttribute("aria-label", `the page to merge into ${page.name}`);
  other.append(new Option("merge a page into this one…", ""));
  for (const p of draft.view.pages) if (p.name !== page.name) other.append(new Option(p.name, p.name));
  const mergeButton = el("button", "Merge", "draft-merge");
  mergeButton.type = "button";
  mergeButton.disabled = true;
  other.addEventListener("change", () => { mergeButton.disabled = !other.value; });
  mergeButton.addEventListener("click", () => edit("merge", {keep: page.name, other: other.value}));
  merge.append(other, mergeButton);

  const split = el("div", null, "row");
  const newName = el("input", null, "draft-split-name");
  newName.placeholder = "new page name";
  newName.setAttribute("aria-label", `name of the page split from ${page.name}`);
  const splitButton = el("button", "Split ticked frames off", "draft-split");
  splitButton.type = "button";
  splitButton.addEventListener("click", () => edit("split", {page: page.name, frames: [...ticked],
    name: newName.value.trim()}));
  newName.addEventListener("input", () => updateSplit(card, page));
  split.append(newName, splitButton);

  const sigs = el("ul", null, "draft-sigs");
  sigs.append(...page.signatures.map(signatureLine));
  if (!page.signatures.length) sigs.append(el("li", "no signature: nothing stays the same on all its frames", "fail"));

  const side = el("div", null, "draft-side");
  side.append(thumbs, sigs, merge, split);
  const body = el("div", null, "draft-body");
  body.append(draftStage(page, draft.shown[page.name]), side);
  card.append(head, body);
  updateSplit(card, page);
  return card;
}

function updateSplit(card, page) {
  const ticked = draft.ticked[page.name];
  const button = card.querySelector(".draft-split");
  button.disabled = !ticked.size || ticked.size >= page.members.length ||
    !card.querySelector(".draft-split-name").value.trim();
  button.textContent = `Split ${ticked.size} ticked frame(s) off`;
}

// ------------------------------------------------------------------------------------------------ links

function showLinks(links) {
  const body = $("draft-links").querySelector("tbody");
  body.replaceChildren(...links.map((link) => {
    const row = el("tr");
    row.dataset.index = String(link.index);
    const drop = el("button", "Drop", "small draft-drop");
    drop.type = "button";
    drop.addEventListener("click", () => edit("drop-link", {index: link.index, from: link.from, to: link.to}));
    const cell = el("td");
    cell.append(drop);
    row.append(el("td", link.from), el("td", "→", "muted"), el("td", link.to), el("td", describeAction(link.action)),
      el("td", `${link.seen} / ${link.tried}`), cell);
    return row;
  }));
}

// ------------------------------------------------------------------------------------------------ edits

async function edit(verb, body) {
  for (const button of document.querySelectorAll("#draft-panel button")) button.disabled = true;
  try {
    const view = await postJSON(`/api/draft/${verb}`, {rev: draft.view.rev, ...body});
    if (verb === "split") draft.ticked[body.page] = new Set();
    showDraft(view);
    draftStatus(view.did, "ok");
  } catch (error) {
    draftStatus(`${verb}: ${error.message}`, "fail");
    await loadDraft();
  } finally {
    for (const id of ["draft-refresh", "draft-accept", "draft-overwrite", "draft-cancel"]) $(id).disabled = false;
  }
}

async function acceptDraft(overwrite) {
  const out = $("draft-out").value.trim();
  $("draft-ask").hidden = true;
  $("draft-problems").replaceChildren();
  $("draft-validate").textContent = "";
  draftStatus(`accepting into ${out || "the draft folder"}…`);
  try {
    const done = await postJSON("/api/draft/accept", {rev: draft.view.rev, out, overwrite});
    const replaced = done.replaced.length ? `, ${done.replaced.length} replaced (the old kept as .bak)` : "";
    draftStatus(`accepted into ${done.folder}: ${done.written.length} file(s) written${replaced}, ` +
      `${done.unchanged.length} unchanged`, "ok");
    const check = $("draft-validate");
    check.className = done.validate.ok ? "ok" : "fail";
    check.textContent = `validate: ${done.validate.summary}`;
    for (const p of done.validate.problems) {
      $("draft-problems").append(el("li", `${p.file}:${p.line}:${p.col}: ${p.message}`, p.severity));
    }
  } catch (error) {
    if (error.status === 409 && error.body && error.body.reason === "exists") {
      $("draft-ask-text").textContent = `${error.message}. Replace them?`;
      $("draft-ask").hidden = false;
      draftStatus("accepting would replace files: asking first");
    } else {
      draftStatus(`accept: ${error.message}`, "fail");
    }
  }
}

function wireDraft() {
  $("draft-refresh").addEventListener("click", loadDraft);
  $("draft-accept").addEventListener("click", () => acceptDraft(false));
  $("draft-overwrite").addEventListener("click", () => acceptDraft(true));
  $("draft-cancel").addEventListener("click", () => {
    $("draft-ask").hidden = true;
    draftStatus("nothing was written");
  });
}
