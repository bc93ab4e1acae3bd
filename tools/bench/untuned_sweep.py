#!/usr/bin/env python3
"""The cost of an untuned shape (issue: bundles that serve every shape): for each shape of a sweep,
the variant a bundle picks (nearest tuned entry, fallback, ...) against the best variant tuned for
that exact shape, both timed by `tune run` on the same GPU in the same database, by one protocol.

    untuned_sweep.py --bundle B --recipe recipes/gemm.lua --family gemm --shapes sweep.jsonl \
        --db sweep.db [--budget 40] [--tune build/tune]

1. `tune run RECIPE --problems-from SHAPES --budget N`: each shape tuned on its own (the exact best);
2. per shape, the bundle's pick (libtunert's tunert_select through the tunert Python package) timed
   by `tune run --problems-from ONE --only ITS_PARAMS` (a pick the first run already timed is
   resumed, not timed again);
3. ratio = exact best median / pick median (1.0: the pick is as fast as tuning that shape; below:
   what serving it untuned costs); the median and the worst over the sweep.
A vendor pick (no kernel) is reported as such and left out of the ratios.
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--recipe", required=True, help="the recipe file whose family the shapes are of")
    ap.add_argument("--family", required=True)
    ap.add_argument("--shapes", required=True, help="served-problem log lines of the family (JSONL)")
    ap.add_argument("--db", required=True)
    ap.add_argument("--budget", default="40", help="evaluations per shape for the exact tuning")
    ap.add_argument("--tune", default="build/tune")
    ap.add_argument("--json-out")
    return ap.parse_args()


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-2000:])
        raise SystemExit(f"untuned_sweep: {' '.join(cmd)} failed ({p.returncode})")
    return p.stdout


def problem_name(db, dims):
    """The name tune run gave the problem with these dims (matched by value, not by naming rule)."""
    with sqlite3.connect(db) as c:
        for name, dj in c.execute("SELECT name, dims_json FROM problems"):
            if json.loads(dj) == dims:
                return name
    return None


def medians(db, problem, params=None):
    """The lowest ok median [ns] of a problem, of the config with these params when given."""
    q = ("SELECT c.params_json, r.median_ns FROM results r JOIN problems p ON p.id = r.problem_id"
         " JOIN configs c ON c.id = r.config_id WHERE p.name = ? AND r.status = 'ok'"
         " AND c.origin NOT LIKE 'peer:%' AND coalesce(r.error_text, '') NOT LIKE 'halving: quick%'")
    with sqlite3.connect(db) as c:
        ns = [m for pj, m in c.execute(q, [problem]) if params is None or json.loads(pj) == params]
    return min(ns) if ns else None


def main():
    a = args()
    import tunert
    shapes = [json.loads(l) for l in open(a.shapes) if l.strip()]
    shapes = [s for s in shapes if s["family"] == a.family]
    run([a.tune, "run", a.recipe, "--problems-from", a.shapes, "--db", a.db, "--budget", a.budget, "--quiet"])
    b = tunert.Bundle(a.bundle)
    rows = []
    for s in shapes:
        sel = b.select(a.family, **s["dims"])
        i = sel.info
        name = problem_name(a.db, s["dims"])
        row = {"shape": s["dims"], "problem": name, "pick": i.variant, "kind": i.kind,
               "tuned_for": i.tuned_problem, "distance": i.distance}
        if i.kind != "vendor":
            with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
                f.write(json.dumps(s) + "\n")
            only = ",".join(f"{k}={json.dumps(v)}" for k, v in i.variant.items())
            run([a.tune, "run", a.recipe, "--problems-from", f.name, "--db", a.db, "--only", only, "--quiet"])
            os.unlink(f.name)
            row["pick_ns"] = medians(a.db, name, i.variant)
            row["best_ns"] = medians(a.db, name)
            if row["pick_ns"] and row["best_ns"]:
                row["ratio"] = row["best_ns"] / row["pick_ns"]
        rows.append(row)
    print("| shape | pick | tuned for | pick us | exact best us | best / pick |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        sh = ",".join(f"{k}={v}" for k, v in r["shape"].items())
        f = lambda x: f"{x / 1e3:.2f}" if x else "-"
        print(f"| {sh} | {r['kind']} | {r['tuned_for']} | {f(r.get('pick_ns'))} | {f(r.get('best_ns'))} | "
              f"{r['ratio']:.3f} |" if "ratio" in r else f"| {sh} | {r['kind']} | {r['tuned_for']} | - | - | - |")
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    if ratios:
        print(f"\n{len(ratios)} shapes: median {statistics.median(ratios):.3f}, worst {min(ratios):.3f} "
              f"(goal: median >= 0.95, worst >= 0.85)")
    if a.json_out:
        json.dump(rows, open(a.json_out, "w"), indent=1)


if __name__ == "__main__":
    main()
