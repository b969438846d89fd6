"""The surface tests: one operation through the CLI, REST and MCP, a file per operation: the
same result, and the same refusal worded by each surface (the CLI names its flag, MCP its tool
argument, REST the request field).

Each surface is driven as a user drives it: ``glossogen`` in this process (its exit code and
its one line), the FastAPI app over HTTP (``TestClient``), the MCP tools through the SDK's
client connected to ``build_server`` in-process (``drive.py``). Each operation where more than one surface
offers it: stop, analyze and export (CLI, REST, MCP); run, resume, evaluate and fork / replace /
cross-run replace (CLI and MCP: REST has none of them). Sweep, verify and rejudge are the CLI's
alone.
"""
