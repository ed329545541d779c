"""Fleet mode (docs/fleet.md): daemons on several hosts share one memory through Postgres.

Imported only when ``[fleet] dsn`` is set (psycopg is the ``memoryd[fleet]`` extra).
"""
