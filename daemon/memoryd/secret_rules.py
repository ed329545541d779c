"""detect-secrets' rules as the masking uses them: its regex detectors and four heuristics.

Importing detect-secrets pulls in ``requests`` (its plugins' base class imports it for the
verification calls we never make): ~300 modules and +16 MB that a daemon would keep for
good after the first snippet that looks like it may hold a secret. So the detectors'
patterns are read from the installed library by a short child process (~0.1 s, once per
process, on first use) and compiled here; the heuristics are a few lines each, copied
below. tests/secrets/test_secret_rules.py checks both against the library itself, so an
upgrade that changes them fails there rather than changing a verdict unseen.
"""

from __future__ import annotations

import functools
import json
import re
import string
import subprocess
import sys
from typing import Final

__all__ = ["Detector", "detectors", "filtered"]

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


@functools.cache
def detectors() -> tuple[Detector, ...]:
    """detect-secrets' regex detectors (secret type order), read once per process."""
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
    return tuple(
        (secret_type, name, tuple(re.compile(p, flags) for p, flags in patterns))
        for secret_type, name, patterns in json.loads(out.stdout)
    )


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
