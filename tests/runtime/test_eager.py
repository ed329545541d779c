"""runtime/eager.start_eagerly: a coroutine's first step at once, the rest as a task that
behaves as if it had been one all along."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from memoryd.runtime.eager import start_eagerly

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def test_a_coroutine_that_never_waits_is_done_before_start_returns() -> None:
    seen: list[str] = []

    async def answer() -> None:
        seen.append("answered")

    async def main() -> None:
        assert start_eagerly(answer(), asyncio.get_running_loop()) is None
        assert seen == ["answered"]  # not on the loop's next turn: now

    asyncio.run(main())


def test_one_that_waits_goes_on_as_a_task_with_what_it_awaited() -> None:
    steps: list[Any] = []

    async def handler(first: asyncio.Future[int], second: asyncio.Future[int]) -> str:
        steps.append("started")
        steps.append(await first)
        await asyncio.sleep(0)  # a bare yield
        try:
            await second
        except LookupError as exc:
            steps.append(str(exc))
        return "done"

    async def main() -> None:
        loop = asyncio.get_running_loop()
        first, second = loop.create_future(), loop.create_future()
        task = start_eagerly(handler(first, second), loop)
        assert task is not None and steps == ["started"]
        first.set_result(7)
        await asyncio.sleep(0.01)
        assert steps == ["started", 7] and not task.done()
        second.set_exception(LookupError("gone"))
        assert await task == "done"
        assert steps == ["started", 7, "gone"]

    asyncio.run(main())


def test_cancelling_the_rest_is_thrown_in_where_it_waits() -> None:
    cleaned: list[bool] = []

    async def handler(never: asyncio.Future[None]) -> None:
        try:
            await never
        finally:
            cleaned.append(True)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        never = loop.create_future()
        task = start_eagerly(handler(never), loop)
        assert task is not None
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cleaned == [True] and task.cancelled() and never.cancelled()

    asyncio.run(main())


def test_a_failure_in_the_first_step_is_reported_not_raised_to_the_starter() -> None:
    reported: list[dict[str, Any]] = []

    async def broken() -> None:
        raise RuntimeError("bug")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, ctx: reported.append(ctx))
        assert start_eagerly(broken(), loop) is None

    asyncio.run(main())
    assert len(reported) == 1 and isinstance(reported[0]["exception"], RuntimeError)


def test_context_variables_set_by_it_stay_its_own_across_the_wait() -> None:
    async def handler(gate: asyncio.Future[None]) -> str:
        WHO.set("request")
        await gate
        return WHO.get()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        gate = loop.create_future()
        task = start_eagerly(handler(gate), loop)
        assert task is not None
        assert WHO.get() == "nobody"  # not leaked into the starter's context
        gate.set_result(None)
        assert await task == "request"

    asyncio.run(main())
