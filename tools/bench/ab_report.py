#!/usr/bin/env python3
"""ab_report.py: the verdict of an A/B of two source trees (tools/bench/ab_roots.sh), from its
databases, one pair per round:

    ab_report.py [--min-faster F] OLD_1.db NEW_1.db [OLD_2.db NEW_2.db ...]

Per (recipe, problem) the best time of each tree in each round (the fastest verified result, peers
left out: both runs time the same configs by the same protocol, so a best is comparable within its
round), new / old, and on the last lines how many (round, problem) pairs the new tree wins and the
decision: `adopt` when it wins at least F of them (default 0.8) and verified every variant it ran,
else `keep`. The threshold is fixed before the run: a decision taken after seeing the numbers is no
test. Exit 0 with a verdict, 1 when a database has no verified result, 2 on bad arguments.
"""
import argparse
import sqlite3
import sys

BEST = """select recipe, problem, min(median_ns) from v_results
          where status = 'ok' and origin not like 'peer:%' group by recipe, problem"""
NOT_OK = "select count(*) from v_results where status not in ('ok', 'skipped') and origin not like 'peer:%'"


def read(path):
    """{(recipe, problem): best ns}, count of results neither ok nor skipped."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        bests = {(r, p): t for r, p, t in db.execute(BEST)}
        bad = db.execute(NOT_OK).fetchone()[0]
    except sqlite3.Error as e:
        raise SystemExit(f"ab_report: {path}: {e}")
    if not bests:
        print(f"ab_report: {path}: no verified result", file=sys.stderr)
        sys.exit(1)
    return bests, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-faster", type=float, default=0.8,
                    help="share of (round, problem) pairs the new tree must win to be adopted (default 0.8)")
    ap.add_argument("dbs", nargs="+", metavar="DB", help="OLD_1.db NEW_1.db [OLD_2.db NEW_2.db ...]")
    a = ap.parse_args()
    if len(a.dbs) % 2 or not 0 < a.min_faster <= 1:
        ap.error("give the databases in (old, new) pairs, and a --min-faster in (0, 1]")
    rounds = [(read(a.dbs[i]), read(a.dbs[i + 1])) for i in range(0, len(a.dbs), 2)]
    keys = sorted(set().union(*(set(o[0]) & set(n[0]) for o, n in rounds)))
    head = "| recipe | problem | " + " | ".join(f"old {i} [us] | new {i} [us] | new / old {i}"
                                                 for i in range(1, len(rounds) + 1)) + " |"
    print(head)
    print("|" + " --- |" * (2 + 3 * len(rounds)))
    wins = pairs = 0
    for k in keys:
        cells = []
        for (old, _), (new, _) in rounds:
            if k in old and k in new:
                pairs += 1
                wins += new[k] < old[k]
                cells += [f"{old[k] / 1e3:.3f}", f"{new[k] / 1e3:.3f}", f"{new[k] / old[k]:.4f}"]
            else:
                cells += ["-", "-", "-"]
        print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
    bad_old = sum(o[1] for o, _ in rounds)
    bad_new = sum(n[1] for _, n in rounds)
    adopt = pairs > 0 and wins >= a.min_faster * pairs and bad_new == 0
    print()
    print(f"new faster on {wins} of {pairs} (round, problem) pairs; results neither ok nor skipped: "
          f"old {bad_old}, new {bad_new}")
    print(f"decision: {'adopt' if adopt else 'keep'} (adopt needs {a.min_faster:g} of the pairs and every "
          "variant of the new tree verified)")


if __name__ == "__main__":
    main()
