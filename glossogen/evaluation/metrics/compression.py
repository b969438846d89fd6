"""``gzip_compression_ratio``: how compressible messages are."""

from __future__ import annotations

from glossogen.evaluation._contract import MetricContext, Scored
from glossogen.evaluation._measures import gzip_compression_ratio as ratio_of
from glossogen.evaluation._registry import metric
from glossogen.evaluation.metrics._observe import per_message_mean


@metric("gzip_compression_ratio", unit="compressed bytes per raw byte", reads=())
async def gzip_compression_ratio(ctx: MetricContext) -> Scored:
    """Mean over messages of each message's gzip ratio, compressed over raw UTF-8 bytes.

    Per message ``len(gzip(text)) / len(text.encode("utf-8"))`` with Python's ``gzip`` (DEFLATE,
    RFC 1952) at level 9 and header mtime 0
    (:func:`glossogen.evaluation.gzip_compression_ratio`), then the mean over every message on
    the primary channels in phase ``main`` (composed text). Short messages score above 1 (gzip's
    18-byte frame); lower means more redundant.
    """
    return per_message_mean(ctx.run.messages, ratio_of, "compressed bytes per raw byte")
