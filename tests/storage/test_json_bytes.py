"""``json_bytes`` writes, byte for byte, what ``json.dumps(indent=2, ensure_ascii=False)`` wrote
before orjson took the common case: each value below is one where the two encoders' tokens
differ (floats, keys, big ints, text) or agree, and the bytes are compared with the stdlib's."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from glossogen.storage import json_bytes


def _stdlib(obj: Any) -> bytes:
    return (json.dumps(obj, allow_nan=False, indent=2, ensure_ascii=False) + "\n").encode()


VALUES: list[Any] = [
    {},
    [],
    {"a": {}, "b": [], "c": [[], [{}]], "d": None, "e": True, "f": False},
    {"score": 0.0, "mean": 2.5, "big": 1e16, "huge": 1.5e300, "neg": -0.0},
    {"tiny": 1e-05, "cost_usd": 3.257618158156197e-05, "micro": 4.239276264416459e-06},
    {"per_round": [{"round_number": n, "value": n / 7} for n in range(1, 16)]},
    {3: "int key", 2.5: "float key", True: "bool key", None: "null key"},
    {"wide": 2**70, "negative": -(2**65)},
    {"text": 'é ü 中文 \u2028\u2029 \x00\x01\x1f\x7f \n\t\r\b\f " \\ / <>&'},
    "just a string",
    12,
    0.1,
]


@pytest.mark.parametrize("obj", VALUES, ids=[f"v{i}" for i in range(len(VALUES))])
def test_json_bytes_is_the_stdlib_indented_form(obj: Any) -> None:
    assert json_bytes(obj) == _stdlib(obj)


def test_json_bytes_refuses_what_the_stdlib_refused() -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        json_bytes({"score": math.nan})
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        json_bytes([math.inf])
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        json_bytes({"s": {1}})
