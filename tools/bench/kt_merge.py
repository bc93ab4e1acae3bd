#!/usr/bin/env python3
"""kt_merge.py: merge Kernel Tuner results (kt.json of tools/bench/search_report.sh) from several runs.

When only some recordings change, Kernel Tuner need not run again on every space: run
search_report.sh with ONLY=<stems> into a fresh OUT dir, then merge that run's kt.json into the
earlier one. Every problem of a recipe that the newer file holds replaces the older file's problems
of that recipe; the rest are kept. Both files must have been made with the same Kernel Tuner version,
strategies, seeds and budgets (checked). The result carries `runtime_note`, which the page prints in
place of the single run's runtime.

usage: kt_merge.py OLD_KT_JSON NEW_KT_JSON OUT_KT_JSON --note "ran in two parts: ..."
then:  copy NEW's OUT/tune/<stem>.{json,pairs} and caches/<stem>* into OLD's OUT dir and run
       TUNE_REUSE=1 KT_REUSE=1 tools/bench/search_report.sh OLD_OUT
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("out")
    ap.add_argument("--note", required=True, help="what was run when: printed on the page")
    a = ap.parse_args()
    old = json.load(open(a.old))
    new = json.load(open(a.new))
    for key in ("kernel_tuner", "repeats", "strategies", "not_run"):
        if old.get(key) != new.get(key):
            sys.exit(f"kt_merge: {key} differs ({old.get(key)!r} vs {new.get(key)!r}): not the same benchmark")
    replaced = {p["recipe"] for p in new["problems"]}
    kept = [p for p in old["problems"] if p["recipe"] not in replaced]
    old["problems"] = kept + new["problems"]
    old["runtime_note"] = a.note
    json.dump(old, open(a.out, "w"))
    print(f"kt_merge: {len(kept)} problems kept, {len(new['problems'])} from {a.new} "
          f"(recipes {', '.join(sorted(replaced))})")


if __name__ == "__main__":
    main()
