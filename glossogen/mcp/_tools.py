"""The MCP tools: each one a library call the CLI makes too, its refusal the CLI's one line.

The tools are grouped by concern, one module each: scenarios (``_scenarios``), reading runs
(``_reading``), launching, deriving, resuming and stopping (``_launching``), evaluation and
export (``_scoring``); what they share (the runs directory, the refusal rule, paging, run
folders) is ``_base``. Runs are read through ``RunStore``/``RunFolder``/``RunView`` (never a new
parse of the log), listed through the export's selection, scored by the ``evaluate`` flow,
derived by ``prepare_fork``, planned by ``plan_run``/``plan_resume``. A refusal raises
``ToolError`` with the message ``glossogen`` would print after ``glossogen: error:``; nothing is
claimed or written before every check has passed. No result carries a credential's value, only
its variable name.
"""

from __future__ import annotations

from glossogen.mcp._base import MAX_PAGE_SIZE, PAGE_SIZE, TEXT_CHARS
from glossogen.mcp._launching import Launching
from glossogen.mcp._reading import RunReading
from glossogen.mcp._scenarios import ScenarioTools
from glossogen.mcp._scoring import Scoring


class Tools(ScenarioTools, RunReading, Launching, Scoring):
    """The tools over one runs directory (local folder or ``s3://`` URL)."""


__all__ = ["MAX_PAGE_SIZE", "PAGE_SIZE", "TEXT_CHARS", "Tools"]
