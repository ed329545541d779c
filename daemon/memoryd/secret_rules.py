"""detect-secrets' rules as the masking uses them: its regex detectors and four heuristics.

Importing detect-secrets pulls in ``requests`` (its plugins' base class imports it for the
verification calls we never make): ~300 modules and +16 MB that a daemon would keep for
good after the first snippet that looks like it may hold a secret. So the detectors'
patterns are read from the installed library by a short child process (~0.1 s, once per
process, on first use) and compiled here; the heuristics are a few lines each, copied
below. tests/secrets/test_secret_rules.py checks both against the library itself, so an
upgrade that changes them fails there rather than changing a verdict unseen.

The daemon keeps what the child printed in its state folder (``keep_rules_in``), keyed by
the installed library's files, so only its first start after an install pays the child:
the first log line that quotes a path with digits (its socket's, /run/user/1000/...) would
otherwise wait for it before the socket answers.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import re
import string
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

__all__ = ["Detector", "detectors", "filtered", "keep_rules_in"]

Detector = tuple[str, str, tuple[re.Pattern[str], ...]]  # (secret type, class name, patterns)

# Run in a child: prints [[secret type, class name, [[pattern, flags], ...]], ...] as JSON.
_READ_RULES: Final = """\
import json, re
from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector
rules = []
for secret_type, cls in sorted(get_mapping_from_secret_type_to_class().items()):
    if issubclass(cls, RegexBasedDetector):
        found = [p for p in getattr(cls, "denylist", ()) if isinstance(p, re.Pattern)]
        rules.append([secret_type, cls.__name__, [[p.pattern, p.flags] for p in found]])
print(json.dumps(rules))
"""


class RulesUnavailable(RuntimeError):
    """detect-secrets could not be read: nothing can be masked, so nothing is answered."""


_kept_in: list[Path] = []  # the folder keep_rules_in named, if any


def keep_rules_in(folder: Path) -> None:
    """Keep the rules read from the library in ``folder`` (the daemon's state folder)."""
    _kept_in[:] = [folder]


@functools.cache
def detectors() -> tuple[Detector, ...]:
    """detect-secrets' regex detectors (secret type order), read once per process."""
    return tuple(
        (secret_type, name, tuple(re.compile(p, flags) for p, flags in patterns))
        for secret_type, name, patterns in _rules()
    )


def _rules() -> Any:
    key = _installed_key()
    kept = _kept_in[0] / "secret-rules.json" if _kept_in and key else None
    if kept is not None:
        with contextlib.suppress(OSError, ValueError, KeyError):
            found = json.loads(kept.read_text())
            if found["key"] == key:
                return found["rules"]
    rules = _read_in_child()
    if kept is not None:
        with contextlib.suppress(OSError):  # kept or not, the rules are the same
            tmp = kept.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"key": key, "rules": rules}))
            tmp.replace(kept)
    return rules


def _installed_key() -> str:
    """The installed library's plugin files (name, size, mtime): an upgrade changes it."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        spec = importlib.util.find_spec("detect_secrets")  # finds, imports nothing
        if spec is not None and spec.origin:
            plugins = Path(spec.origin).parent / "plugins"
            stats = sorted(
                (e.name, e.stat().st_size, e.stat().st_mtime_ns)
                for e in os.scandir(plugins)
                if e.name.endswith(".py")
            )
            return hashlib.sha256(repr((spec.origin, stats)).encode()).hexdigest()
    return ""


def _read_in_child() -> Any:
    # -P: the daemon's working directory is not searched for modules (a stray
    # ``detect_secrets`` or ``re.py`` there must not stand in for the library).
    try:
        out = subprocess.run(
            [sys.executable, "-P", "-c", _READ_RULES],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RulesUnavailable(f"could not read detect-secrets' rules: {e}") from e
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RulesUnavailable(f"could not read detect-secrets' rules: {last}")
    return json.loads(out.stdout)


# detect_secrets.filters.heuristic (1.5), as written there.
_SEQUENCES: Final = (
    string.ascii_uppercase + string.ascii_uppercase + string.digits + "+/",
    string.digits + string.ascii_uppercase + string.ascii_uppercase + "+/",
    (string.digits + string.ascii_uppercase) * 2,
    string.digits * 2,
    string.hexdigits.upper() + string.hexdigits.upper(),
    string.ascii_uppercase + "=/",
)
_UUID: Final = re.compile(
    r"[a-f0-9]{8}\-[a-f0-9]{4}\-[a-f0-9]{4}\-[a-f0-9]{4}\-[a-f0-9]{12}", re.IGNORECASE
)


def is_sequential_string(secret: str) -> bool:
    upper = secret.upper()
    return any(upper in sequence for sequence in _SEQUENCES)


def is_potential_uuid(secret: str) -> bool:
    return bool(_UUID.search(secret))


def is_templated_secret(secret: str) -> bool:
    """``{x}``, ``<x>``, ``${x}``; also "" and "$" (the library's IndexError says yes)."""
    if not secret or secret == "$":
        return True
    first, last = secret[0], secret[-1]
    return (
        (first == "{" and last == "}")
        or (first == "<" and last == ">")
        or (first == "$" and secret[1] == "{" and last == "}")
    )


def is_prefixed_with_dollar_sign(secret: str) -> bool:
    return bool(secret) and secret[0] == "$"


def filtered(value: str) -> bool:
    """detect-secrets' heuristics: a sequence, a UUID, a ``${template}``, a ``$VAR``."""
    return (
        is_sequential_string(value)
        or is_potential_uuid(value)
        or is_templated_secret(value)
        or is_prefixed_with_dollar_sign(value)
    )
