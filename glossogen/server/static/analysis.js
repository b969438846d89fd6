// The analysis page: its form becomes the engine's Query (POST .../analysis/query), the Result
// becomes the table, and the chart and CSV come from POST .../analysis/render (the --plot
// drawing and the --csv rows). Nothing is computed here: it only translates. Plain JavaScript,
// nothing fetched from another origin.
(function () {
  "use strict";
  const root = document.getElementById("analysis");
  if (!root) return;
  const api = "/api/g/" + encodeURIComponent(root.dataset.group) + "/runs/analysis/";
  const $ = (id) => document.getElementById(id);
  let base = { selection: JSON.parse(root.dataset.selection) };
  let urls = [];

  // An answer that is not JSON (a server fault's plain 500) or no answer at all is one line
  // too, so a refused request never leaves the page blank.
  async function call(method, path, body) {
    let res;
    try {
      res = await fetch(api + path, {
        method: method, credentials: "same-origin",
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      return { ok: false, status: 0, data: { detail: "the server could not be reached" } };
    }
    try {
      return { ok: res.ok, status: res.status, data: await res.json() };
    } catch (e) {
      const said = "the server answered " + res.status + (res.statusText ? " " + res.statusText : "");
      return { ok: false, status: res.status, data: { detail: said } };
    }
  }
  // A refusal as one line: the REST answer's field and message, never JSON; a message that
  // names its field already ("seed -1: must be at least 0") is not prefixed with it again.
  function refusal(detail) {
    if (typeof detail === "string") return detail;
    if (detail && detail.message) {
      const f = detail.field, m = detail.message;
      const named = f && m.startsWith(f + " ") && /^\S+: /.test(m.slice(f.length + 1));
      return (f && !named ? f + ": " : "") + m;
    }
    return "the server refused the request";
  }
  function fail(text) {
    $("analysis-error").textContent = text;
    $("analysis-error").hidden = !text;
  }
  function shown(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (typeof v === "number") return String(Number(v.toPrecision(4)));
    return String(v);
  }

  async function loadFields() {
    const q = root.dataset.fieldsQuery;
    const params = "grain=" + encodeURIComponent($("grain").value) + (q ? "&" + q : "");
    const metric = $("metric").value.trim();
    const got = await call("GET", "fields?" + params + (metric ? "&metric=" + encodeURIComponent(metric) : ""));
    const list = $("field-names");
    list.textContent = "";
    if (!got.ok) return;
    got.data.fields.forEach((f) => {
      const o = document.createElement("option");
      o.value = f.name;
      o.label = f.name + " (" + f.rows + " rows, " + f.distinct + " values)";
      list.appendChild(o);
    });
  }

  function addMeasure(field, agg) {
    const row = $("measure-row").content.firstElementChild.cloneNode(true);
    row.querySelector(".drop-measure").onclick = () => row.remove();
    $("measures").appendChild(row);
    row.querySelector(".measure-field").value = field || "";
    if (agg) row.querySelector(".measure-agg").value = agg;
    return row;
  }

  function addFilter(field, op, value) {
    const row = $("filter-row").content.firstElementChild.cloneNode(true);
    row.querySelector(".drop-filter").onclick = () => row.remove();
    $("filters").appendChild(row);
    row.querySelector(".filter-field").value = field || "";
    if (op) row.querySelector(".filter-op").value = op;
    row.querySelector(".filter-value").value = value === undefined ? "" : value;
    return row;
  }

  // A number input as the query's integer; a blank or unreadable one is sent as written, so the
  // server's refusal names it (the page checks nothing itself).
  function integer(id) {
    const text = $(id).value.trim();
    return /^-?\d+$/.test(text) ? Number(text) : text;
  }

  function formQuery() {
    const query = Object.assign({}, base);
    query.grain = $("grain").value;
    const metric = $("metric").value.trim();
    if (query.grain === "observation") query.metric = metric; else delete query.metric;
    query.by = [$("key1").value.trim(), $("key2").value.trim()].filter((k) => k);
    query.measures = Array.from(document.querySelectorAll("#measures .measure"))
      .map((m) => ({ field: m.querySelector(".measure-field").value.trim(),
                     agg: m.querySelector(".measure-agg").value }))
      .filter((m) => m.field);
    query.filters = Array.from(document.querySelectorAll("#filters .filter"))
      .map((f) => ({ field: f.querySelector(".filter-field").value.trim(),
                     op: f.querySelector(".filter-op").value,
                     value: f.querySelector(".filter-value").value }))
      .filter((f) => f.field);
    const key = $("compare-key").value.trim();
    if (key) query.compare = { key: key, a: $("compare-a").value.trim(), b: $("compare-b").value.trim() };
    else delete query.compare;
    query.seed = integer("seed");
    query.resamples = integer("resamples");
    return query;
  }

  function fillForm(query) {
    $("grain").value = query.grain || "run";
    $("metric").value = query.metric || "";
    const by = query.by || [];
    $("key1").value = by[0] || "";
    $("key2").value = by[1] || "";
    document.querySelectorAll("#measures .measure").forEach((m) => m.remove());
    (query.measures || []).forEach((m) => addMeasure(m.field, m.agg || "mean"));
    document.querySelectorAll("#filters .filter").forEach((f) => f.remove());
    (query.filters || []).forEach((f) => addFilter(f.field, f.op, f.value));
    const compare = query.compare || { key: "", a: "", b: "" };
    $("compare-key").value = compare.key;
    $("compare-a").value = compare.a;
    $("compare-b").value = compare.b;
    if (query.seed !== undefined) $("seed").value = String(query.seed);
    if (query.resamples !== undefined) $("resamples").value = String(query.resamples);
  }

  function table(el, columns, rows) {
    el.tHead.textContent = "";
    el.tBodies[0].textContent = "";
    const head = el.tHead.insertRow();
    columns.forEach((c) => {
      const th = document.createElement("th");
      th.textContent = c;
      head.appendChild(th);
    });
    rows.forEach((r) => {
      const tr = el.tBodies[0].insertRow();
      r.forEach((v) => {
        const td = tr.insertCell();
        td.textContent = shown(v);
        if (typeof v === "number") td.dataset.value = String(v);
        if (v === null) td.className = "blank";
      });
    });
  }

  function download(a, text, type) {
    const url = URL.createObjectURL(new Blob([text], { type: type }));
    urls.push(url);
    a.href = url;
    a.hidden = false;
    return url;
  }

  let asked = 0; // the latest submit: an earlier one's late answer shows nothing, no error
  async function answer() {
    fail("");
    const mine = ++asked;
    const query = formQuery();
    const got = await call("POST", "query", query);
    if (mine !== asked) return;
    if (!got.ok) { fail(refusal(got.data.detail)); $("answer").hidden = true; return; }
    fail("");
    const result = got.data;
    urls.forEach((u) => URL.revokeObjectURL(u));
    urls = [];
    const by = result.query.by;
    $("summary").textContent = result.query.grain + " grain: " + result.rows + " rows of " +
      // As the CLI's title: the rows' runs, and the runs selected when a filter or they differ.
      ((result.query.filters.length || result.runs_after_filters !== result.runs)
        ? result.runs_after_filters + " runs (" + result.runs + " selected)"
        : result.runs + " runs");
    const rows = [];
    result.groups.forEach((g) => g.cells.forEach((c) => {
      const i = c.interval;
      rows.push(by.map((k) => g.keys[k]).concat([c.measure, c.value, c.n, c.missing, c.runs,
        i ? i.low : null, i ? i.high : null, i ? i.method : null]));
    }));
    table($("cells"), by.concat(["measure", "value", "n", "missing", "runs", "low", "high", "interval"]), rows);
    // As the --csv comparisons: the other keys, then the comparison (how it paired, and n).
    const within = by.filter((k) => !result.query.compare || k !== result.query.compare.key);
    const comparisons = result.comparisons.map((c) => within.map((k) => c.within[k] === undefined ?
      null : c.within[k]).concat([c.measure, c.key, c.a, c.b, c.a_value, c.b_value, c.difference,
      c.interval.low, c.interval.high, c.interval.method, c.paired, c.pairing, c.n_a, c.n_b, c.pairs]));
    table($("comparisons"), within.concat(["measure", "key", "a", "b", "a_value", "b_value",
      "difference", "low", "high", "interval", "paired", "pairing", "n_a", "n_b", "pairs"]), comparisons);
    $("comparisons-part").hidden = !comparisons.length;
    $("notes").textContent = "";
    result.notes.forEach((n) => {
      const li = document.createElement("li");
      li.textContent = n;
      $("notes").appendChild(li);
    });
    $("answer").hidden = false;
    const chart = $("chart").value;
    const drawn = await call("POST", "render", { result: result, chart: chart });
    if (mine !== asked) return;
    if (!drawn.ok) { fail(refusal(drawn.data.detail)); return; }
    download($("download-csv"), drawn.data.csv, "text/csv");
    if (drawn.data.svg) {
      $("chart-image").src = download($("download-chart"), drawn.data.svg, "image/svg+xml");
      $("figure").hidden = false;
    } else {
      $("figure").hidden = true;
      $("download-chart").hidden = true;
    }
    root.dataset.answered = String(Number(root.dataset.answered || "0") + 1);
  }

  async function listDashboards() {
    const got = await call("GET", "dashboards");
    const select = $("dashboard-names");
    select.querySelectorAll("option:not([value=''])").forEach((o) => o.remove());
    if (!got.ok) return;
    got.data.names.forEach((n) => {
      const o = document.createElement("option");
      o.value = n;
      o.textContent = n;
      select.appendChild(o);
    });
  }

  async function openDashboard() {
    const name = $("dashboard-names").value;
    if (!name) return;
    const got = await call("GET", "dashboards/" + encodeURIComponent(name));
    if (!got.ok) { fail(refusal(got.data.detail)); return; }
    fail("");
    const board = got.data;
    const holder = $("dashboard-charts");
    holder.textContent = "";
    board.charts.forEach((c) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "dashboard-chart";
      b.textContent = c.title || c.name;
      b.dataset.chart = c.name;
      b.onclick = () => {
        base = Object.assign({}, board.queries[c.query]);
        fillForm(base);
        $("chart").value = c.chart;
        $("cohort").textContent = "from dashboard " + name + ", chart " + c.name;
        $("chart-name").value = c.name;
        $("dashboard-name").value = name;
        loadFields();
        answer();
      };
      holder.appendChild(b);
    });
  }

  async function saveDashboard() {
    const chartName = $("chart-name").value.trim();
    const name = $("dashboard-name").value.trim();
    $("dashboard-status").textContent = "";
    if (!chartName || !name) { fail("name the chart and the dashboard to save"); return; }
    const got = await call("GET", "dashboards/" + encodeURIComponent(name));
    const board = got.ok ? got.data : { title: name, queries: {}, charts: [] };
    board.queries[chartName] = formQuery();
    const chart = { name: chartName, query: chartName, chart: $("chart").value };
    const at = board.charts.findIndex((c) => c.name === chartName);
    if (at >= 0) board.charts[at] = Object.assign(board.charts[at], chart); else board.charts.push(chart);
    const saved = await call("PUT", "dashboards/" + encodeURIComponent(name), board);
    if (!saved.ok) { fail(refusal(saved.data.detail)); return; }
    fail("");
    $("dashboard-status").textContent = "saved " + saved.data.path;
    await listDashboards();
  }

  $("add-measure").onclick = () => addMeasure("", "mean");
  $("add-filter").onclick = () => addFilter("", "=", "");
  $("grain").onchange = loadFields;
  $("query-form").onsubmit = (e) => { e.preventDefault(); answer(); };
  $("open-dashboard").onclick = openDashboard;
  $("save-dashboard").onclick = saveDashboard;
  $("download-csv").hidden = true;
  $("download-chart").hidden = true;
  loadFields();
  listDashboards().then(() => { root.dataset.ready = "true"; });
})();
