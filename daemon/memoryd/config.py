"""Configuration: a frozen dataclass tree loaded from TOML, then overridden by environment.

Every key is optional. ``MEMORYD_<SECTION>_<KEY>`` overrides ``[section] key`` (for example
``MEMORYD_EMBEDDING_PROVIDER=none``). Unknown keys and bad values raise ConfigError naming
the key and the value. Building a Config has no side effects; ``load_config`` reads files.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from memoryd.errors import ConfigError
from memoryd_client.paths import config_path

MiB = 1024 * 1024
T = TypeVar("T")


def _opt(
    default: Any,
    *,
    choices: tuple[str, ...] = (),
    lo: float | None = None,
    hi: float | None = None,
    secret: bool = False,
) -> Any:
    meta = {"choices": choices, "lo": lo, "hi": hi, "secret": secret}
    if isinstance(default, tuple | list):
        return field(default_factory=lambda: tuple(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class EmbeddingConfig:
    provider: str = _opt("auto", choices=("auto", "local", "openai", "none"))
    model: str = _opt("")  # openai: default text-embedding-3-small; local: the bundled model
    base_url: str = _opt("")  # any OpenAI-compatible endpoint
    api_key: str = _opt("", secret=True)
    api_key_env: str = _opt("OPENAI_API_KEY")
    dimensions: int = _opt(0, lo=0, hi=8192)  # openai only: ask for this many dims (0: model's)
    batch_size: int = _opt(16, lo=1, hi=2048)
    threads: int = _opt(0, lo=0, hi=256)  # local: onnxruntime intra-op threads (0: all cores)
    max_tokens: int = _opt(256, lo=16, hi=8192)  # local: the model was trained on <= 256
    timeout: float = _opt(30.0, lo=0.1, hi=3600)
    max_retries: int = _opt(4, lo=0, hi=20)
    cache_max_entries: int = _opt(50_000, lo=0, hi=100_000_000)
    query_cache_entries: int = _opt(512, lo=0, hi=1_000_000)
    retry_after_seconds: float = _opt(30.0, lo=0.1, hi=86400)  # first back-off when it is down


@dataclass(frozen=True)
class IndexConfig:
    chunk_tokens: int = _opt(400, lo=32, hi=8192)
    chunk_overlap: int = _opt(80, lo=0, hi=4096)
    vector_window_tokens: int = _opt(128, lo=16, hi=8192)  # chunks are embedded in windows
    sessions: bool = _opt(False)  # index sessions/*.jsonl (opt-in, as in OpenClaw)
    extra_paths: tuple[str, ...] = _opt(())  # more markdown files/folders, workspace-relative
    max_file_bytes: int = _opt(16 * MiB, lo=1024, hi=1 << 34)


@dataclass(frozen=True)
class SearchConfig:
    max_results: int = _opt(6, lo=1, hi=100)
    min_score: float = _opt(0.35, lo=0.0, hi=1.0)
    fusion: str = _opt("weighted", choices=("weighted", "rrf"))
    # Chosen on LoCoMo (bench/retrieval.py, README): OpenClaw's 0.7/0.3 plus a third
    # signal, the best single line's share of the query's IDF.
    vector_weight: float = _opt(0.5, lo=0.0, hi=1.0)
    text_weight: float = _opt(0.3, lo=0.0, hi=1.0)
    line_weight: float = _opt(0.2, lo=0.0, hi=1.0)
    rrf_k: int = _opt(60, lo=1, hi=10_000)
    candidate_multiplier: int = _opt(4, lo=1, hi=100)
    snippet_chars: int = _opt(700, lo=50, hi=100_000)


@dataclass(frozen=True)
class LlmConfig:
    base_url: str = _opt("")
    model: str = _opt("")
    api_key: str = _opt("", secret=True)
    api_key_env: str = _opt("")
    timeout: float = _opt(120.0, lo=0.1, hi=3600)
    max_output_tokens: int = _opt(4096, lo=16, hi=1_000_000)


@dataclass(frozen=True)
class ServerConfig:
    max_frame_bytes: int = _opt(16 * MiB, lo=1024, hi=1 << 31)
    read_your_writes_ms: int = _opt(1000, lo=0, hi=60_000)
    debounce_ms: int = _opt(100, lo=0, hi=60_000)
    reader_threads: int = _opt(4, lo=1, hi=64)
    shutdown_timeout: float = _opt(10.0, lo=0.0, hi=3600)


@dataclass(frozen=True)
class WorkspaceConfig:
    path: str = _opt("")
    name: str = _opt("")


@dataclass(frozen=True)
class Config:
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    llm: LlmConfig = field(default_factory=LlmConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    workspaces: tuple[WorkspaceConfig, ...] = ()
    source: str = ""  # where it was loaded from, for status and error messages


SECTIONS: dict[str, type[Any]] = {
    "embedding": EmbeddingConfig,
    "index": IndexConfig,
    "search": SearchConfig,
    "llm": LlmConfig,
    "server": ServerConfig,
}


SECRET_WORDS = ("key", "token", "secret", "password")


def _shown(key: str, value: Any) -> str:
    """A value for an error message; secrets (even misspelt keys that look like one) masked."""
    if any(w in key.lower() for w in SECRET_WORDS) and isinstance(value, str) and value:
        return "'***'"
    return repr(value)


def _coerce(key: str, value: Any, ftype: Any, meta: Any, from_env: bool) -> Any:
    """Check (and, for environment strings, parse) one value against its field type."""
    if meta.get("secret") and not isinstance(value, str):
        raise ConfigError(f"{key} must be a string")
    origin = typing.get_origin(ftype)
    if ftype is bool:
        if from_env and isinstance(value, str):
            low = value.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
        if not isinstance(value, bool):
            raise ConfigError(f"{key} must be true or false, got {value!r}")
        return value
    if ftype is int or ftype is float:
        num: Any = value
        if from_env and isinstance(value, str):
            try:
                num = ftype(value.strip())
            except ValueError:
                raise ConfigError(f"{key} must be a number, got {value!r}") from None
        if isinstance(num, bool) or not isinstance(num, int | float):
            raise ConfigError(f"{key} must be a number, got {value!r}")
        if ftype is int and not isinstance(num, int):
            raise ConfigError(f"{key} must be a whole number, got {value!r}")
        lo, hi = meta.get("lo"), meta.get("hi")
        if (lo is not None and num < lo) or (hi is not None and num > hi):
            raise ConfigError(f"{key} must be between {lo} and {hi}, got {value!r}")
        return ftype(num)
    if ftype is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string, got {value!r}")
        choices = meta.get("choices") or ()
        if choices and value not in choices:
            raise ConfigError(f"{key} must be one of {', '.join(choices)}, got {value!r}")
        return value
    if origin is tuple:
        if from_env and isinstance(value, str):
            value = [p for p in value.split(os.pathsep) if p]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{key} must be a list of strings, got {value!r}")
        return tuple(value)
    raise ConfigError(f"{key}: unsupported type {ftype!r}")  # pragma: no cover


def _build(cls: type[T], data: Any, prefix: str, env_values: dict[str, str]) -> T:
    if not isinstance(data, dict):
        raise ConfigError(f"[{prefix}] must be a table, got {data!r}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    for key in data:
        if key not in known:
            raise ConfigError(f"unknown config key {prefix}.{key} (value {_shown(key, data[key])})")
    kwargs: dict[str, Any] = {}
    for name, f in known.items():
        if name in env_values:
            kwargs[name] = _coerce(
                f"{prefix}.{name}", env_values[name], hints[name], f.metadata, from_env=True
            )
        elif name in data:
            kwargs[name] = _coerce(
                f"{prefix}.{name}", data[name], hints[name], f.metadata, from_env=False
            )
    return cls(**kwargs)


def config_from_mapping(
    data: dict[str, Any], env: dict[str, str] | None = None, source: str = ""
) -> Config:
    """Build and validate a Config from parsed TOML plus ``MEMORYD_*`` environment overrides."""
    env = {} if env is None else env
    known_top = set(SECTIONS) | {"workspaces"}
    for key in data:
        if key not in known_top:
            raise ConfigError(f"unknown config key {key} (value {data[key]!r})")
    env_by_section: dict[str, dict[str, str]] = {s: {} for s in SECTIONS}
    for name, value in env.items():
        if not name.startswith("MEMORYD_"):
            continue
        rest = name[len("MEMORYD_") :].lower()
        section, _, key = rest.partition("_")
        if section in SECTIONS and key:
            if key not in {f.name for f in dataclasses.fields(SECTIONS[section])}:
                raise ConfigError(
                    f"unknown config key {section}.{key} (from {name}={_shown(key, value)})"
                )
            env_by_section[section][key] = value
    sections = {
        name: _build(cls, data.get(name, {}), name, env_by_section[name])
        for name, cls in SECTIONS.items()
    }
    raw_ws = data.get("workspaces", [])
    if not isinstance(raw_ws, list):
        raise ConfigError(f"workspaces must be an array of tables, got {raw_ws!r}")
    workspaces = tuple(
        _build(WorkspaceConfig, w, f"workspaces[{i}]", {}) for i, w in enumerate(raw_ws)
    )
    for i, w in enumerate(workspaces):
        if not w.path:
            raise ConfigError(f"workspaces[{i}].path is required")
    cfg = Config(workspaces=workspaces, source=source, **sections)
    _check_consistency(cfg)
    return cfg


def _check_consistency(cfg: Config) -> None:
    if cfg.index.chunk_overlap >= cfg.index.chunk_tokens:
        raise ConfigError(
            f"index.chunk_overlap ({cfg.index.chunk_overlap}) must be smaller than "
            f"index.chunk_tokens ({cfg.index.chunk_tokens})"
        )


def load_config(path: str | Path | None = None, env: dict[str, str] | None = None) -> Config:
    """Read the TOML file (missing is fine: all defaults) and apply environment overrides."""
    env = dict(os.environ) if env is None else env
    file = Path(path) if path is not None else config_path(env)
    data: dict[str, Any] = {}
    if file.exists():
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{file}: not valid TOML: {exc}") from None
    return config_from_mapping(data, env, source=str(file))


def resolve_secret(value: str, env_name: str, env: dict[str, str] | None = None) -> str:
    """An API key from the config value, else from the named environment variable."""
    env = dict(os.environ) if env is None else env
    return value or (env.get(env_name, "") if env_name else "")


def redacted(cfg: Any) -> dict[str, Any]:
    """The config as a plain dict with secrets masked, for status output and logs."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            out[f.name] = redacted(value)
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            out[f.name] = [redacted(v) for v in value]
        elif f.metadata.get("secret") and value:
            out[f.name] = "***"
        else:
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


__all__ = [
    "Config",
    "EmbeddingConfig",
    "IndexConfig",
    "LlmConfig",
    "SearchConfig",
    "ServerConfig",
    "WorkspaceConfig",
    "config_from_mapping",
    "load_config",
    "redacted",
    "resolve_secret",
]
