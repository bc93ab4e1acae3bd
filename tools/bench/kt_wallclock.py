#!/usr/bin/env python3
"""kt_wallclock.py: wall time to 98 % of the optimum, compiles included, of Kernel Tuner and of
`tune run` tuning the same kernel space on the same GPU (issue 29, "Wall clock on the GPU").

The kernel: templates/copy/copy.cuh (recipes/copy.lua), one problem (N floats). Kernel Tuner gets the
recipe's space as it is: the same parameters and values, the same two constraints as restrictions, the
template file itself compiled by the cupy backend (-I templates) with the parameters as #defines
(as tune's NVRTC passes them as -D), the recipe's grid (problem_size as a function of the config,
grid_div_x empty: it is the number of blocks) and arguments (src, dst, n as int64).

Runs, each in its own process with a fresh compile cache (CUPY_CACHE_DIR; for tune a fresh database,
which holds tune's compile cache), the timed runs first:
  1. Kernel Tuner, STRATEGY (default adaptive_tabu_greywolf: the best single Kernel Tuner strategy of
     docs/search.md's criteria), max_fevals BUDGET, seed SEED;
  2. tune run recipes/copy.lua --problem P --device cuda:0 --budget BUDGET --seed SEED --no-warm-start
     (tune's default strategy, cold as Kernel Tuner);
  3. Kernel Tuner brute_force and 4. tune --strategy exhaustive: each tool's optimum on its own timer
     (the timers differ: Kernel Tuner times back-to-back launches with CUDA events, tune one launch
     per sample with CUPTI after an L2 flush, so each tool is judged against its own optimum).
Per tool: evaluations and wall seconds (from the process start) to the first config within 2 % of its
optimum (time <= optimum / 0.98), and the whole run's wall time; tune's "GPU busy" line is copied.

  kt_wallclock.py --out DIR [--problem 256MiB] [--budget 40] [--seed 1] [--strategy S] [--tune build/tune]
  kt_wallclock.py --check    (no GPU: the space, restrictions and grid against tune's enumeration of
                              recipes/copy.lua, and one Kernel Tuner run in simulation mode on a cache
                              exported from data/recorded/h100/copy.db; needs kernel_tuner importable)
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEAR = 0.98
PROBLEMS = {"64MiB": 16 * 1024 * 1024, "256MiB": 64 * 1024 * 1024}  # recipes/copy.lua's problems
# recipes/copy.lua's parameters, in its order and value order (bools as 0/1, as tune's -D defines)
TUNE_PARAMS = {"VEC_BYTES": [4, 8, 16], "ILP": [1, 2, 4, 8], "BLOCK": [128, 256, 512, 1024],
               "GRID_STRIDE": [0, 1], "MIN_BLOCKS": [1, 2]}
RESTRICTIONS = ["BLOCK * MIN_BLOCKS <= 2048", "BLOCK * ILP * VEC_BYTES <= 64 * 1024"]
SM_COUNT = 132  # H100 / H200 (sm_90a): copy.lua's grid caps a grid-stride launch at sm_count * (2048 // BLOCK)


def grid_blocks(p, n, sm_count=SM_COUNT):
    """copy.lua's launch.grid: blocks of the one-dimensional grid."""
    per_block = p["BLOCK"] * p["ILP"] * (p["VEC_BYTES"] // 4)
    blocks = (n + per_block - 1) // per_block
    if p["GRID_STRIDE"]:
        blocks = min(blocks, sm_count * (2048 // p["BLOCK"]))
    return blocks


def kt_tune(n, strategy, budget, seed, cache=None, simulation=False, sm_count=SM_COUNT):
    """One Kernel Tuner run; returns its results (list of dicts with 'time' in ms, 'timestamp')."""
    import numpy as np
    import kernel_tuner
    import random
    random.seed(seed)
    np.random.seed(seed)
    src = np.random.uniform(-1, 1, n).astype(np.float32)
    dst = np.zeros(n, dtype=np.float32)
    args = [src, dst, np.int64(n)]
    opts = {}
    if strategy != "brute_force":
        opts = {"max_fevals": budget}
    kw = dict(lang="cupy", block_size_names=["BLOCK"], grid_div_x=[], restrictions=RESTRICTIONS,
              compiler_options=["-I" + os.path.join(ROOT, "templates"), "-std=c++17"],
              strategy=strategy, strategy_options=opts, iterations=7, verbose=False, quiet=True)
    if simulation:
        kw.update(simulation_mode=True, cache=cache)
    else:
        kw.update(answer=[None, src, None], atol=0.0)
        if cache:
            kw["cache"] = cache
    results, _env = kernel_tuner.tune_kernel(
        "copy_kernel", os.path.join(ROOT, "templates/copy/copy.cuh"), lambda p: (grid_blocks(p, n, sm_count), 1, 1), args,
        TUNE_PARAMS, **kw)
    return results


def kt_child(a):
    """--kt-child: one Kernel Tuner run in this process; prints its results as JSON lines."""
    t0 = time.time()
    res = kt_tune(PROBLEMS[a.problem], a.strategy, a.budget, a.seed)
    out = []
    for r in res:
        ok = isinstance(r.get("time"), (int, float)) and "__error__" not in r
        out.append(dict(ms=float(r["time"]) if ok else None, timestamp=r.get("timestamp"),
                        config={k: r[k] for k in TUNE_PARAMS}))
    json.dump(dict(start=t0, end=time.time(), results=out), sys.stdout)


def iso_to_epoch(s):
    s = s.replace("Z", "+00:00")
    return datetime.fromisoformat(s).timestamp()


def run_kt(a, strategy, outdir):
    env = dict(os.environ, CUPY_CACHE_DIR=tempfile.mkdtemp(prefix="kt_cupy_", dir=outdir))
    t0 = time.time()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--kt-child", "--problem", a.problem,
                        "--strategy", strategy, "--budget", str(a.budget), "--seed", str(a.seed)],
                       env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"kt_wallclock: Kernel Tuner {strategy} failed:\n{p.stderr[-4000:]}")
    d = json.loads(p.stdout)
    d["launch"] = t0
    with open(os.path.join(outdir, f"kt_{strategy}.json"), "w") as f:
        json.dump(d, f)
    return [(r["ms"] * 1e6 if r["ms"] is not None else None, iso_to_epoch(r["timestamp"])) for r in d["results"]], t0, time.time()


def run_tune(a, strategy, outdir):
    db = os.path.join(outdir, f"tune_{strategy or 'default'}.db")
    cmd = [a.tune, "run", os.path.join(ROOT, "recipes/copy.lua"), "--problem", a.problem, "--device", "cuda:0",
           "--db", db, "--seed", str(a.seed), "--no-warm-start"]
    cmd += ["--strategy", strategy] if strategy else ["--budget", str(a.budget)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    t1 = time.time()
    with open(os.path.join(outdir, f"tune_{strategy or 'default'}.log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    if p.returncode:
        sys.exit(f"kt_wallclock: {' '.join(cmd)} failed:\n{(p.stdout + p.stderr)[-4000:]}")
    con = sqlite3.connect(db)
    rows = con.execute("select case when status = 'ok' then median_ns end, created_at from results "
                       "order by id").fetchall()
    busy = [ln.strip() for ln in p.stdout.splitlines() + p.stderr.splitlines() if "GPU busy" in ln]
    return [(ns, iso_to_epoch(ts)) for ns, ts in rows], t0, t1, busy


def to_98(rows, t0, opt_ns):
    """(evaluations, seconds from t0) to the first result within 2 % of opt_ns, or (None, None)."""
    for i, (ns, ts) in enumerate(rows):
        if ns is not None and ns <= opt_ns / NEAR:
            return i + 1, ts - t0
    return None, None


def best(rows):
    v = [ns for ns, _ in rows if ns is not None]
    return min(v) if v else float("inf")


def measure(a):
    os.makedirs(a.out, exist_ok=True)
    kt_rows, kt_t0, kt_t1 = run_kt(a, a.strategy, a.out)
    tu_rows, tu_t0, tu_t1, busy = run_tune(a, None, a.out)
    kb_rows, _, kb_t1 = run_kt(a, "brute_force", a.out)
    te_rows, te_t0, te_t1, busy_ex = run_tune(a, "exhaustive", a.out)
    kt_opt, tu_opt = min(best(kt_rows), best(kb_rows)), min(best(tu_rows), best(te_rows))
    lines = [f"copy {a.problem} (N = {PROBLEMS[a.problem]}), budget {a.budget}, seed {a.seed}; "
             f"optimum per tool on its own timer: Kernel Tuner {kt_opt / 1e3:.2f} us (brute_force, "
             f"{len(kb_rows)} configs, {kb_t1 - kt_t1:.1f} s), tune {tu_opt / 1e3:.2f} us (exhaustive, "
             f"{len(te_rows)} configs, {te_t1 - te_t0:.1f} s)",
             f"{'tool':34s} {'evals to 98 %':>13s} {'wall to 98 % [s]':>16s} {'evals':>5s} {'wall [s]':>8s}"]
    out = {}
    for name, rows, t0, t1, opt in ((f"kernel_tuner {a.strategy}", kt_rows, kt_t0, kt_t1, kt_opt),
                                    ("tune run (default strategy, cold)", tu_rows, tu_t0, tu_t1, tu_opt)):
        e, s = to_98(rows, t0, opt)
        out[name] = dict(evals_to_98=e, wall_to_98_s=s, evals=len(rows), wall_s=t1 - t0, optimum_ns=opt)
        lines.append(f"{name:34s} {e if e else '-':>13} {f'{s:.2f}' if s is not None else '-':>16s} "
                     f"{len(rows):5d} {t1 - t0:8.2f}")
    a_s, b_s = out[f"kernel_tuner {a.strategy}"]["wall_to_98_s"], out["tune run (default strategy, cold)"]["wall_to_98_s"]
    if a_s and b_s:
        lines.append(f"tune is {a_s / b_s:.1f}x faster to 98 % (goal: 5x)")
    lines += ["tune: " + b for b in busy] + ["tune exhaustive: " + b for b in busy_ex]
    print("\n".join(lines))
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(dict(problem=a.problem, budget=a.budget, seed=a.seed, strategy=a.strategy, tools=out,
                       gpu_busy=busy, gpu_busy_exhaustive=busy_ex), f, indent=1)


def check(a):
    """No GPU: the space, the grid and a simulated Kernel Tuner run."""
    import itertools
    pts = [dict(zip(TUNE_PARAMS, v)) for v in itertools.product(*TUNE_PARAMS.values())]
    ok = [p for p in pts if all(eval(r, {}, p) for r in RESTRICTIONS)]
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "c.db")
        p = subprocess.run([a.tune, "run", os.path.join(ROOT, "recipes/copy.lua"), "--problem", a.problem,
                            "--compile-only", "--db", db, "--jobs", "2"], capture_output=True, text=True, cwd=ROOT)
        if p.returncode:
            sys.exit(f"kt_wallclock --check: tune --compile-only failed:\n{(p.stdout + p.stderr)[-3000:]}")
        n_tune = sqlite3.connect(db).execute("select count(distinct config_id) from results").fetchone()[0]
        print(f"space: Kernel Tuner {len(ok)} configs, tune --compile-only {n_tune}")
        if n_tune != len(ok):
            sys.exit("kt_wallclock --check: the spaces differ")
        cache = os.path.join(d, "kt_cache.json")
        rec = os.path.join(ROOT, "data/recorded/h100/copy.db")
        p = subprocess.run([a.tune, "db", "export", "--db", rec, "--format", "kernel_tuner", "--recipe", "copy",
                            "--problem", a.problem, "-o", cache], capture_output=True, text=True, cwd=ROOT)
        if p.returncode:
            sys.exit(f"kt_wallclock --check: export failed: {p.stderr}")
        sim = json.load(open(cache))
        sim["kernel_name"] = "copy_kernel"  # the export names the recipe; Kernel Tuner checks the kernel's name
        # the export writes bools as Python's False/True; the driver passes 0/1 (a #define False breaks #if)
        sim["tune_params"] = TUNE_PARAMS
        entries = {}
        for v in sim["cache"].values():
            v = {k: int(x) if isinstance(x, bool) else x for k, x in v.items()}
            entries[",".join(str(v[k]) for k in TUNE_PARAMS)] = v
        sim["cache"] = entries
        json.dump(sim, open(cache, "w"))
        key = next(iter(sim["cache"].values()))
        kt_keys = set(sim["cache"])
        # the simulated run needs the cache's problem size and grid as Kernel Tuner would compute them
        res = kt_tune(PROBLEMS[a.problem], a.strategy, a.budget, a.seed, cache=cache, simulation=True)
        times = [r["time"] for r in res if isinstance(r.get("time"), (int, float))]
        opt = min(float(v["time"]) for v in sim["cache"].values() if isinstance(v.get("time"), (int, float)))
        print(f"simulated {a.strategy} on the H100 recording: {len(res)} evaluations, best {min(times) * 1e3:.2f} us "
              f"(recorded optimum {opt * 1e3:.2f} us), {len(kt_keys)} cached configs; one entry: "
              f"{ {k: key[k] for k in TUNE_PARAMS} }")
        print(f"grid of the first config: {grid_blocks(ok[0], PROBLEMS[a.problem])} blocks")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--problem", default="256MiB", choices=sorted(PROBLEMS))
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--strategy", default="adaptive_tabu_greywolf")
    ap.add_argument("--tune", default=os.path.join(ROOT, "build/tune"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--kt-child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.kt_child:
        return kt_child(a)
    if a.check:
        return check(a)
    if not a.out:
        ap.error("--out DIR (or --check)")
    measure(a)


if __name__ == "__main__":
    main()
