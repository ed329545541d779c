"""Running memoryd under a service manager (systemd user units, launchd LaunchAgents).

- ``templates/``: the unit files and the plist, the only copy (``memoryd service install
  --dry-run`` prints them as rendered for this installation).
- ``render.py``: fills the templates in with the installed ``memoryd``.
- ``manager.py``: ``memoryd service install | uninstall | status``.
- ``notify.py``: sd_notify(3): readiness, status lines, stopping, watchdog pings.
- ``activation.py``: a listening socket handed over by systemd or launchd.
- ``_launchd.py``: launch_activate_socket(3) through ctypes, imported on macOS only.
"""
