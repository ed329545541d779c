"""One writer per (fleet host, workspace): a lease row with an expiry on Postgres' clock.

The holder id is kept in the daemon's state folder, so the same daemon restarting takes its
lease back at once; another daemon claiming the same host and workspace name is refused
until the lease expires (a crashed daemon's lasts at most ``lease_seconds``).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memoryd.errors import MemorydError
from memoryd_client.protocol import ErrorCode


class LeaseRefused(MemorydError):
    code = ErrorCode.UNAVAILABLE


def holder_id(state_dir: Path) -> str:
    """This daemon's id in the fleet: made once, kept beside its state database."""
    path = state_dir / "fleet-id"
    try:
        found = path.read_text(encoding="utf-8").strip()
        if found:
            return found
    except FileNotFoundError:
        pass
    new = uuid.uuid4().hex
    tmp = path.with_name(f".fleet-id.{os.getpid()}")
    tmp.write_text(new + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return new


def holder_info() -> dict[str, Any]:
    return {"pid": os.getpid(), "machine": socket.gethostname()}


def claim(
    conn: psycopg.Connection[Any], schema: str, host: str, name: str, holder: str, seconds: float
) -> tuple[int, bool]:
    """(the workspace row's id, whether the row is new), with the lease ours for ``seconds``
    more; LeaseRefused when another daemon holds it. A new row means nothing of it is
    published (a dropped schema comes back with ids from 1 again)."""
    s = sql.Identifier(schema)
    row = conn.execute(
        sql.SQL(
            "INSERT INTO {s}.workspaces AS w (host, name, holder, holder_info, lease_expires) "
            "VALUES (%(host)s, %(name)s, %(holder)s, %(info)s, "
            "        now() + make_interval(secs => %(secs)s)) "
            "ON CONFLICT (host, name) DO UPDATE SET holder = excluded.holder, "
            "    holder_info = excluded.holder_info, lease_expires = excluded.lease_expires "
            "WHERE w.holder IS NULL OR w.holder = excluded.holder OR w.lease_expires < now() "
            "RETURNING w.id, (w.xmax = 0)"
        ).format(s=s),
        {
            "host": host,
            "name": name,
            "holder": holder,
            "info": Jsonb(holder_info()),
            "secs": seconds,
        },
    ).fetchone()
    if row is not None:
        return int(row[0]), bool(row[1])
    other = conn.execute(
        sql.SQL(
            "SELECT holder_info, lease_expires FROM {s}.workspaces WHERE host = %s AND name = %s"
        ).format(s=s),
        (host, name),
    ).fetchone()
    info: dict[str, Any] = other[0] if other else {}
    until: dt.datetime | None = other[1] if other else None
    when = until.astimezone(dt.UTC).strftime("%H:%M:%S UTC") if until else "?"
    raise LeaseRefused(
        f"workspace {name!r} of fleet host {host!r} is published by another daemon "
        f"(pid {info.get('pid', '?')} on {info.get('machine', '?')}) until {when}; "
        "give one of them another [fleet] host (or workspace name)",
        {"host": host, "workspace": name, "holder": info},
    )


def release(conn: psycopg.Connection[Any], schema: str, ws_id: int, holder: str) -> None:
    """A clean stop: the lease ends now, so another daemon may take the name at once."""
    conn.execute(
        sql.SQL(
            "UPDATE {}.workspaces SET lease_expires = now() WHERE id = %s AND holder = %s"
        ).format(sql.Identifier(schema)),
        (ws_id, holder),
    )
