#!/usr/bin/env python3
"""cross_gpu.py [--default NAME=VALUE ...] FROM.db ON.db: what a config chosen on one GPU costs on another.

For every (recipe, problem) both recordings measured, the config FROM.db holds fastest is looked up
in ON.db (matched by its parameters) and its time there set against ON.db's own fastest:
loss = ON time of FROM's best / ON's best (1.000: the same choice, or one as fast). Only tune's ok
results in burst timing count (not the peers' a comparison stores beside them); a problem whose
FROM best was not measured ok in ON.db is listed as such.
Both recordings should be exhaustive over the same space (data/recorded/ and
data/recorded/h100|h200/), otherwise ON's best is only the best of what it measured.
--default NAME=VALUE: FROM.db's configs that lack parameter NAME (recorded before the recipe had
it) are read as having VALUE, the value that builds the kernel they measured.
"""
import argparse
import json
import sqlite3
import sys

QUERY = """select p.recipe_name, p.name, c.params_json, min(r.median_ns)
           from results r join configs c on c.id = r.config_id join problems p on p.id = r.problem_id
           where r.status = 'ok' and r.timing = 'burst' and c.origin not like 'peer:%'
           group by p.recipe_name, p.name, c.params_json"""


def load(path, defaults=None):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    times = {}
    for recipe, problem, params, ns in con.execute(QUERY):
        key = json.dumps({**(defaults or {}), **json.loads(params)}, sort_keys=True)
        times.setdefault((recipe, problem), {})[key] = ns
    con.close()
    return times


def default_arg(text):
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=VALUE")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def main(argv):
    ap = argparse.ArgumentParser(prog="cross_gpu.py", description=__doc__.strip().splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.strip().splitlines()[2:]))
    ap.add_argument("--default", action="append", type=default_arg, default=[], metavar="NAME=VALUE")
    ap.add_argument("src", metavar="FROM.db")
    ap.add_argument("dst", metavar="ON.db")
    args = ap.parse_args(argv[1:])
    src, dst = load(args.src, dict(args.default)), load(args.dst)
    print("| recipe | problem | configs (from / on) | best on ON [us] | FROM's best on ON [us] | loss | same config |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for key in sorted(set(src) & set(dst)):
        s, d = src[key], dst[key]
        s_best = min(s, key=s.get)
        d_best = min(d, key=d.get)
        if s_best not in d:
            print(f"| {key[0]} | {key[1]} | {len(s)} / {len(d)} | {d[d_best] / 1e3:.2f} | not ok on ON | - | no |")
            continue
        loss = d[s_best] / d[d_best]
        same = "yes" if s_best == d_best else "no"
        print(f"| {key[0]} | {key[1]} | {len(s)} / {len(d)} | {d[d_best] / 1e3:.2f} | {d[s_best] / 1e3:.2f} | "
              f"{loss:.3f} | {same} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
