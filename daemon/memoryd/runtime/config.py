"""Configuration: a frozen dataclass tree loaded from TOML, then overridden by environment.

Every key is optional. ``MEMORYD_<SECTION>_<KEY>`` overrides ``[section] key`` (for example
``MEMORYD_EMBEDDING_PROVIDER=none``). Unknown keys and bad values raise ConfigError naming
the key and the value. Building a Config has no side effects; ``load_config`` reads files.
Each class is a ``Record`` made by ``frozen_record`` (records.py): built, frozen,
compared, hashed and shown by shared methods, none compiled per class.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from memoryd.errors import ConfigError
from memoryd.records import Record

if TYPE_CHECKING:  # what the type checker knows them as; made without generated methods
    from dataclasses import dataclass as frozen_record
else:
    from memoryd.records import frozen_record
from memoryd_client.paths import config_path
from memoryd_client.search_terms import (
    DEFAULT_FUSION,
    DEFAULT_SOURCES,
    FUSIONS,
    MAX_RESULTS,
    MIN_SCORE_RANGE,
    SOURCES,
)

MiB = 1024 * 1024
T = TypeVar("T")
# MEMORYD_* variables that are not config keys (paths.py, cli.py), and the tests' opt-in.
OTHER_ENV = ("MEMORYD_HOME", "MEMORYD_CONFIG", "MEMORYD_SOCKET", "MEMORYD_LOG_LEVEL")
TEST_ENV = ("MEMORYD_TEST_SERVICE_INSTALL",)


def _opt(
    default: Any,
    *,
    choices: tuple[str, ...] = (),
    lo: float | None = None,
    hi: float | None = None,
    secret: bool = False,
    check: Callable[[str], str | None] | None = None,
) -> Any:
    """A config field; ``check`` returns what is wrong with a string value, or None."""
    meta = {"choices": choices, "lo": lo, "hi": hi, "secret": secret, "check": check}
    if isinstance(default, tuple | list):
        return field(default_factory=lambda: tuple(default), metadata=meta)
    return field(default=default, metadata=meta)


def _http_url(value: str) -> str | None:
    """An endpoint's base_url: empty (the provider's own) or http(s)://host..."""
    if not value:
        return None
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.strip("/"):
        return "must be an http:// or https:// URL (an OpenAI-compatible endpoint)"
    return None


@frozen_record(frozen=True, eq=False, repr=False)
class EmbeddingConfig(Record):
    provider: str = _opt("auto", choices=("auto", "local", "openai", "none"))
    model: str = _opt("")  # openai: default text-embedding-3-small; local: the bundled model
    base_url: str = _opt("", check=_http_url)  # any OpenAI-compatible endpoint
    api_key: str = _opt("", secret=True)
    api_key_env: str = _opt("OPENAI_API_KEY")
    dimensions: int = _opt(0, lo=0, hi=8192)  # openai only: ask for this many dims (0: model's)
    batch_size: int = _opt(16, lo=1, hi=2048)
    threads: int = _opt(0, lo=0, hi=256)  # local: onnxruntime intra-op threads (0: all cores)
    max_tokens: int = _opt(256, lo=16, hi=8192)  # local: the model was trained on <= 256
    # local: a folder with model.onnx and tokenizer.json instead of the bundled MiniLM, and
    # what that model was trained with (see docs/embeddings.md)
    model_path: str = _opt("")
    pooling: str = _opt("mean", choices=("mean", "cls"))
    normalize: bool = _opt(True)
    query_prefix: str = _opt("")  # e5: "query: "
    passage_prefix: str = _opt("")  # e5: "passage: "
    timeout: float = _opt(30.0, lo=0.1, hi=3600)
    max_retries: int = _opt(4, lo=0, hi=20)
    cache_max_entries: int = _opt(50_000, lo=0, hi=100_000_000)
    query_cache_entries: int = _opt(512, lo=0, hi=1_000_000)
    retry_after_seconds: float = _opt(30.0, lo=0.1, hi=86400)  # first back-off when it is down
    # openai: who embeds queries while the endpoint fails. "local" stands in only when it is
    # the endpoint's model (compared once; embeddings/fallback.py); else keyword only.
    fallback: str = _opt("none", choices=("none", "local"))


