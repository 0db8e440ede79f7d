"""The config is typed: a typo or a wrong type fails loudly, naming the file, section and key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memory_assets.cli import main as memory
from retrieval.config import ConfigError, MemoryConfig, load_config


def _toml(tmp_path, text: str):
    path = tmp_path / "my.toml"
    path.write_text(text)
    return path


def test_an_unknown_key_names_the_file_the_section_and_the_likely_key(tmp_path):
    path = _toml(tmp_path, "[ranking]\nmemory_wieght = 0.9\n")
    with pytest.raises(ConfigError) as failure:
        load_config(path)
    assert str(failure.value) == f"{path} [ranking] memory_wieght: unknown key (did you mean memory_weight?)"


def test_an_unknown_section_and_a_category_typo_are_named_too(tmp_path):
    path = _toml(tmp_path, "[rankng]\nmemory_weight = 1\n[categories.vehicle]\nwieght = 0.5\n")
    with pytest.raises(ConfigError) as failure:
        load_config(path)
    message = str(failure.value)
    assert "[rankng]: unknown section (did you mean [ranking]?)" in message
    assert "[categories.vehicle] wieght: unknown key (did you mean weight?)" in message


@pytest.mark.parametrize("text, fragment", [
    ('[ranking]\ncandidates = "many"\n', "[ranking] candidates"),
    ("[categories.vehicle]\nweight = 1.5\n", "[categories.vehicle] weight"),
    ('[embedding]\nprovider = "cohere"\n', "[embedding] provider"),
    ('[privacy]\nredact = ["passport"]\n', "'passport'"),
    ("[categories.pets]\nttl_days = 30\n", "[categories.pets] weight: missing key"),
])
def test_a_value_of_the_wrong_type_or_range_is_refused(tmp_path, text, fragment):
    with pytest.raises(ConfigError, match="my.toml") as failure:
        load_config(_toml(tmp_path, text))
    assert fragment in str(failure.value)


def test_an_override_keeps_every_other_default(tmp_path):
    config = load_config(_toml(tmp_path, "[ranking]\nmemory_weight = 1.0\n[categories.pets]\nweight = 0.4\n"))
    defaults = load_config()
    assert config.ranking.memory_weight == 1.0
    assert config.ranking.candidates == defaults.ranking.candidates
    assert config.category("pets").summary_file == "pets.md"
    assert config.category("vehicle") == defaults.category("vehicle")


def test_the_config_is_frozen_and_replace_validates():
    config = load_config()
    with pytest.raises(ValidationError):
        config.ranking.memory_weight = 2.0  # type: ignore[misc]
    changed = config.replace(ranking={"memory_weight": 1.0})
    assert isinstance(changed, MemoryConfig) and changed.ranking.memory_weight == 1.0
    assert config.ranking.memory_weight != 1.0
    with pytest.raises(ConfigError, match="did you mean memory_floor"):
        config.replace(ranking={"memory_flor": 0.1})


def test_every_default_key_is_a_typed_field():
    """defaults.toml and the models agree: nothing in the file is ignored, nothing in code is unset."""
    import tomllib

    from retrieval.config import DEFAULTS

    raw = tomllib.loads(DEFAULTS.read_text())
    config = load_config()
    for section, values in raw.items():
        if section == "categories":
            continue
        model = getattr(config, section)
        assert set(values) == set(type(model).model_fields), section


def test_the_cli_takes_config_as_a_global_option(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MEMORY_CONFIG", "")  # restored after: `memory --config` sets it for its runs
    bad = _toml(tmp_path, "[injection]\nmax_itmes = 3\n")
    assert memory(["--config", str(bad), "--data-root", str(tmp_path / "data"), "stats"]) == 2
    assert "ConfigError:" in capsys.readouterr().err
    assert memory(["stats", "--config", str(bad), "--data-root", str(tmp_path / "data")]) == 2
    assert "max_itmes: unknown key (did you mean max_items?)" in capsys.readouterr().err
