"""Sample events shared by the event-log tests."""

from __future__ import annotations

from datetime import UTC, datetime

from glossogen.eventlog import (
    Event,
    MessageSent,
    RoundEnded,
    RoundStarted,
    SimulationEnded,
    SimulationStarted,
)

T0 = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def sample_events() -> list[Event]:
    """Five events of a one-round run, with fixed ids and timestamps."""
    return [
        SimulationStarted(
            event_id="e1",
            timestamp=T0,
            run_id="demo/1700000000",
            scenario_name="demo",
            scenario_config={"rounds": 1, "budget_chars": 200},
            model="scripted",
            provider="test",
        ),
        RoundStarted(event_id="e2", timestamp=T0, round_number=1),
        MessageSent(
            event_id="e3",
            timestamp=T0,
            round_number=1,
            message_id="m1",
            channel_id="main",
            sender_id="a1",
            text="héllo ✓ 你好",
            delivered_text="h?llo ✓ 你好",
            chars=10,
            charged_chars=10,
        ),
        RoundEnded(
            event_id="e4", timestamp=T0, round_number=1, trigger="settled", elapsed_seconds=1.5
        ),
        SimulationEnded(
            event_id="e5",
            timestamp=T0,
            round_number=1,
            status="completed",
            rounds_played=1,
            rounds_won=1,
            total_messages=1,
            total_chars=10,
            total_cost_usd=None,
            duration_seconds=2.25,
        ),
    ]
