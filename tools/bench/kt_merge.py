#!/usr/bin/env python3
"""kt_merge.py: merge Kernel Tuner results from several runs: kt.json of tools/bench/search_report.sh, or
trajectories of kernel_tuner_sim.py --trajectory (data/kernel_tuner/trajectories_*.json.gz).

When only some recordings change, Kernel Tuner need not run again on every space: run it on the changed
spaces into a new file, then merge that file into the earlier one. Both files must have been made with the
same Kernel Tuner version, strategies, seeds and budgets (checked). The result carries `runtime_note`, which
the page prints in place of the single run's runtime. Files ending in .gz are read and written gzipped.

  kt.json (search_report.sh): every problem of a recipe that the newer file holds replaces the older file's
  problems of that recipe; the rest are kept. Run search_report.sh with ONLY=<stems> into a fresh OUT dir,
  merge, then copy NEW's OUT/tune/<stem>.{json,pairs} and caches/<stem>* into OLD's OUT dir and run
  TUNE_REUSE=1 KT_REUSE=1 tools/bench/search_report.sh OLD_OUT.
  trajectories (both files "mode": "trajectory"): each space (recipe, problem, device) of the newer file
  replaces the older file's entry for that space in place; a space the older file lacks is appended.
  The newer run must be complete.

usage: kt_merge.py OLD_KT_JSON NEW_KT_JSON OUT_KT_JSON --note "ran in two parts: ..."
"""
import argparse
import gzip
import json
import sys


def load(path):
    return json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))


def save(doc, path):
    if path.endswith(".gz"):
        # mtime 0: the same merge gives the same bytes
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(json.dumps(doc, separators=(",", ":")).encode())
    else:
        json.dump(doc, open(path, "w"))


def merge_trajectories(old, new, path_new):
    if not new.get("complete"):
        sys.exit(f"kt_merge: {path_new} is an unfinished trajectory run (complete is false)")
    key = lambda p: (p["recipe"], p["problem"], p["device"])
    fresh = {key(p): p for p in new["problems"]}
    replaced = [key(p) for p in old["problems"] if key(p) in fresh]
    old["problems"] = [fresh.get(key(p), p) for p in old["problems"]]
    have = set(replaced)
    added = [p for k, p in fresh.items() if k not in have]
    old["problems"] += added
    print(f"kt_merge: {len(replaced)} spaces replaced, {len(added)} added from {path_new} "
          f"(recipes {', '.join(sorted({k[0] for k in fresh}))}), {len(old['problems'])} in all")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("out")
    ap.add_argument("--note", required=True, help="what was run when: printed on the page")
    a = ap.parse_args()
    old = load(a.old)
    new = load(a.new)
    for key in ("kernel_tuner", "mode", "repeats", "strategies", "not_run"):
        if old.get(key) != new.get(key):
            sys.exit(f"kt_merge: {key} differs ({old.get(key)!r} vs {new.get(key)!r}): not the same benchmark")
    if old.get("mode") == "trajectory":
        merge_trajectories(old, new, a.new)
    else:
        replaced = {p["recipe"] for p in new["problems"]}
        kept = [p for p in old["problems"] if p["recipe"] not in replaced]
        old["problems"] = kept + new["problems"]
        print(f"kt_merge: {len(kept)} problems kept, {len(new['problems'])} from {a.new} "
              f"(recipes {', '.join(sorted(replaced))})")
    old["runtime_note"] = a.note
    save(old, a.out)


if __name__ == "__main__":
    main()
