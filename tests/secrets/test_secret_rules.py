"""detect-secrets' rules as the masking reads them (a child process, heuristics copied) are
the library's own, and masking never imports the library into the process."""

from __future__ import annotations

import random
import re
import string
import subprocess
import sys

import pytest
from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.filters import heuristic
from detect_secrets.plugins.base import RegexBasedDetector

from memoryd import secret_rules

pytestmark = pytest.mark.timeout(60)


def test_the_detectors_read_in_a_child_are_the_librarys_patterns() -> None:
    expected = []
    for secret_type, cls in sorted(get_mapping_from_secret_type_to_class().items()):
        if issubclass(cls, RegexBasedDetector):
            patterns = [p for p in cls.denylist if isinstance(p, re.Pattern)]
            expected.append((secret_type, cls.__name__, [(p.pattern, p.flags) for p in patterns]))
    got = [
        (secret_type, name, [(p.pattern, p.flags) for p in patterns])
        for secret_type, name, patterns in secret_rules.detectors()
    ]
    assert got == expected
    assert any(name == "GitHubTokenDetector" for _, name, _ in got)


def _values() -> list[str]:
    rng = random.Random(27)
    alphabet = string.ascii_letters + string.digits + "+/=_-${}<>"
    values = ["", "$", "{", "}", "<", ">", "${", "${x}", "{x}", "<x>", "$HOME", "a", "$x}"]
    values += ["ABCDEFGHIJKLMNOP", "0123456789", "abcdef0123", "1234567890ABCDEF", "XYZ=/"]
    values += ["123e4567-e89b-12d3-a456-426614174000", "id-123E4567-E89B-12D3-A456-426614174000"]
    for _ in range(2000):
        values.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
    return values


@pytest.mark.parametrize(
    "name",
    [
        "is_sequential_string",
        "is_potential_uuid",
        "is_templated_secret",
        "is_prefixed_with_dollar_sign",
    ],
)
def test_the_copied_heuristics_agree_with_the_library(name: str) -> None:
    ours, theirs = getattr(secret_rules, name), getattr(heuristic, name)
    assert [ours(v) for v in _values()] == [theirs(v) for v in _values()]


def test_masking_a_secret_never_imports_the_library_or_requests() -> None:
    script = (
        "import sys\n"
        "from memoryd.secrets import mask\n"
        "out = mask('the deploy token is ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0')\n"
        "assert out == 'the deploy token is [REDACTED:github_token]', out\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('detect_secrets', 'requests', 'urllib3')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
