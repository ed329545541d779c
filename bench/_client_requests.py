"""A client that asks what its stdin says, for bench/instructions.py --client to count it.

    python bench/_client_requests.py SOCKET WORKSPACE < commands

Run under callgrind by instructions.py: each stdin line is ``search N``, ``hello N`` or
``quit``; the client asks N requests on its one connection (searches: 10 hits, min score 0,
the questions of argv[3:] in turn) and writes ``done`` on stdout, so the driver can dump
the counters on either side of a batch. It imports the client only (the code of the run's
rev, by PYTHONPATH).
"""

from __future__ import annotations

import sys

from memoryd_client import MemoryClient


def main() -> None:
    socket, workspace, *queries = sys.argv[1:]
    with MemoryClient(socket, timeout=600) as c:
        c.hello()
        for line in sys.stdin:
            method, _, n = line.partition(" ")
            if method == "quit":
                break
            for i in range(int(n)):
                if method == "hello":
                    c.hello()
                else:
                    c.search(
                        queries[i % len(queries)], workspace=workspace, max_results=10, min_score=0
                    )
            print("done", flush=True)


if __name__ == "__main__":
    main()
