#!/usr/bin/env python3
"""gemm_report.py: tune's best GEMM variant per problem next to cuBLAS (torch.matmul), both measured in
the same device call (tools/bench/device_gemm_run.sh).

usage: gemm_report.py DB PEERS_JSON [CUBIN_DIR]
DB: the tune run's database (recipes gemm, gemm.splitk and gemm.gemv_rows: the best per problem). PEERS_JSON:
gemm_peers.py's output. With CUBIN_DIR, also writes the best variant's cubin of each problem there
(CUBIN_DIR/<problem>.cubin; the database must still hold its compile cache, i.e. before lean_db.py).
Prints one markdown row per problem: tuned and cuBLAS times, speed-up (cuBLAS time / tuned time, > 1
is faster than cuBLAS), TFLOP/s and GB/s (flops = 2 M N K; bytes = a + b + c once, as the recipe), the
goal (>= 1.0x large, >= 1.25x decode), the best config and the number of verified / evaluated variants.
"""
import json
import os
import sqlite3
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.strip().splitlines()[2])
    db, peers_path = sys.argv[1], sys.argv[2]
    cubin_dir = sys.argv[3] if len(sys.argv) == 4 else None
    peers = json.load(open(peers_path)) if os.path.exists(peers_path) else {}
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = c.execute("""SELECT p.name, p.dims_json, rc.name, r.median_ns, cf.params_json, r.binary_key
                        FROM results r JOIN problems p ON p.id = r.problem_id JOIN recipes rc ON rc.id = r.recipe_id
                        JOIN configs cf ON cf.id = r.config_id WHERE r.status = 'ok' ORDER BY r.median_ns""").fetchall()
    counts = {}
    for name, n_ok, n in c.execute("""SELECT p.name, sum(r.status = 'ok'), sum(r.status != 'skipped')
                                      FROM results r JOIN problems p ON p.id = r.problem_id GROUP BY p.name"""):
        counts[name] = (n_ok, n)
    best = {}
    for name, dims, recipe, ns, params, key in rows:
        if name not in best:
            best[name] = (json.loads(dims), recipe, ns, params, key)
    names = [n for n in peers] + sorted(n for n in best if n not in peers)
    print("| problem | tuned | cuBLAS | speed-up | tuned TFLOP/s | cuBLAS TFLOP/s | tuned GB/s | goal | best variant (recipe: config) | ok/evaluated |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    n_goal = n_rows = 0
    for name in names:
        peer = peers.get(name, {})
        n_ok, n = counts.get(name, (0, 0))
        if name not in best:
            print(f"| {name} | - | {peer.get('us', float('nan')):.1f} us | - | - | {peer.get('tflops', float('nan')):.0f} | - | - | no verified variant | {n_ok}/{n} |")
            continue
        d, recipe, ns, params, key = best[name]
        us = ns / 1e3
        flops = 2.0 * d["M"] * d["N"] * d["K"]
        nbytes = 2.0 * (d["M"] * d["K"] + d["K"] * d["N"] + d["M"] * d["N"])
        goal = 1.0 if d["M"] >= 256 else 1.25
        if "us" in peer:
            ratio = peer["us"] / us
            n_rows += 1
            n_goal += ratio >= goal
            vs, met = f"{ratio:.2f}x", ("yes" if ratio >= goal else "no") + f" (>= {goal:.2f}x)"
        else:
            vs, met = "-", "-"
        cfg = ",".join(f"{k}={v}" for k, v in json.loads(params).items())
        print(f"| {name} | {us:.1f} us | {peer.get('us', float('nan')):.1f} us | {vs} | {flops / ns / 1e3:.0f} | "
              f"{peer.get('tflops', float('nan')):.0f} | {nbytes / ns:.0f} | {met} | {recipe}: {cfg} | {n_ok}/{n} |")
        if cubin_dir and key:
            b = c.execute("SELECT cubin FROM binaries WHERE key = ? AND ok = 1", (key,)).fetchone()
            if b and b[0]:
                os.makedirs(cubin_dir, exist_ok=True)
                with open(os.path.join(cubin_dir, f"{name}.cubin"), "wb") as f:
                    f.write(b[0])
    print(f"\n{n_goal} of {n_rows} problems meet the goal")


if __name__ == "__main__":
    main()
