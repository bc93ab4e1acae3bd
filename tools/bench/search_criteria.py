#!/usr/bin/env python3
"""search_criteria.py: B98 and the search criteria per space (docs/search.md, "The criteria"), from
tune-bench-search --json output and Kernel Tuner trajectories (kernel_tuner_sim.py --trajectory).

B98: the fewest evaluations at which the median over the seeds of optimum / found reaches 0.98.
W90: the fewest at which 90 % of the seeds do. On a space of n configs:
  (a) B98 <= max(10 % of n, 5);
  (b) B98 <= the B98 of the best single Kernel Tuner strategy: the one whose mean P score over the
      design spaces and the six evaluation budgets (1 .. 50 %) is highest;
  (c) W90 <= max(25 % of n, 10).
tune's trajectories go to tune_cap(n) = min(n, max(bar (c), 20)) evaluations, Kernel Tuner's to half the
space (at least 20). A B98 beyond the cap is "not reached": it fails (a) and (c), and (b) unless
Kernel Tuner's is not reached within tune's cap either (then (b) is unknown, counted as not passing).
The per-space best of all Kernel Tuner strategies run is given beside (b) as a reference, not a bar.
tune's default strategy is judged started cold (--cold, each problem on its own, as Kernel Tuner runs)
and, beside it, warm (--warm, from the recipe's earlier problems' bests).

usage: search_criteria.py --design T.json [T.json ...] [--held-out T.json ...] --kt K.json [K.json ...]
         --out FILE(.md|.json) [--cold bayes:cold] [--warm bayes]
Prints the summary (counts of spaces passing a, b, c per set, cold and warm) and writes the per-space
file (markdown when FILE ends in .md, else JSON).
"""
import argparse
import gzip
import json
import math
import sys

NEAR = 0.98
SHARE = 0.9


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    if lo >= len(v) - 1:
        return v[-1]
    return v[lo] + (pos - lo) * (v[lo + 1] - v[lo])


def bar_a(n):
    return max(int(math.floor(0.10 * n + 0.5)), 5)


def bar_c(n):
    return max(int(math.floor(0.25 * n + 0.5)), 10)


def tune_cap(n):
    return min(n, max(bar_c(n), 20))


def best_at(steps, e):
    """The best found within e evaluations of a run given as improvement steps [[evals, ns], ...]."""
    best = math.inf
    for k, ns in steps:
        if k > e:
            break
        best = ns
    return best


def b98_w90(runs, opt, cap):
    """(B98, W90) of runs (improvement steps per seed) within cap evaluations; None: not reached."""
    b98 = w90 = None
    if not runs:
        return None, None
    for e in range(1, cap + 1):
        r = [opt / f if math.isfinite(f) else 0.0 for f in (best_at(s, e) for s in runs)]
        if b98 is None and quantile(r, 0.5) >= NEAR:
            b98 = e
        if w90 is None and sum(x >= NEAR for x in r) >= SHARE * len(r):
            w90 = e
        if b98 is not None and w90 is not None:
            break
    return b98, w90


def kt_score(runs, tp, cap):
    """Mean over the evaluation budgets (1 .. 50 %) within the trajectories' cap of the median P
    (random = 0, optimum = 1); budgets where random search already reaches the optimum are left out.
    None when no budget counts."""
    opt, ps = tp["optimum_ns"], []
    for b in tp["budgets"]:
        base, den = b["baseline_eval_ns"], b["baseline_eval_ns"] - opt
        if not den > 1e-12 * opt or b["evals"] > cap:
            continue
        worst = tp["worst_ns"]
        found = [best_at(s, b["evals"]) for s in runs]
        ps.append(quantile([(base - (f if math.isfinite(f) else worst)) / den for f in found], 0.5))
    return sum(ps) / len(ps) if ps else None


