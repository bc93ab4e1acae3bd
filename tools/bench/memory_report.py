#!/usr/bin/env python3
"""memory_report.py: tune's best memory-bound variants next to PyTorch, measured in the same run.

usage: memory_report.py PEERS_JSON DB [DB...]
For each recipe and problem in the databases: tune's best median, its GB/s (the peers' byte count,
which equals the recipe's metrics.bytes), the share of the copy bandwidth tune measured on that device
(peaks table), and the ratio to the PyTorch expression timed by memory_peers.py in the same call.
"""
import json
import os
import sqlite3
import sys

peers = json.load(open(sys.argv[1])) if os.path.exists(sys.argv[1]) else {}
print("| recipe | problem | tune best | GB/s | % of copy | PyTorch GB/s | vs PyTorch | verified/evaluated |")
print("|---|---|---|---|---|---|---|---|")
for db in sys.argv[2:]:
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    peak = dict(c.execute("SELECT kind, value FROM peaks")).get("copy_GBps", 0)
    rows = c.execute("""SELECT rc.name, p.name, min(r.median_ns), sum(r.status='ok'), count(*)
                        FROM results r JOIN recipes rc ON rc.id=r.recipe_id JOIN problems p ON p.id=r.problem_id
                        GROUP BY rc.name, p.name ORDER BY rc.name, p.id""").fetchall()
    for recipe, prob, _, n_ok, n in rows:
        ns = c.execute("""SELECT min(r.median_ns) FROM results r JOIN recipes rc ON rc.id=r.recipe_id
                          JOIN problems p ON p.id=r.problem_id WHERE rc.name=? AND p.name=? AND r.status='ok'""",
                       (recipe, prob)).fetchone()[0]
        family = "softmax" if recipe.startswith("softmax.") else recipe  # .split, .cluster, .stream: the same op
        peer = peers.get(family, {}).get(prob, {})
        if ns is None or "us" not in peer:
            print(f"| {recipe} | {prob} | {'-' if ns is None else '%.1f us' % (ns / 1e3)} | - | - | - | - | {n_ok}/{n} |")
            continue
        nbytes = peer["GBps"] * peer["us"] * 1e3
        gbps = nbytes / ns
        pct = f"{100 * gbps / peak:.0f}%" if peak else "-"
        print(f"| {recipe} | {prob} | {ns/1e3:.1f} us | {gbps:.0f} | {pct} | {peer['GBps']:.0f} | "
              f"{gbps / peer['GBps']:.2f}x | {n_ok}/{n} |")
