#!/usr/bin/env python3
"""search_odds.py: how hard each recorded space makes search issue #8's goal (98 % of the optimum
within 10 % of the evaluations), from the recordings alone.

usage: search_odds.py [DB ...]   (default: data/recorded/*.db)

Per space (recipe, problem: the configs a recording evaluated, i.e. not `skipped`): its size n, the
evaluations at 10 % (n / 10 rounded half up, at least 1, as tune-bench-search counts them), how many
configs run within 98 % of the optimum (g), and the probability that random search without
replacement finds one of them within that budget, 1 - C(n - g, e) / C(n, e). Where that is below
one half, a strategy that knows nothing of the space before it starts (Kernel Tuner's, tune's cold
ones) reaches the goal in the median only by doing much better than chance.
Prints a markdown table of those spaces and a summary line.
"""
import glob
import math
import sqlite3
import sys


def spaces(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = {}
    for rec, prob, status, ns in c.execute(
            """SELECT rc.name, p.name, r.status, r.median_ns FROM results r JOIN recipes rc ON rc.id = r.recipe_id
               JOIN problems p ON p.id = r.problem_id WHERE r.status != 'skipped'"""):
        out.setdefault((rec, prob), []).append(ns if status == "ok" else None)
    return out


def main():
    if any(a.startswith("-") for a in sys.argv[1:]):
        print(__doc__.strip())
        return
    dbs = sys.argv[1:] or sorted(glob.glob("data/recorded/*.db"))
    rows = []
    for db in dbs:
        for (rec, prob), times in spaces(db).items():
            ok = [t for t in times if t]
            if not ok:
                continue
            n, best = len(times), min(ok)
            good = sum(1 for t in ok if best / t >= 0.98)
            evals = max(1, int(0.1 * n + 0.5))
            p = 1.0 if n - good < evals else 1 - math.comb(n - good, evals) / math.comb(n, evals)
            rows.append((rec, prob, n, evals, good, p))
    hard = sorted((r for r in rows if r[5] < 0.5), key=lambda r: (r[5], r[0], r[1]))
    print("| space | configs | evaluations at 10 % | configs within 98 % | P(random finds one) |")
    print("| --- | --- | --- | --- | --- |")
    for rec, prob, n, e, g, p in hard:
        print(f"| {rec} / {prob} | {n} | {e} | {g} | {p:.2f} |")
    print(f"\n{len(hard)} of {len(rows)} spaces: random search reaches 98 % within 10 % with probability < 0.5; "
          f"{sum(1 for r in rows if r[4] == 1)} have a single config within 98 %; "
          f"{sum(1 for r in rows if r[3] <= 2)} allow at most 2 evaluations")


if __name__ == "__main__":
    main()
