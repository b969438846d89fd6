"""YAML read strictly: a key named twice in one mapping is refused with both lines."""

from __future__ import annotations

import pytest
import yaml

from glossogen.strict_yaml import DuplicateKeyError, YamlError, load_yaml


def test_unique_keys_load_as_pyyaml_reads_them() -> None:
    assert load_yaml("a: 1\nb: {c: [true, null, '3']}\n") == {"a": 1, "b": {"c": [True, None, "3"]}}
    assert load_yaml("") is None


def test_a_merge_key_overrides_on_purpose_and_is_no_duplicate() -> None:
    text = "base: &b {size: 1, name: x}\nmine: {<<: *b, size: 2}\n"
    assert load_yaml(text)["mine"] == {"size": 2, "name": "x"}


def test_a_key_named_twice_is_refused_with_both_lines() -> None:
    with pytest.raises(DuplicateKeyError) as refused:
        load_yaml("outer:\n  size: 1\n  name: x\n  size: 2\n")
    assert str(refused.value) == "line 4, column 3: duplicate key 'size' (first at line 2)"
    assert (refused.value.key, refused.value.line, refused.value.first_line) == ("size", 4, 2)


def test_keys_equal_as_values_are_duplicates_too() -> None:
    with pytest.raises(DuplicateKeyError, match="duplicate key 1 \\(first at line 1\\)"):
        load_yaml("1: a\n0x1: b\n")


def test_text_that_is_not_yaml_names_its_line_and_column() -> None:
    with pytest.raises(YamlError) as refused:
        load_yaml("a: [1, 2\nb: 3\n")
    assert not isinstance(refused.value, DuplicateKeyError)
    assert str(refused.value) == "line 2, column 2: expected ',' or ']', but got ':'"


def test_an_exponent_without_a_dot_is_a_number_as_yaml_1_2_reads_it() -> None:
    assert load_yaml("cap: 5e-2\nbig: 1E3\nneg: -2e+1\nword: e5\nquoted: '1e-3'\n") == {
        "cap": 0.05,
        "big": 1000.0,
        "neg": -20.0,
        "word": "e5",
        "quoted": "1e-3",
    }
    assert yaml.safe_load("cap: 5e-2") == {"cap": "5e-2"}  # PyYAML's own loader is untouched
