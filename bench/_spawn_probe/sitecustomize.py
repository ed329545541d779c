"""bench/spawn_instructions.py: in a daemon started with SPAWN_PROBE_OUT set, end the process
(os._exit) as soon as its first answer is written, having written the number of modules
loaded by then to that file; the start's wait for that answer (app.FIRST_ANSWER_FIRST_S) is
lifted, since under valgrind the answer takes longer. The end is a callback the first
request other than hello schedules as its dispatch returns (app.Daemon._dispatch, where the
daemon notes its first answer): it runs once the step that writes the answer has yielded,
as the daemon's own first-answer waiters do. (Until 4404f10 the probe replaced
Daemon._after_first_answer; since, the start imports the later modules before calling it.)
Not part of memoryd: put first on PYTHONPATH by the bench."""

import os
import sys

_OUT = os.environ.get("SPAWN_PROBE_OUT")


class _Watch:
    """Patches memoryd.app once it is loaded (asks nothing of any other import)."""

    @staticmethod
    def find_spec(name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name != "memoryd.app":
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path, target)
        exec_module = spec.loader.exec_module

        def patched(module):  # type: ignore[no-untyped-def]
            exec_module(module)
            module.FIRST_ANSWER_FIRST_S = 1e6

            dispatch = module.Daemon._dispatch

            def end() -> None:
                with open(_OUT, "w") as f:
                    f.write(str(len(sys.modules)))
                os._exit(0)

            async def watched(self, req):  # type: ignore[no-untyped-def]
                try:
                    return await dispatch(self, req)
                finally:
                    if req.method != "hello":  # the server writes the answer in this step
                        module.asyncio.get_running_loop().call_soon(end)

            module.Daemon._dispatch = watched
            sys.meta_path.remove(_Watch)

        spec.loader.exec_module = patched
        return spec


if _OUT:
    sys.meta_path.insert(0, _Watch)
