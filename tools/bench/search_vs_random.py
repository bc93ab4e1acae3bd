#!/usr/bin/env python3
"""search_vs_random.py: tune's default strategy against random search, per recorded space.

Issue 29 asks for a cold start "never worse than random in its first proposals". Random search
without replacement over a space of n configs, g of them within 2 % of the optimum (at most
optimum / 0.98, as B98 counts), has found one within e evaluations with probability
P(e) = 1 - C(n - g, e) / C(n, e); its B98 in expectation (over infinitely many seeds) is the
fewest e with P(e) >= 0.5 and its W90 the fewest with P(e) >= 0.9. This script reads
tune-bench-search --json files (search_criteria.sh writes them to OUT/tune/), counts g from each
space's recording (the `database` the file names; failed configs count as evaluations that find
nothing, as in the bench) and prints, per strategy row of the files, the spaces where tune's B98
or W90 is above random's.

usage: search_vs_random.py [--strategy bayes:cold] BENCH.json [BENCH.json ...]
"""
import argparse
import json
import math
import sqlite3

NEAR = 0.98


def hit_probability(n, g, e):
    """P(at least one of g good configs among e distinct draws from n)."""
    if g <= 0:
        return 0.0
    if e > n - g:
        return 1.0
    return 1.0 - math.exp(math.lgamma(n - g + 1) - math.lgamma(n - g - e + 1) - math.lgamma(n + 1) + math.lgamma(n - e + 1))


def random_evals(n, g, share):
    """The fewest evaluations at which random search has found a good config with probability >= share."""
    for e in range(1, n + 1):
        if hit_probability(n, g, e) >= share:
            return e
    return None


def good_count(space):
    c = sqlite3.connect(f"file:{space['database']}?mode=ro", uri=True)
    (g,) = c.execute(
        """SELECT count(*) FROM results r JOIN recipes rc ON rc.id = r.recipe_id JOIN problems p ON p.id = r.problem_id
           WHERE rc.name = ? AND p.name = ? AND r.status = 'ok' AND r.median_ns <= ?""",
        (space["recipe"], space["problem"], space["optimum_ns"] / NEAR)).fetchone()
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--strategy", default="bayes:cold", help="the strategy row of the bench files (default bayes:cold)")
    a = ap.parse_args()
    rows, worse_b, worse_w, n_spaces = [], 0, 0, 0
    for f in a.files:
        for s in json.load(open(f)):
            if s["statuses"].get("not_recorded", 0) or a.strategy not in s["strategies"]:
                continue
            n_spaces += 1
            n, g = s["n_points"], good_count(s)
            rb, rw = random_evals(n, g, 0.5), random_evals(n, g, 0.9)
            st = s["strategies"][a.strategy]
            tb, tw = st.get("b98"), st.get("w90")
            # a B98 or W90 the bench did not reach within its trajectory cap is above a random figure
            # within the cap; against one beyond it, nothing is known
            cap = s["trajectory_cap"]
            b_worse = rb is not None and (tb > rb if tb is not None else rb <= cap)
            w_worse = rw is not None and (tw > rw if tw is not None else rw <= cap)
            worse_b += b_worse
            worse_w += w_worse
            if b_worse or w_worse:
                rows.append((s["recipe"], s["problem"], n, g, tb, rb, tw, rw))
    print(f"{a.strategy} against random search on {n_spaces} spaces: B98 above random's on {worse_b}, W90 above "
          f"random's on {worse_w}")
    if rows:
        print("\n| recipe | problem | configs | within 2 % | B98 | random B98 | W90 | random W90 |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print("| " + " | ".join("-" if v is None else str(v) for v in r) + " |")


if __name__ == "__main__":
    main()