@frozen_record(frozen=True, eq=False, repr=False)
class IndexConfig(Record):
    chunk_tokens: int = _opt(400, lo=32, hi=8192)
    chunk_overlap: int = _opt(80, lo=0, hi=4096)
    vector_window_tokens: int = _opt(128, lo=16, hi=8192)  # chunks are embedded in windows
    sessions: bool = _opt(False)  # index sessions/*.jsonl (opt-in, as in OpenClaw)
    extra_paths: tuple[str, ...] = _opt(())  # more markdown files/folders, workspace-relative
    max_file_bytes: int = _opt(16 * MiB, lo=1024, hi=1 << 34)
    # Chunk vectors are also kept in memory for a numpy KNN scan (about 4x faster than
    # sqlite-vec's); a workspace whose vectors need more than this uses sqlite-vec. 0: never.
    vector_memory_mb: int = _opt(256, lo=0, hi=1 << 20)
    # The keyword index is also kept in memory, so BM25 is scored with numpy (the same scores
    # as FTS5's bm25(), ~10x faster); a workspace whose postings need more uses FTS5. 0: never.
    keyword_memory_mb: int = _opt(256, lo=0, hi=1 << 20)  # ~7 MB per 10k chunks


@frozen_record(frozen=True, eq=False, repr=False)
class SearchConfig(Record):
    max_results: int = _opt(6, lo=1, hi=MAX_RESULTS)
    min_score: float = _opt(0.35, lo=MIN_SCORE_RANGE[0], hi=MIN_SCORE_RANGE[1])
    fusion: str = _opt(DEFAULT_FUSION, choices=FUSIONS)
    # Chosen on LoCoMo (bench/retrieval.py, docs/search.md): OpenClaw's 0.7/0.3 plus a third
    # signal, the best single line's share of the query's IDF.
    vector_weight: float = _opt(0.5, lo=0.0, hi=1.0)
    text_weight: float = _opt(0.3, lo=0.0, hi=1.0)
    line_weight: float = _opt(0.2, lo=0.0, hi=1.0)
    rrf_k: int = _opt(60, lo=1, hi=10_000)
    candidate_multiplier: int = _opt(4, lo=1, hi=100)
    snippet_chars: int = _opt(700, lo=50, hi=100_000)
    # What a search without its own ``sources`` looks in; "sessions" needs index.sessions.
    sources: tuple[str, ...] = _opt(DEFAULT_SOURCES, choices=SOURCES)
    # Older dated notes lose up to half their score, half of that per this many days; 0 =
    # off. Off by default: on LoCoMo dev 30 days cost R@5 (docs/provenance.md has the table).
    recency_half_life_days: float = _opt(0.0, lo=0.0, hi=36500.0)


@frozen_record(frozen=True, eq=False, repr=False)
class LlmConfig(Record):
    base_url: str = _opt("", check=_http_url)
    model: str = _opt("")
    api_key: str = _opt("", secret=True)
    api_key_env: str = _opt("")
    timeout: float = _opt(120.0, lo=0.1, hi=3600)
    max_output_tokens: int = _opt(4096, lo=16, hi=1_000_000)
    max_retries: int = _opt(3, lo=0, hi=20)  # on 429, 5xx, timeouts (with backoff)
    # The model's context window: larger inputs are worked through in parts, never cut.
    context_tokens: int = _opt(16384, lo=512, hi=10_000_000)
    # One job run makes at most this many calls: more input than that can condense is
    # refused before the first call, with the reason in the run's message.
    max_calls_per_run: int = _opt(50, lo=1, hi=100_000)


def _cron(value: str) -> str | None:
    from memoryd.cron import cron_problem  # croniter: loaded only when one is given

    return cron_problem(value)


@frozen_record(frozen=True, eq=False, repr=False)
class HippocampusConfig(Record):
    enabled: bool = _opt(True)
    schedule: str = _opt("0 3 * * *", check=_cron)
    lookback_days: int = _opt(7, lo=1, hi=365)  # daily files of the last N days
    include_sessions: bool = _opt(False)  # also user/assistant highlights of recent transcripts
    max_drop_ratio: float = _opt(0.5, lo=0.0, hi=1.0)  # of MEMORY.md's lines, unless --force


