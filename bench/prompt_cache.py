"""What prompt caching saves on a paid run, over real HTTP (issue 29's proof).

Plays veyru (5 rounds) and prisoners_dilemma (10 rounds) on claude-sonnet-4-5 (veyru's judge:
claude-haiku-4-5) against the Anthropic-wire stub server, and prisoners_dilemma on gpt-5-mini
against the OpenAI-wire one, each with caching on (the default) and off (``cache=false``) in
the same bench run. The stub answers as each provider's documented caching would bill
(``tests/fixtures/cache_emulation.py``: Anthropic's breakpoints, minimum cacheable length,
20-block lookback and lifetimes; OpenAI's automatic prefix caching from 1024 tokens in 128-token
steps, keyed by ``prompt_cache_key``); replies play every round to a win. Every run's dollars
are priced with genai-prices from what the stub served (the provider's bill), and checked
against the run's own log. Printed per run: dollars with caching off (its tokens priced with no
cache read or write: OpenAI caches by itself even without a key, so its off run is priced at
list rates) and on, their ratio
(target on Anthropic: at most 0.25), the share of input tokens served from cache, each seat's
prefix stability (the share of its requests whose prompt extends its previous one's; target
1.0: no documented reset happens in these runs) and the launch estimate (``glossogen.launch.
estimate_run``) of the same run, with its ratio to the bill.
Usage: ``VIRTUAL_ENV= uv run --no-sync python bench/prompt_cache.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures.cache_emulation import CachingResponder, prefix_stability  # noqa: E402
from tests.fixtures.model_stubs import StubModelServer  # noqa: E402
from tests.fixtures.winning_players import PLAYERS, seat_of  # noqa: E402

RUNS = [  # scenario, rounds, provider, model, genai-prices provider id
    ("veyru", 5, "anthropic", "claude-sonnet-4-5"),
    ("prisoners_dilemma", 10, "anthropic", "claude-sonnet-4-5"),
    ("prisoners_dilemma", 10, "openai", "gpt-5-mini"),
]
TARGET_RATIO = 0.25
"""On Anthropic a cached run costs at most this share of an uncached one."""


@dataclass
class Played:
    """One run's bill (USD, as the stub served it, priced), its log's total and token counts."""

    usd: float
    list_usd: float  # the same tokens with no cache read or write (every input at its rate)
    logged_usd: float
    input_tokens: int
    cache_read_tokens: int
    requests: int
    stability: dict[str, float]
    estimate_usd: float | None


async def play(scenario: str, rounds: int, provider: str, model: str, cache: bool,
               stub: StubModelServer, runs_dir: str) -> Played:  # fmt: skip
    """Play one run through the library (no Prefect) against ``stub``; price what it served."""
    from glossogen.launch import (
        RunRequest,
        claim_run,
        estimate_cost,
        open_session,
        plan_run,
        price_spend,
    )
    from glossogen.pricing import price_call, price_usage

    overrides = [f"round_count={rounds}", "idle_floor_seconds=0.01"]
    if not cache:
        overrides += ["agent_model_settings.cache=false", "judge_model_settings.cache=false"]
    if scenario == "veyru":
        overrides += ["judge_provider=anthropic", "judge_model=claude-haiku-4-5"]
    stub.reset()
    stub.responder = CachingResponder(PLAYERS[scenario])
    plan = plan_run(RunRequest(scenario=scenario, model=model, provider=provider,
                               runs_dir=runs_dir, config="knobs_default", overrides=overrides))  # fmt: skip
    claimed = claim_run(plan, runs_dir)
    session = open_session(plan, claimed)
    for n in range(1, rounds + 1):
        await session.play_round(n)
    spend = price_spend(claimed)
    session.finish(spend, "completed")
    usd = list_usd = 0.0
    for s in stub.served:
        judge = "final_result" in s.request.tool_names
        m = "claude-haiku-4-5" if judge and scenario == "veyru" else model
        r = s.reply
        usd += price_usage(provider, m, r) or 0.0
        list_usd += price_call(provider, m, input_tokens=r.input_tokens,
                               output_tokens=r.output_tokens) or 0.0  # fmt: skip
    stability = {k: v.share for k, v in prefix_stability(stub.requests, seat_of).items()}
    return Played(
        usd=usd,
        list_usd=list_usd,
        logged_usd=float(spend.total_cost_usd or 0.0),
        input_tokens=sum(s.reply.input_tokens for s in stub.served),
        cache_read_tokens=sum(s.reply.cache_read_tokens for s in stub.served),
        requests=len(stub.served),
        stability=stability,
        estimate_usd=estimate_cost(plan).total_usd,
    )


def main() -> None:
    """Play every run both ways and print the table."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help
    os.environ["GLOSSOGEN_TEST_VIRTUAL_CLOCK"] = "1"  # game seconds, not real ones
    rows: list[dict[str, Any]] = []
    with StubModelServer() as stub:
        os.environ["ANTHROPIC_BASE_URL"] = stub.anthropic_base_url
        os.environ["OPENAI_BASE_URL"] = stub.base_url
        os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench")
        os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
        runs_dir = tempfile.mkdtemp(prefix="glossogen-bench-cache-")
        for scenario, rounds, provider, model in RUNS:
            off = asyncio.run(play(scenario, rounds, provider, model, False, stub, runs_dir))
            on = asyncio.run(play(scenario, rounds, provider, model, True, stub, runs_dir))
            rows.append(dict(scenario=scenario, rounds=rounds, model=model, off=off, on=on))
    print("| run | requests | uncached $ (no cache read or write) | cached $ | ratio | input from cache | "
          "prefix stability (min over seats) | estimate $ (cached) | estimate / bill |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        off, on = row["off"], row["on"]
        ratio = on.usd / off.list_usd
        share = on.cache_read_tokens / on.input_tokens
        stable = min([*on.stability.values(), *off.stability.values()])
        est = on.estimate_usd
        est_text = "-" if est is None else f"{est:.3f}"
        est_ratio = "-" if est is None else f"{est / on.usd:.2f}"
        target = f" (target <= {TARGET_RATIO})" if "claude" in row["model"] else ""
        print(
            f"| {row['scenario']} {row['rounds']} rounds, {row['model']} | {on.requests} | "
            f"{off.list_usd:.3f} | {on.usd:.3f} | {ratio:.2f}{target} | {share:.0%} | {stable:.2f} | "
            f"{est_text} | {est_ratio} |"
        )
        for played, label in ((off, "off"), (on, "on")):
            if abs(played.logged_usd - played.usd) > 1e-6 * max(1.0, played.usd):
                print(f"  ! {label}: the log says ${played.logged_usd:.6f}, the stub billed "
                      f"${played.usd:.6f}")  # fmt: skip
        seats = ", ".join(f"{k} {v:.2f}" for k, v in sorted(on.stability.items()))
        print(f"  prefix stability per seat (cached run): {seats}")


if __name__ == "__main__":
    main()
