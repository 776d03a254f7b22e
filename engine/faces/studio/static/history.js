// The graph studio: the transcript tail and the error bundles (each frame of a bundle, and each look of the
// transcript whose frame is still kept, can be sent to the recognition view).
"use strict";

// ------------------------------------------------------------------------------------------------ transcript

function summarise(line) {
  const skip = new Set(["seq", "ts", "kind", "t_ms"]);
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
  row.dataset.seq = String(line.seq);
  if (line.kind === "observation") {  // the look's frame is kept for a while: it can be recognised
    const button = el("button", "recognise", "recognise-step small");
    button.type = "button";
    button.title = "run recognition on this look's frame";
    button.addEventListener("click", () => recognize({source: "step", seq: Number(line.seq)}));
    row.append(button);
  }
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
      const figure = el("figure", null, "bundle-frame");
      const img = el("img");
      img.src = url;
      img.alt = url.split("/").pop();
      img.title = img.alt;
      const button = el("button", `recognise ${img.alt}`, "recognise-bundle small");
      button.type = "button";
      button.addEventListener("click", () => recognize({source: "bundle", bundle: bundle.name, file: img.alt}));
      figure.append(img, button);
      frames.append(figure);
    }
    // A bundle's lines are the run's steps: a time since the run started (t_ms) and a kind, no transcript seq.
    $("bundle-transcript").textContent = bundle.transcript.map((l) => [
      l.seq !== undefined ? `#${l.seq}` : null, typeof l.t_ms === "number" ? `${Math.round(l.t_ms)} ms` : null,
      l.kind ?? "?", summarise(l)].filter((part) => part !== null && part !== "").join("  ")).join("\n");
    say(`opened the error bundle ${bundle.name}`);
  } catch (error) {
    say(error.message, true);
  }
}
