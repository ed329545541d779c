"""memctl sync enable / now / status / disable against two real daemons: status shows the
last pull and push, what waits, conflicts and held files; an unreachable remote is said."""

from __future__ import annotations

import io
from pathlib import Path

from memoryd_client import cli
from sync_util import Host, host, make_remote

BASE = "# Memory\n\n- lunch is at noon\n"
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def memctl(h: Host, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    socket = str(h.daemon.socket_path)
    code = cli.main(["sync", *argv, "-w", "notes", "--socket", socket], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_memctl_sync_says_what_happened_and_what_waits(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    remote = f"file://{bare}"
    with host("laptop") as a, host("desktop") as b:
        (a.ws / "MEMORY.md").write_text(BASE)
        code, out, _ = memctl(a, "enable", "--remote", remote)
        assert code == 0 and out.startswith("notes: committed") and "pushed" in out, out
        code, out, _ = memctl(b, "enable", "--remote", remote)
        assert code == 0 and "pulled 1 commit(s), updated 1 file(s)" in out, out
        assert b.read("MEMORY.md") == BASE

        # Both change the same line: the second to sync gets a conflict note.
        (a.ws / "MEMORY.md").write_text(BASE.replace("noon", "one"))
        memctl(a, "now")
        (b.ws / "MEMORY.md").write_text(BASE.replace("noon", "two"))
        (b.ws / "USER.md").write_text(f"# User\n\n- my token is {TOKEN}\n")
        code, out, _ = memctl(b, "now")
        assert code == 0 and "pulled 1 commit(s)" in out and "pushed" in out, out
        assert "conflict note: MEMORY.md:3" in out
        assert "held back: USER.md holds a secret (github_token)" in out

        code, out, _ = memctl(b, "status")
        assert code == 0
        assert f"notes: {remote} (main, memoryd repository)" in out
        for when in ("last pull", "last push"):
            line = next(x for x in out.splitlines() if x.strip().startswith(when))
            assert "never" not in line and "T" in line, out  # an ISO time
        # USER.md is not committed (held back): it waits, and says why.
        assert "waiting    0 commit(s) to push, 1 file(s) to commit" in out, out
        assert "conflict note: MEMORY.md:3" in out and "held back: USER.md" in out

        # The remote goes away: writes wait, status says so; back, the backlog goes up.
        bare.rename(bare.with_name("away.git"))
        a.append("- written while the remote is away")
        code, out, err = memctl(a, "now")
        assert code == 0 and "committed" in out and "pushed" not in out, out
        assert "remote unreachable, retried later" in err, err
        code, out, _ = memctl(a, "status")
        assert "offline since" in out and "waiting    1 commit(s) to push (oldest " in out, out
        bare.with_name("away.git").rename(bare)
        code, out, _ = memctl(a, "now")
        assert "pushed" in out, out
        assert "waiting    0 commit(s) to push" in memctl(a, "status")[1]

        code, out, err = memctl(a, "disable")
        assert code == 0 and out.strip() == "notes: sync disabled", out
        assert "memoryd's repository is kept in" in err
        assert memctl(a, "status")[1].strip() == "notes: sync off"
