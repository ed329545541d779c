"""Running memoryd under a service manager (systemd user units, launchd LaunchAgents).

- ``render.py``: fills the templates in with the installed ``memoryd``. The templates (the unit
  files and the plist) live at the repository's top level, ``systemd/`` and ``launchd/``; the
  wheel carries them as ``templates/`` here (``memoryd service install --dry-run`` prints them
  as rendered for this installation).
- ``manager.py``: ``memoryd service install | uninstall | status``.
- ``notify.py``: sd_notify(3): readiness, status lines, stopping, watchdog pings.
- ``activation.py``: a listening socket handed over by systemd or launchd.
- ``_launchd.py``: launch_activate_socket(3) through ctypes, imported on macOS only.
"""
