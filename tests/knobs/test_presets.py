import json

import pytest

from glossogen.knobs import EXIT_REFUSED, EXIT_UNREADABLE, ConfigError, list_presets, load_config


@pytest.fixture
def presets(tmp_path):
    folder = tmp_path / "scenario"
    folder.mkdir()
    (folder / "knobs_default.json").write_text('{"round_count": 5}')
    (folder / "knobs_intern.json").write_text('{"round_count": 20, "seed": 7}')
    (folder / "notes.json").write_text("{}")
    return folder


def test_list_presets(presets, tmp_path):
    assert list_presets(presets) == ["knobs_default", "knobs_intern"]
    assert list_presets(tmp_path / "missing") == []


def test_preset_by_name(presets):
    assert load_config("knobs_intern", presets) == (
        {"round_count": 20, "seed": 7},
        "preset 'knobs_intern'",
    )


def test_file_by_path(presets, tmp_path):
    path = tmp_path / "mine.json"
    path.write_text('{"round_count": 9}')
    assert load_config(str(path), presets) == ({"round_count": 9}, f"file '{path}'")


def test_path_wins_over_preset_of_same_name(presets, tmp_path, monkeypatch):
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "knobs_default").write_text('{"round_count": 11}')
    monkeypatch.chdir(workdir)
    assert load_config("knobs_default", presets) == (
        {"round_count": 11},
        f"file '{workdir / 'knobs_default'}'",
    )


def test_relative_path_resolves_to_absolute(presets, tmp_path, monkeypatch):
    (tmp_path / "knobs_default.json").write_text('{"round_count": 12}')
    monkeypatch.chdir(tmp_path)
    assert load_config("knobs_default.json", presets) == (
        {"round_count": 12},
        f"file '{tmp_path / 'knobs_default.json'}'",
    )


@pytest.mark.parametrize("name", ["missing.json", "sub/knobs_default"])
def test_missing_path_is_unreadable(presets, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_config(name, presets)
    assert caught.value.exit_code == EXIT_UNREADABLE == 66
    assert str(caught.value) == f"config file '{tmp_path / name}' does not exist"


def test_directory_path_is_unreadable(presets, tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_config(str(tmp_path) + "/", presets)
    assert caught.value.exit_code == 66
    assert str(caught.value) == f"config file '{tmp_path}' is not a file"


def test_unknown_preset(presets):
    with pytest.raises(ConfigError) as caught:
        load_config("knobs_defualt", presets)
    assert caught.value.exit_code == EXIT_REFUSED == 65
    assert str(caught.value) == (
        "unknown preset 'knobs_defualt', did you mean 'knobs_default'? "
        "(available: knobs_default, knobs_intern)"
    )


def test_unknown_preset_without_presets(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_config("fast", tmp_path)
    assert str(caught.value) == "unknown preset 'fast' (available: none)"


def test_malformed_preset_json(presets):
    path = presets / "knobs_broken.json"
    path.write_text('{\n  "round_count": 5\n  "seed": 1\n}')
    with pytest.raises(ConfigError) as caught:
        load_config("knobs_broken", presets)
    assert caught.value.exit_code == 65
    assert str(caught.value) == (
        f"preset 'knobs_broken' ({path}) is not valid JSON: "
        "Expecting ',' delimiter at line 3 column 3"
    )


@pytest.mark.parametrize(("content", "kind"), [([1, 2], "list"), ("x", "str"), (None, "NoneType")])
def test_file_must_hold_an_object(tmp_path, content, kind):
    path = tmp_path / "list.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ConfigError) as caught:
        load_config(str(path), tmp_path)
    assert caught.value.exit_code == 65
    assert str(caught.value) == f"config file '{path}' must hold a JSON object, not {kind}"


def test_file_not_utf8(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"labels": {"a": "\xe9"}}')
    with pytest.raises(ConfigError) as caught:
        load_config(str(path), tmp_path)
    assert caught.value.exit_code == 65
    assert str(caught.value) == f"config file '{path}' is not UTF-8 text: invalid continuation byte"
