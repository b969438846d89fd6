// The run list: copy buttons, ticking rows, the export dialog, and the live refresh.
// Plain JavaScript (no framework to ship): the page is rendered on the server; this only
// swaps the table body while a live row is shown and drives the export endpoints.
(function () {
  "use strict";
  const table = document.getElementById("runs");
  if (!table) return;
  const group = table.dataset.group;
  const api = "/api/g/" + encodeURIComponent(group) + "/runs/export/";
  let rows = document.getElementById("rows");

  function ticked() {
    return Array.from(document.querySelectorAll("input.tick:checked")).map((t) => t.value);
  }
  function bindRows() {
    document.querySelectorAll("button.copy").forEach((b) => {
      b.onclick = () => navigator.clipboard && navigator.clipboard.writeText(b.dataset.copy);
    });
  }
  bindRows();
  document.getElementById("select-all").onchange = (e) => {
    document.querySelectorAll("input.tick").forEach((t) => { t.checked = e.target.checked; });
  };

  // Live rows: refresh the body every 2 s while any shown row is live, and not otherwise.
  const started = Date.now();
  function tick() {
    document.querySelectorAll("td.duration[data-live-seconds]").forEach((td) => {
      const s = Math.round(parseFloat(td.dataset.liveSeconds) + (Date.now() - started) / 1000);
      td.textContent = Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
    });
  }
  async function refresh() {
    if (rows.dataset.anyLive !== "true") return;
    const keep = new Set(ticked());
    const q = table.dataset.query;
    const res = await fetch("/?" + (q ? q + "&" : "") + "fragment=rows", { credentials: "same-origin" });
    if (res.ok) {
      const holder = document.createElement("table");
      holder.innerHTML = await res.text();
      const fresh = holder.querySelector("tbody");
      fresh.querySelectorAll("input.tick").forEach((t) => { t.checked = keep.has(t.value); });
      rows.replaceWith(fresh);
      rows = fresh;
      bindRows();
    }
    if (rows.dataset.anyLive === "true") setTimeout(refresh, 2000);
  }
  if (rows.dataset.anyLive === "true") { setTimeout(refresh, 2000); setInterval(tick, 1000); }

  // The export dialog: ticked rows or every run matching the filters, previewed, downloaded.
  const dialog = document.getElementById("export");
  const preview = document.getElementById("preview");
  document.getElementById("open-export").onclick = () => {
    document.getElementById("ticked-count").textContent = String(ticked().length);
    if (!ticked().length) dialog.querySelector('input[value="filters"]').checked = true;
    preview.textContent = "";
    dialog.showModal();
  };
  let dropped = [];
  function body() {
    const which = dialog.querySelector('input[name="which"]:checked').value;
    const frames = Array.from(dialog.querySelectorAll('input[name="frame"]:checked')).map((f) => f.value);
    const ids = ticked().filter((i) => !dropped.includes(i));
    const selection = which === "ticked" ? { kind: "run_ids", run_ids: ids } : JSON.parse(table.dataset.selection);
    return {
      selection: selection, frames: frames,
      include_atif: document.getElementById("include-atif").checked,
      include_logs: document.getElementById("include-logs").checked,
    };
  }
  async function post(path, payload) {
    return fetch(api + path, {
      method: "POST", credentials: "same-origin",
      headers: { "content-type": "application/json" }, body: JSON.stringify(payload),
    });
  }
  function line(text, cls) {
    const p = document.createElement("p");
    p.textContent = text;
    if (cls) p.className = cls;
    preview.appendChild(p);
  }
  async function showPreview() {
    preview.textContent = "";
    const res = await post("preview", body());
    const data = await res.json();
    if (!res.ok) { line(JSON.stringify(data.detail), "error"); return null; }
    if (data.missing_run_ids.length) {
      dropped = dropped.concat(data.missing_run_ids);
      line("dropped, no longer resolve: " + data.missing_run_ids.join(", "), "error");
    }
    line(data.run_count + " runs · scenarios " + data.scenarios.join(", "));
    line("limits: " + data.limits.max_runs + " runs, raw zip " + data.limits.raw_zip_bytes +
         " bytes, CSV " + data.limits.csv_bytes + " bytes; raw zip estimate " + data.raw_zip_estimated_bytes + " bytes");
    const tables = {};
    data.columns.forEach((c) => { (tables[c.table] = tables[c.table] || []).push(c.column + " (" + c.runs_filled + ")"); });
    Object.keys(tables).forEach((t) => line(t + ": " + tables[t].join(", ")));
    data.refusals.forEach((r) => line(r.message, "error"));
    return data;
  }
  async function download(path, name) {
    const data = await showPreview();
    if (!data) return;
    const res = await post(path, body());
    if (!res.ok) { line(JSON.stringify((await res.json()).detail), "error"); return; }
    const blob = await res.blob();
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    const frames = body().frames;
    a.download = path === "csv" && frames.length === 1 ? frames[0] + ".csv" : name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    line("downloaded " + a.download, "done");
  }
  document.getElementById("do-preview").onclick = showPreview;
  document.getElementById("download-csv").onclick = () => download("csv", "tables.zip");
  document.getElementById("download-raw").onclick = () => download("raw", "runs.zip");
})();
