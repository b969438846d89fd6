"""``report.html``: the report's headline table and three charts, readable at a glance.

Charts (matplotlib, Agg backend, PNGs embedded as base64 so the page is one file): characters
per round on the primary channels, success per round, and budget use per round (only for a
scenario with a budget). Every number is read from the report's ``per_round`` entries, so the
page shows exactly what the report says; a chart whose metric is not in the report is omitted.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from glossogen.evaluation._report import Report, write_text

REPORT_HTML = "report.html"

CHARTS: tuple[tuple[str, str, str], ...] = (
    ("mean_chars_per_round", "Characters per round (primary channels)", "characters"),
    ("round_success", "Success per round", "won (1) / lost (0)"),
    ("budget_utilisation", "Budget use per round", "share of the round budget"),
)
"""(metric, chart title, y-axis label) of each chart, in page order."""


def _chart(report: Report, name: str, title: str, ylabel: str) -> str | None:
    """Return a base64 PNG bar chart of ``name``'s per-round values, or None when absent."""
    entry = report.metrics.get(name)
    if entry is None or entry.status != "ok" or not entry.per_round:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rounds: dict[int, list[float]] = {}
    for obs in entry.per_round:
        rounds.setdefault(obs.round_number, []).append(obs.value)
    xs = sorted(rounds)
    ys = [sum(rounds[r]) / len(rounds[r]) for r in xs]
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=100)
    try:
        colors = (
            ["#3a7d44" if y >= 1.0 else "#b5473a" for y in ys]
            if name == "round_success"
            else "#4a6fa5"
        )
        ax.bar(xs, ys, color=colors)
        if name == "budget_utilisation":
            ax.axhline(1.0, color="#b5473a", linestyle="--", linewidth=1, label="budget")
            ax.legend(loc="upper right")
        if name == "round_success":
            ax.set_ylim(0, 1.15)
            for x, y in zip(xs, ys, strict=True):  # a lost round has no bar: say so
                label = "won" if y >= 1.0 else "lost" if y <= 0.0 else f"{y:.0%} of teams"
                ax.text(x, y + 0.02, label, ha="center", va="bottom", fontsize=9)
        ax.set_title(title)
        ax.set_xlabel("round")
        ax.set_ylabel(ylabel)
        ax.set_xticks(xs)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def report_charts(report: Report) -> list[tuple[str, str]]:
    """The report's charts that apply, as (title, base64 PNG), in :data:`CHARTS` order.

    The run browser's run page shows these same images.
    """
    charts = []
    for name, title, ylabel in CHARTS:
        png = _chart(report, name, title, ylabel)
        if png is not None:
            charts.append((title, png))
    return charts


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


def render_html(report: Report) -> str:
    """Return the page: run id, headline table of every metric, the charts that apply."""
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{_cell(v)}</td>" for v in (name, e.score, e.unit, e.rounds, e.status, e.summary)
        )
        + "</tr>"
        for name, e in report.metrics.items()
    )
    charts = [
        f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{png}"></figure>'
        for title, png in report_charts(report)
    ]
    cost = report.evaluation_cost
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(report.run_id)} evaluation</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style></head><body>"
        f"<h1>{html.escape(report.run_id)}</h1>"
        f"<p>Log sha256 {html.escape(report.log_sha256[:12])}, "
        f"updated {html.escape(report.updated_at)}, "
        f"evaluation cost {_cell(cost.total_usd) or 'not costed'} USD.</p>"
        "<table><tr><th>metric</th><th>score</th><th>unit</th><th>rounds</th><th>status</th>"
        f"<th>summary</th></tr>{rows}</table>" + "".join(charts) + "</body></html>\n"
    )


def write_html(run_dir: str, report: Report) -> str:
    """Write ``report.html`` into ``run_dir`` atomically; return its URL."""
    return write_text(run_dir, REPORT_HTML, render_html(report))
