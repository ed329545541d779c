"""The scheduler: cron on the local wall clock across DST, catch-up once, single-flight,
no polling, wake on reload. A fake clock moves time; no test waits for real time."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from fakes.clock import FakeClock
from memoryd.cron import latest_at_or_before, next_after
from memoryd.errors import ConfigError
from memoryd.files.append import Appender
from memoryd.files.fsutil import atomic_write
from memoryd.files.locks import FileLocks
from memoryd.jobs.base import JobContext, JobFn, JobResult, JobSettings, JobSpec
from memoryd.jobs.history import History
from memoryd.jobs.runner import AlreadyRunning, Runner
from memoryd.jobs.scheduler import Scheduler
from memoryd.runtime.config import Config, config_from_mapping
from memoryd.runtime.state import StateDB
from memoryd.workspace.served import Workspace

pytestmark = pytest.mark.timeout(30)

NY = ZoneInfo("America/New_York")
UTC = dt.UTC


def at(*args: int, tz: dt.tzinfo = NY, fold: int = 0) -> dt.datetime:
    return dt.datetime(*args, tzinfo=tz, fold=fold)  # type: ignore[misc]


def utc(when: dt.datetime) -> dt.datetime:
    return when.astimezone(UTC)


# ---------------------------------------------------------------- cron across DST


def test_a_time_skipped_by_spring_forward_runs_once_at_the_end_of_the_gap() -> None:
    # 2025-03-09: New York clocks jump from 02:00 EST to 03:00 EDT; 02:30 does not exist.
    first = next_after("30 2 * * *", at(2025, 3, 8, 12, 0), NY)
    assert utc(first) == dt.datetime(2025, 3, 9, 7, 0, tzinfo=UTC)  # 03:00 EDT
    second = next_after("30 2 * * *", first, NY)
    assert (second.date(), second.hour, second.minute) == (dt.date(2025, 3, 10), 2, 30)
    assert utc(second) == dt.datetime(2025, 3, 10, 6, 30, tzinfo=UTC)


def test_fall_back_runs_an_ambiguous_time_once_and_the_day_after_is_25_hours_long() -> None:
    # 2025-11-02: clocks fall back from 02:00 EDT to 01:00 EST; 01:30 happens twice.
    before = next_after("30 2 * * *", at(2025, 11, 1, 12, 0), NY)
    assert utc(before) == dt.datetime(2025, 11, 2, 7, 30, tzinfo=UTC)  # 02:30 EST
    prev = latest_at_or_before("30 2 * * *", at(2025, 11, 1, 12, 0), NY)
    assert prev is not None and before.timestamp() - prev.timestamp() == 25 * 3600
    once = next_after("30 1 * * *", at(2025, 11, 1, 12, 0), NY)
    assert utc(once) == dt.datetime(2025, 11, 2, 5, 30, tzinfo=UTC)  # the first 01:30
    after = next_after("30 1 * * *", once, NY)
    assert after.date() == dt.date(2025, 11, 3)  # not again at the second 01:30
    inside = at(2025, 11, 2, 1, 20, fold=1)  # during the repeated hour
    assert utc(next_after("30 1 * * *", inside, NY)) == dt.datetime(2025, 11, 3, 6, 30, tzinfo=UTC)


def test_a_frequent_schedule_keeps_running_through_both_changes() -> None:
    when, seen = at(2025, 3, 9, 1, 0), []
    for _ in range(8):
        when = next_after("*/30 * * * *", when, NY)
        seen.append(utc(when).strftime("%H:%M"))
    # 01:30 EST, then the gap (02:00 and 02:30 collapse into 03:00 EDT), then on.
    assert seen == ["06:30", "07:00", "07:30", "08:00", "08:30", "09:00", "09:30", "10:00"]


def test_a_bad_schedule_is_a_config_error_naming_key_and_value() -> None:
    with pytest.raises(ConfigError) as err:
        config_from_mapping({"jobs": {"hippocampus": {"schedule": "0 3 * *"}}})
    assert "jobs.hippocampus.schedule" in str(err.value) and "'0 3 * *'" in str(err.value)
    with pytest.raises(ConfigError, match=r"unknown job jobs\.hipocampus"):
        config_from_mapping({"jobs": {"hipocampus": {}}})
    with pytest.raises(ConfigError, match=r"jobs\.retention\.action must be one of"):
        config_from_mapping({"jobs": {"retention": {"action": "shred"}}})
    cfg = config_from_mapping(
        {},
        env={
            "MEMORYD_JOBS_FALLBACK_SUMMARY_ENABLED": "false",
            "MEMORYD_JOBS_RETENTION_SCHEDULE": "@daily",
        },
    )
    assert cfg.jobs.fallback_summary.enabled is False and cfg.jobs.retention.schedule == "@daily"
    with pytest.raises(ConfigError, match=r"jobs\.retention_nope"):
        config_from_mapping({}, env={"MEMORYD_JOBS_RETENTION_NOPE": "1"})


# ---------------------------------------------------------------- the scheduler


@dataclass
class ProbeSettings:
    enabled: bool = True
    schedule: str = "30 2 * * *"


class Probe:
    """A real job registered under the name "probe": it records its runs and can be held."""

    def __init__(self) -> None:
        self.settings = ProbeSettings()
        self.runs: list[JobContext] = []
        self.release = threading.Event()
        self.release.set()

    def run(self, ctx: JobContext) -> JobResult:
        self.runs.append(ctx)
        self.release.wait(10)
        return JobResult(f"probe run {len(self.runs)}")

    def spec(self) -> JobSpec:
        def settings(_: Config) -> JobSettings:
            return self.settings

        def load() -> JobFn:
            return self.run

        return JobSpec("probe", "a test job", False, settings, load)


class Rig:
    def __init__(self, tmp: Path, start: dt.datetime) -> None:
        self.tmp = tmp
        self.root = tmp / "ws"
        self.root.mkdir(exist_ok=True)
        self.state = StateDB(tmp / "state.sqlite")
        self.history = History(self.state)
        self.clock = FakeClock(start)
        self.probe = Probe()
        self.config = config_from_mapping({})
        self.ws = Workspace("ws", self.root, "config")
        jobs = {"probe": self.probe.spec()}
        locks = FileLocks()
        self.runner = Runner(
            self.history, self.clock, lambda: self.config, Appender(locks), {}, jobs, locks=locks
        )
        self.scheduler = Scheduler(
            self.history, self.clock, lambda: self.config, lambda: [self.ws], self.runner, jobs
        )

    async def settle(self) -> None:
        """Until the scheduler sleeps again and no run is in progress."""
        for _ in range(2000):
            await asyncio.sleep(0.001)
            if self.scheduler.sleeping and not self.runner.tasks():
                return
        raise AssertionError("the scheduler did not settle")

    def records(self) -> list[tuple[str, str, str | None]]:
        runs = reversed(self.history.recent("probe", self.root, 100))
        return [
            (
                r.trigger,
                r.status,
                None
                if r.scheduled_for is None
                else dt.datetime.fromtimestamp(r.scheduled_for, UTC).strftime("%m-%d %H:%M"),
            )
            for r in runs
        ]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    r = Rig(tmp_path, at(2025, 3, 8, 12, 0))
    yield r
    r.state.close()


def test_the_scheduler_runs_on_the_dst_day_at_the_end_of_the_gap_and_sleeps_between(
    rig: Rig,
) -> None:
    async def go() -> None:
        rig.scheduler.start()
        await rig.settle()
        assert rig.clock.sleeping_until == at(2025, 3, 9, 3, 0)  # the 02:30 that isn't
        sleeps = rig.clock.sleeps
        rig.clock.set(at(2025, 3, 9, 3, 0))
        await rig.settle()
        assert rig.clock.sleeps == sleeps + 1  # woke once, ran, slept once: no polling
        assert rig.clock.sleeping_until == at(2025, 3, 10, 2, 30)
        await rig.scheduler.stop(5)

    asyncio.run(go())
    assert rig.records() == [("schedule", "ok", "03-09 07:00")]
    assert rig.probe.runs[0].now == at(2025, 3, 9, 3, 0)


def test_a_first_start_runs_nothing_for_slots_before_it(rig: Rig) -> None:
    rig.clock.set(at(2025, 3, 20, 12, 0))

    async def go() -> None:
        rig.scheduler.start()
        await rig.settle()
        await rig.scheduler.stop(5)

    asyncio.run(go())
    assert rig.records() == []


def test_catch_up_after_downtime_runs_once_not_once_per_missed_slot(tmp_path: Path) -> None:
    first = Rig(tmp_path, at(2025, 3, 10, 12, 0))

    async def day_one() -> None:
        first.scheduler.start()
        await first.settle()
        first.clock.set(at(2025, 3, 11, 2, 30))
        await first.settle()
        await first.scheduler.stop(5)

    asyncio.run(day_one())
    assert first.records() == [("schedule", "ok", "03-11 06:30")]
    first.state.close()

    # The daemon was down for four nights; it starts again at noon.
    again = Rig(tmp_path, at(2025, 3, 15, 12, 0))

    async def restart() -> None:
        again.scheduler.start()
        await again.settle()
        assert again.clock.sleeping_until == at(2025, 3, 16, 2, 30)  # back on schedule
        await again.scheduler.stop(5)

    asyncio.run(restart())
    assert again.records() == [
        ("schedule", "ok", "03-11 06:30"),
        ("catch-up", "ok", "03-15 06:30"),
    ]  # the latest missed slot
    again.state.close()


def test_a_machine_that_slept_through_slots_catches_up_once_on_waking(rig: Rig) -> None:
    async def go() -> None:
        rig.scheduler.start()
        await rig.settle()
        rig.clock.set(at(2025, 3, 12, 8, 15))  # asleep from before 03-09 until the 12th
        await rig.settle()
        await rig.scheduler.stop(5)

    asyncio.run(go())
    assert rig.records() == [("catch-up", "ok", "03-12 06:30")]


def test_single_flight_a_slot_due_while_the_job_runs_is_recorded_skipped(rig: Rig) -> None:
    rig.probe.settings.schedule = "*/5 * * * *"
    rig.probe.release.clear()

    async def go() -> None:
        rig.scheduler.start()
        await rig.settle()
        manual = asyncio.ensure_future(
            rig.scheduler.run_now("probe", rig.ws, dry_run=False, force=False)
        )
        await asyncio.sleep(0.01)
        with pytest.raises(AlreadyRunning, match="already running for workspace ws"):
            await rig.scheduler.run_now("probe", rig.ws, dry_run=False, force=False)
        rig.clock.set(at(2025, 3, 8, 12, 5))
        for _ in range(500):
            await asyncio.sleep(0.001)
            if len(rig.records()) == 2:
                break
        rig.probe.release.set()
        assert (await manual).status == "ok"
        await rig.settle()
        await rig.scheduler.stop(5)

    asyncio.run(go())
    assert len(rig.probe.runs) == 1
    assert rig.records() == [("manual", "ok", None), ("schedule", "skipped", "03-08 17:05")]
    skipped = rig.history.recent("probe", rig.root, 1)[0]
    assert "already running" in skipped.message


def test_a_config_reload_wakes_the_scheduler_with_the_new_schedule(rig: Rig) -> None:
    async def go() -> None:
        rig.scheduler.start()
        await rig.settle()
        assert rig.clock.sleeping_until == at(2025, 3, 9, 3, 0)
        rig.probe.settings.schedule = "0 13 * * *"
        rig.scheduler.wake()
        await rig.settle()
        assert rig.clock.sleeping_until == at(2025, 3, 8, 13, 0)
        rig.probe.settings.enabled = False
        rig.scheduler.wake()
        await rig.settle()
        assert rig.scheduler.next_run("probe", rig.ws) is None
        await rig.scheduler.stop(5)

    asyncio.run(go())
    assert rig.records() == []


def test_shutdown_during_a_run_records_it_interrupted(rig: Rig) -> None:
    rig.probe.release.clear()

    async def go() -> None:
        rig.scheduler.start()
        await rig.settle()
        run = asyncio.ensure_future(
            rig.scheduler.run_now("probe", rig.ws, dry_run=False, force=False)
        )
        await asyncio.sleep(0.01)
        await rig.scheduler.stop(0.05)
        rig.probe.release.set()
        (outcome,) = await asyncio.gather(run, return_exceptions=True)
        assert isinstance(outcome, asyncio.CancelledError)  # the caller hears it was cut

    asyncio.run(go())
    (record,) = rig.history.recent("probe", rig.root, 5)
    assert record.status == "failed" and "interrupted" in record.message
    assert rig.runner.cancelled.is_set()


def test_a_run_left_running_by_a_dead_daemon_is_marked_failed_at_the_next_start(rig: Rig) -> None:
    rig.history.start(
        "probe",
        rig.root,
        "ws",
        trigger="schedule",
        dry_run=False,
        scheduled_for=None,
        started_at=rig.clock.now().timestamp(),
    )
    rig.scheduler.recover()
    (record,) = rig.history.recent("probe", rig.root, 5)
    assert record.status == "failed" and "the daemon stopped during the run" in record.message


def test_a_scheduled_run_still_happens_when_recording_it_fails(rig: Rig) -> None:
    """The state database failing (here: closed under the scheduler) is logged; the run
    it would have recorded is not lost."""

    async def go() -> None:
        rig.scheduler.start()
        await rig.settle()
        rig.state.close()  # every write of the anchor and of the run record now fails
        rig.clock.set(at(2025, 3, 9, 3, 0))
        await rig.settle()
        await rig.scheduler.stop(5)

    asyncio.run(go())
    assert [ctx.now for ctx in rig.probe.runs] == [at(2025, 3, 9, 3, 0)]


@pytest.mark.parametrize("renamed", [True, False])
def test_a_run_killed_after_writing_its_file_is_ok_at_the_next_start_not_interrupted(
    rig: Rig, renamed: bool
) -> None:
    """A hippocampus run that wrote MEMORY.md before a kill was recorded failed: interrupted.
    Its checkpoint says what it was writing; the next start checks the file."""
    new = b"# Memory\n\nconsolidated\n"
    (rig.root / "MEMORY.md").write_bytes(b"# Memory\n\nold\n")

    async def go() -> None:
        rig.probe.release.clear()
        run = asyncio.create_task(
            rig.scheduler.run_now("probe", rig.ws, dry_run=False, force=False)
        )
        for _ in range(1000):
            if rig.probe.runs:
                break
            await asyncio.sleep(0.005)
        ctx = rig.probe.runs[0]
        ctx.checkpoint(
            {"writing": {"path": "MEMORY.md", "sha256": hashlib.sha256(new).hexdigest()}}
        )
        if renamed:
            atomic_write(rig.root / "MEMORY.md", new)
        # The process dies here: the next start finds the row still running.
        later = History(StateDB(rig.tmp / "state.sqlite"))
        assert later.mark_interrupted(rig.clock.now().timestamp()) == 1
        (record,) = later.recent("probe", rig.root, 5)
        if renamed:
            assert record.status == "ok" and "MEMORY.md was written" in record.message
        else:
            assert record.status == "failed" and "interrupted" in record.message
        rig.probe.release.set()
        await run

    asyncio.run(go())
