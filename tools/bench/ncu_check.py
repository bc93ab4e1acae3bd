#!/usr/bin/env python3
"""ncu_check.py: Nsight Compute's kernel times against the CUPTI times of a comparison.

For a few problems, after `tune compare` has stored its measurements in DBDIR/<recipe file>.db: runs tune's first
candidate (tune compare --top-k 1 --rounds 1 --timing burst --no-peers) and the peer's op (a few
lines of torch) under `ncu --clock-control none --cache-control all`, takes the median
gpu__time_duration of the most frequent kernel of each run (the variant's, the peer's; tune's
own tune_* kernels left out), and prints it beside the burst median CUPTI gave the same config
and peer in the comparison. Agreement = ncu / CUPTI. A peer that launches several kernels per
call is compared by its dominant kernel only, and says so.

usage: ncu_check.py DBDIR OUTDIR       (repository root, build/tune built, ncu on PATH)
"""
import csv
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys

CASES = [  # recipe file, recipe name, problem, peer name, torch snippet (dims as the recipe)
    ("recipes/gemm.lua", "gemm", "m8192n8192k8192_col", "cublas",
     "a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);b=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);"
     "c=torch.empty(8192,8192,device='cuda',dtype=torch.bfloat16);f=lambda: torch.matmul(a,b.t(),out=c)"),
    ("recipes/attention/prefill_sm90.lua", "attention.prefill_sm90", "b4h32s4096d128c", "cudnn-sdpa",
     "import torch.nn.functional as F;from torch.nn.attention import SDPBackend, sdpa_kernel;"
     "q,k,v=[torch.randn(4,32,4096,128,device='cuda',dtype=torch.bfloat16) for _ in range(3)];"
     "ctx=sdpa_kernel([SDPBackend.CUDNN_ATTENTION]);ctx.__enter__();f=lambda: F.scaled_dot_product_attention(q,k,v,is_causal=True)"),
    ("recipes/softmax.lua", "softmax", "r16384c1024", "torch",
     "x=torch.randn(16384,1024,device='cuda',dtype=torch.bfloat16);y=torch.empty_like(x);f=lambda: torch.softmax(x,-1,out=y)"),
]
NCU = ["ncu", "--clock-control", "none", "--cache-control", "all", "--target-processes", "all",
       "--launch-count", "40", "--metrics", "gpu__time_duration.sum", "--csv"]
SCALE = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}


def dominant_kernel(csv_text):
    """(name, median ns, launches) of the most frequent kernel that is not tune's own."""
    rows = list(csv.reader(l for l in csv_text.splitlines() if l.startswith('"')))
    if not rows:
        return None
    h = rows[0]
    ki, mi, ui, vi = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Unit"), h.index("Metric Value")
    times = {}
    for r in rows[1:]:
        if r[mi] != "gpu__time_duration.sum" or r[ki].startswith("tune_"):
            continue
        times.setdefault(r[ki], []).append(float(r[vi].replace(",", "")) * SCALE.get(r[ui], 1))
    if not times:
        return None
    name = max(times, key=lambda k: len(times[k]))
    return name, statistics.median(times[name]), len(times[name])


def cupti_median(db, recipe, problem, side, label_sql, label):
    """Median over the rounds of the burst CUPTI measurements of one side of the latest comparison."""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    q = ("SELECT m.median_ns FROM measurements m JOIN comparisons k ON k.id = m.comparison_id"
         " JOIN recipes rc ON rc.id = k.recipe_id JOIN problems p ON p.id = m.problem_id"
         " JOIN configs c ON c.id = m.config_id WHERE rc.name = ? AND p.name = ? AND m.side = ?"
         " AND m.timing = 'burst' AND m.status = 'ok' AND m.timer = 'cupti' AND " + label_sql +
         " AND k.id = (SELECT max(k2.id) FROM comparisons k2 JOIN recipes r2 ON r2.id = k2.recipe_id"
         " WHERE r2.name = ? AND k2.status = 'done')")
    v = [r[0] for r in c.execute(q, (recipe, problem, side, label, recipe))]
    return statistics.median(v) if v else None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    dbdir, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    print(f"{'problem':24s} {'side':7s} {'CUPTI [us]':>11s} {'ncu [us]':>10s} {'ncu/CUPTI':>9s}  kernel")
    for recipe_file, recipe, problem, peer, snippet in CASES:
        db = os.path.join(dbdir, os.path.basename(recipe_file)[:-len(".lua")] + ".db")
        if not os.path.exists(db):
            print(f"{problem:24s} (no comparison database {db})")
            continue
        scratch = os.path.join(out, "ncu_scratch.db")  # the ncu run's own rows stay out of DB
        shutil.copy(db, scratch)
        tune = subprocess.run(NCU + ["build/tune", "compare", recipe_file, "--db", scratch, "--problem", problem,
                                     "--top-k", "1", "--rounds", "1", "--timing", "burst", "--no-peers"],
                              capture_output=True, text=True)
        open(os.path.join(out, f"ncu_{problem}_tune.txt"), "w").write(tune.stdout + tune.stderr)
        cfg = None
        for line in tune.stdout.splitlines():
            if "round 1 burst" in line and " tune " in line:
                cfg = line[line.index("{"):].strip()
                break
        code = f"import torch\n{snippet}\nfor _ in range(60):\n    f()\ntorch.cuda.synchronize()\n"
        peer_run = subprocess.run(NCU + [sys.executable, "-c", code], capture_output=True, text=True)
        open(os.path.join(out, f"ncu_{problem}_peer.txt"), "w").write(peer_run.stdout + peer_run.stderr)
        for side, run, label_sql, label in (
                ("tune", tune, "c.params_json = ?", cfg or "{}"),
                ("peer", peer_run, "c.origin = ?", "peer:" + peer)):
            k = dominant_kernel(run.stdout)
            cu = cupti_median(db, recipe, problem, side, label_sql, label)
            if not k or not cu:
                print(f"{problem:24s} {side:7s} {'-':>11s} {'-':>10s} {'-':>9s}  (no {'ncu kernel' if not k else 'CUPTI measurement'})")
                continue
            print(f"{problem:24s} {side:7s} {cu / 1e3:11.2f} {k[1] / 1e3:10.2f} {k[1] / cu:9.3f}  {k[0][:60]} x{k[2]}")


if __name__ == "__main__":
    main()