@frozen_record(frozen=True, eq=False, repr=False)
class RetentionConfig(Record):
    enabled: bool = _opt(True)
    schedule: str = _opt("30 3 * * *", check=_cron)
    retention_days: int = _opt(30, lo=1, hi=36500)  # transcripts idle longer than this...
    action: str = _opt("archive", choices=("archive", "delete"))  # ...are gzipped or deleted
    daily_archive_days: int = _opt(0, lo=0, hi=36500)  # 0: off; else memory/archive/YYYY/


@frozen_record(frozen=True, eq=False, repr=False)
class FallbackSummaryConfig(Record):
    enabled: bool = _opt(True)
    schedule: str = _opt("*/15 * * * *", check=_cron)
    session_idle_minutes: int = _opt(30, lo=1, hi=100_000)
    max_age_days: int = _opt(2, lo=1, hi=365)  # sessions idle longer are left alone
    max_sessions_per_run: int = _opt(5, lo=1, hi=1000)


@frozen_record(frozen=True, eq=False, repr=False)
class LedgerCompactionConfig(Record):
    enabled: bool = _opt(True)
    schedule: str = _opt("45 3 * * *", check=_cron)
    # A line's records are dropped (its line gone, or forgotten) only once older than this;
    # tombstones are kept for sync.tombstone_days.
    keep_days: float = _opt(7.0, lo=0.0, hi=36500.0)


@frozen_record(frozen=True, eq=False, repr=False)
class ForgetConfig(Record):
    keep_days: float = _opt(7.0, lo=0.0, hi=36500.0)  # pre-images of a forget (docs/lifecycle.md)


@frozen_record(frozen=True, eq=False, repr=False)
class JobsConfig(Record):
    hippocampus: HippocampusConfig = field(default_factory=HippocampusConfig)
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    fallback_summary: FallbackSummaryConfig = field(default_factory=FallbackSummaryConfig)
    ledger_compaction: LedgerCompactionConfig = field(default_factory=LedgerCompactionConfig)


@frozen_record(frozen=True, eq=False, repr=False)
class ServerConfig(Record):
    max_frame_bytes: int = _opt(16 * MiB, lo=1024, hi=1 << 31)
    read_your_writes_ms: int = _opt(1000, lo=0, hi=60_000)
    debounce_ms: int = _opt(100, lo=0, hi=60_000)
    # Searches are CPU-bound Python: one thread serves them fastest. More only fight over
    # the GIL (10k chunks, 16 clients: 978 searches/s with 1 thread, 632 with 2, 425 with 4);
    # they pay off only for slow searches that leave the GIL (FTS5 on a huge workspace).
    reader_threads: int = _opt(1, lo=1, hi=64)
    # Searches the in-memory copies rank run on the event loop itself (no thread hop: 10k
    # chunks, 16 clients: ~1,280 searches/s against ~850); the rest go to the readers.
    inline_searches: bool = _opt(True)
    shutdown_timeout: float = _opt(10.0, lo=0.0, hi=3600)
    # Connections served at once; more are told so and closed. Also kept below the open
    # file limit (raised to its hard limit at start), so accepting never runs out of fds.
    max_connections: int = _opt(1000, lo=1, hi=1_000_000)
    # A connection with nothing in flight that neither sends nor reads for this long is
    # closed (clients reconnect on their next call). Never 0: an idle connection must
    # free its file descriptor some time.
    idle_timeout: float = _opt(300.0, lo=0.1, hi=86400 * 7)
    # Unsent answers and large frame bodies held for one connection, and for all of them:
    # beyond it a connection is not read (and large answers wait) until its peer reads.
    connection_buffer_mb: int = _opt(32, lo=1, hi=1 << 16)
    total_buffer_mb: int = _opt(256, lo=1, hi=1 << 20)


def _fleet_host(value: str) -> str | None:
    if ":" in value or "/" in value:
        return "must not contain ':' or '/' (searches name a workspace as host:name)"
    return None


