"""Whether fleet mode is on, decided without importing psycopg (the memoryd[fleet] extra)."""

from __future__ import annotations

from collections.abc import Mapping

from memoryd.runtime.config import FleetConfig, resolve_secret


def fleet_configured(cfg: FleetConfig, env: Mapping[str, str]) -> bool:
    return bool(resolve_secret(cfg.dsn, cfg.dsn_env, dict(env)))
