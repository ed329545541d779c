"""Modules imported on a worker thread ahead of their first use on the event loop: an
import's own work there (classes made, patterns compiled, croniter running ``file`` on the
interpreter) holds every answer up, a status asked while a first index runs too."""

from __future__ import annotations

import contextlib


def engine() -> None:
    """What a first workspace.add would otherwise wait for: the index modules, and the
    tokenizer its chunking counts with (let go again after a minute unused, as always)."""
    import memoryd.index.workspace  # noqa: F401
    from memoryd.embeddings.tokenizer import load_tokenizer

    load_tokenizer()


def later() -> None:
    """What the daemon makes on the event loop once its first answer is out: the upkeep
    (services.py: the jobs, git sync, their listeners on the watch), the method groups made
    then (rpc/wiring.py's ``_later``) and the scheduler's croniter. On the loop their imports
    took 160-290 ms at load 7 (90 ms idle), every answer waiting. A module that fails to
    import here fails again where it is used, which says so."""
    with contextlib.suppress(ImportError):
        import croniter  # noqa: F401

        import memoryd.jobs.flush_queue
        import memoryd.jobs.history
        import memoryd.jobs.runner
        import memoryd.jobs.scheduler
        import memoryd.jobs.transcript_watch
        import memoryd.lifecycle.forget_service
        import memoryd.rpc.agent_methods
        import memoryd.rpc.job_methods
        import memoryd.rpc.lifecycle_methods
        import memoryd.rpc.review_methods
        import memoryd.rpc.sync_methods
        import memoryd.sync.service
        import memoryd.workspace.sync_forgets  # noqa: F401
