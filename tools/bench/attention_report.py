#!/usr/bin/env python3
"""attention_report.py: tune's best attention variants next to the peers measured in the same run.

usage: attention_report.py TUNE_DB PEERS_JSON [COPY_GBPS]
Prints a markdown table: per problem, tune's best (median, TFLOP/s or GB/s, config) and the peers
(PyTorch SDPA flash / cuDNN) with ratios. Decode compares tune's paged and contiguous variants with
the peers' contiguous cache (SDPA has no paged cache) and with the device copy bandwidth.
"""
import json
import os
import sqlite3
import sys


def best_rows(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    q = """SELECT rc.name, p.name, p.dims_json, min(r.median_ns), c.params_json, d.name,
                  sum(r.status = 'ok'), count(*)
           FROM results r JOIN recipes rc ON rc.id = r.recipe_id JOIN problems p ON p.id = r.problem_id
           JOIN configs c ON c.id = r.config_id JOIN devices d ON d.id = r.device_id
           WHERE d.kind = 'gpu' AND r.status = 'ok' GROUP BY rc.name, p.name ORDER BY rc.name, p.id"""
    rows = c.execute(q).fetchall()
    counts = dict(((a, b), (n_ok, n)) for a, b, n_ok, n in c.execute(
        """SELECT rc.name, p.name, sum(r.status='ok'), count(*) FROM results r JOIN recipes rc ON rc.id=r.recipe_id
           JOIN problems p ON p.id=r.problem_id GROUP BY rc.name, p.name"""))
    peaks = dict(c.execute("SELECT kind, value FROM peaks"))
    return rows, counts, peaks


def main():
    db, peers_path = sys.argv[1], sys.argv[2]
    peers = json.load(open(peers_path)) if os.path.exists(peers_path) else {}
    rows, counts, peaks = best_rows(db)
    copy = float(sys.argv[3]) if len(sys.argv) > 3 else peaks.get("copy_GBps", 0)
    print(f"device: {peers['device']}; peers: torch {peers['torch']}, cuDNN {peers['cudnn']}; run {peers['date_utc']}")
    print(f"device copy bandwidth measured by tune: {copy:.0f} GB/s\n")
    print("| problem | tune best | TFLOP/s or GB/s | vs FA2 (flash) | vs cuDNN | verified/evaluated | config |")
    print("|---|---|---|---|---|---|---|")
    for recipe, prob, dims_json, ns, params, dev, n_ok, n in rows:
        d = json.loads(dims_json)
        n_ok, n_all = counts[(recipe, prob)]
        if recipe.startswith("attention.prefill"):
            flops = 4.0 * d["B"] * d["HQ"] * d["S"] * d["S"] * d["D"] * (0.5 if d["causal"] else 1.0)
            ours = flops / ns / 1e3
            # the 2026-11-22 peers file names the GQA problem by its old key
            peer = peers["prefill"].get(prob) or peers["prefill"].get(
                {"b4h32s4096d128c_gqa8": "b4h32kv8s4096d128c"}.get(prob, ""), {})
            f = peer.get("flash", {}).get("tflops")
            cd = peer.get("cudnn", {}).get("tflops")
            print(f"| {prob} | {ns/1e3:.1f} us | {ours:.1f} TFLOP/s | {ours/f:.2f}x ({f:.0f}) | "
                  f"{ours/cd:.2f}x ({cd:.0f}) | {n_ok}/{n_all} | `{params}` |" if f and cd else
                  f"| {prob} | {ns/1e3:.1f} us | {ours:.1f} TFLOP/s | - | - | {n_ok}/{n_all} | `{params}` |")
        else:
            kv = 2.0 * d["B"] * d["L"] * d["HKV"] * d["D"] * 2
            ours = kv / ns
            key = f"b{d['B']}hq{d['HQ']}hkv{d['HKV']}l{d['L']}d{d['D']}"
            peer = peers["decode"].get(key, {})
            f = peer.get("flash", {}).get("GBps")
            cd = peer.get("cudnn", {}).get("GBps")
            kind = "contiguous" if d["page"] == d["L"] else f"paged {d['page']}"
            pct = f", {100*ours/copy:.0f}% of copy" if copy else ""
            print(f"| {prob} ({kind}) | {ns/1e3:.1f} us | {ours:.0f} GB/s{pct} | "
                  + (f"{ours/f:.2f}x ({f:.0f})" if f else "-") + " | "
                  + (f"{ours/cd:.2f}x ({cd:.0f})" if cd else "-") + f" | {n_ok}/{n_all} | `{params}` |")


if __name__ == "__main__":
    main()