def load_tune(paths, label, partial):
    """The spaces of tune-bench-search outputs; a space with unrecorded configs (a --budget recording)
    goes to partial instead: its optimum is not known, so no B98 can be judged on it."""
    out = []
    for path in paths:
        for p in json.load(open(path)):
            p["set"] = label
            if p.get("statuses", {}).get("not_recorded", 0):
                partial.append(f"{label}: {p['recipe']} / {p['problem']} "
                               f"({p['statuses']['not_recorded']} of {p['n_points']} not recorded)")
                continue
            out.append(p)
    return out


def load_kt(paths):
    kt, strategies = {}, []
    for path in paths:
        d = json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))
        if d.get("mode") != "trajectory":
            sys.exit(f"search_criteria: {path} is not a kernel_tuner_sim.py --trajectory output")
        for s in d["strategies"]:
            if s not in strategies:
                strategies.append(s)
        for p in d["problems"]:
            kt[(p["recipe"], p["problem"], p["device"])] = p
    return kt, strategies


def fmt(k, cap):
    return "-" if k is None else str(k)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--design", nargs="+", required=True)
    ap.add_argument("--held-out", nargs="*", default=[])
    ap.add_argument("--kt", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cold", default="bayes:cold")
    ap.add_argument("--warm", default="bayes")
    ap.add_argument("--kt-best", help="the bar of (b), as chosen on the whole design set earlier (when --design "
                    "holds only part of it)")
    a = ap.parse_args()
    partial = []
    probs = load_tune(a.design, "design", partial) + load_tune(a.held_out, "held-out", partial)
    kt, strategies = load_kt(a.kt)
    # the best single Kernel Tuner strategy: chosen on the design spaces only
    scores = {}
    for s in strategies:
        v = []
        for p in probs:
            k = kt.get((p["recipe"], p["problem"], p["device"]))
            if p["set"] != "design" or not k or s not in k["strategies"]:
                continue
            sc = kt_score(k["strategies"][s]["runs"], p, k["cap"])
            if sc is not None:
                v.append(sc)
        scores[s] = (sum(v) / len(v), len(v)) if v else (None, 0)
    ranked = sorted((s for s in strategies if scores[s][0] is not None), key=lambda s: -scores[s][0])
    if not ranked:
        sys.exit("search_criteria: no Kernel Tuner strategy has a score on the design spaces")
    best = a.kt_best or ranked[0]
    if best not in strategies:
        sys.exit(f"search_criteria: --kt-best {best}: no such Kernel Tuner strategy in the trajectories")
    rows, missing = [], []
    for p in probs:
        n, cap = p["n_points"], p["trajectory_cap"]
        k = kt.get((p["recipe"], p["problem"], p["device"]))
        row = dict(set=p["set"], recipe=p["recipe"], problem=p["problem"], n_points=n, n_ok=p["n_ok"],
                   cap=cap, bar_a=bar_a(n), bar_c=bar_c(n))
        row["cap"] = cap = tune_cap(n)  # older outputs went further: the same cap for all

        def capped(k):
            return k if k is not None and k <= cap else None
        for mode, label in (("cold", a.cold), ("warm", a.warm)):
            s = p["strategies"].get(label)
            row[mode] = dict(b98=capped(s["b98"]), w90=capped(s["w90"])) if s else None
        if not k:
            missing.append(f"{p['recipe']} / {p['problem']}")
            row["kt_best"] = row["kt_ref"] = None
        else:
            ks = k["strategies"]
            res = {s: b98_w90(v["runs"], k["optimum_ns"], k["cap"]) + (len(v["errors"]),) for s, v in ks.items()}
            row["kt"] = {s: dict(b98=r[0], w90=r[1], failed_seeds=r[2]) for s, r in res.items()}
            row["kt_best"] = row["kt"].get(best)
            reached = [(r[0], s) for s, r in res.items() if r[0] is not None]
            row["kt_ref"] = dict(b98=min(reached)[0], strategy=min(reached)[1]) if reached else None
        for mode in ("cold", "warm"):
            t = row[mode]
            if not t:
                continue
            kb = row["kt_best"]["b98"] if row["kt_best"] else None
            t["a"] = t["b98"] is not None and t["b98"] <= row["bar_a"]
            t["b"] = None if not row["kt_best"] else (t["b98"] is not None and (kb is None or t["b98"] <= kb))
            if t["b98"] is None and row["kt_best"] and kb is None:
                t["b"] = None  # neither within the cap: unknown
            t["c"] = t["w90"] is not None and t["w90"] <= row["bar_c"]
        rows.append(row)
    # summary
    print(f"Kernel Tuner strategies, mean P over the design spaces and the 1-50 % evaluation budgets "
          f"(the best single one is the bar of (b)):")
    for s in ranked:
        print(f"  {s:24s} {scores[s][0]:.3f} ({scores[s][1]} spaces)")
    print(f"\ncriteria: (a) B98 <= max(10 %, 5); (b) B98 <= kt:{best}'s B98; (c) 90 % of seeds within 2 % "
          f"by max(25 %, 10); spaces passing, of those in the set")
    print(f"{'set':9s} {'spaces':>6s} | {'cold a':>6s} {'b':>4s} {'c':>4s} {'all':>4s} | "
          f"{'warm a':>6s} {'b':>4s} {'c':>4s} {'all':>4s} | {'kt:' + best + ' a':>6s}")
    for st in ("design", "held-out"):
        rs = [r for r in rows if r["set"] == st]
        if not rs:
            continue
        line = f"{st:9s} {len(rs):6d} |"
        for mode in ("cold", "warm"):
            ts = [r[mode] for r in rs if r[mode]]
            na, nb, nc = (sum(bool(t[x]) for t in ts) for x in "abc")
            nall = sum(bool(t["a"] and t["b"] and t["c"]) for t in ts)
            line += f" {na:6d} {nb:4d} {nc:4d} {nall:4d} |"
        kta = sum(1 for r in rs if r["kt_best"] and r["kt_best"]["b98"] is not None and r["kt_best"]["b98"] <= r["bar_a"])
        line += f" {kta:6d}"
        print(line)
    if partial:
        print(f"left out, not recorded in full: {len(partial)} space(s): " + "; ".join(partial[:6])
              + (" ..." if len(partial) > 6 else ""))
    if missing:
        print(f"no Kernel Tuner data for {len(missing)} space(s) (their (b) is unknown, counted as not passing): "
              + ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else ""))
    doc = dict(best_kt_strategy=best, kt_scores={s: scores[s][0] for s in strategies}, spaces=rows,
               partial=partial)
    if a.out.endswith(".md"):
        L = ["# Search criteria per space\n",
             f"Generated by tools/bench/search_criteria.py. B98/W90 in evaluations ('-': not within the cap). "
             f"(b)'s bar: Kernel Tuner's {best}; reference: the per-space best of the Kernel Tuner strategies run.\n",
             "| set | space | configs | cap | bar a | bar c | cold B98 | cold W90 | cold a b c | warm B98 | warm W90 | "
             f"warm a b c | KT {best} B98 | KT best B98 (strategy) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

        def flags(t):
            return " ".join(("y" if t[x] else ("?" if t[x] is None else "n")) for x in "abc") if t else "-"
        for r in rows:
            c, w = r["cold"] or {}, r["warm"] or {}
            kb = r["kt_best"]["b98"] if r["kt_best"] else None
            ref = f"{r['kt_ref']['b98']} ({r['kt_ref']['strategy']})" if r["kt_ref"] else "-"
            L.append(f"| {r['set']} | {r['recipe']} / {r['problem']} | {r['n_points']} | {r['cap']} | {r['bar_a']} | "
                     f"{r['bar_c']} | {fmt(c.get('b98'), r['cap'])} | {fmt(c.get('w90'), r['cap'])} | {flags(r['cold'])} | "
                     f"{fmt(w.get('b98'), r['cap'])} | {fmt(w.get('w90'), r['cap'])} | {flags(r['warm'])} | "
                     f"{fmt(kb, r['cap'])} | {ref} |")
        open(a.out, "w").write("\n".join(L) + "\n")
    else:
        json.dump(doc, open(a.out, "w"), indent=1)
    print(f"per-space file: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
