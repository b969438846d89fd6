// The run page: the round picker, the Stop button, and, while the run is live, each event of
// the run's stream appended as it lands. Every text goes in through textContent (never
// innerHTML), so what an agent wrote stays text. Plain JavaScript: the page is rendered on
// the server.
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
  const picker = document.getElementById("round-picker");

  // One round at a time: a pick shows its round (and the address says which, for a reload).
  function show(n) {
    document.querySelectorAll("article.round").forEach((a) => { a.hidden = a.dataset.round !== String(n); });
    picker.querySelectorAll(".pick").forEach((p) => p.classList.toggle("current", p.dataset.round === String(n)));
  }
  function bindPick(a) {
    a.onclick = (ev) => {
      ev.preventDefault();
      show(a.dataset.round);
      history.replaceState(null, "", "?round=" + a.dataset.round + "#rounds");
    };
  }
  picker.querySelectorAll(".pick").forEach(bindPick);
  if (run.dataset.live !== "true") return;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const channels = JSON.parse(run.dataset.channels || "[]");
  const models = {}; // seats registered (or swapped) since the page was rendered
  function modelOf(seat) {
    if (models[seat]) return models[seat];
    const tr = document.querySelector('tr[data-seat="' + CSS.escape(seat) + '"]');
    return tr ? tr.dataset.model : "";
  }
  // The round's article, made (with its pick) when the stream reaches a round the page lacked.
  function round(n) {
    let art = document.querySelector('article.round[data-round="' + n + '"]');
    if (art) return art;
    const following = document.querySelectorAll("article.round").length === 0 ||
      picker.querySelector(".pick.current:last-child") !== null;
    art = el("article", "round playing");
    art.dataset.round = String(n);
    const h = el("h3", "", "Round " + n + (run.dataset.roundCount ? " of " + run.dataset.roundCount : "") + " ");
    h.appendChild(el("span", "badge outcome-playing", "playing"));
    art.appendChild(h);
    art.appendChild(el("ul", "verdicts"));
    const trig = el("p", "trigger", "ended by: ");
    trig.appendChild(el("span", "ended-by", "—"));
    art.appendChild(trig);
    const grid = el("div", "columns");
    art.appendChild(grid);
    channels.forEach((c) => column(art, grid, c));
    const tools = el("details", "tools");
    tools.appendChild(el("summary", "", "tool calls"));
    const table = el("table", "tool-table");
    table.appendChild(el("tbody"));
    tools.appendChild(table);
    art.appendChild(tools);
    document.getElementById("rounds").appendChild(art);
    const pick = el("a", "pick playing", String(n));
    pick.dataset.round = String(n);
    pick.href = "?round=" + n + "#rounds";
    picker.appendChild(pick);
    bindPick(pick);
    if (following) show(n); else art.hidden = true;  // follow the live round unless browsing
    return art;
  }
  function column(art, grid, id) {
    let col = grid.querySelector('.column[data-channel="' + CSS.escape(id) + '"]');
    if (!col) {
      col = el("div", "column");
      col.dataset.channel = id;
      col.appendChild(el("h4", "", id));
      grid.appendChild(col);
      grid.style.gridTemplateColumns = "repeat(" + grid.children.length + ", minmax(12rem, 1fr))";
    }
    const empty = col.querySelector(".empty");
    if (empty) empty.remove();
    return col;
  }
  function messageGrid(art, phase) {
    if (phase !== "postmortem") return art.querySelector(".columns:not(.postmortem)");
    let grid = art.querySelector(".columns.postmortem");
    if (!grid) {
      art.appendChild(el("h4", "postmortem-title", "postmortem"));
      grid = el("div", "columns postmortem");
      art.appendChild(grid);
    }
    return grid;
  }
  function note(n, cls, text, id) {
    const d = el("div", cls, text);
    d.dataset.eventId = id;
    const art = round(n);
    art.insertBefore(d, art.querySelector(".columns"));
  }
  const calls = {}; // tool_call_id -> its row (the result folds into it)
  const recorded = {}; // verdicts that arrived live, by round (the page held the earlier ones)
  const handlers = {
    agent_registered(e) { models[e.agent_id] = e.provider + ":" + e.model; },
    agent_swapped_mid_run(e) { models[e.agent_id] = e.provider + ":" + e.model; },
    message_sent(e) {
      const art = round(e.round_number);
      const m = el("div", "msg phase-" + e.phase);
      m.dataset.eventId = e.event_id;
      const meta = el("div", "meta");
      meta.appendChild(el("span", "sender", e.sender_id));
      meta.appendChild(document.createTextNode(" "));
      meta.appendChild(el("span", "model", modelOf(e.sender_id)));
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
      column(art, messageGrid(art, e.phase), e.channel_id).appendChild(m);
    },
    tool_call_invoked(e) {
      const art = round(e.round_number);
      const tr = el("tr", "tool");
      tr.dataset.eventId = e.event_id;
      tr.appendChild(el("td", "sender", e.agent_id));
      const name = el("td");
      name.appendChild(el("code", "", e.tool_name));
      tr.appendChild(name);
      const args = el("td", "args");
      args.appendChild(el("code", "", JSON.stringify(e.args)));
      tr.appendChild(args);
      tr.appendChild(el("td", "result"));
      art.querySelector(".tool-table tbody").appendChild(tr);
      calls[e.tool_call_id] = tr;
      const summary = art.querySelector("details.tools summary");
      summary.textContent = "tool calls (" + art.querySelectorAll(".tool-table tr").length + ")";
    },
    tool_result_received(e) {
      const tr = calls[e.tool_call_id];
      if (!tr) return;
      const cell = tr.querySelector(".result");
      cell.textContent = "";
      const d = el("details");
      d.appendChild(el("summary", "", e.refused ? "refused" : "result"));
      d.appendChild(el("code", "", e.refused || JSON.stringify(e.result)));
      cell.appendChild(d);
      if (e.refused) tr.classList.add("refused");
    },
    judge_called(e) { note(e.round_number, "judge " + (e.success ? "won" : "lost"), "judge: " + (e.success ? "yes" : "no") + " — " + e.reason, e.event_id); },
    agent_run_cycle_failed(e) { note(e.round_number, "failure", e.agent_id + " failed (" + e.error_kind + "): " + e.error, e.event_id); },
    round_started(e) { if (e.phase === "main") round(e.round_number); },
    round_ended(e) { round(e.round_number).querySelector(".ended-by").textContent = e.trigger; },
    round_result_recorded(e) {
      const dd = document.getElementById("rounds-played");
      const seen = recorded[e.round_number] || (recorded[e.round_number] = { won: true, void: false });
      seen.won = seen.won && e.success && !e.void;
      seen.void = seen.void || e.void;
      const played = Number(dd.dataset.played) + Object.keys(recorded).length;
      const won = Number(dd.dataset.won) + Object.values(recorded).filter((r) => r.won).length;
      dd.textContent = played + " played, " + won + " won" + (dd.dataset.of ? " of " + dd.dataset.of : "");
      const art = round(e.round_number);
      const outcome = seen.void ? "void" : (seen.won ? "won" : "lost");
      art.className = "round " + outcome;
      const badge = art.querySelector("h3 .badge");
      badge.className = "badge outcome-" + outcome;
      badge.textContent = outcome;
      const pick = picker.querySelector('.pick[data-round="' + e.round_number + '"]');
      pick.className = "pick " + outcome + (pick.classList.contains("current") ? " current" : "");
      const li = el("li", "verdict " + (e.void ? "void" : (e.success ? "won" : "lost")));
      li.dataset.team = e.team_id;
      li.appendChild(el("strong", "", "team " + e.team_id));
      li.appendChild(document.createTextNode(": "));
      li.appendChild(el("span", "outcome", e.void ? "void" : (e.success ? "won" : "lost")));
      li.appendChild(document.createTextNode(" — "));
      li.appendChild(el("span", "reason", e.reason));
      // One line per team. The summary's re-read may have drawn this verdict already (it can
      // land before the stream's event does): its line stands, for it says what the server's
      // rule says (a ranked round's success that did not win is "eligible", where this event
      // alone would say "won"), and the re-read this event asks for draws the round again.
      const list = art.querySelector("ul.verdicts");
      if (!list.querySelector('li[data-team="' + CSS.escape(String(e.team_id)) + '"]')) list.appendChild(li);
    },
    simulation_ended(e) { ended(e.status, e.status !== "completed"); },
  };
  // The run is over (its log closed it, or its writer is gone: the view's status says which):
  // the badge says so, the duration stops counting, the stream is closed for good.
  function ended(status, resumable) {
    const s = document.getElementById("status");
    s.textContent = status;
    s.className = "badge status-" + status;
    if (stop) stop.remove();
    const duration = document.getElementById("duration");
    duration.removeAttribute("data-live-seconds");
    if (resumable && !document.getElementById("resumable")) {
      const hint = el("span", "hint", "resumable");
      hint.id = "resumable";
      s.after(document.createTextNode(" "), hint);
    }
    source.close();
    refreshSummary();
  }
  // The header's cost, duration and the seat table: re-read from the run's summary (its
  // RunView) when an event that spends or fails lands; one request at a time, the last event
  // always answered.
  let fetching = false, again = false;
  async function refreshSummary() {
    if (fetching) { again = true; return null; }
    fetching = true;
    let data = null;
    try {
      const res = await fetch(base + "/summary", { credentials: "same-origin" });
      if (res.ok) {
        data = await res.json();
        document.getElementById("cost").textContent = data.cost;
        document.getElementById("tokens").textContent = data.tokens;
        const duration = document.getElementById("duration");
        if (duration.hasAttribute("data-live-seconds")) {
          duration.dataset.liveSeconds = String(data.duration_seconds);
          duration.dataset.since = String(Date.now());
        } else {  // the run is over: the seconds it played, no longer counting
          duration.textContent = window.glossogenDuration(data.duration_seconds);
        }
        // Each recorded round's verdicts as the server reads them (glossogen.launch's
        // team_outcomes, the rule of the finished page and MCP): a ranked round's winner.
        Object.entries(data.outcomes || {}).forEach(([n, teams]) => {
          const art = document.querySelector('article.round[data-round="' + n + '"]');
          const list = art && art.querySelector("ul.verdicts");
          if (!list) return;
          const won = teams.length > 1 ? teams.filter((t) => t.outcome === "won") : [];
          const h3 = art.querySelector("h3");
          h3.querySelectorAll(".winner").forEach((w) => { w.previousSibling.remove(); w.remove(); });
          if (won.length) {  // a ranked round's winner(s), as the finished page's header says
            h3.append(" ", el("span", "winner", "team " + won.map((t) => t.team_id).join(", ") + " won the round"));
          }
          list.replaceChildren(...teams.map((t) => {
            const li = el("li", "verdict " + t.outcome);
            li.dataset.team = t.team_id;
            if (teams.length > 1) {
              li.appendChild(el("strong", "", "team " + t.team_id));
              li.appendChild(document.createTextNode(": "));
            }
            li.appendChild(el("span", "outcome", t.outcome));
            li.appendChild(document.createTextNode(" — "));
            li.appendChild(el("span", "reason", t.reason));
            return li;
          }));
        });
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
    return data;
  }
  ["llm_response_received", "judge_called", "model_request_abandoned", "agent_run_cycle_failed",
   "round_result_recorded"].forEach((type) => {
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
  // The stream closes when the run has no writer left. Before reconnecting, ask the run's
  // status (the server's RunView: running only while a writer holds it): a writer that was
  // killed leaves the run stopped, which the page then says, and it stops reconnecting.
  source.onerror = async () => {
    const res = await fetch(base + "/summary", { credentials: "same-origin" });
    if (!res.ok) return;
    const data = await res.json();
    if (data.status !== "running" && source.readyState !== EventSource.CLOSED) {
      ended(data.status, data.resumable);
    }
  };
})();
