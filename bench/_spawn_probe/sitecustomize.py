"""bench/spawn_instructions.py: in a daemon started with SPAWN_PROBE_OUT set, end the process
(os._exit) as soon as its first answer is written, having written the number of modules
loaded by then to that file; the start's wait for that answer (app.FIRST_ANSWER_FIRST_S) is
lifted, since under valgrind the answer takes longer. Not part of memoryd: put first on
PYTHONPATH by the bench."""

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

            def after_first_answer(self):  # type: ignore[no-untyped-def]
                # app.Daemon._dispatch sets _answered in its finally; the server has
                # written the answer before the background task that calls this wakes.
                with open(_OUT, "w") as f:
                    f.write(str(len(sys.modules)))
                os._exit(0)

            module.Daemon._after_first_answer = after_first_answer
            sys.meta_path.remove(_Watch)

        spec.loader.exec_module = patched
        return spec


if _OUT:
    sys.meta_path.insert(0, _Watch)
