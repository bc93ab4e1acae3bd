#!/usr/bin/env bash
# search_criteria.py's feasibility figures (docs/search.md, "What a cold start can reach"), without a
# GPU: random search's exact B98 / W90 against an independent product form of the same probability,
# and `FEASIBILITY=only` on the copy recording: its per-space rows agree with the recording's own
# count of configs within 2 % of the optimum.
. "$(dirname "$0")/lib.sh"

# 1. random_evals against P(no good config in b draws) = prod_{i < b} (n - k - i) / (n - i)
python3 - "$SRC/tools/bench" >rnd.txt 2>&1 <<'PY'
import sys
from fractions import Fraction
sys.path.insert(0, sys.argv[1])
import search_criteria as sc

def by_product(n, k, share):
    miss = Fraction(1)
    for b in range(1, n + 1):
        miss *= Fraction(n - k - (b - 1), n - (b - 1))
        if 1 - miss >= share:
            return b
    return n

bad = 0
for n in (1, 2, 5, 10, 27, 100, 188):
    for k in range(1, min(n, 12) + 1):
        for share in (Fraction(1, 2), Fraction(9, 10)):
            got, want = sc.random_evals(n, k, share), by_product(n, k, share)
            if got != want:
                print(f"n {n} k {k} share {share}: {got}, want {want}")
                bad += 1
print("none good:", sc.random_evals(10, 0, Fraction(1, 2)))
print("n 10 k 1 median:", sc.random_evals(10, 1, Fraction(1, 2)))
print("mismatches:", bad)
PY
check "random B98/W90 match the product form" contains rnd.txt "mismatches: 0"
check "no good config: no figure" contains rnd.txt "none good: None"
check "one good config of 10: 5 draws for the median" contains rnd.txt "n 10 k 1 median: 5"

# 2. FEASIBILITY=only on copy: n and k2 per space as the recording has them
FEASIBILITY=only DESIGN=copy JOBS=2 OUT="$PWD/fz" bash "$SRC/tools/bench/search_criteria.sh" "$PWD/fz.md" >fz.txt 2>&1
check "feasibility-only run exits 0" test $? -eq 0
check "summary printed" contains fz.txt "^design "
python3 - "$SRC/data/recorded/copy.db" fz.md >k2.txt 2>&1 <<'PY'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
times = {}
for p, cfg, t in c.execute("SELECT p.name, r.config_id, min(r.median_ns) FROM results r JOIN problems p ON p.id = r.problem_id"
                           " WHERE r.status = 'ok' GROUP BY 1, 2"):
    times.setdefault(p, []).append(t)
rows = [l.split("|") for l in open(sys.argv[2]) if l.startswith("| design | copy / ")]
bad = 0
for r in rows:
    space, k2 = r[2].strip().split(" / ")[1], int(r[4])
    ts = times[space]
    want = sum(1 for t in ts if min(ts) / t >= 0.98)
    if want != k2:
        print(f"{space}: k2 {k2}, recording {want}")
        bad += 1
print("rows:", len(rows), "mismatches:", bad)
PY
check "both copy spaces listed, k2 as the recording counts it" contains k2.txt "rows: 2 mismatches: 0"

# 3. (a'): within max(bar (a), random's B98 / 2); not reached never passes
python3 - "$SRC/tools/bench" >ar.txt 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import search_criteria as sc
half = dict(bar_a=10, feas=dict(random_b98=31))   # random / 2 = 15.5 above the bar
bar = dict(bar_a=10, feas=dict(random_b98=12))    # the bar above random / 2
print("half", sc.meets_a_random(half, 15), sc.meets_a_random(half, 16))
print("bar", sc.meets_a_random(bar, 10), sc.meets_a_random(bar, 11))
print("unreached", sc.meets_a_random(half, None))
PY
check "(a') takes half random's B98 where it is above the bar" contains ar.txt "half True False"
check "(a') is (a) where the bar is above half random's B98" contains ar.txt "bar True False"
check "(a') fails a B98 not reached" contains ar.txt "unreached False"

# 4. two held-out recordings of the same spaces (here one recording under two names): refused, as
# Kernel Tuner's data is keyed by recipe and problem; one name twice: refused before any replay
cp "$SRC/data/recorded/copy.db" a.db && cp "$SRC/data/recorded/copy.db" b.db
FEASIBILITY=only DESIGN=copy JOBS=2 OUT="$PWD/dup" bash "$SRC/tools/bench/search_criteria.sh" "$PWD/dup.md" \
  --held-out a.db="$SRC/recipes/copy.lua" b.db="$SRC/recipes/copy.lua" >dup.txt 2>&1
check "the same spaces in two held-out recordings: exit 2" test $? -eq 2
check "it says which space and why" contains dup.txt "copy / 64MiB in .*held-a.json and .*held-b.json: Kernel Tuner's data is keyed"
mkdir -p other && cp a.db other/a.db
FEASIBILITY=only DESIGN=copy JOBS=2 OUT="$PWD/dup2" bash "$SRC/tools/bench/search_criteria.sh" "$PWD/dup2.md" \
  --held-out a.db="$SRC/recipes/copy.lua" other/a.db="$SRC/recipes/copy.lua" >dup2.txt 2>&1
check "two held-out recordings named alike: exit 2" test $? -eq 2
check "it says to rename one" contains dup2.txt "two --held-out recordings named a.db"
finish
