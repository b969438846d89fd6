"""Per-message text measures shared by the metrics and the export's ``message_level.csv``.

Both read the composed (pre-noise) text of one message; an empty text has no value (``None``,
exported blank), never 0.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter

GZIP_LEVEL = 9
"""Compression level of :func:`gzip_compression_ratio` (Python's ``gzip``, DEFLATE, maximum)."""

GZIP_MTIME = 0
"""Fixed header timestamp so the compressed size is reproducible."""

GZIP_FRAME = 18
"""Bytes of a gzip member around its DEFLATE stream (RFC 1952): a 10-byte header (no name, no
comment, mtime :data:`GZIP_MTIME`) and an 8-byte CRC-32 and size trailer."""


def character_entropy_bits(text: str) -> float | None:
    """Shannon entropy of the characters of ``text``, in bits per character.

    ``H = -sum(p_c * log2(p_c))`` over the distinct characters ``c`` of ``text``, with ``p_c``
    the share of ``text``'s characters (Unicode code points) equal to ``c`` (Shannon, "A
    Mathematical Theory of Communication", 1948). ``"aab"`` gives 0.9183.

    Returns:
        Bits per character (0.0 for a text of one repeated character); ``None`` for ``""``.
    """
    if not text:
        return None
    n = len(text)
    log2 = math.log2
    # each share computed once (the same float as computing it twice), summed in the same order
    return -sum([(p := k / n) * log2(p) for k in Counter(text).values()]) + 0.0


def gzip_compression_ratio(text: str) -> float | None:
    """Compressed size over raw size of ``text``'s UTF-8 bytes (gzip, level 9, mtime 0).

    Short texts give ratios above 1 (gzip's 18-byte header and trailer); lower means more
    redundant. Compressor: Python's ``gzip.compress`` (DEFLATE, RFC 1952) at
    :data:`GZIP_LEVEL`.

    Returns:
        ``len(gzip(text_bytes)) / len(text_bytes)``; ``None`` for ``""``.
    """
    raw = text.encode("utf-8")
    if not raw:
        return None
    # gzip.compress(raw, GZIP_LEVEL, mtime=GZIP_MTIME) is this DEFLATE stream in GZIP_FRAME bytes
    # of header and trailer: its size, without building the header or the CRC-32 of the text.
    return (len(zlib.compress(raw, GZIP_LEVEL, wbits=-15)) + GZIP_FRAME) / len(raw)
