"""Token counts summed field by field: every logged count, none left out."""

from __future__ import annotations

from glossogen.eventlog import TOKEN_FIELDS, Tokens


def test_adding_tokens_adds_every_logged_count() -> None:
    total = Tokens(**{name: 10 * (i + 1) for i, name in enumerate(TOKEN_FIELDS)})
    total.add_tokens(Tokens(**{name: i + 1 for i, name in enumerate(TOKEN_FIELDS)}))
    assert {name: getattr(total, name) for name in TOKEN_FIELDS} == {
        "input_tokens": 11,
        "cache_read_tokens": 22,
        "cache_write_tokens": 33,
        "cache_write_1h_tokens": 44,
        "output_tokens": 55,
    }
