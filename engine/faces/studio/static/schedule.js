// The graph studio: the Schedule panel (per host and device: next runs, what runs, recent failures, last heartbeat).
"use strict";

function when(seconds) {
  return seconds == null ? "-" : new Date(seconds * 1000).toLocaleString();
}

function scheduleDevice(dev) {
  const card = el("div", null, "schedule-device");
  const beat = dev.lease_age_s == null ? "" : `last heartbeat ${Math.round(dev.lease_age_s)} s ago`;
  const flags = [dev.host ? `host ${dev.host}` : "", dev.paused ? "paused" : "",
    dev.running ? `running ${dev.running}` : "", dev.state || "no scheduler", beat];
  card.append(el("h3", `${dev.device}: ${flags.filter(Boolean).join(" · ")}`));
  const table = el("table", null, "schedule-tasks");
  const head = el("tr");
  for (const title of ["task", "next run", "in", "state", "last", "failures", "why it waits"]) head.append(el("th", title));
  table.append(head);
  for (const task of dev.tasks) {
    const row = el("tr");
    for (const cell of [task.task, when(task.next_run), `${Math.round(task.due_in_s / 60)} min`, task.state,
      task.last_status || "-", String(task.failures), task.reason || ""]) row.append(el("td", cell));
    if (task.failures) row.className = "fail";
    table.append(row);
  }
  card.append(table);
  const failures = el("ul", null, "schedule-failures");
  for (const f of dev.recent_failures.slice(0, 5)) failures.append(el("li", `${when(f.finished)} ${f.task}: ${f.status}: ${f.text || ""}`));
  for (const e of dev.events.slice(-5)) failures.append(el("li", `${when(e.at)} ${e.kind}: ${e.text}`));
  card.append(failures);
  return card;
}

async function loadSchedule() {
  const holder = $("schedule");
  try {
    const body = await api("/api/schedule");
    $("schedule-note").textContent = body.note || `database: ${body.database}`;
    holder.replaceChildren(...body.devices.map(scheduleDevice));
    holder.dataset.devices = String(body.devices.length);
  } catch (error) {
    holder.replaceChildren(el("p", `no schedule: ${error.message}`, "muted"));
  }
}

document.addEventListener("DOMContentLoaded", () => $("schedule-refresh").addEventListener("click", loadSchedule));
