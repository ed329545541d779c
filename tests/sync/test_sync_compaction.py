"""The ledger's compaction on a synced workspace: a tombstone older than sync.tombstone_days
goes on the host that compacts, the other host's ledger follows at the next sync, and the
forgotten line does not come back."""

from __future__ import annotations

from pathlib import Path

from memoryd.files.lines import line_key
from memoryd.files.provenance import LEDGER_REL, ledger_for
from sync_util import DAILY, host, make_remote, settle

SECRET = "- the old locker code is 4411"
OFF = {"jobs": {"ledger_compaction": {"enabled": False}}}  # run by hand only


def test_an_old_tombstone_is_compacted_away_on_both_hosts_and_the_line_stays_gone(
    tmp_path: Path,
) -> None:
    remote = f"file://{make_remote(tmp_path)}"
    with host("laptop", extra=OFF) as a, host("desktop", extra=OFF) as b:
        for h in (a, b):
            with h.client() as c:
                c.sync_enable(remote, workspace="notes")
        a.append("- keep this one")
        a.append(SECRET)
        settle(a, b)
        n = a.read(DAILY).split("\n").index(SECRET) + 1
        with a.client() as c:
            c.forget(workspace="notes", path=DAILY, lines=str(n))
        settle(a, b)
        assert '"op":"forget"' in b.read(LEDGER_REL)
        # A year later on the laptop (the records carry the real time of the writes).
        a.advance(400 * 86400)
        run = a.call("jobs.run", {"name": "ledger_compaction", "workspace": "notes"})
        assert run["status"] == "ok", run
        assert (run["report"]["tombstones"], run["report"]["adds"]) == (1, 1), run
        assert '"op":"forget"' not in a.read(LEDGER_REL)
        settle(a, b)
        for h in (a, b):
            assert SECRET not in h.read(DAILY) and "keep this one" in h.read(DAILY)
            ledger = h.read(LEDGER_REL)
            assert '"op":"forget"' not in ledger and line_key(SECRET) not in ledger
            fresh = ledger_for(h.ws.resolve())
            fresh.refresh()
            found = fresh.lookup(DAILY, line_key("- keep this one"))
            assert found is not None and found.origin == "agent"
