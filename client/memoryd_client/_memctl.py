"""The ``memctl`` executable: ``memctl hook ...`` straight to the hook, the rest to the CLI.

Claude Code runs ``memctl hook claude-code user-prompt-submit`` before every prompt a
person types, so that path imports the blocking client and the hook only, not memctl's
parser and its commands.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    # memctl caches its bytecode even under PYTHONDONTWRITEBYTECODE (machines and images set
    # it): from an editable install every memctl process, a hook before every prompt among
    # them, would otherwise compile the client anew (+40-60 ms). The package's __init__
    # imports nothing, so all of it loads after this line.
    sys.dont_write_bytecode = False
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        from memoryd_client.agents.hooks import main as hook_main

        return hook_main(args[1:])
    from memoryd_client.cli import main as cli_main

    return cli_main(argv)
