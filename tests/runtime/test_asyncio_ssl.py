"""runtime/asyncio_ssl: asyncio imported without ssl, then given it, is what a plain import
of asyncio gives: every module of asyncio and ssl, every name they bind (tested in fresh
interpreters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Every name of every asyncio/ssl module: its type, and for a module, a class or a tuple of
# classes, which one (what another user of asyncio could notice).
SUMMARY = """
import json, sys, types
def shown(v):
    if isinstance(v, types.ModuleType):
        return "module " + v.__name__
    if isinstance(v, type):
        return "class " + v.__module__ + "." + v.__qualname__
    if isinstance(v, tuple) and all(isinstance(x, type) for x in v):
        return "classes " + ",".join(x.__module__ + "." + x.__qualname__ for x in v)
    return type(v).__name__
print(json.dumps({
    name: {k: shown(v) for k, v in vars(m).items()}
    for name, m in sorted(sys.modules.items())
    if m is not None and name.split(".")[0] in ("asyncio", "ssl", "_ssl")
}))
"""
PLAIN = "import asyncio, ssl\n" + SUMMARY
GIVEN = (
    """
import sys
from memoryd.runtime import asyncio_ssl
asyncio_ssl.import_asyncio()
import asyncio
assert "ssl" not in sys.modules and "_ssl" not in sys.modules and asyncio_ssl.owed()
assert asyncio.base_events.ssl is None
assert asyncio_ssl.give_ssl() == [
    "asyncio.base_events", "asyncio.selector_events", "asyncio.sslproto"
]
assert not asyncio_ssl.owed()
"""
    + SUMMARY
)


def _run(code: str) -> dict[str, dict[str, str]]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded: dict[str, dict[str, str]] = json.loads(out.stdout)
    return loaded


def test_asyncio_given_ssl_is_asyncio_imported_with_it() -> None:
    plain, given = _run(PLAIN), _run(GIVEN)
    assert given == plain
    assert given["asyncio.sslproto"]["SSLAgainErrors"] == (
        "classes ssl.SSLWantReadError,ssl.SSLSyscallError"
    )
    assert given["asyncio.base_events"]["ssl"] == "module ssl"


def test_asyncio_imported_before_is_left_as_it_is() -> None:
    code = """
import asyncio, sys
from memoryd.runtime import asyncio_ssl
asyncio_ssl.import_asyncio()
assert not asyncio_ssl.owed() and asyncio.base_events.ssl is sys.modules["ssl"]
asyncio_ssl.give_ssl()
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_tls_through_asyncio_works_once_given() -> None:
    # A TLS client handshake through asyncio's own transport (sslproto), against a plain
    # server that closes: the error is the handshake's, not "ssl module is not available".
    code = """
import asyncio, ssl, sys
from memoryd.runtime import asyncio_ssl
asyncio_ssl.import_asyncio()
import asyncio
asyncio_ssl.give_ssl()

async def main():
    async def close(reader, writer):
        writer.close()
    server = await asyncio.start_server(close, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await asyncio.open_connection("127.0.0.1", port, ssl=ssl.create_default_context(),
                                      server_hostname="localhost")
    except (ssl.SSLError, ConnectionError, OSError) as exc:
        print(type(exc).__name__)
    server.close()

asyncio.run(main())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() in {"SSLEOFError", "ConnectionResetError", "SSLError"}, out.stdout


def test_a_python_not_checked_imports_asyncio_with_ssl() -> None:
    code = """
import sys
from memoryd.runtime import asyncio_ssl
asyncio_ssl.CHECKED = frozenset()
asyncio_ssl.import_asyncio()
assert "ssl" in sys.modules and not asyncio_ssl.owed()
assert sys.modules["asyncio.base_events"].ssl is sys.modules["ssl"]
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_another_module_left_without_ssl_is_given_it_at_once(tmp_path: Path) -> None:
    # A module imported with asyncio that also allows for a missing ssl, and is not one of
    # asyncio's: not the shape checked, so nothing is deferred.
    (tmp_path / "other_tls.py").write_text(
        "try:\n    import ssl\nexcept ImportError:\n    ssl = None\n"
    )
    code = """
import importlib.abc, sys
class Along(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "asyncio.base_events":
            sys.meta_path.remove(self)
            import other_tls
        return None
sys.meta_path.insert(0, Along())
from memoryd.runtime import asyncio_ssl
asyncio_ssl.import_asyncio()
import asyncio, other_tls
assert not asyncio_ssl.owed() and "ssl" in sys.modules
assert other_tls.ssl is sys.modules["ssl"] is asyncio.sslproto.ssl
assert asyncio.sslproto.SSLAgainErrors
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr


def test_only_sslproto_s_own_code_defines_its_again_errors() -> None:
    import asyncio.base_events
    import asyncio.sslproto

    from memoryd.runtime import asyncio_ssl

    assert "SSLAgainErrors" in asyncio_ssl._stored_names(asyncio.sslproto)
    assert "SSLAgainErrors" not in asyncio_ssl._stored_names(asyncio.base_events)
