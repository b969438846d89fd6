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

  // Live rows: refresh the body every 2 s while any shown row is live, and not otherwise (their
  // durations count on in clock.js).
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
  if (rows.dataset.anyLive === "true") setTimeout(refresh, 2000);

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
  // A refusal as one line: the REST answer's message (and the field it names), never JSON.
  function refusal(detail) {
    if (typeof detail === "string") return detail;
    if (detail && detail.message) return (detail.field ? detail.field + ": " : "") + detail.message;
    return "the server refused the request";
  }
  async function showPreview() {
    preview.textContent = "";
    const res = await post("preview", body());
    const data = await res.json();
    if (!res.ok) { line(refusal(data.detail), "error"); return null; }
    if (data.missing_run_ids.length) {
      dropped = dropped.concat(data.missing_run_ids);
      line("dropped, no longer resolve: " + data.missing_run_ids.join(", "), "error");
    }
    line(data.run_count + " runs · scenarios " + data.scenarios.join(", "));
    line("limits: " + data.limits.max_runs + " runs, raw zip " + data.limits.raw_zip_bytes +
         " bytes, CSV " + data.limits.csv_bytes + " bytes; raw zip estimate " + data.raw_zip_estimated_bytes + " bytes");
    // One row per table: its columns, each with how many runs fill it (folded: a long list).
    const tables = {};
    data.columns.forEach((c) => { (tables[c.table] = tables[c.table] || []).push(c); });
    const grid = document.createElement("table");
    grid.className = "preview-tables";
    const head = grid.createTHead().insertRow();
    ["table", "columns", "filled by every run", "columns (runs filling each)"].forEach((t) => {
      const th = document.createElement("th");
      th.textContent = t;
      head.appendChild(th);
    });
    const tbody = grid.createTBody();
    Object.keys(tables).forEach((t) => {
      const cols = tables[t];
      const tr = tbody.insertRow();
      tr.dataset.table = t;
      [t, String(cols.length), String(cols.filter((c) => c.runs_filled === data.run_count).length)]
        .forEach((v) => { tr.insertCell().textContent = v; });
      const fold = document.createElement("details");
      const summary = document.createElement("summary");
      summary.textContent = "show";
      fold.appendChild(summary);
      const list = document.createElement("ul");
      cols.forEach((c) => {
        const li = document.createElement("li");
        li.textContent = c.column + " (" + c.runs_filled + ")";
        list.appendChild(li);
      });
      fold.appendChild(list);
      tr.insertCell().appendChild(fold);
    });
    preview.appendChild(grid);
    data.refusals.forEach((r) => line(r.message, "error"));
    return data;
  }
  async function download(path, name) {
    const data = await showPreview();
    if (!data) return;
    const res = await post(path, body());
    if (!res.ok) { line(refusal((await res.json()).detail), "error"); return; }
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
