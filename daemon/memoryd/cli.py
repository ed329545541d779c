"""``memoryd``: ``run`` (the daemon, in the foreground), ``stop``, ``doctor``, ``service``,
``--version``.

Errors are one line on stderr with a named exit code, never a traceback.

Each command imports what it needs when it runs: ``--version``, ``--help`` and ``stop`` load
neither asyncio nor structlog (tests/daemon/test_daemon_cli.py). ``memoryd run`` as a client
or a service manager spawns it (``run``, ``--socket``, ``--config``, ``--log-level``, each at
most once a value) is read without argparse (``_plain_run``): building the parser to read
it cost a daemon started for a question ~27 M instructions (argparse, shutil, bz2, lzma,
gettext); anything else, a mistake included, goes to argparse and gets its messages.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Final

import memoryd
from memoryd.exit_codes import (
    EXIT_ALREADY_RUNNING,
    EXIT_CONFIG,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_SOCKET,
    EXIT_USAGE,
)
from memoryd.runtime.log_names import LEVELS

if TYPE_CHECKING:
    import argparse

# Longer than the daemon's own drain (server.shutdown_timeout, 10 s by default).
STOP_TIMEOUT_S: Final = 30.0


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="memoryd",
        description="memory daemon for AI agents",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  memoryd run                  # in the foreground; Ctrl-C stops it\n"
        "  memoryd stop                 # stop the running daemon, wait until it exits\n"
        "  memoryd service install      # start at login under systemd or launchd\n\n"
        "exit codes: 0 ok, 1 error, 2 usage, 3 invalid config, 4 already running,\n"
        "5 socket unusable, 6 no service manager, 7 service manager refused",
    )
    parser.add_argument("--version", action="version", version=f"memoryd {memoryd.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="run the daemon in the foreground")
    run.add_argument("--socket", help="Unix socket path (default: $MEMORYD_SOCKET or platform)")
    run.add_argument("--config", help="config file (default: $MEMORYD_CONFIG or platform)")
    run.add_argument(
        "--log-level",
        choices=LEVELS,
        default=os.environ.get("MEMORYD_LOG_LEVEL"),
        help="default: $MEMORYD_LOG_LEVEL, else warning on a terminal (which "
        "gets one line saying the daemon is ready) and info elsewhere",
    )
    stop = sub.add_parser(
        "stop", help="stop the running daemon gracefully and wait until it has exited"
    )
    stop.add_argument("--socket", help="Unix socket path (default: $MEMORYD_SOCKET or platform)")
    stop.add_argument(
        "--timeout",
        type=float,
        default=STOP_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for it to exit (default {STOP_TIMEOUT_S:g})",
    )
    doctor = sub.add_parser("doctor", help="check the local setup; each line says the fix")
    doctor.add_argument("--socket")
    doctor.add_argument("--config")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    service = sub.add_parser(
        "service",
        help="run memoryd under systemd (Linux) or launchd (macOS): install, uninstall, status",
    )
    service.add_argument("action", choices=("install", "uninstall", "status"))
    service.add_argument(
        "--socket-activation",
        action="store_true",
        help="install: the service manager listens and starts the daemon on the first connection",
    )
    service.add_argument(
        "--dry-run", action="store_true", help="print the files and commands, change nothing"
    )
    service.add_argument("--json", action="store_true", help="status: machine-readable output")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    plain = _plain_run(sys.argv[1:] if argv is None else argv)
    if plain is not None:
        return cmd_run(plain)
    args = _parser().parse_args(argv)
    if args.command == "run":
        return cmd_run(args)
    if args.command == "service":
        return cmd_service(args)
    if args.command == "stop":
        return cmd_stop(args)
    return cmd_doctor(args)


_RUN_OPTIONS: Final = {"--socket": "socket", "--config": "config", "--log-level": "log_level"}


def _plain_run(argv: Sequence[str]) -> SimpleNamespace | None:
    """``run`` with its options spelled out, as argparse would read it; None for anything
    else (other commands, help, abbreviations, a repeated or missing value, a bad level):
    argparse reads those, and says what is wrong."""
    if not argv or argv[0] != "run":
        return None
    values: dict[str, str] = {}
    rest = list(argv[1:])
    while rest:
        option, eq, value = rest.pop(0).partition("=")
        if not eq:
            value = rest.pop(0) if rest else ""
        name = _RUN_OPTIONS.get(option)
        if name is None or name in values or not value or value.startswith("-"):
            return None
        values[name] = value
    level = values.get("log_level", os.environ.get("MEMORYD_LOG_LEVEL"))
    if "log_level" in values and level not in LEVELS:
        return None
    return SimpleNamespace(
        command="run", socket=values.get("socket"), config=values.get("config"), log_level=level
    )


def cmd_stop(args: argparse.Namespace) -> int:
    """Exit 0 when it stopped or was not running (said which), 1 when it outlived the
    timeout, 5 when the socket cannot be used."""
    from memoryd.stop import StopTimeout, stop_daemon
    from memoryd_client import ClientError, SocketUnusable
    from memoryd_client.paths import socket_path

    path = socket_path(dict(os.environ), args.socket)
    try:
        stopped = stop_daemon(path, args.timeout)
    except StopTimeout as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except SocketUnusable as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return EXIT_SOCKET
    except ClientError as exc:
        print(f"memoryd: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if stopped.pid is None:
        print(f"memoryd is not running (nothing answers on {path})")
    else:
        print(f"memoryd stopped (pid {stopped.pid}, {stopped.seconds:.1f}s)")
    return EXIT_OK


def cmd_service(args: argparse.Namespace) -> int:
    from memoryd.service.command import main as service_main

    return service_main(
        args.action,
        socket_activation=args.socket_activation,
        dry_run=args.dry_run,
        as_json=args.json,
    )


def cmd_run(args: argparse.Namespace | SimpleNamespace) -> int:
    # The daemon caches its bytecode even under PYTHONDONTWRITEBYTECODE (machines and images
    # set it), as memctl does: from an editable install every start would otherwise compile
    # the ~300 modules below anew (~0.15-0.3 s before the socket accepts).
    from memoryd.runtime import bytecode

    bytecode.note_early()  # cached after the first answer (runtime/bytecode.py)
    sys.dont_write_bytecode = False
    from memoryd.runtime import heap, logs

    # Until the first answer (app.Daemon._after_first_answer): the daemon's modules and
    # what its start builds live as long as the process; collecting them is wasted work
    # (so this module imports little before: the paths' dataclasses and pathlib come after).
    heap.pause_collection()
    try:
        return _run(args)
    finally:
        logs.release()  # held lines (configure_logging's hold) if no answer came
        heap.resume_collection()


def _run(args: argparse.Namespace | SimpleNamespace) -> int:
    from memoryd import named_tuple
    from memoryd.runtime import asyncio_ssl

    with named_tuple.for_the_standard_library():  # their __new__ without eval (named_tuple.py)
        asyncio_ssl.import_asyncio()  # its ssl after the first answer (runtime/asyncio_ssl.py)
        import asyncio

        from memoryd.app import Daemon
    from memoryd.errors import ConfigError, MemorydError
    from memoryd.rpc.instance import AlreadyRunning, InstanceError
    from memoryd.runtime import foreground, heap, short_slice
    from memoryd.runtime.config import load_config
    from memoryd.runtime.logs import configure_logging, get_logger
    from memoryd_client.paths import config_path, default_paths, socket_path

    on_terminal = sys.stderr.isatty()
    level = (args.log_level or ("warning" if on_terminal else "info")).lower()
    if level not in LEVELS:
        print(f"memoryd: MEMORYD_LOG_LEVEL must be one of {', '.join(LEVELS)}", file=sys.stderr)
        return EXIT_USAGE
    # Info lines wait for the first answer (app.Daemon._after_first_answer): structlog's
    # import is not on a question's path (runtime/logs.py).
    configure_logging(level, hold=True)
    heap.configure()  # a long-lived process: memory freed after a burst goes back
    foreground.configure()  # a 1 ms switch interval: searches wait less for busy threads
    short_slice.answer_promptly()  # this thread runs the event loop: a busy core yields to it
    log = get_logger("memoryd.cli")
    env = dict(os.environ)
    cfg_file = config_path(env, args.config)
    if args.config and not cfg_file.exists():
        log.error("config_error", error=f"config file {cfg_file} does not exist")
        return EXIT_CONFIG
    try:
        config = load_config(cfg_file, env)
        daemon = Daemon(
            config,
            paths=default_paths(env),
            socket_path=socket_path(env, args.socket),
            config_file=cfg_file,
            env=env,
            handle_signals=True,
            announce=sys.stderr if on_terminal else None,
        )
        return asyncio.run(daemon.serve())
    except AlreadyRunning as exc:
        log.error("already_running", error=str(exc))
        return EXIT_ALREADY_RUNNING
    except InstanceError as exc:
        log.error("socket_error", error=str(exc))
        return EXIT_SOCKET
    except ConfigError as exc:
        log.error("config_error", error=exc.message, config=str(cfg_file))
        return EXIT_CONFIG
    except MemorydError as exc:
        log.error("startup_failed", error=exc.message)
        return EXIT_ERROR
    except KeyboardInterrupt:  # Ctrl-C before the signal handlers were installed
        return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    import json

    from memoryd.doctor import run_checks

    env = dict(os.environ)
    from memoryd_client.paths import config_path, socket_path

    checks = run_checks(config_path(env, args.config), socket_path(env, args.socket), env)
    if args.json:
        print(json.dumps({"checks": [c.to_dict() for c in checks]}, indent=2))
    else:
        for c in checks:
            line = f"{'ok  ' if c.ok else 'FAIL'} {c.name:12} {c.detail}"
            print(line + (f"\n     {'':12} fix: {c.fix}" if not c.ok and c.fix else ""))
    return EXIT_OK if all(c.ok for c in checks) else EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
