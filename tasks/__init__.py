"""Prefect tasks: thin wrappers over library functions, one concern per module."""
