#!/usr/bin/env python3
"""verify_survey.py DB: per recipe of a verification survey's database (tools/bench/device_verify_survey.sh),
the results, ok, wrong, wrong by tolerance.honest, and the median and largest err_rel_l2 / honest_rel_l2
of the ok variants (peers left out), as a markdown table."""
import sqlite3
import statistics
import sys


def table(path):
    c = sqlite3.connect(path)
    lines = ["| recipe | results | ok | wrong | wrong (honest) | ok err/honest median | max |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    names = c.execute("select distinct rc.name from results r join recipes rc on rc.id = r.recipe_id order by 1")
    for (name,) in names.fetchall():
        rows = c.execute("""select r.status, r.err_rel_l2, r.honest_rel_l2, coalesce(r.error_text, '') from results r
            join recipes rc on rc.id = r.recipe_id join configs g on g.id = r.config_id
            where rc.name = ? and g.origin not like 'peer:%'""", (name,)).fetchall()
        ok = [r for r in rows if r[0] == "ok"]
        ratios = [r[1] / r[2] for r in ok if r[2] and r[2] > 0 and r[1] is not None and r[1] >= 0]
        wrong = [r for r in rows if r[0] == "wrong"]
        med = "%.3f" % statistics.median(ratios) if ratios else "-"
        top = "%.3f" % max(ratios) if ratios else "-"
        lines.append(f"| {name} | {len(rows)} | {len(ok)} | {len(wrong)} | "
                     f"{sum('honest' in r[3] for r in wrong)} | {med} | {top} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(sys.argv[1]))
