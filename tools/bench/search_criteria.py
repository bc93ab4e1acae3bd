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

--feasibility adds what bounds a strategy started cold on each space: n, k2 (the configs whose recorded
ok time is within 2 % of the optimum: tune-bench-search's n_near) and random search's exact B98 and W90: the fewest b with
1 - C(n - k2, b) / C(n, b) >= 0.5 (0.9 for W90), draws without replacement. R = random's B98 / bar (a)
is the factor by which a strategy must beat random search to meet (a). --feasibility-only gives these
alone, without Kernel Tuner's data or tune's B98 (tune-bench-search files of any strategy and seeds).

usage: search_criteria.py --design T.json [T.json ...] [--held-out T.json ...] --kt K.json [K.json ...]
         --out FILE(.md|.json) [--cold bayes:cold] [--warm bayes] [--feasibility | --feasibility-only]
Prints the summary (counts of spaces passing a, b, c per set, cold and warm) and writes the per-space
file (markdown when FILE ends in .md, else JSON).
"""
import argparse
import gzip
import json
import math
import sys
from fractions import Fraction

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


def kt_matches(k, p):
    """Whether Kernel Tuner's trajectories k were made on the recording of space p (the same ok configs
    and optimum; n may differ, as the export leaves out configs the recipe skipped): a space re-recorded
    since, with a new parameter value, keeps its name but not its figures."""
    return k["n_ok"] == p["n_ok"] and abs(k["optimum_ns"] - p["optimum_ns"]) <= 1e-9 * p["optimum_ns"]


def random_evals(n, k, share):
    """Random search's figure on n configs, k of them good: the fewest b at which b draws without
    replacement hold a good one with probability >= share, 1 - C(n - k, b) / C(n, b) >= share, in
    integers (share a Fraction). None when k is 0."""
    if k <= 0:
        return None
    for b in range(1, n + 1):
        if share.denominator * math.comb(n - k, b) <= (share.denominator - share.numerator) * math.comb(n, b):
            return b
    return n


def feasibility(p):
    """The quantities that bound a cold strategy on space p (see the module comment)."""
    if "n_near" not in p:
        sys.exit(f"search_criteria: {p['recipe']} / {p['problem']}: no n_near in its tune-bench-search file "
                 "(made by an older build: run it again, without TUNE_REUSE)")
    n, k2 = p["n_points"], p["n_near"]
    rb, rw = random_evals(n, k2, Fraction(1, 2)), random_evals(n, k2, Fraction(9, 10))
    return dict(n=n, k2=k2, random_b98=rb, random_w90=rw, r=rb / bar_a(n) if rb else None)


def print_feasibility(rows):
    """The feasibility summary per set: how far random search is from the bar of (a), on every space and
    on those where tune cold fails (a)."""
    def dist(R):
        R = sorted(R)
        return f"{R[0]:5.2f} {quantile(R, 0.5):5.2f} {R[-1]:5.2f}" if R else f"{'-':>5s} {'-':>5s} {'-':>5s}"

    def low(sub):  # k2 / n < 1 / bar (a): random's expected hits in bar (a) draws below one
        return f"{sum(r['feas']['k2'] * r['bar_a'] < r['feas']['n'] for r in sub)}/{len(sub)}"
    sets = [(st, [r for r in rows if r["set"] == st]) for st in ("design", "held-out")]
    sets = [(st, rs) for st, rs in sets if rs]
    print("\nfeasibility: k2 configs within 2 % of the optimum of n; random search's exact B98 (draws without "
          "replacement);\nR = random B98 / bar (a): the factor by which a strategy must beat random search to meet (a); "
          "k2/n<1/bar: spaces where random\nsearch expects less than one near-optimal config in bar (a) draws")
    print(f"{'set':9s} {'spaces':>6s} {'k2=1':>5s} {'rnd>bar':>7s} {'R min':>5s} {'med':>5s} {'max':>5s} "
          f"{'k2/n<1/bar':>10s}")
    for st, rs in sets:
        print(f"{st:9s} {len(rs):6d} {sum(r['feas']['k2'] == 1 for r in rs):5d} "
              f"{sum(r['feas']['random_b98'] > r['bar_a'] for r in rs):7d} {dist(r['feas']['r'] for r in rs)} "
              f"{low(rs):>10s}")
    sets = [(st, [r for r in rs if r["cold"]]) for st, rs in sets]
    if any(rs for _, rs in sets):
        print("where tune cold fails (a) (cold<=rnd: its B98 is random's or better; KT any a: some Kernel Tuner "
              "strategy run meets (a)\nthere, the per-space best; warm a: tune warm does), and where it meets (a)")
        print(f"{'set':9s} {'fail a':>6s} {'k2=1':>5s} {'rnd>bar':>7s} {'R min':>5s} {'med':>5s} {'max':>5s} "
              f"{'k2/n<1/bar':>10s} {'cold<=rnd':>9s} {'KT any a':>8s} {'warm a':>6s} | {'meet a':>6s} {'rnd>bar':>7s} {'R max':>5s} "
              f"{'k2/n<1/bar':>10s}")
    for st, rs in sets:
        if not rs:
            continue
        fail = [r for r in rs if not r["cold"]["a"]]
        ok = [r for r in rs if r["cold"]["a"]]
        kt_any = sum(1 for r in fail if r["kt_ref"] and r["kt_ref"]["b98"] <= r["bar_a"])
        warm = sum(1 for r in fail if r["warm"] and r["warm"]["a"])
        beat = sum(1 for r in fail if r["cold"]["b98"] is not None and r["cold"]["b98"] <= r["feas"]["random_b98"])
        print(f"{st:9s} {len(fail):6d} {sum(r['feas']['k2'] == 1 for r in fail):5d} "
              f"{sum(r['feas']['random_b98'] > r['bar_a'] for r in fail):7d} {dist(r['feas']['r'] for r in fail)} "
              f"{low(fail):>10s} {beat:9d} {kt_any:8d} {warm:6d} | {len(ok):6d} "
              f"{sum(r['feas']['random_b98'] > r['bar_a'] for r in ok):7d} "
              f"{max((r['feas']['r'] for r in ok), default=0):5.2f} {low(ok):>10s}")
    bins = ((0, 1, "R<=1"), (1, 2, "1<R<=2"), (2, 3, "2<R<=3"), (3, math.inf, "R>3"))
    for st, rs in sets:
        if not rs:
            continue
        cells = []
        for lo, hi, name in bins:
            b = [r for r in rs if lo < r["feas"]["r"] <= hi]
            kt_any = sum(1 for r in b if r["kt_ref"] and r["kt_ref"]["b98"] <= r["bar_a"])
            cells.append(f"{name} {sum(r['cold']['a'] for r in b)}/{kt_any}/{len(b)}")
        print(f"{st}: spaces where tune cold / some Kernel Tuner strategy meets (a), of those, by R: " + ", ".join(cells))
    print_bar_a_random(sets)


def meets_a_random(r, b98):
    """(a'), the restatement of (a) proposed where random search needs more than its bar: B98 <=
    max(bar (a), random search's B98 / 2), i.e. (a), or twice as few evaluations as random search."""
    random_b98 = r["feas"]["random_b98"] or 0  # None: no config within 2 % (no space that was scored)
    return b98 is not None and b98 <= max(r["bar_a"], random_b98 / 2)


def print_bar_a_random(sets):
    """Spaces meeting (a') per set: tune cold, tune warm, the bar strategy of (b) (kt_best)."""
    sets = [(st, rs) for st, rs in sets if rs]
    if not sets:
        return
    print("(a'), proposed: B98 <= max(10 %, 5, random search's B98 / 2); spaces passing, of those in the set")
    for st, rs in sets:
        counts = []
        for key in ("cold", "warm", "kt_best"):
            with_data = [r for r in rs if r[key]]
            counts.append(f"{key.replace('kt_best', 'kt bar')} {sum(meets_a_random(r, r[key]['b98']) for r in with_data)}"
                          f"/{len(with_data)}")
        print(f"{st:9s} {len(rs):6d} | " + ", ".join(counts))


def feasibility_md(rows, best):
    """The per-space feasibility table (markdown lines); best None: without tune's and Kernel Tuner's columns."""
    head = ["set", "space", "n", "k2", "random B98", "random W90", "bar a", "R"]
    if best:
        head += ["cold B98", "warm B98", f"KT {best} B98", "KT best B98"]
    L = ["n configs; k2 within 2 % of the optimum; random search's exact B98 and W90 (draws without "
         "replacement); R = random B98 / bar (a)" + (". tune's and Kernel Tuner's B98 ('-': not within the cap)."
                                                     if best else "."), "",
         "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        f = r["feas"]
        c = [r["set"], f"{r['recipe']} / {r['problem']}", f["n"], f["k2"],
             f["random_b98"], f["random_w90"], r["bar_a"], f"{f['r']:.2f}"]
        if best:
            c += [fmt((r[m] or {}).get("b98"), r["cap"]) for m in ("cold", "warm")]
            c += [fmt(r["kt_best"]["b98"] if r["kt_best"] else None, r["cap"]),
                  fmt(r["kt_ref"]["b98"] if r["kt_ref"] else None, r["cap"])]
        L.append("| " + " | ".join(str(x) for x in c) + " |")
    return L


def fmt(k, cap):
    return "-" if k is None else str(k)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--design", nargs="+", required=True)
    ap.add_argument("--held-out", nargs="*", default=[])
    ap.add_argument("--kt", nargs="*", default=[], help="Kernel Tuner trajectories (required unless --feasibility-only)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cold", default="bayes:cold")
    ap.add_argument("--warm", default="bayes")
    ap.add_argument("--kt-best", help="the bar of (b), as chosen on the whole design set earlier (when --design "
                    "holds only part of it)")
    ap.add_argument("--feasibility", action="store_true", help="add n, k2, random search's exact B98 and W90 "
                    "per space and their summary")
    ap.add_argument("--feasibility-only", action="store_true", help="those alone: no Kernel Tuner data, no "
                    "criteria (the tune files may come from any strategy and number of seeds)")
    a = ap.parse_args()
    if not a.kt and not a.feasibility_only:
        ap.error("--kt is required (unless --feasibility-only)")
    partial = []
    probs = load_tune(a.design, "design", partial) + load_tune(a.held_out, "held-out", partial)
    if a.feasibility_only:
        rows = [dict(set=p["set"], recipe=p["recipe"], problem=p["problem"], n_points=p["n_points"],
                     cap=tune_cap(p["n_points"]), bar_a=bar_a(p["n_points"]), bar_c=bar_c(p["n_points"]),
                     cold=None, warm=None, kt_best=None, kt_ref=None, feas=feasibility(p)) for p in probs]
        print_feasibility(rows)
        if partial:
            print(f"left out, not recorded in full: {len(partial)} space(s)")
        if a.out.endswith(".md"):
            L = feasibility_md(rows, None)
            L[0] = "Generated by tools/bench/search_criteria.py --feasibility-only. " + L[0]
            open(a.out, "w").write("\n".join(["# Feasibility per space\n"] + L) + "\n")
        else:
            json.dump(dict(spaces=rows, partial=partial), open(a.out, "w"), indent=1)
        print(f"per-space file: {a.out}")
        return 0
    kt, strategies = load_kt(a.kt)
    # trajectories made on an earlier recording of a space (other ok configs or optimum) are not its
    stale = []
    for p in probs:
        key = (p["recipe"], p["problem"], p["device"])
        if key in kt and not kt_matches(kt[key], p):
            del kt[key]
            stale.append(f"{p['recipe']} / {p['problem']}")
    stale.sort()
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
    if stale:
        print(f"Kernel Tuner data of another recording (ok configs or optimum differ), not used: {len(stale)} space(s): "
              + ", ".join(stale[:8]) + (" ..." if len(stale) > 8 else ""))
    if missing:
        print(f"no Kernel Tuner data for {len(missing)} space(s) (their (b) is unknown, counted as not passing): "
              + ", ".join(missing[:8]) + (" ..." if len(missing) > 8 else ""))
    if a.feasibility:
        for p, r in zip(probs, rows):
            r["feas"] = feasibility(p)
        print_feasibility(rows)
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
        if a.feasibility:
            L += ["\n## Feasibility\n"] + feasibility_md(rows, best)
        open(a.out, "w").write("\n".join(L) + "\n")
    else:
        json.dump(doc, open(a.out, "w"), indent=1)
    print(f"per-space file: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
