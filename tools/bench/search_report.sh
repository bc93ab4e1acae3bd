#!/usr/bin/env bash
# search_report.sh: benchmark tune's search strategies and Kernel Tuner's on every
# recorded space in data/recorded/, and write docs/search-bench.md.
#
#   tools/bench/search_report.sh [OUT_DIR]
#
# For each data/recorded/<stem>.db whose recipe recipes/<stem>.lua exists:
#   1. tune bench-search recipes/<stem>.lua --device replay:... --json (and the text table);
#   2. tune db export --format kernel_tuner, one cache per recipe and problem;
# then tools/bench/kernel_tuner_sim.py runs Kernel Tuner's strategies in simulation mode on
# those caches with the same budgets, seeds and baselines (skipped, and said so in the page,
# when kernel_tuner cannot be imported: pip install kernel_tuner).
#
# Environment: TUNE (the binary, default build/tune), REPEATS (seeds, default 100),
# KT_REPEATS (Kernel Tuner's seeds, default REPEATS), KT_STRATEGIES (comma list, default:
# all of kernel_tuner_sim.py's but basinhopping and minimize, whose simulated runs revisit
# cached configs thousands of times and take minutes per seed), JOBS (default: cores),
# ONLY (space-separated stems to restrict to, e.g. "copy attention"), SKIP (stems to leave out,
# default "gemm": 56 problems of 466 configs, where tune's bayes runs to 50 % of each space with a
# GP of up to 256 points: hours for 100 seeds on 2 cores; SKIP= includes it), KT_REUSE=1 (keep
# OUT_DIR/kt.json from an earlier run instead of running Kernel Tuner again), TUNE_REUSE=1
# (keep OUT_DIR/tune/*.json and the caches: only write the page).
# Everything intermediate goes to OUT_DIR (default build/search-bench).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TUNE=${TUNE:-$ROOT/build/tune}
REPEATS=${REPEATS:-100}
KT_REPEATS=${KT_REPEATS:-$REPEATS}
KT_STRATEGIES=${KT_STRATEGIES:-random_sample,genetic_algorithm,simulated_annealing,bayes_opt,pso,diff_evo,firefly_algorithm,dual_annealing,greedy_ils,greedy_mls,ordered_greedy_mls,mls,hybrid_vndx,adaptive_tabu_greywolf}
JOBS=${JOBS:-$(nproc)}
OUT=${1:-$ROOT/build/search-bench}
mkdir -p "$OUT/tune" "$OUT/caches"
[ -x "$TUNE" ] || { echo "search_report: $TUNE not built (cmake --build build)" >&2; exit 1; }

