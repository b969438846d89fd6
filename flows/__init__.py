"""Prefect flows: compositions of tasks (simulate, and the derived-run flows to come)."""
