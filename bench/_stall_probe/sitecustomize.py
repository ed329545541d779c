"""bench/tail.py --probe: in a daemon started with STALL_PROBE_OUT set, record every garbage
collection of generation 1-2 and every event-loop callback over STALL_PROBE_MS (default 3),
one JSON line each, to that file. Not part of memoryd: put first on PYTHONPATH by the bench."""

import os

_OUT = os.environ.get("STALL_PROBE_OUT")
if _OUT:
    import asyncio.events
    import gc
    import json
    import time

    _f = open(_OUT, "a", buffering=1)  # noqa: SIM115 (lives as long as the process)
    _limit = float(os.environ.get("STALL_PROBE_MS", "3")) / 1000
    _gc_started = [0.0, 0.0]

    def _on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            _gc_started[:] = time.perf_counter(), time.thread_time()
            return
        took = time.perf_counter() - _gc_started[0]
        cpu = time.thread_time() - _gc_started[1]
        if info["generation"] >= 1 or took > _limit:
            _f.write(
                json.dumps(
                    {
                        "at": time.time(),
                        "gc": info["generation"],
                        "ms": took * 1000,
                        "cpu": cpu * 1000,
                        "collected": info["collected"],
                        "objects": len(gc.get_objects()) if info["generation"] == 2 else None,
                    }
                )
                + "\n"
            )

    gc.callbacks.append(_on_gc)
    _run = asyncio.events.Handle._run
    import sys
    import threading
    import traceback

    _now: list = [0, 0.0, None, []]  # callback number, started, thread id, stacks sampled

    def _watch() -> None:  # samples the loop thread's stack while a callback runs long
        while True:
            time.sleep(0.002)
            n, started, tid, stacks = _now
            if tid is None or not started or time.perf_counter() - started < _limit:
                continue
            frame = sys._current_frames().get(tid)
            if frame is not None and len(stacks) < 20 and _now[0] == n:
                stack = traceback.extract_stack(frame)[-14:]
                stacks.append(
                    [f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno} {f.name}" for f in stack]
                )

    if os.environ.get("STALL_PROBE_STACKS"):  # a thread waking every 2 ms: it competes too
        threading.Thread(target=_watch, daemon=True, name="stall-probe").start()

    def _timed_run(self) -> None:
        t, c = time.perf_counter(), time.thread_time()
        _now[:] = [_now[0] + 1, t, threading.get_ident(), []]
        _run(self)
        took = time.perf_counter() - t
        stacks = _now[3]
        _now[1] = 0.0
        if took > _limit:
            cpu = time.thread_time() - c
            row = {
                "at": time.time(),
                "callback": repr(self)[:200],
                "ms": took * 1000,
                "cpu": cpu * 1000,
            }
            if cpu > _limit:  # what it was doing (the samples differ from the first on)
                uniq = []
                for st in stacks:
                    if st not in uniq:
                        uniq.append(st)
                row["stacks"] = uniq[:6]
            _f.write(json.dumps(row) + "\n")

    asyncio.events.Handle._run = _timed_run

    if os.environ.get("STALL_PROBE_BIG"):  # the containers a full collection walks longest

        def _big(phase: str, info: dict) -> None:
            if phase != "stop" or info["generation"] != 2:
                return
            sizes = []
            for o in gc.get_objects():
                try:
                    n = len(o)
                except Exception:
                    continue
                if n > 2000:
                    sizes.append((n, type(o).__name__, repr(o)[:120]))
            sizes.sort(reverse=True)
            _f.write(json.dumps({"at": time.time(), "big": sizes[:15]}) + "\n")

        gc.callbacks.append(_big)

_PROFILE = os.environ.get("STALL_PROBE_PROFILE")
if _PROFILE:  # cProfile of the main thread (the event loop's), written at exit
    import atexit
    import cProfile
    import time

    _prof = cProfile.Profile(time.thread_time)  # CPU, not waits: a loaded machine leaves it
    _prof.enable()
    atexit.register(lambda: (_prof.disable(), _prof.dump_stats(_PROFILE)))

_MODULES = os.environ.get("STALL_PROBE_MODULES")
if _MODULES:  # the modules loaded when the bench touches MODULES.go (its first answer)
    import sys as _sys
    import threading as _threading
    import time as _time

    def _list_modules() -> None:
        while not os.path.exists(_MODULES + ".go"):
            _time.sleep(0.005)
        with open(_MODULES, "w") as f:
            f.write("\n".join(sorted(_sys.modules)) + "\n")

    _threading.Thread(target=_list_modules, daemon=True, name="stall-probe-modules").start()
