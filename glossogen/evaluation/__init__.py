"""Evaluation: metrics over a run's event log, LLM judges, and the run's report."""

from glossogen.evaluation._measures import (
    GZIP_LEVEL,
    character_entropy_bits,
    gzip_compression_ratio,
)

__all__ = ["GZIP_LEVEL", "character_entropy_bits", "gzip_compression_ratio"]
