// The graph studio: the Recognition view. One frame (the live device's, a saved or uploaded one, a run's look or an
// error bundle's) is explained by the engine's observer (POST /api/recognize): every page and popup with each
// signature's score, threshold and area drawn on the frame, and why the winner won or why nothing did. Any
// signature can then be tested on a folder of frames, subfolders included (POST /api/test-signature).
"use strict";

const recog = {last: null, selected: new Set()};

async function recognize(choice) {
  $("recognize-why").textContent = "recognising…";
  $("recognize-panel").scrollIntoView({block: "start"});
  try {
    const result = await postJSON("/api/recognize", choice);
    recog.last = result;
    showRecognition(result);
    const obs = result.observation;
    say(`recognised ${result.frame.label}: ${obs.page || "no page"}${obs.popups.length ? ` + ${obs.popups.join(", ")}` : ""}`);
  } catch (error) {
    $("recognize-why").textContent = error.message;
    say(`recognition failed: ${error.message}`, true);
  }
}

function showRecognition(result) {
  const img = $("recognize-frame");
  img.src = result.frame.url;
  const overlay = $("recognize-overlay");
  overlay.setAttribute("viewBox", `0 0 ${result.width} ${result.height}`);
  overlay.setAttribute("preserveAspectRatio", "none");
  $("recognize-stage").classList.add("loaded");
  $("recognize-source").textContent = result.frame.label;
  const obs = result.observation;
  $("recognize-page").textContent = obs.page || "none";
  $("recognize-popups").textContent = obs.popups.join(", ") || "none";
  $("recognize-confidence").textContent = fmtScore(obs.confidence);
  $("recognize-why").textContent = result.why;
  $("recognize-why").className = obs.page ? "ok" : "fail";
  // First drawn: what was chosen, else the pages that came closest.
  const chosen = result.candidates.filter((c) => c.chosen);
  const closest = result.candidates.filter((c) => c.kind === "page").slice(0, 3);
  recog.selected = new Set((chosen.length ? chosen : closest).map((c) => c.name));
  listCandidates(result.candidates);
  drawCandidates();
}

function listCandidates(candidates) {
  const body = $("candidates").tBodies[0];
  body.replaceChildren();
  const hits = candidates.filter((c) => c.hit).length;
  $("candidates-summary").textContent = `${candidates.length} candidates, ${hits} hit`;
  $("candidates").parentElement.scrollTop = 0;  // a new frame: its winner (or closest pages) first
  for (const c of candidates) {
    const row = el("tr", null, `candidate ${c.hit ? "hit" : "miss"}${c.chosen ? " chosen" : ""}`);
    row.dataset.name = c.name;
    const pick = el("input");
    pick.type = "checkbox";
    pick.checked = recog.selected.has(c.name);
    pick.title = "draw its signatures on the frame";
    pick.addEventListener("change", () => {
      if (pick.checked) recog.selected.add(c.name); else recog.selected.delete(c.name);
      drawCandidates();
    });
    const mark = el("td", c.chosen ? "★" : c.hit ? "✓" : "✗", "mark");
    const pickCell = el("td");
    pickCell.append(pick);
    row.append(pickCell, mark, el("td", c.name, "name"), el("td", c.kind), el("td", c.hit ? fmtScore(c.score) : "–"),
      el("td", c.note || (c.strong ? "" : "weak"), "muted"));
    body.append(row);
    for (const sig of c.signatures) body.append(signatureRow(c, sig));
  }
}

function signatureRow(candidate, sig) {
  const cls = sig.hit === null ? "skipped" : sig.hit ? "hit" : "miss";
  const row = el("tr", null, `signature ${cls}`);
  row.dataset.candidate = candidate.name;
  row.dataset.signature = sig.signature;
  const facts = `${sig.channel} ${sig.hit === null ? "not run" : `${fmtScore(sig.score)} / ${sig.threshold ?? "–"}`}`;
  const where = `area ${fmtBox(sig.area)}${sig.box && fmtBox(sig.box) !== fmtBox(sig.area) ? ` found ${fmtBox(sig.box)}` : ""}`;
  const test = el("button", "test on folder", "small test-on-folder");
  test.type = "button";
  test.disabled = !sig.source;
  test.title = sig.source ? "test this signature on every frame of the folder below (subfolders included)" : "no written signature";
  test.addEventListener("click", () => testFromRecognition(candidate, sig));
  const cell = el("td", null);
  cell.append(test);
  row.append(el("td"), el("td", sig.hit === null ? "·" : sig.hit ? "✓" : "✗", "mark"),
    el("td", `  ${sig.signature}${sig.text ? ` “${sig.text}”` : ""}`), el("td", facts), el("td", where), cell);
  if (sig.note) row.title = sig.note;
  return row;
}