stems=()
for db in "$ROOT"/data/recorded/*.db; do
  stem=$(basename "$db" .db)
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $stem "* ]]; then continue; fi
  if [[ " ${SKIP-gemm} " == *" $stem "* ]]; then echo "search_report: $stem left out (SKIP)" >&2; continue; fi
  [ -f "$ROOT/recipes/$stem.lua" ] || { echo "search_report: no recipes/$stem.lua for $db, skipped" >&2; continue; }
  stems+=("$stem")
done

for stem in "${stems[@]}"; do
  db="$ROOT/data/recorded/$stem.db"
  if [ "${TUNE_REUSE:-0}" = 1 ] && [ -f "$OUT/tune/$stem.json" ]; then continue; fi
  echo "== tune bench-search $stem ($REPEATS seeds)" >&2
  "$TUNE" bench-search "$ROOT/recipes/$stem.lua" --device "replay:$db" --repeats "$REPEATS" \
    --jobs "$JOBS" --json > "$OUT/tune/$stem.json"
  # one Kernel Tuner cache per (recipe, problem) that was benchmarked
  python3 - "$OUT/tune/$stem.json" > "$OUT/tune/$stem.pairs" <<'EOF'
import json, sys
for p in json.load(open(sys.argv[1])):
    print(p["recipe"] + "\t" + p["problem"])
EOF
  while IFS=$'\t' read -r recipe problem; do
    "$TUNE" db export --db "$db" --format kernel_tuner --recipe "$recipe" --problem "$problem" \
      -o "$OUT/caches/${recipe}__${problem}.json"
  done < "$OUT/tune/$stem.pairs"
done

kt_status="ran"
if [ "${KT_REUSE:-0}" = 1 ] && [ -f "$OUT/kt.json" ]; then
  echo "== Kernel Tuner: reusing $OUT/kt.json" >&2
elif python3 -c "import kernel_tuner" 2>/dev/null; then
  echo "== Kernel Tuner ($KT_REPEATS seeds)" >&2
  base_args=()
  for stem in "${stems[@]}"; do base_args+=(--baseline-json "$OUT/tune/$stem.json"); done
  python3 "$ROOT/tools/bench/kernel_tuner_sim.py" "$OUT"/caches/*.json --repeats "$KT_REPEATS" \
    --strategies "$KT_STRATEGIES" --jobs "$JOBS" "${base_args[@]}" --json "$OUT/kt.json" > "$OUT/kt.txt"
else
  kt_status="not installed (pip install kernel_tuner failed or was not run): no comparison"
  rm -f "$OUT/kt.json"
fi

python3 - "$OUT" "$REPEATS" "$KT_REPEATS" "$kt_status" "$ROOT/docs/search-bench.md" "${stems[@]}" <<'EOF'
import datetime, json, os, sys
out, repeats, kt_repeats, kt_status, page = sys.argv[1:6]
stems = sys.argv[6:]
probs = []
for stem in stems:
    for p in json.load(open(os.path.join(out, "tune", stem + ".json"))):
        p["stem"] = stem
        probs.append(p)
kt = {}
kt_version = None
if os.path.exists(os.path.join(out, "kt.json")):
    k = json.load(open(os.path.join(out, "kt.json")))
    kt_version = k["kernel_tuner"]
    for p in k["problems"]:
        kt[(p["recipe"], p["problem"])] = p

def cell(c):
    if c is None:
        return "failed"
    if c.get("median") is None:
        return "n/a"
    return f"{c['median']:.2f} [{c['q1']:.2f}, {c['q3']:.2f}]"

def med(c):
    return None if c is None or c.get("median") is None else c["median"]

GOAL = 3  # the 10 % budget
L = []
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
L.append("# Search strategies on recorded spaces\n")
L.append(f"Written by `tools/bench/search_report.sh` on {now}. Method: [search.md](search.md). "
         f"tune: {repeats} seeds per strategy; Kernel Tuner: "
         + (f"{kt_version} in simulation mode, {kt_repeats} seeds per strategy." if kt_version else kt_status + ".") + "\n")
L.append("P = (random - found) / (random - optimum): 0 is random search's expected best at that budget, 1 the "
         "optimum, negative worse than random. Cells: median [first quartile, third quartile] over the seeds. "
         "Budgets are fractions of the space: in evaluations (count in brackets) and in recorded "
         "compile + measure time (seconds in brackets).\n")
L.append("These are simulations on recorded data, not GPU runs: every strategy is replayed on the times an "
         "exhaustive `tune run` recorded on the GPU (`data/recorded/`), and its cost is the recorded compile + "
         "measure time of the configs it picks.\n")
# goal summary
L.append("## The goal at 10 % of the evaluations\n")
L.append("Per space: the median (over seeds) fraction of the optimum that `bayes` (`tune run`'s default strategy) reaches, "
         "its median P, and the best median P of any Kernel Tuner strategy at the same budget.\n")
L.append("| space | configs (ok) | evals | bayes: median optimum/found | seeds >= 98 % | bayes P | best Kernel Tuner P (strategy) | bayes ahead |")
L.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
n_goal = n_beat = n_sp = 0
for p in probs:
    s = p["strategies"].get("bayes")
    if not s:
        continue
    n_sp += 1
    c = s["evals"][GOAL]
    ok98 = c["perf_median"] >= 0.98
    n_goal += ok98
    best_kt, best_name = None, "-"
    k = kt.get((p["recipe"], p["problem"]))
    if k:
        for name, ks in k["strategies"].items():
            m = med(ks.get("evals", [None] * 6)[GOAL])
            if m is not None and (best_kt is None or m > best_kt):
                best_kt, best_name = m, name
    bm = med(c)
    ahead = "-" if best_kt is None or bm is None else ("yes" if bm > best_kt else ("tie" if bm == best_kt else "no"))
    n_beat += ahead == "yes"
    L.append(f"| {p['recipe']} / {p['problem']} | {p['n_points']} ({p['n_ok']}) | {p['budgets'][GOAL]['evals']} | "
             f"{c['perf_median']:.4f}{'' if ok98 else ' (below 98 %)'} | {100 * c['frac98']:.0f} % | "
             f"{cell(c)} | {'-' if best_kt is None else f'{best_kt:.2f} ({best_name})'} | {ahead} |")
L.append("")
L.append(f"98 % of the optimum within 10 % of the evaluations (median of the seeds): met on {n_goal} of {n_sp} spaces. "
         + (f"bayes's median P above every Kernel Tuner strategy's at 10 %: {n_beat} of {n_sp} spaces." if kt else "") + "\n")
L.append("## Notes\n")
L.append("- The recordings are described in `data/recorded/README.md` (every one with a memset L2 flush). "
         "`gemm.db` is left out by default (see SKIP in the script).")
L.append("- Spaces with many `skipped` configs (the recipe's `applies` rejects them for that problem) make "
         "every strategy pay for them: they count as evaluations that find nothing, as in `tune run`.")
L.append("- On spaces under 150 configs the 1 % budget is a single evaluation; the transpose spaces give "
         "5 evaluations at 10 %: tune's `bayes` there is one random point and four model-guided steps (its "
         "initial design is 1 point up to 79 configs, 2 up to 139, 3 up to 199: docs/search.md).")
L.append("- Kernel Tuner's `diff_evo` starts, on every seed, with a structured set of points (on "
         "attention.decode / b32hq32hkv8l4096d128c its evaluations 2 to 5 were the same points for seeds 1, 2 "
         "and 3: one parameter stepped through its values, the others fixed); on the decode and transpose "
         "spaces that lands near the optimum. Cells reading \"failed\" are budgets at which a Kernel Tuner "
         "strategy raised (see the row's note).")
L.append("- Medians of P move in jumps on small spaces (few distinct times near the optimum); read them with "
         "the quartiles. \"tie\" in the goal table means equal medians.\n")
# per-space tables
L.append("## Per space\n")
for p in probs:
    L.append(f"### {p['recipe']} / {p['problem']}\n")
    st = ", ".join(f"{v} {k}" for k, v in p["statuses"].items())
    L.append(f"Recorded space: `{p['database'].split('/')[-1]}`, {p['n_points']} configs ({st}) measured on "
             f"{p['device']}; optimum {p['optimum_ns'] / 1e3:.2f} us; whole space {p['total_s']:.1f} s of "
             f"compile + measure.\n")
    k = kt.get((p["recipe"], p["problem"]))
    for kind, label in (("evals", "evaluations"), ("time", "compile + measure time")):
        head = [f"{100 * b['fraction']:g} % ({b['evals'] if kind == 'evals' else round(b['seconds'], 1)})" for b in p["budgets"]]
        L.append(f"Budget in {label}:\n")
        L.append("| strategy | " + " | ".join(head) + " |")
        L.append("| --- |" + " --- |" * len(head))
        for name, s in p["strategies"].items():
            L.append(f"| tune {name} | " + " | ".join(cell(c) for c in s[kind]) + " |")
        if k:
            for name, ks in k["strategies"].items():
                cs = ks.get(kind) or [None] * len(head)
                note = (f" ({ks['n_failed']} seeds had a run raise: {ks['errors'][0][:90]})"
                        if ks.get("n_failed") else "")
                L.append(f"| KT {name}{note} | " + " | ".join(cell(c) for c in cs) + " |")
        L.append("")
open(page, "w").write("\n".join(L) + "\n")
print(f"wrote {page}", file=sys.stderr)
EOF
