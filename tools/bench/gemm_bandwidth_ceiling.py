#!/usr/bin/env python3
"""gemm_bandwidth_ceiling.py DB [--comparison ID]: how far a memory-bound GEMM comparison can move.

For each problem and timing mode of a `tune compare` of a GEMM recipe (dims M, N, K; bf16 a, b, c),
prints the bytes a kernel must move (2 (MK + KN + MN)), tune's and the peer's median time over the
rounds as GB/s and as a share of the device's measured copy bandwidth (the peaks table of the same
database: a 1 GiB read+write copy, bytes counted both ways like the GEMM's), and the ceiling: the
ratio peer time / (bytes / copy bandwidth), the most any kernel streaming at the copy bandwidth
could be ahead of that peer. A goal ratio above the ceiling cannot be met by a faster schedule on
that problem; it needs fewer bytes (a narrower weight type) or a different measure.
"""
import argparse
import json
import sqlite3
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("--comparison", type=int, help="comparison id (default: the latest done one)")
    args = ap.parse_args()
    c = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    cid = args.comparison or c.execute(
        "SELECT max(id) FROM comparisons WHERE status = 'done' AND kind = 'compare'").fetchone()[0]
    if cid is None:
        sys.exit(f"{args.db}: no finished comparison")
    row = c.execute("SELECT value FROM peaks WHERE kind = 'copy_GBps' ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        sys.exit(f"{args.db}: no copy_GBps peak (measured by tune run on a GPU)")
    copy_gbps = row[0]
    # per problem, timing, side, candidate: the median over its rounds; tune's best candidate counts
    cells = {}
    for name, dims, timing, side, cfg, ns in c.execute(
            """SELECT p.name, p.dims_json, m.timing, m.side, m.config_id, m.median_ns FROM measurements m
               JOIN problems p ON p.id = m.problem_id
               WHERE m.comparison_id = ? AND m.status = 'ok' AND m.median_ns > 0""", (cid,)):
        key = (name, timing)
        cells.setdefault(key, {"dims": json.loads(dims), "tune": {}, "peer": {}})
        cells[key][side].setdefault(cfg, []).append(ns)
    print(f"comparison {cid} of {args.db}; copy bandwidth {copy_gbps:.0f} GB/s (read+write)")
    print(f"{'problem':22s} {'timing':9s} {'MB':>7s} {'tune GB/s':>9s} {'%copy':>6s} {'peer GB/s':>9s} "
          f"{'%copy':>6s} {'ratio':>6s} {'ceiling':>7s}")
    for (name, timing), cell in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if not cell["tune"] or not cell["peer"]:
            continue
        d = cell["dims"]
        nbytes = 2.0 * (d["M"] * d["K"] + d["K"] * d["N"] + d["M"] * d["N"])
        tune_ns = min(statistics.median(v) for v in cell["tune"].values())
        peer_ns = min(statistics.median(v) for v in cell["peer"].values())
        tune_gbps, peer_gbps = nbytes / tune_ns, nbytes / peer_ns
        floor_ns = nbytes / copy_gbps
        print(f"{name:22s} {timing:9s} {nbytes / 1e6:7.1f} {tune_gbps:9.0f} {100 * tune_gbps / copy_gbps:5.1f}% "
              f"{peer_gbps:9.0f} {100 * peer_gbps / copy_gbps:5.1f}% {peer_ns / tune_ns:6.3f} {peer_ns / floor_ns:7.3f}")


if __name__ == "__main__":
    main()