@frozen_record(frozen=True, eq=False, repr=False)
class FleetConfig(Record):
    """Fleet mode (docs/fleet.md): publish to and search a shared Postgres with pgvector."""

    dsn: str = _opt("", secret=True)  # libpq URI or key=value; empty: fleet mode off
    dsn_env: str = _opt("")  # or the DSN from this environment variable
    password: str = _opt("", secret=True)  # when the DSN has none (libpq's PG* vars work too)
    password_env: str = _opt("")
    host: str = _opt("", check=_fleet_host)  # this daemon's name; empty: the host name
    schema: str = _opt(
        "memoryd_fleet", check=lambda v: None if v.isidentifier() else "must be a plain identifier"
    )
    lease_seconds: float = _opt(30.0, lo=3.0, hi=86400)  # a crashed daemon's lease lasts this
    connect_timeout: float = _opt(5.0, lo=0.5, hi=600)
    retry_max_seconds: float = _opt(60.0, lo=1.0, hi=3600)  # reconnect back-off ceiling


def _sync_host(value: str) -> str | None:
    if any(c in value for c in "<>`\n\r") or len(value) > 64:
        return "must be a plain name of at most 64 characters"
    return None


@frozen_record(frozen=True, eq=False, repr=False)
class SyncConfig(Record):
    """Git sync of workspaces across machines (docs/sync.md); each workspace opts in."""

    interval_seconds: float = _opt(300.0, lo=0.0, hi=86400 * 7)  # pull/push; 0: after each commit
    debounce_seconds: float = _opt(5.0, lo=0.0, hi=3600)  # commit once writes settle this long
    retry_min_seconds: float = _opt(30.0, lo=1.0, hi=86400)  # an unreachable remote: backoff
    retry_max_seconds: float = _opt(3600.0, lo=1.0, hi=86400 * 7)
    host: str = _opt("", check=_sync_host)  # this machine in commits and conflict notes
    tombstone_days: float = _opt(90.0, lo=1.0, hi=36500.0)  # forget records kept at least
    transcripts: bool = _opt(False)  # also sessions/*.jsonl ...
    transcript_max_bytes: int = _opt(4 * MiB, lo=0, hi=1 << 32)  # ... each up to this size


@frozen_record(frozen=True, eq=False, repr=False)
class AgentsConfig(Record):
    # Folders (absolute, or ~/...) whose transcripts ``flush`` may read besides the agents'
    # own (~/.claude/projects, ~/.openclaw) and each workspace's sessions/.
    transcript_folders: tuple[str, ...] = _opt(())


def _sync_repo(value: str) -> str | None:
    return None if value in ("memoryd", "workspace") else "must be memoryd or workspace"


@frozen_record(frozen=True, eq=False, repr=False)
class McpConfig(Record):
    # The origin an MCP ``memory_append`` is recorded with at best (docs/provenance.md):
    # ``agent``, or ``untrusted`` to hold every MCP write for the owner's review.
    append_origin: str = _opt("agent", choices=("agent", "untrusted"))


@frozen_record(frozen=True, eq=False, repr=False)
class WorkspaceConfig(Record):
    path: str = _opt("")
    name: str = _opt("")
    # Git sync (docs/sync.md): the remote (file://, ssh, https; credentials are git's own)
    sync_remote: str = _opt("")
    sync_branch: str = _opt("main")
    sync_repo: str = _opt("memoryd", check=_sync_repo)  # or the workspace's own repository


