"""A throwaway Postgres with pgvector for the fleet tests and bench/fleet.py (test-only: not
in the wheel): initdb in a folder, one server on a Unix socket in it, no TCP port, stopped
and removed by its owner.

The binaries come from ``MEMORYD_PG_BIN`` (a folder with initdb and postgres), else the
``pgserver`` wheel (it ships Postgres 16 with pgvector; pip-installable, so CI needs no
system packages), else the system's ``pg_config --bindir`` when that install has pgvector.
Postgres refuses to run as root: as root the server runs as ``nobody`` (its folder is
handed to that user), which is what a CI container usually is. A checkout in a folder
closed to others (/root, a ``mktemp -d`` folder) hides the wheel's binaries from that user:
then they run from a copy of the install in the server's own folder (open to that user,
removed with it), which is made where that user can reach it.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 30.0


class PostgresUnavailable(Exception):
    """No Postgres with pgvector here: the message says what was looked for."""


def find_bin_dir(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    looked = []
    if env.get("MEMORYD_PG_BIN"):
        return Path(env["MEMORYD_PG_BIN"])
    spec = importlib.util.find_spec("pgserver")  # not imported: its import has side effects
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        if (candidate / "postgres").exists():
            return candidate
    looked.append("the pgserver wheel (pip install pgserver)")
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run(
            [pg_config, "--bindir", "--sharedir"], capture_output=True, text=True, check=False
        ).stdout.split()
        if len(out) == 2 and (Path(out[1]) / "extension" / "vector.control").exists():
            return Path(out[0])
        looked.append(f"the system Postgres ({out[0] if out else pg_config}: no pgvector)")
    else:
        looked.append("a system Postgres (no pg_config on PATH)")
    raise PostgresUnavailable(
        "no Postgres with pgvector: looked for MEMORYD_PG_BIN, " + ", ".join(looked)
    )


def _as(user: str | None) -> dict[str, Any]:
    """subprocess arguments to run as ``user`` with its own group only: root's groups kept
    would make a folder's group bits (root's) apply instead of the bits for others."""
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _runs_as(user: str, bin_dir: Path) -> bool:
    try:
        done = subprocess.run(
            [str(bin_dir / "postgres"), "--version"], capture_output=True, timeout=60, **_as(user)
        )
    except (PermissionError, FileNotFoundError):
        return False
    return done.returncode == 0


def _open_to_others(folder: Path) -> None:
    """Let any user read the folder's files and enter its folders (and run what runs)."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        extra = stat.S_IROTH | (stat.S_IXOTH if path.is_dir() or mode & stat.S_IXUSR else 0)
        path.chmod(stat.S_IMODE(mode) | extra)


def bin_dir_for(user: str | None, bin_dir: Path, copy: Path) -> Path:
    """``bin_dir``, or when ``user`` cannot run its postgres (a folder on the way closed to
    it), the bin folder of a copy of its install (bin, lib, share) made in ``copy``."""
    if user is None or _runs_as(user, bin_dir):
        return bin_dir
    root = bin_dir.resolve().parent  # the wheel's .../site-packages/pgserver/pginstall
    into = copy / root.parent.name / root.name
    for part in ("bin", "lib", "share"):
        if (root / part).is_dir():
            shutil.copytree(root / part, into / part, symlinks=True)
    # the wheel's binaries find its own libraries at $ORIGIN/../../../pgserver.libs
    libs = root.parent.parent / f"{root.parent.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, copy / libs.name, symlinks=True)
    _open_to_others(copy)
    return into / "bin"


def _shared_tmp() -> str:
    """The temp folder, if every folder on its way lets others in; else /tmp."""
    temp = Path(tempfile.gettempdir()).resolve()
    if all(p.stat().st_mode & stat.S_IXOTH for p in [temp, *temp.parents]):
        return str(temp)
    return "/tmp"


class ScratchPostgres:
    """``with ScratchPostgres() as pg: pg.create_database("db")``; ``stop()``/``start()`` in
    between stand for an outage (the data survives). Its folder is a new one under the
    system's temp folder (the server's user must reach it, and the socket path stays short),
    removed on exit."""

    def __init__(self, bin_dir: Path | None = None) -> None:
        self.user: str | None = "nobody" if os.geteuid() == 0 else None
        self.bin = bin_dir or find_bin_dir()
        where = _shared_tmp() if self.user else None
        self.folder = Path(tempfile.mkdtemp(prefix="memoryd-pg-", dir=where))
        self.data = self.folder / "data"
        self.proc: subprocess.Popen[bytes] | None = None

    def _run(self, args: list[str]) -> None:
        try:
            done = subprocess.run(
                args, capture_output=True, check=False, timeout=120, **_as(self.user)
            )
        except PermissionError as exc:
            raise PostgresUnavailable(self._unreachable(exc)) from None
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"{Path(args[0]).name} failed: {done.stderr.decode(errors='replace')[-2000:]}"
            )

    def _unreachable(self, exc: OSError) -> str:
        who = f"user {self.user}" if self.user else "this user"
        return (
            f"{who} cannot run {exc.filename}: a folder on its way is not open to it (as root "
            "the server runs as nobody, so a checkout under a 0700 folder such as /root or a "
            "mktemp -d folder hides the binaries): put the checkout in a folder others may "
            f"enter, or run the tests as a normal user ({exc.strerror})"
        )

    def init(self) -> None:
        # a copy of the binaries, if needed, lives and goes with the server's folder
        self.bin = bin_dir_for(self.user, self.bin, self.folder / "install")
        self.folder.chmod(0o755)
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self._run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
                "--no-instructions",
            ]
        )

    def start(self) -> None:
        log = open(self.folder / "postgres.log", "ab")  # noqa: SIM115  # the server's own
        try:
            self.proc = subprocess.Popen(
                [
                    str(self.bin / "postgres"),
                    "-D",
                    str(self.data),
                    "-k",
                    str(self.folder),
                    "-h",
                    "",
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "max_connections=200",
                ],
                stdout=log,
                stderr=log,
                **_as(self.user),
            )
        except PermissionError as exc:
            raise PostgresUnavailable(self._unreachable(exc)) from None
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (self.folder / ".s.PGSQL.5432").exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.folder / "postgres.log").read_text(errors="replace")[-2000:]
                self.stop()
                raise PostgresUnavailable(f"postgres did not start: {tail}")
            time.sleep(0.05)
        self._wait_ready(deadline)

    def _wait_ready(self, deadline: float) -> None:
        import psycopg

        while True:
            try:
                with psycopg.connect(self.dsn("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()  # smart shutdown would wait for clients; SIGINT is "fast"
        proc.send_signal(2)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def dsn(self, database: str) -> str:
        return f"host={self.folder} port=5432 user=postgres dbname={database}"

    def create_database(self, name: str) -> str:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.dsn(name)

    def __enter__(self) -> ScratchPostgres:
        try:
            self.init()
            self.start()
        except BaseException:
            self.__exit__()  # no folder left behind by a server that could not start
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
