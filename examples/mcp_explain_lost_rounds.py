"""Launch, wait, explain the lost rounds: an assistant's study, played through the MCP SDK client.

Starts ``glossogen mcp`` over stdio, launches scripted veyru runs with a 100-character round
budget (offline: scripted seats on the virtual clock), polls each until it ends, then reads
every lost round's verdict and the messages the seats sent in it, as an assistant would before
it answers "which rounds did they lose and why".

    PREFECT_API_URL=http://127.0.0.1:4200/api python examples/mcp_explain_lost_rounds.py ./runs
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

RUNS = 3
"""Runs launched."""

OVERRIDES = ["round_count=3", "round_budget_chars=100"]
"""The study's knobs on top of the knobs_default preset."""


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool; exit with its one-line message if it refuses."""
    result = await session.call_tool(tool, arguments)
    if result.is_error or result.structured_content is None:
        sys.exit(result.content[0].text)  # type: ignore[union-attr]
    return result.structured_content


async def study(runs_dir: str) -> None:
    """Launch the runs, wait for them, and explain each lost round."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "glossogen", "mcp", "--runs-dir", runs_dir],
        env=dict(os.environ),
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        print(f"server offers {len(tools)} tools")
        estimate = await call(
            session,
            "estimate_run",
            scenario="veyru",
            model="scripted",
            provider="scripted",
            overrides=OVERRIDES,
        )
        print(
            f"estimate: {estimate['rounds']} rounds, ${estimate['total_cost_usd']:.4f} total, "
            f"seats {', '.join(s['agent_id'] for s in estimate['seats'])}"
        )
        launched = [
            await call(
                session,
                "start_run",
                scenario="veyru",
                model="scripted",
                provider="scripted",
                overrides=OVERRIDES,
            )
            for _ in range(RUNS)
        ]
        for run in launched:
            print(f"launched {run['run_id']} ({run['launched_via'].split(':')[0]})")
        for run in launched:
            while (detail := await call(session, "get_run", run_id=run["run_id"]))["status"] in (
                "queued",
                "running",
                "stopped",
            ):
                await asyncio.sleep(1)
            print(
                f"\n{detail['run_id']}: {detail['status']}, "
                f"{detail['rounds_won']}/{detail['rounds_played']} rounds won"
            )
            for outcome in detail["rounds"]:
                if outcome["won"]:
                    continue
                reasons = "; ".join(v["reason"] for v in outcome["verdicts"])
                print(f"  lost round {outcome['round_number']}: {reasons}")
                page = await call(
                    session,
                    "read_run_events",
                    run_id=detail["run_id"],
                    event_types=["message_sent", "budget_warning"],
                    round_number=outcome["round_number"],
                    phase="main",
                    page_size=20,
                    max_text_chars=60,
                )
                for event in page["events"]:
                    f = event["fields"]
                    if event["event_type"] == "budget_warning":
                        print(f"    budget warning: {f['used_chars']}/{f['budget_chars']} chars")
                    else:
                        print(
                            f"    {f['sender_id']} ({f['chars']} chars, budget used "
                            f"{f['budget_used_chars']}/{f['budget_chars']}): {f['text']!r}"
                        )


if __name__ == "__main__":
    asyncio.run(study(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "runs")))
