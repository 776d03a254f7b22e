// The graph studio: the Authoring panel (frames captured or uploaded, templates cut from them, a signature tested
// on a folder of frames, the graph folder validated). Loaded after studio.js, whose helpers it uses.
"use strict";

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
    for (const id of ["frame-list", "recognize-frames"]) {  // the Authoring panel's and the Recognition view's
      const list = $(id);
      list.replaceChildren(el("option", "saved frames…"));
      list.firstElementChild.value = "";
      for (const name of body.frames) {
        const option = el("option", name);
        option.value = name;
        option.selected = id === "frame-list" && name === selected;
        list.append(option);
      }
    }
  } catch (error) {
    say(`the saved frames could not be listed: ${error.message}`, true);
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

async function cutTemplate(overwrite = false) {
  const body = {frame: state.author.frame, box: state.author.box, name: $("template-name").value.trim()};
  if (overwrite === true) body.overwrite = true;
  $("overwrite-ask").hidden = true;
  try {
    const cut = await postJSON("/api/template", body);
    $("yaml-snippet").textContent = cut.yaml;
    const kept = (cut.replaced || []).map((r) => r.backup);
    $("template-path").textContent = `written to ${cut.path}` + (kept.length ? `; the old file is kept as ${kept.join(", ")}` : "");
    if (cut.signature) $("signature-json").value = prettyJSON(cut.signature);
    say(kept.length ? `replaced ${body.name}: the old template is kept as ${kept.join(", ")}`
      : `cut ${body.name}: paste the YAML into the graph`);
  } catch (error) {
    if (error.status === 409 && error.body && error.body.exists) {
      askOverwrite(body.name, error.body.exists);
      say(`${body.name} exists already: overwrite it or choose another name`);
      return;
    }
    $("yaml-snippet").textContent = "";
    say(`cut failed: ${error.message}`, true);
  }
}

// The page asks before a template is replaced; the server keeps the old file as a .bak beside the new one.
function askOverwrite(name, path) {
  $("overwrite-text").textContent = `A template ${name} exists already (${path}). Overwrite it? The old file is ` +
    "kept beside it as a timestamped .bak.";
  $("overwrite-ask").hidden = false;
  $("overwrite-yes").focus();
}

// One signature tested on every frame of a folder and its subfolders: pass or fail per frame in `table`.
async function runSignatureTest(signature, folder, table, summary) {
  const rows = table.tBodies[0];
  rows.replaceChildren();
  summary.className = "";
  summary.textContent = "testing…";
  try {
    const result = await postJSON("/api/test-signature", {signature, folder});
    const more = result.skipped ? `, ${result.skipped} more not read` : "";
    summary.textContent = `${result.hits}/${result.total} hit (${Math.round(result.hit_rate * 100)}%)${more}`;
    summary.className = result.total && result.hits === result.total ? "ok" : "";
    for (const frame of result.frames) {
      const row = el("tr", null, frame.hit ? "hit" : "miss");
      row.dataset.file = frame.file;
      row.append(el("td", frame.hit ? "✓ pass" : "✗ fail", "mark"), el("td", frame.file),
        el("td", frame.error || fmtScore(frame.score)), el("td", fmtBox(frame.box)));
      rows.append(row);
    }
    say(`signature test on ${folder}: ${summary.textContent}`);
  } catch (error) {
    summary.textContent = error.message;
    summary.className = "fail";
    say(`signature test failed: ${error.message}`, true);
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
  await runSignatureTest(signature, $("signature-folder").value.trim(), $("signature-results"),
    $("signature-summary"));
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
    say(`validate: ${summary.textContent}`, !result.ok);
    for (const p of result.problems) {
      const where = [p.file, p.line, p.col].filter((v) => v !== null && v !== undefined && v !== "").join(":");
      list.append(el("li", `${where}: ${p.message}`, p.severity === "warning" ? "warning" : "error"));
    }
  } catch (error) {
    summary.textContent = error.message;
    summary.className = "fail";
    say(`validate failed: ${error.message}`, true);
  }
}