@frozen_record(frozen=True, eq=False, repr=False)
class Config(Record):
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    llm: LlmConfig = field(default_factory=LlmConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    jobs: JobsConfig = field(default_factory=JobsConfig)
    fleet: FleetConfig = field(default_factory=FleetConfig)
    agents: AgentsConfig = field(default_factory=AgentsConfig)
    forget: ForgetConfig = field(default_factory=ForgetConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    sync: SyncConfig = field(default_factory=SyncConfig)
    workspaces: tuple[WorkspaceConfig, ...] = ()
    source: str = ""  # where it was loaded from, for status and error messages


SECTIONS: dict[str, type[Any]] = {
    "embedding": EmbeddingConfig,
    "index": IndexConfig,
    "search": SearchConfig,
    "llm": LlmConfig,
    "server": ServerConfig,
    "fleet": FleetConfig,
    "agents": AgentsConfig,
    "forget": ForgetConfig,
    "mcp": McpConfig,
    "sync": SyncConfig,
}

# [jobs.<name>] tables; MEMORYD_JOBS_<NAME>_<KEY> in the environment.
JOB_SECTIONS: dict[str, type[Any]] = {
    "hippocampus": HippocampusConfig,
    "retention": RetentionConfig,
    "fallback_summary": FallbackSummaryConfig,
    "ledger_compaction": LedgerCompactionConfig,
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
        if not math.isfinite(num):  # nan passes every range check; inf is never meant
            raise ConfigError(f"{key} must be a finite number, got {value!r}")
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
        check = meta.get("check")
        problem = check(value) if check is not None else None
        if problem:
            raise ConfigError(f"{key} {problem}, got {value!r}")
        return value
    if origin is tuple:
        if from_env and isinstance(value, str):
            value = [p for p in value.split(os.pathsep) if p]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{key} must be a list of strings, got {value!r}")
        choices = meta.get("choices") or ()
        if choices and (not value or any(v not in choices for v in value)):
            raise ConfigError(
                f"{key} must be a non-empty list of {', '.join(choices)}, got {value!r}"
            )
        return tuple(dict.fromkeys(value))
    raise ConfigError(f"{key}: unsupported type {ftype!r}")  # pragma: no cover


@functools.cache
def _hint(cls: type, name: str) -> Any:
    """A field's type, read from its own annotation's text when first needed
    (typing.get_type_hints(cls) compiles every field's: ~0.35 M instructions each)."""
    one = types.SimpleNamespace(__annotations__={name: cls.__annotations__[name]})
    return typing.get_type_hints(one, vars(sys.modules[cls.__module__]), dict(vars(cls)))[name]


def _build(cls: type[T], data: Any, prefix: str, env_values: dict[str, str]) -> T:
    if not isinstance(data, dict):
        raise ConfigError(f"[{prefix}] must be a table, got {data!r}")
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    for key in data:
        if key not in known:
            raise ConfigError(f"unknown config key {prefix}.{key} (value {_shown(key, data[key])})")
    kwargs: dict[str, Any] = {}
    for name, f in known.items():
        if name in env_values or name in data:
            env = name in env_values
            value, hint = env_values[name] if env else data[name], _hint(cast(Any, cls), name)
            kwargs[name] = _coerce(f"{prefix}.{name}", value, hint, f.metadata, from_env=env)
    return cls(**kwargs)


def config_from_mapping(
    data: dict[str, Any], env: dict[str, str] | None = None, source: str = ""
) -> Config:
    """Build and validate a Config from parsed TOML plus ``MEMORYD_*`` environment overrides."""
    env = {} if env is None else env
    known_top = set(SECTIONS) | {"jobs", "workspaces"}
    for key in data:
        if key not in known_top:
            raise ConfigError(f"unknown config key {key} (value {data[key]!r})")
    env_by_section: dict[str, dict[str, str]] = {s: {} for s in SECTIONS}
    env_by_job: dict[str, dict[str, str]] = {j: {} for j in JOB_SECTIONS}
    for name, value in env.items():
        if not name.startswith("MEMORYD_"):
            continue
        rest = name[len("MEMORYD_") :].lower()
        section, _, key = rest.partition("_")
        if section == "jobs" and key:
            job, field_name = _split_job_key(key)
            if job is None or field_name not in {
                f.name for f in dataclasses.fields(JOB_SECTIONS[job])
            }:
                raise ConfigError(
                    f"unknown config key jobs.{key} (from {name}={_shown(key, value)}; "
                    f"jobs are {', '.join(JOB_SECTIONS)})"
                )
            env_by_job[job][field_name] = value
            continue
        if section in SECTIONS and key:
            if key not in {f.name for f in dataclasses.fields(SECTIONS[section])}:
                raise ConfigError(
                    f"unknown config key {section}.{key} (from {name}={_shown(key, value)})"
                )
            env_by_section[section][key] = value
        elif name not in OTHER_ENV + TEST_ENV:  # a misspelt section must not pass unseen
            raise ConfigError(
                f"unknown config key {rest} (from {name}={_shown(key, value)}; sections are "
                f"{', '.join([*SECTIONS, 'jobs'])}; other variables: {', '.join(OTHER_ENV)})"
            )
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
    raw_jobs = data.get("jobs", {})
    if not isinstance(raw_jobs, dict):
        raise ConfigError(f"jobs must be [jobs.<name>] tables, got {raw_jobs!r}")
    for job in raw_jobs:
        if job not in JOB_SECTIONS:
            raise ConfigError(f"unknown job jobs.{job} (jobs are {', '.join(JOB_SECTIONS)})")
    jobs = JobsConfig(
        **{
            job: _build(cls, raw_jobs.get(job, {}), f"jobs.{job}", env_by_job[job])
            for job, cls in JOB_SECTIONS.items()
        }
    )
    cfg = Config(workspaces=workspaces, jobs=jobs, source=source, **sections)
    _check_consistency(cfg)
    return cfg


def _split_job_key(key: str) -> tuple[str | None, str]:
    """``fallback_summary_enabled`` -> (``fallback_summary``, ``enabled``): job names hold '_'."""
    for job in sorted(JOB_SECTIONS, key=len, reverse=True):
        if key.startswith(job + "_"):
            return job, key[len(job) + 1 :]
    return None, ""


def _check_consistency(cfg: Config) -> None:
    s = cfg.search
    if s.vector_weight + s.text_weight + s.line_weight <= 0:
        raise ConfigError(
            "search.vector_weight, search.text_weight and search.line_weight are all 0: "
            "every score would be 0 and no search would find anything"
        )
    if cfg.index.chunk_overlap >= cfg.index.chunk_tokens:
        raise ConfigError(
            f"index.chunk_overlap ({cfg.index.chunk_overlap}) must be smaller than "
            f"index.chunk_tokens ({cfg.index.chunk_tokens})"
        )
    e = cfg.embedding
    if e.model_path and e.provider not in ("local", "auto") and e.fallback != "local":
        raise ConfigError(
            f"embedding.model_path is set but embedding.provider = {e.provider}: the folder's "
            'model is run by the local provider (provider = "local", or fallback = '
            '"local" for openai)'
        )
    if e.fallback != "none" and e.provider in ("local", "none"):
        raise ConfigError(
            f'embedding.fallback = {e.fallback} is for provider = "openai" (or auto), '
            f"not {e.provider}"
        )
    if "sessions" in s.sources and not cfg.index.sessions:
        raise ConfigError(
            "search.sources includes sessions but index.sessions is false: transcripts are "
            "not indexed (set index.sessions = true)"
        )
    for folder in cfg.agents.transcript_folders:
        if not (folder.startswith(("/", "~/")) and folder.strip("/~")):
            raise ConfigError(
                f"agents.transcript_folders: {folder!r} must be an absolute folder (or ~/...), "
                "not the whole file system"
            )
    if cfg.llm.context_tokens <= cfg.llm.max_output_tokens:
        raise ConfigError(
            f"llm.context_tokens ({cfg.llm.context_tokens}) must be larger than "
            f"llm.max_output_tokens ({cfg.llm.max_output_tokens}): the answer shares the window"
        )


def load_config(path: str | Path | None = None, env: dict[str, str] | None = None) -> Config:
    """Read the TOML file (missing is fine: all defaults) and apply environment overrides."""
    env = dict(os.environ) if env is None else env
    file = Path(path) if path is not None else config_path(env)
    data: dict[str, Any] = {}
    if file.exists():
        import tomllib  # here: most starts have no file to parse (~9 M instructions)

        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{file}: not valid TOML: {exc}") from None
        except RecursionError:  # tomllib parses nested arrays and tables recursively
            raise ConfigError(f"{file}: arrays or tables nested too deeply") from None
        except OSError as exc:  # a folder, no permission...
            raise ConfigError(f"{file}: cannot read the config file: {exc}") from None
    try:
        return config_from_mapping(data, env, source=str(file))
    except RecursionError:  # a value nested deep enough to exhaust the stack when shown
        raise ConfigError(f"{file}: a value is nested too deeply") from None


def resolve_secret(value: str, env_name: str, env: dict[str, str] | None = None) -> str:
    """An API key from the config value, else from the named environment variable."""
    env = dict(os.environ) if env is None else env
    return value or (env.get(env_name, "") if env_name else "")


__all__ = [
    "AgentsConfig",
    "Config",
    "EmbeddingConfig",
    "FallbackSummaryConfig",
    "FleetConfig",
    "HippocampusConfig",
    "IndexConfig",
    "JobsConfig",
    "LlmConfig",
    "RetentionConfig",
    "SearchConfig",
    "ServerConfig",
    "SyncConfig",
    "WorkspaceConfig",
    "config_from_mapping",
    "load_config",
    "resolve_secret",
]
