"""``[fleet]`` resolved: the connection string with its secret, a masked copy for people, and
this daemon's name in the fleet."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memoryd.errors import ConfigError
from memoryd.runtime.config import FleetConfig, resolve_secret


@dataclass(frozen=True)
class FleetSettings:
    conninfo: str = ""  # with the password: never logged, never shown
    shown: str = ""  # the DSN with its password masked, for status and logs
    host: str = ""
    schema: str = "memoryd_fleet"
    lease_seconds: float = 30.0
    connect_timeout: float = 5.0
    retry_max_seconds: float = 60.0

    def __repr__(self) -> str:  # a stray log of the object must not carry the password
        return f"FleetSettings(dsn={self.shown!r}, host={self.host!r})"


def fleet_settings(cfg: FleetConfig, env: Mapping[str, str]) -> FleetSettings:
    dsn = resolve_secret(cfg.dsn, cfg.dsn_env, dict(env))
    if not dsn:
        raise ConfigError("fleet.dsn is empty (set it, or fleet.dsn_env to a variable that is)")
    try:
        params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    except Exception as exc:  # psycopg.ProgrammingError; its text may quote the DSN
        raise ConfigError(
            f"fleet.dsn is not a valid Postgres connection string ({type(exc).__name__})"
        ) from None
    password = resolve_secret(cfg.password, cfg.password_env, dict(env))
    if password and not params.get("password"):
        params["password"] = password
    params.setdefault("connect_timeout", str(max(1, round(cfg.connect_timeout))))
    params.setdefault("application_name", "memoryd")
    masked = {k: ("***" if k == "password" else v) for k, v in params.items()}
    return FleetSettings(
        conninfo=make_conninfo("", **params),
        shown=make_conninfo("", **masked),
        host=cfg.host or socket.gethostname(),
        schema=cfg.schema,
        lease_seconds=cfg.lease_seconds,
        connect_timeout=cfg.connect_timeout,
        retry_max_seconds=cfg.retry_max_seconds,
    )
