"""A real Postgres with pgvector for the fleet tests (scratch_postgres.py).

Where none can be had the tests skip with the reason, except when FLEET_TESTS_POSTGRES is
``required`` (.ci/run sets it): there a missing Postgres fails them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from scratch_postgres import PostgresUnavailable, ScratchPostgres

_names = itertools.count(1)


def scratch_postgres() -> Iterator[ScratchPostgres]:
    try:
        pg = ScratchPostgres()
        pg.__enter__()
    except PostgresUnavailable as exc:
        if os.environ.get("FLEET_TESTS_POSTGRES") == "required":
            pytest.fail(f"FLEET_TESTS_POSTGRES=required but {exc}")
        pytest.skip(f"no Postgres with pgvector here: {exc}")
    try:
        yield pg
    finally:
        pg.__exit__(None, None, None)


def new_database(pg: ScratchPostgres) -> str:
    return pg.create_database(f"fleet{os.getpid()}_{next(_names)}")