// The selected candidates' signatures on the frame: the declared area dashed, where it was found solid.
function drawCandidates() {
  const overlay = $("recognize-overlay");
  overlay.replaceChildren();
  if (!recog.last) return;
  const width = recog.last.width;
  let drawn = 0;
  for (const c of recog.last.candidates) {
    if (!recog.selected.has(c.name)) continue;
    for (const sig of c.signatures) {
      const cls = sig.hit ? "hit" : "miss";
      const group = svgEl("g", {class: `sig ${cls}`, "data-candidate": c.name, "data-signature": sig.signature});
      const title = svgEl("title");
      title.textContent = `${c.name}/${sig.signature} ${sig.channel} ${fmtScore(sig.score)} (threshold ${sig.threshold})`;
      group.append(title);
      if (Array.isArray(sig.area) && sig.area.length === 4) {
        const [x1, y1, x2, y2] = sig.area;
        group.append(svgEl("rect", {class: `area ${cls}`, x: x1, y: y1, width: Math.max(1, x2 - x1), height: Math.max(1, y2 - y1)}));
      }
      const box = Array.isArray(sig.box) && sig.box.length === 4 ? sig.box : sig.area;
      if (Array.isArray(box) && box.length === 4) {
        const [x1, y1, x2, y2] = box;
        group.append(svgEl("rect", {class: `box ${cls}`, x: x1, y: y1, width: Math.max(1, x2 - x1), height: Math.max(1, y2 - y1)}));
        const nearRight = x1 > width * 0.7;
        const label = svgEl("text", {class: cls, x: nearRight ? x2 - 2 : x1 + 2, y: y1 > 22 ? y1 - 5 : y2 + 18,
          "text-anchor": nearRight ? "end" : "start"});
        label.textContent = `${c.name}/${sig.signature} ${fmtScore(sig.score)}/${sig.threshold ?? "–"}`;
        group.append(label);
      }
      overlay.append(group);
      drawn += 1;
    }
  }
  overlay.dataset.drawn = String(drawn);
}

async function testFromRecognition(candidate, sig) {
  const folder = $("recognize-folder").value.trim() || "captures";
  $("recognize-test-name").textContent = `${candidate.name}/${sig.signature} on ${folder}`;
  await runSignatureTest(sig.source, folder, $("recognize-tests"), $("recognize-test-summary"));
}

async function recognizeUpload(event) {
  const file = event.target.files[0];
  if (!file) return;
  try {
    const saved = await api("/api/upload", {method: "POST", headers: {"Content-Type": file.type || "image/png"}, body: file});
    say(`uploaded ${file.name} as ${saved.name}`);
    loadFrameList();
    await recognize({source: "frame", name: saved.name});
  } catch (error) {
    say(`upload failed: ${error.message}`, true);
  } finally {
    event.target.value = "";
  }
}

async function loadSteps() {
  const list = $("recognize-steps");
  try {
    const body = await api("/api/steps");
    list.replaceChildren(el("option", `run looks (${body.steps.length})…`));
    list.firstElementChild.value = "";
    for (const step of body.steps) {
      const option = el("option", `#${step.seq} ${step.label}`);
      option.value = String(step.seq);
      list.append(option);
    }
  } catch (error) {
    say(`the run looks could not be listed: ${error.message}`, true);
  }
}

function wireRecognition() {
  $("recognize-live").addEventListener("click", () => recognize({source: "live"}));
  $("recognize-upload").addEventListener("change", recognizeUpload);
  $("recognize-frames").addEventListener("change", (event) => {
    if (event.target.value) recognize({source: "frame", name: event.target.value});
  });
  $("recognize-steps").addEventListener("change", (event) => {
    if (event.target.value) recognize({source: "step", seq: Number(event.target.value)});
  });
  $("recognize-author").addEventListener("click", () => {
    if (state.author.frame) recognize({source: "frame", name: state.author.frame});
    else say("capture, upload or choose a frame in the Authoring panel first", true);
  });
}
