"""A coroutine's first step run at once, where it is started, instead of on the event loop's
next turn: ``start_eagerly`` (what Python 3.12's ``eager_start`` tasks do, for 3.11 too).

A request whose answer is in memory (a search, a hello) never waits: started as a task,
it only ran on the loop's next turn, after a ``select`` that gave the interpreter lock up
(a thread waiting for it, the watch thread every 50 ms or hit counting, took it there and
the request waited for it to come back: issue 38's tail), and it cost a task, its
scheduling and its done callback. Run at once, it is answered within the read that brought
it. One that does wait goes on as a task from where it stopped, as if it had been one all
along: what it awaits wakes it, a cancellation is thrown in where it waits.

On 3.11 no task is current during that first step (``asyncio.current_task()`` is None
there), as in any callback; 3.12's own eager tasks are used from 3.12 on.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


def start_eagerly(
    coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop
) -> asyncio.Task[T] | None:
    """Run ``coro`` until it first waits. None when it finished meanwhile (an exception
    it raised is reported as an unretrieved task's would be); else the task that runs the
    rest of it."""
    if sys.version_info >= (3, 12):  # pragma: no cover (3.11 here)
        task = asyncio.Task(coro, loop=loop, eager_start=True)
        if not task.done():
            return task
        if not task.cancelled() and task.exception() is not None:
            _report(loop, task.exception())
        return None
    context = contextvars.copy_context()  # what a task would have copied
    try:
        waiting = context.run(coro.send, None)
    except StopIteration:
        return None
    except Exception as exc:
        _report(loop, exc)
        return None
    return loop.create_task(_rest(coro, waiting), context=context)


async def _rest(coro: Coroutine[Any, Any, T], waiting: Any) -> T:
    return await _Resumed(coro, waiting)


class _Resumed(Generic[T]):
    """The rest of a coroutine that stopped on ``waiting`` (a future, or None for a bare
    yield): what it yields passes to the task unchanged, what the task sends or throws
    (a result, an exception, a cancellation) passes back to it."""

    __slots__ = ("_coro", "_waiting")

    def __init__(self, coro: Coroutine[Any, Any, T], waiting: Any) -> None:
        self._coro = coro
        self._waiting = waiting

    def __await__(self) -> Generator[Any, None, T]:
        coro, waiting = self._coro, self._waiting
        while True:
            try:
                yield waiting
            except BaseException as exc:  # into the coroutine, as a task would
                try:
                    waiting = coro.throw(exc)
                except StopIteration as stop:
                    return cast(T, stop.value)
            else:
                try:
                    waiting = coro.send(None)
                except StopIteration as stop:
                    return cast(T, stop.value)


def _report(loop: asyncio.AbstractEventLoop, exc: BaseException | None) -> None:
    loop.call_exception_handler(
        {"message": "a request started at once failed in its first step", "exception": exc}
    )
