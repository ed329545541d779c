"""The exit codes of the ``memoryd`` command (docs name them): a leaf, so that the commands
in service/ use them without importing the CLI."""

from __future__ import annotations

from typing import Final

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1  # anything else, and doctor when a check failed
EXIT_USAGE: Final = 2  # argparse's own
EXIT_CONFIG: Final = 3  # the config file is invalid
EXIT_ALREADY_RUNNING: Final = 4  # another daemon owns the socket
EXIT_SOCKET: Final = 5  # the socket cannot be used (directory mode, path too long...)
EXIT_NO_SERVICE_MANAGER: Final = 6  # `memoryd service`: no systemd user instance / launchd
EXIT_SERVICE_FAILED: Final = 7  # `memoryd service`: systemctl or launchctl refused
