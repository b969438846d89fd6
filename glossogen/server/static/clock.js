// Live durations: every element with data-live-seconds (the seconds a live run had played when
// the server rendered it) counts on from the moment it reached the page, once a second. An
// element the page swapped in later (the list's refresh) counts from its own arrival, so a
// duration never adds time the server already counted.
(function () {
  "use strict";
  function format(total) {
    const s = Math.max(0, Math.round(total));
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    const mm = (h ? String(m).padStart(2, "0") : String(m)) + "m" + String(sec).padStart(2, "0") + "s";
    return h ? h + "h" + mm : mm;
  }
  function tick() {
    const now = Date.now();
    document.querySelectorAll("[data-live-seconds]").forEach((el) => {
      if (!el.dataset.since) el.dataset.since = String(now);
      const seconds = parseFloat(el.dataset.liveSeconds) + (now - Number(el.dataset.since)) / 1000;
      el.textContent = format(seconds);
    });
  }
  tick();
  setInterval(tick, 1000);
  window.glossogenDuration = format; // the run page writes a run's final duration with it
})();
