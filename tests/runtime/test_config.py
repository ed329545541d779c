"""Config: every key optional, env overrides, errors that name the key and the value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.errors import ConfigError
from memoryd.runtime.config import config_from_mapping, load_config
from memoryd_client.paths import config_path, default_paths, socket_path


def test_defaults_follow_openclaw_where_the_benchmark_did_not_disagree() -> None:
    cfg = config_from_mapping({})
    assert (cfg.index.chunk_tokens, cfg.index.chunk_overlap) == (400, 80)
    assert (cfg.search.max_results, cfg.search.min_score) == (6, 0.35)
    assert (cfg.search.candidate_multiplier, cfg.search.snippet_chars) == (4, 700)
    assert cfg.embedding.provider == "auto" and cfg.embedding.cache_max_entries == 50_000


def test_toml_file_is_loaded(tmp_path: Path) -> None:
    f = tmp_path / "config.toml"
    f.write_text('[search]\nmax_results = 9\n[[workspaces]]\npath = "/w"\nname = "w"\n')
    cfg = load_config(f, env={})
    assert cfg.search.max_results == 9
    assert cfg.workspaces[0].path == "/w"
    assert cfg.source == str(f)


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path / "nope.toml", env={}).search.max_results == 6


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"search": {"max_result": 3}}, ["search.max_result", "3"]),
        ({"searhc": {}}, ["searhc"]),
        ({"search": {"max_results": 0}}, ["search.max_results", "0"]),
        ({"search": {"max_results": "6"}}, ["search.max_results", "'6'"]),
        ({"search": {"fusion": "max"}}, ["search.fusion", "'max'"]),
        ({"embedding": {"provider": "cohere"}}, ["embedding.provider", "'cohere'"]),
        ({"index": {"sessions": "yes"}}, ["index.sessions", "'yes'"]),
        ({"index": {"extra_paths": "docs"}}, ["index.extra_paths", "'docs'"]),
        ({"search": {"sources": ["mail"]}}, ["search.sources", "memory, sessions", "mail"]),
        ({"search": {"sources": []}}, ["search.sources", "non-empty"]),
        ({"search": {"sources": ["sessions"]}}, ["search.sources", "index.sessions"]),
        ({"index": {"chunk_tokens": 100, "chunk_overlap": 100}}, ["chunk_overlap", "100"]),
        ({"workspaces": [{"name": "x"}]}, ["workspaces[0].path"]),
        ({"search": 5}, ["search", "5"]),
    ],
)
def test_bad_config_names_key_and_value(data: dict, words: list[str]) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError) as err:
        config_from_mapping(data)
    for w in words:
        assert w in str(err.value)


def test_environment_overrides_file_values() -> None:
    cfg = config_from_mapping(
        {"embedding": {"provider": "local"}},
        env={
            "MEMORYD_EMBEDDING_PROVIDER": "none",
            "MEMORYD_SEARCH_MIN_SCORE": "0.5",
            "MEMORYD_INDEX_SESSIONS": "true",
            "MEMORYD_LLM_MODEL": "m",
            "MEMORYD_EMBEDDING_BASE_URL": "http://127.0.0.1:1/v1",
            "MEMORYD_HOME": "/ignored/here",
            "OTHER": "x",
        },
    )
    assert cfg.embedding.provider == "none" and cfg.search.min_score == 0.5
    assert cfg.index.sessions is True and cfg.llm.model == "m"
    assert cfg.embedding.base_url == "http://127.0.0.1:1/v1"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMORYD_SEARCH_MAX_RESULTS", "many"),
        ("MEMORYD_SEARCH_NOPE", "1"),
        ("MEMORYD_INDEX_SESSIONS", "maybe"),
        ("MEMORYD_EMBEDDNG_PROVIDER", "none"),  # a misspelt section
        ("MEMORYD_WORKSPACES_PATH", "/x"),  # workspaces are TOML tables only
        ("MEMORYD_SEARCH_MIN_SCORE", "nan"),
        ("MEMORYD_EMBEDDING_TIMEOUT", "inf"),
    ],
)
def test_bad_environment_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_mapping({}, env={name: value})
    assert value in str(err.value)


def test_bad_toml_is_a_config_error(tmp_path: Path) -> None:
    f = tmp_path / "config.toml"
    f.write_text("[search\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(f, env={})


def test_nan_in_toml_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "config.toml"
    f.write_text("[search]\nvector_weight = nan\n")
    with pytest.raises(ConfigError, match=r"vector_weight must be a finite number, got nan"):
        load_config(f, env={})


def test_all_fusion_weights_zero_is_refused() -> None:
    zero = {"vector_weight": 0.0, "text_weight": 0.0, "line_weight": 0.0}
    with pytest.raises(ConfigError, match="are all 0"):
        config_from_mapping({"search": zero})
    config_from_mapping({"search": {**zero, "text_weight": 1.0}})  # keyword signals only


def test_a_config_path_that_cannot_be_read_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()
    with pytest.raises(ConfigError, match="cannot read the config file"):
        load_config(tmp_path / "config.toml", env={})


def test_the_daemons_other_variables_are_not_config_keys() -> None:
    env = {"MEMORYD_HOME": "/h", "MEMORYD_SOCKET": "/s", "MEMORYD_CONFIG": "/c"}
    config_from_mapping({}, env={**env, "MEMORYD_LOG_LEVEL": "debug"})


def test_memoryd_home_puts_everything_under_one_folder(tmp_path: Path) -> None:
    env = {"MEMORYD_HOME": str(tmp_path)}
    p = default_paths(env)
    for path in (p.config_file, p.data_dir, p.state_dir, p.runtime_dir, p.socket, p.index_dir):
        assert tmp_path in path.parents
    assert config_path(env) == tmp_path / "config.toml"
    assert socket_path({**env, "MEMORYD_SOCKET": "/tmp/x.sock"}) == Path("/tmp/x.sock")
    assert socket_path(env, override="/tmp/y.sock") == Path("/tmp/y.sock")


def test_secret_values_never_appear_in_config_errors() -> None:
    with pytest.raises(ConfigError) as err:
        config_from_mapping({"llm": {"apikey": "sk-live-123"}})
    assert "llm.apikey" in str(err.value) and "sk-live-123" not in str(err.value)
    with pytest.raises(ConfigError) as err:
        config_from_mapping({}, env={"MEMORYD_EMBEDDING_API_TOKEN": "sk-live-456"})
    assert "sk-live-456" not in str(err.value)


def test_config_workspaces_may_not_nest(tmp_path: Path) -> None:
    from memoryd.errors import ConfigError
    from memoryd.workspace.names import config_entries

    (tmp_path / "a" / "b").mkdir(parents=True)
    for paths in ([tmp_path / "a", tmp_path / "a" / "b"], [tmp_path / "a" / "b", tmp_path / "a"]):
        cfg = config_from_mapping({"workspaces": [{"path": str(p)} for p in paths]})
        with pytest.raises(ConfigError, match=r"workspaces\[1\]\.path .* may not nest"):
            config_entries(cfg)
    (tmp_path / "c").mkdir()
    cfg = config_from_mapping(
        {"workspaces": [{"path": str(tmp_path / "a")}, {"path": str(tmp_path / "c")}]}
    )
    assert len(config_entries(cfg)) == 2


def test_without_a_config_file_tomllib_is_not_imported(tmp_path: Path) -> None:
    # Most starts have no file: its parser is imported only to read one (issue 38, spawn).
    code = (
        "import sys; from memoryd.runtime.config import load_config; "
        f"cfg = load_config({str(tmp_path / 'none.toml')!r}, {{}}); "
        "print(cfg.server.reader_threads > 0, 'tomllib' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["True", "False"]


def test_a_section_s_field_types_are_read_only_for_the_keys_set() -> None:
    # Evaluating a section's annotations (typing.get_type_hints) cost a start without a
    # config file ~7 M instructions (issue 38, spawn), and one with a key set ~0.35 M a
    # field of its section; the type of the key set is needed to read its value.
    code = (
        "from memoryd.runtime import config; "
        "config.config_from_mapping({}, {}); n = config._hint.cache_info().currsize; "
        "c = config.config_from_mapping({'server': {'debounce_ms': 5}}, "
        "{'MEMORYD_SEARCH_MAX_RESULTS': '3'}); "
        "print(n, config._hint.cache_info().currsize, c.server.debounce_ms, c.search.max_results)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["0", "2", "5", "3"]


def test_a_field_s_type_is_the_one_typing_reads_for_its_section() -> None:
    import dataclasses
    import typing

    from memoryd.runtime import config

    sections = [
        cls
        for cls in vars(config).values()
        if isinstance(cls, type)
        and dataclasses.is_dataclass(cls)
        and cls.__module__ == config.__name__
    ]
    assert len(sections) >= 17
    for cls in sections:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            assert config._hint(cls, f.name) == hints[f.name], (cls, f.name)
