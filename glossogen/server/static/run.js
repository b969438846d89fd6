// The run page while the run is live: append each event of the run's stream as it lands,
// and the Stop button. Every text goes in through textContent (never innerHTML), so what an
// agent wrote stays text. Plain JavaScript: the page is rendered on the server.
(function () {
  "use strict";
  const run = document.getElementById("run");
  if (!run) return;
  const base = "/api/g/" + encodeURIComponent(run.dataset.group) + "/runs/" +
    encodeURIComponent(run.dataset.scenario) + "/" + run.dataset.ts;
  const stop = document.getElementById("stop");
  if (stop) {
    stop.onclick = async () => {
      stop.disabled = true;
      const res = await fetch(base + "/stop", { method: "POST", credentials: "same-origin" });
      const data = await res.json();
      document.getElementById("stop-result").textContent = res.ok ? data.message : data.detail.message;
    };
  }
  // Channels side by side, or one at a time (with the tool calls beside it).
  const view = document.getElementById("channel-view");
  if (view) {
    view.onchange = () => {
      document.querySelectorAll(".column").forEach((c) => {
        const shown = !view.value || c.dataset.channel === view.value || c.dataset.channel === "activity";
        c.hidden = !shown;
      });
    };
  }
  if (run.dataset.live !== "true") return;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function column(id) {
    let col = document.querySelector('.column[data-channel="' + CSS.escape(id) + '"]');
    if (!col) {
      col = el("div", "column");
      col.dataset.channel = id;
      col.appendChild(el("h3", "", id));
      const grid = document.querySelector(".columns");
      grid.insertBefore(col, grid.lastElementChild);
      grid.style.gridTemplateColumns = "repeat(" + grid.children.length + ", minmax(16rem, 1fr))";
    }
    return col;
  }
  function everywhere(label, id) {
    document.querySelectorAll(".column").forEach((c) => {
      const d = el("div", "divider", label);
      d.dataset.eventId = id;
      c.appendChild(d);
    });
  }
  function activity(cls, text, id) {
    const d = el("div", cls, text);
    d.dataset.eventId = id;
    column("activity").appendChild(d);
  }
  const rounds = {}; // verdicts that arrived live, by round (the page held the earlier ones)
  const handlers = {
    message_sent(e) {
      const m = el("div", "msg phase-" + e.phase);
      m.dataset.eventId = e.event_id;
      const meta = el("div", "meta");
      meta.appendChild(el("span", "sender", e.sender_id));
      meta.appendChild(document.createTextNode(" "));
      meta.appendChild(el("span", "where", "round " + e.round_number + " · " + e.phase + " · " + e.chars + " chars"));
      m.appendChild(meta);
      m.appendChild(el("div", "text", e.text));
      if (e.delivered_text !== e.text) {
        const d = el("div", "delivered");
        d.appendChild(el("span", "hint", "delivered: "));
        d.appendChild(document.createTextNode(e.delivered_text));
        m.appendChild(d);
      }
      column(e.channel_id).appendChild(m);
    },
    tool_call_invoked(e) { activity("tool call", e.agent_id + " → " + e.tool_name + " " + JSON.stringify(e.args), e.event_id); },
    tool_result_received(e) { activity("tool result", e.tool_name + " ⇒ " + (e.refused || JSON.stringify(e.result)), e.event_id); },
    judge_called(e) { activity("judge " + (e.success ? "won" : "lost"), "judge: " + (e.success ? "yes" : "no") + " — " + e.reason, e.event_id); },
    agent_run_cycle_failed(e) { activity("failure", e.agent_id + " failed (" + e.error_kind + "): " + e.error, e.event_id); },
    round_started(e) { if (e.phase === "main") everywhere("round " + e.round_number, e.event_id); },
    postmortem_started(e) { everywhere("round " + e.round_number + " postmortem", e.event_id); },
    round_result_recorded(e) {
      const dd = document.getElementById("rounds-played");
      const seen = rounds[e.round_number] || (rounds[e.round_number] = { won: true });
      seen.won = seen.won && e.success && !e.void;
      const played = Number(dd.dataset.played) + Object.keys(rounds).length;
      const won = Number(dd.dataset.won) + Object.values(rounds).filter((r) => r.won).length;
      dd.textContent = played + " played, " + won + " won" + (dd.dataset.of ? " of " + dd.dataset.of : "");
      const tr = el("tr", e.void ? "void" : (e.success ? "won" : "lost"));
      [String(e.round_number), e.void ? "void" : e.team_id + ": " + (e.success ? "won" : "lost"), e.reason, "", ""]
        .forEach((t) => tr.appendChild(el("td", "", t)));
      document.querySelector("#round-table tbody").appendChild(tr);
    },
    simulation_ended(e) {
      const s = document.getElementById("status");
      s.textContent = e.status;
      s.className = "badge status-" + e.status;
      if (stop) stop.remove();
      source.close();
    },
  };
  // The header's cost and the seat table: re-read from the run's summary (its RunView) when an
  // event that spends or fails lands; one request at a time, the last event always answered.
  let fetching = false, again = false;
  async function refreshSummary() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const res = await fetch(base + "/summary", { credentials: "same-origin" });
      if (res.ok) {
        const data = await res.json();
        document.getElementById("cost").textContent = data.cost;
        document.getElementById("tokens").textContent = data.tokens;
        data.seats.forEach((s) => {
          const tr = document.querySelector('tr[data-seat="' + CSS.escape(s.agent_id) + '"]');
          if (!tr) return;
          tr.querySelector(".requests").textContent = String(s.requests);
          tr.querySelector(".tokens").textContent = s.tokens;
          tr.querySelector(".spend").textContent = s.spend;
          tr.querySelector(".failures").textContent = String(s.failures);
        });
      }
    } finally {
      fetching = false;
      if (again) { again = false; refreshSummary(); }
    }
  }
  ["llm_response_received", "judge_called", "model_request_abandoned", "agent_run_cycle_failed",
   "simulation_ended"].forEach((type) => {
    const shown = handlers[type];
    handlers[type] = (e) => { if (shown) shown(e); refreshSummary(); };
  });
  const after = run.dataset.lastEventId;
  const source = new EventSource(base + "/events" + (after ? "?last_event_id=" + encodeURIComponent(after) : ""));
  Object.keys(handlers).forEach((type) => {
    source.addEventListener(type, (msg) => {
      const e = JSON.parse(msg.data);
      if (document.querySelector('[data-event-id="' + CSS.escape(e.event_id) + '"]')) return;
      handlers[type](e);
    });
  });
})();
