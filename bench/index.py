"""Cold indexing speed, peak memory, and the cost of touching one file.

    python bench/index.py WORKSPACE [--provider none|local|both] [--json]
    python bench/index.py --all-in ../shared/bench/locomo-dev     # every workspace in DIR

Each (workspace, provider) run is a fresh subprocess, so its peak RSS
(``getrusage(RUSAGE_SELF).ru_maxrss``) is its own. The child copies the workspace to a
temp dir (the original is never touched; the copy also warms the page cache, so "cold"
means an empty index, not a cold disk), then:

1. cold index into an empty temp index: ``open()`` + ``sync()`` is the keyword phase
   (files/s, chunks/s); with a provider, ``wait_embedded()`` is the embedding phase
   (chunks embedded / its seconds). Loading the model is timed apart.
2. appends one line to one daily file (the newest) and syncs again: seconds, chunks
   rewritten, chunks that then wait for vectors, and vector windows actually embedded
   (rows added to ``embedding_cache``: the provider is only asked for hashes not there).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_KEYWORD_COLD_S = 1.0  # all of locomo-dev, keyword-only
TARGET_CHUNKS_PER_S = 15.0  # local model, 2 cores
TARGET_PEAK_RSS_MB = 400.0


def is_workspace(p: Path) -> bool:
    return p.is_dir() and ((p / "MEMORY.md").exists() or (p / "memory").is_dir())


def _count(conn: Any, sql: str, *args: Any) -> int:
    return int(conn.execute(sql, args).fetchall()[0][0])


def _hashes(conn: Any, rel: str) -> dict[str, int]:
    """text hash -> stored vector windows, for the chunks of one file."""
    return {
        str(h): int(w)
        for h, w in conn.execute("SELECT text_hash, windows FROM chunks WHERE path = ?", (rel,))
    }


def child(workspace: Path, provider_name: str) -> dict[str, Any]:
    """One measured run, in this (fresh) process."""
    from memoryd.embeddings.factory import choose_provider
    from memoryd.index import schema
    from memoryd.index.workspace import WorkspaceIndex
    from memoryd.runtime.config import config_from_mapping
    from memoryd.runtime.logs import configure_logging

    configure_logging("warning", json=True)
    load0 = os.getloadavg()[0]
    out: dict[str, Any] = {"workspace": workspace.name, "provider": provider_name}
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-index-") as tmp:
        ws = Path(tmp) / workspace.name
        shutil.copytree(workspace, ws)
        cfg = config_from_mapping({"embedding": {"provider": provider_name}}, {})
        started = time.perf_counter()
        choice = choose_provider(cfg.embedding, {})
        out["model_load_s"] = time.perf_counter() - started
        ix = WorkspaceIndex(ws, Path(tmp) / "index.sqlite", cfg, choice.provider, choice.reason)
        started = time.perf_counter()
        ix.open()  # creates the schema; loads the chunker's tokenizer on a process's first open
        out["open_s"] = time.perf_counter() - started
        started = time.perf_counter()
        report = ix.sync()
        out["sync_s"] = time.perf_counter() - started
        out["files"] = report.files_changed
        out["chunks"] = report.chunks_written
        conn = schema.connect(Path(tmp) / "index.sqlite", readonly=True)
        out["embed_s"] = 0.0
        out["windows"] = 0
        if choice.provider is not None:
            pending = _count(conn, "SELECT count(*) FROM chunks WHERE embedded = 0")
            started, cpu = time.perf_counter(), time.process_time()
            ok = ix.wait_embedded()
            out["embed_s"] = time.perf_counter() - started
            out["embed_cpu_s"] = time.process_time() - cpu
            out["embedded_ok"] = ok
            out["chunks_embedded"] = pending
            out["windows"] = _count(conn, "SELECT count(*) FROM embedding_cache")
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        # Touch one file: append a line to the newest daily file.
        daily = sorted((ws / "memory").glob("*.md"))
        target = daily[-1] if daily else ws / "MEMORY.md"
        rel = target.relative_to(ws).as_posix()
        out["touched"] = rel
        out["touched_file_chunks"] = _count(conn, "SELECT count(*) FROM chunks WHERE path = ?", rel)
        cache_before = _count(conn, "SELECT count(*) FROM embedding_cache")
        hashes_before = _hashes(conn, rel)
        with target.open("a") as f:
            f.write("\n- 23:59 Bench: appended one line about zeppelins and marmalade.\n")
        started = time.perf_counter()
        report = ix.sync()
        out["touch_sync_s"] = time.perf_counter() - started
        out["touch_chunks_written"] = report.chunks_written
        out["touch_chunks_removed"] = report.chunks_removed
        out["touch_pending"] = _count(conn, "SELECT count(*) FROM chunks WHERE embedded = 0")
        out["touch_embed_s"] = 0.0
        out["touch_windows_embedded"] = 0
        if choice.provider is not None:
            started = time.perf_counter()
            ix.wait_embedded()
            out["touch_embed_s"] = time.perf_counter() - started
            out["touch_windows_embedded"] = (
                _count(conn, "SELECT count(*) FROM embedding_cache") - cache_before
            )
        out["touch_file_chunks_after"] = _count(
            conn, "SELECT count(*) FROM chunks WHERE path = ?", rel
        )
        new = set(_hashes(conn, rel)) - set(hashes_before)
        out["touch_changed_chunks"] = len(new)
        out["touch_changed_windows"] = sum(w for h, w in _hashes(conn, rel).items() if h in new)
        conn.close()
        ix.close()
        if choice.provider is not None:
            choice.provider.close()
    out["peak_rss_mb"] = max(
        out["peak_rss_mb"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    out["loadavg"] = [load0, os.getloadavg()[0]]
    return out


def run_child(workspace: Path, provider: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(workspace), "--provider", provider],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child for {workspace} ({provider}) failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _rate(n: float, s: float) -> float:
    return n / s if s > 0 else float("nan")


def _cells(values: list[Any]) -> str:
    return "| " + " | ".join(str(v) for v in values) + " |"


def print_tables(rows: list[dict[str, Any]]) -> None:
    print("### Cold index (empty index, fresh process per row)\n")
    print(
        _cells(
            [
                "workspace",
                "provider",
                "files",
                "chunks",
                "open s",
                "sync s",
                "files/s",
                "chunks/s",
                "model load s",
                "embed s",
                "embed CPU s",
                "embedded chunks/s",
                "windows",
                "peak RSS MB",
            ]
        )
    )
    print("|---|---|" + "---:|" * 12)
    for r in rows:
        emb = r["provider"] != "none"
        print(
            _cells(
                [
                    r["workspace"],
                    r["provider"],
                    r["files"],
                    r["chunks"],
                    f"{r['open_s']:.3f}",
                    f"{r['sync_s']:.3f}",
                    f"{_rate(r['files'], r['sync_s']):.0f}",
                    f"{_rate(r['chunks'], r['sync_s']):.0f}",
                    f"{r['model_load_s']:.2f}" if emb else "-",
                    f"{r['embed_s']:.1f}" if emb else "-",
                    f"{r['embed_cpu_s']:.1f}" if emb else "-",
                    f"{_rate(r['chunks_embedded'], r['embed_s']):.1f}" if emb else "-",
                    r["windows"] if emb else "-",
                    f"{r['peak_rss_mb']:.0f}",
                ]
            )
        )
    print("\n### Touch one file (append one line to the newest daily file, then sync)\n")
    print(
        _cells(
            [
                "workspace",
                "provider",
                "file (chunks before→after)",
                "sync s",
                "chunks rewritten",
                "chunks with new text",
                "chunks re-embedded",
                "windows embedded (of new chunks')",
                "embed s",
            ]
        )
    )
    print("|---|---|---|" + "---:|" * 6)
    for r in rows:
        emb = r["provider"] != "none"
        print(
            _cells(
                [
                    r["workspace"],
                    r["provider"],
                    f"{r['touched']} ({r['touched_file_chunks']}→{r['touch_file_chunks_after']})",
                    f"{r['touch_sync_s']:.3f}",
                    r["touch_chunks_written"],
                    r["touch_changed_chunks"],
                    r["touch_pending"] if emb else "-",
                    f"{r['touch_windows_embedded']} ({r['touch_changed_windows']})" if emb else "-",
                    f"{r['touch_embed_s']:.2f}" if emb else "-",
                ]
            )
        )
    print()
    kw = [r for r in rows if r["provider"] == "none"]
    loc = [r for r in rows if r["provider"] == "local"]
    if kw:
        total = sum(r["open_s"] + r["sync_s"] for r in kw)
        verdict = "ok" if total < TARGET_KEYWORD_COLD_S else "MISS"
        print(
            f"- target keyword-only cold index < {TARGET_KEYWORD_COLD_S:.0f} s "
            f"(open + sync, summed over {len(kw)} workspace(s)): {total:.3f} s — {verdict}"
        )
    if loc:
        chunks = sum(r["chunks_embedded"] for r in loc)
        secs = sum(r["embed_s"] for r in loc)
        cpu = sum(r["embed_cpu_s"] for r in loc)
        windows = sum(r["windows"] for r in loc)
        rate = _rate(chunks, secs)
        verdict = "ok" if rate >= TARGET_CHUNKS_PER_S else "MISS"
        print(
            f"- target ≥ {TARGET_CHUNKS_PER_S:.0f} chunks/s with the local model: "
            f"{rate:.1f} chunks/s ({chunks} chunks, {windows} windows in {secs:.1f} s; "
            f"{_rate(chunks, cpu):.1f} chunks per CPU-second, "
            f"{_rate(cpu, windows) * 1000:.0f} ms CPU per window) — {verdict}"
        )
        only = all(r["touch_windows_embedded"] <= r["touch_changed_windows"] for r in loc)
        print(
            "- target: touching one file re-embeds only its changed chunks (windows sent to "
            "the model ≤ windows of chunks with new text): "
            f"{sum(r['touch_windows_embedded'] for r in loc)} ≤ "
            f"{sum(r['touch_changed_windows'] for r in loc)} — {'ok' if only else 'MISS'}"
        )
    peak = max(r["peak_rss_mb"] for r in rows)
    print(
        f"- target peak RSS < {TARGET_PEAK_RSS_MB:.0f} MB: max {peak:.0f} MB — "
        f"{'ok' if peak < TARGET_PEAK_RSS_MB else 'MISS'}"
    )
    loads = [x for r in rows for x in r["loadavg"]]
    print(
        f"\nload average (1 min) during the runs: {min(loads):.2f} to {max(loads):.2f} "
        f"on {os.cpu_count()} cores; python {sys.version.split()[0]}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("workspace", type=Path, nargs="?")
    ap.add_argument("--all-in", type=Path, metavar="DIR", help="every workspace folder in DIR")
    ap.add_argument("--provider", choices=["none", "local", "both"], default="both")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.workspace.resolve(), args.provider)))
        return
    workspaces = []
    if args.workspace is not None:
        workspaces.append(args.workspace.resolve())
    if args.all_in is not None:
        workspaces += sorted(p.resolve() for p in args.all_in.iterdir() if is_workspace(p))
    if not workspaces:
        ap.error("give a WORKSPACE or --all-in DIR")
    providers = ["none", "local"] if args.provider == "both" else [args.provider]
    rows = []
    for provider in providers:
        for ws in workspaces:
            print(f"indexing {ws.name} ({provider})...", file=sys.stderr)
            rows.append(run_child(ws, provider))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print_tables(rows)


if __name__ == "__main__":
    main()
