"""detect-secrets' rules as the masking reads them (a child process, heuristics copied) are
the library's own, and masking never imports the library into the process."""

from __future__ import annotations

import json
import random
import re
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def kept_in(tmp_path: Path) -> Iterator[Path]:
    secret_rules.keep_rules_in(tmp_path)
    secret_rules.detectors.cache_clear()
    yield tmp_path / "secret-rules.json"
    secret_rules._kept_in.clear()
    secret_rules.detectors.cache_clear()


def test_rules_kept_for_the_installed_library_are_read_instead_of_a_child(kept_in: Path) -> None:
    read = secret_rules.detectors()
    kept = json.loads(kept_in.read_text())
    assert [r[1] for r in kept["rules"]] == [name for _, name, _ in read]
    # the same install: what is kept is what the next process reads (no child)
    kept["rules"] = [["Marker", "MarkerDetector", [["marker-[0-9]+", 32]]]]
    kept_in.write_text(json.dumps(kept))
    secret_rules.detectors.cache_clear()
    assert [name for _, name, _ in secret_rules.detectors()] == ["MarkerDetector"]


def test_rules_kept_for_another_install_are_read_again(kept_in: Path) -> None:
    kept_in.write_text(json.dumps({"key": "another install", "rules": []}))
    names = [name for _, name, _ in secret_rules.detectors()]
    assert "GitHubTokenDetector" in names
    assert json.loads(kept_in.read_text())["key"] != "another install"
