#!/usr/bin/env bash
# search_report.sh: benchmark tune's search strategies and Kernel Tuner's on every
# recorded space in data/recorded/, and write the per-space page build/search-bench.md (a build
# output, not committed; PAGE names another file).
#
#   tools/bench/search_report.sh [OUT_DIR]
#
# For each data/recorded/<stem>.db whose recipe recipes/<stem>.lua exists (or, for a
# sub-recipe's own recording such as attention.prefill_sm90.db, recipes/<family>.lua with
# <family> the stem up to its first dot):
#   1. tune-bench-search recipes/<stem>.lua --device replay:... --json (and the text table);
#   2. tune db export --format kernel_tuner, one cache per recipe and problem;
# then tools/bench/kernel_tuner_sim.py runs Kernel Tuner's strategies in simulation mode on
# those caches with the same budgets, seeds and baselines (skipped, and said so in the page,
# when kernel_tuner cannot be imported: pip install kernel_tuner).
#
# Environment: TUNE (the binary, default build/tune), BENCH_SEARCH (default
# build/tools/tune-bench-search), REPEATS (seeds, default 100),
# KT_REPEATS (Kernel Tuner's seeds, default REPEATS), KT_STRATEGIES (comma list, default:
# all of kernel_tuner_sim.py's but basinhopping and minimize, whose simulated runs revisit
# cached configs thousands of times and take minutes per seed), KT_EVAL_BUDGETS (Kernel
# Tuner's evaluation budgets to run, percent list, default all: 1,2,5,10,20,50; each is one
# Kernel Tuner run per seed, e.g. KT_EVAL_BUDGETS=10 runs only the goal's budget), KT_TIME
# (1: also run the time budgets, default; 0: not), JOBS (default: cores),
# ONLY (space-separated stems to restrict to, e.g. "copy attention"), SKIP (stems to leave out,
# default none), KT_REUSE=1 (keep
# OUT_DIR/kt.json from an earlier run instead of running Kernel Tuner again; tools/bench/kt_merge.py
# merges a run on some spaces into it), TUNE_REUSE=1
# (keep OUT_DIR/tune/*.json and the caches: only write the page), PAGE_NOTE (a sentence added to
# the page's notes: what this run did that the script cannot know, e.g. a recipe's version),
# RECIPE_REV (a git revision: take recipes/ from it instead of the working tree, e.g. the commit
# a recording was made with when the working tree's recipe has moved on: a config whose
# parameters the recording does not hold is not in its space), KT_RUN_TIMEOUT (seconds, default
# 60: a Kernel Tuner run past it counts as failed; see kernel_tuner_sim.py).
# Everything intermediate goes to OUT_DIR (default build/search-bench).
# PAGE (default build/search-bench.md): where the page is written.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TUNE=${TUNE:-$ROOT/build/tune}
BENCH_SEARCH=${BENCH_SEARCH:-$ROOT/build/tools/tune-bench-search}
REPEATS=${REPEATS:-100}
KT_REPEATS=${KT_REPEATS:-$REPEATS}
KT_EVAL_BUDGETS=${KT_EVAL_BUDGETS:-1,2,5,10,20,50}
KT_TIME=${KT_TIME:-1}
KT_STRATEGIES=${KT_STRATEGIES:-random_sample,genetic_algorithm,simulated_annealing,bayes_opt,pso,diff_evo,firefly_algorithm,dual_annealing,greedy_ils,greedy_mls,ordered_greedy_mls,mls,hybrid_vndx,adaptive_tabu_greywolf}
JOBS=${JOBS:-$(nproc)}
OUT=${1:-$ROOT/build/search-bench}
PAGE=${PAGE:-$ROOT/build/search-bench.md}
mkdir -p "$OUT/tune" "$OUT/caches"
for b in "$TUNE" "$BENCH_SEARCH"; do
  [ -x "$b" ] || { echo "search_report: $b not built (cmake --build build)" >&2; exit 1; }
done

RECIPES=$ROOT/recipes
if [ -n "${RECIPE_REV:-}" ]; then
  # recipes read their templates (../templates), so both come from the revision
  rm -rf "$OUT/rev" && mkdir -p "$OUT/rev"
  git -C "$ROOT" archive "$RECIPE_REV" recipes templates | tar -x -C "$OUT/rev"
  RECIPES=$OUT/rev/recipes
fi
stems=()
. "$ROOT/tools/bench/search_lib.sh" # recipe_of
  if [ -f "$RECIPES/$1.lua" ]; then echo "$RECIPES/$1.lua"
  elif [ "$sub" != "$1" ] && [ -f "$RECIPES/$fam/$sub.lua" ] && ! grep -q "require \"$1\"" "$RECIPES/$fam.lua" 2>/dev/null; then
    echo "$RECIPES/$fam/$sub.lua"
  else echo "$RECIPES/$fam.lua"; fi
}
for db in "$ROOT"/data/recorded/*.db; do
  stem=$(basename "$db" .db)
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $stem "* ]]; then continue; fi
  if [[ " ${SKIP-} " == *" $stem "* ]]; then echo "search_report: $stem left out (SKIP)" >&2; continue; fi
  [ -f "$(recipe_of "$stem")" ] || { echo "search_report: no recipe for $db, skipped" >&2; continue; }
  stems+=("$stem")
done

t_tune=$SECONDS
for stem in "${stems[@]}"; do
  db="$ROOT/data/recorded/$stem.db"
  if [ "${TUNE_REUSE:-0}" = 1 ] && [ -f "$OUT/tune/$stem.json" ]; then continue; fi
  echo "== tune-bench-search $stem ($REPEATS seeds)" >&2
  "$BENCH_SEARCH" "$(recipe_of "$stem")" --device "replay:$db" --repeats "$REPEATS" \
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

t_tune=$((SECONDS - t_tune))
# the tune part's runtime is kept beside its results, for a page rewritten with TUNE_REUSE=1
if [ "${TUNE_REUSE:-0}" = 1 ]; then t_tune=$(cat "$OUT/tune/runtime_s" 2>/dev/null || echo -1)
else echo "$t_tune" > "$OUT/tune/runtime_s"; fi
kt_status="ran"
if [ "${KT_REUSE:-0}" = 1 ] && [ -f "$OUT/kt.json" ]; then
  echo "== Kernel Tuner: reusing $OUT/kt.json" >&2
elif python3 -c "import kernel_tuner" 2>/dev/null; then
  echo "== Kernel Tuner ($KT_REPEATS seeds)" >&2
  base_args=()
  for stem in "${stems[@]}"; do base_args+=(--baseline-json "$OUT/tune/$stem.json"); done
  kt_time=()
  [ "$KT_TIME" = 1 ] || kt_time=(--no-time)
  python3 "$ROOT/tools/bench/kernel_tuner_sim.py" "$OUT"/caches/*.json --repeats "$KT_REPEATS" \
    --strategies "$KT_STRATEGIES" --eval-budgets "$KT_EVAL_BUDGETS" "${kt_time[@]}" --run-timeout "${KT_RUN_TIMEOUT:-60}" --jobs "$JOBS" "${base_args[@]}" --json "$OUT/kt.json" > "$OUT/kt.txt"
else
  kt_status="not installed (pip install kernel_tuner failed or was not run): no comparison"
  rm -f "$OUT/kt.json"
fi

# what was benchmarked: the last commit that touched the recordings, tune's commit, the recipes' revision
rec_commit=$(git -C "$ROOT" log -1 --format='%h (%ad)' --date=format:'%Y-%m-%d %H:%M' -- 'data/recorded/*.db' 2>/dev/null || echo unknown)
tune_commit=$(git -C "$ROOT" log -1 --format=%h -- search/ 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- search/ 2>/dev/null || tune_commit="$tune_commit + uncommitted changes"
PROVENANCE="Recordings: data/recorded/*.db as of commit $rec_commit; the strategies: search/ as of commit $tune_commit; recipes from ${RECIPE_REV:-the working tree}."
export PROVENANCE
python3 - "$OUT" "$REPEATS" "$KT_REPEATS" "$kt_status" "$PAGE" "$t_tune" "$JOBS" "${stems[@]}" <<'EOF'
import datetime, json, os, sys
out, repeats, kt_repeats, kt_status, page, t_tune, jobs = sys.argv[1:8]
stems = sys.argv[8:]
t_tune = int(t_tune)
probs = []
for stem in stems:
    for p in json.load(open(os.path.join(out, "tune", stem + ".json"))):
        p["stem"] = stem
        probs.append(p)
kt = {}
kt_version = None
kt_not_run = []
kt_runtime = kt_runs = kt_jobs = kt_runtime_note = None
if os.path.exists(os.path.join(out, "kt.json")):
    k = json.load(open(os.path.join(out, "kt.json")))
    kt_version = k["kernel_tuner"]
    kt_not_run = k.get("not_run", [])
    kt_runtime = k.get("runtime_s")
    kt_runs = k.get("runs")
    kt_jobs = k.get("jobs", "?")
    kt_runtime_note = k.get("runtime_note")  # set where kt.json was merged from several runs
    for p in k["problems"]:
        kt[(p["recipe"], p["problem"])] = p

def cell(c):
    if c == "not run":
        return c
    if c is None:
        return "failed"
    if c.get("median") is None:
        return "n/a"
    return f"{c['median']:.2f} [{c['q1']:.2f}, {c['q3']:.2f}]"

def med(c):
    return None if c is None or c == "not run" or c.get("median") is None else c["median"]

GOAL = 3  # the 10 % budget
L = []
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
L.append("# Search strategies on recorded spaces\n")
L.append(f"Written by `tools/bench/search_report.sh` on {now}. Method: docs/search.md, \"Benchmarking the search\". "
         f"tune: {repeats} seeds per strategy; Kernel Tuner: "
         + (f"{kt_version} in simulation mode, {kt_repeats} seeds per strategy"
            + (f" (budgets not run, to fit the CPU time: {', '.join(kt_not_run)}; those cells read \"not run\")"
               if kt_not_run else "") + "." if kt_version else kt_status + ".") + "\n")
L.append("P = (random - found) / (random - optimum): 0 is random search's expected best at that budget, 1 the "
         "optimum, negative worse than random. Cells: median [first quartile, third quartile] over the seeds. "
         "Budgets are fractions of the space: in evaluations (count in brackets) and in recorded "
         "compile + measure time (seconds in brackets).\n")
L.append("These are simulations on recorded data, not GPU runs: every strategy is replayed on the times an "
         "exhaustive `tune run` recorded on the GPU (`data/recorded/`), and its cost is the recorded compile + "
         "measure time of the configs it picks. " + os.environ.get("PROVENANCE", "") + "\n")
# goal summary
L.append("## The goal at 10 % of the evaluations\n")
L.append("Per space: the median (over seeds) fraction of the optimum that `bayes` (`tune run`'s default strategy, "
         "with its warm start from the recipe's earlier problems) reaches, "
         "the share of seeds that reach 98 %, its median P, and the best median P of any Kernel Tuner strategy at the same "
         "budget, then of any but `diff_evo` (see the notes for why it is counted apart). The last column: "
         "`bayes` without the warm start (`bayes:cold`), as Kernel Tuner runs, each problem on its own.\n")
L.append("| space | configs (ok) | evals | bayes: median optimum/found | seeds >= 98 % | bayes P | best Kernel Tuner P (strategy) | bayes ahead | best but diff_evo | bayes ahead of those | bayes:cold optimum/found |")
L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

def best_of(k, skip=()):
    best, name = None, "-"
    if k:
        for nm, ks in k["strategies"].items():
            if nm in skip:
                continue
            m = med(ks.get("evals", [None] * 6)[GOAL])
            if m is not None and (best is None or m > best):
                best, name = m, nm
    return best, name

def ahead(bm, b):
    return "-" if b is None or bm is None else ("yes" if bm > b else ("tie" if bm == b else "no"))

n_goal = n_beat = n_beat2 = n_sp = n_kt = n_cold = n_cold_beat = 0
losses = []
for p in probs:
    s = p["strategies"].get("bayes")
    if not s:
        continue
    n_sp += 1
    c = s["evals"][GOAL]
    ok98 = c["perf_median"] >= 0.98
    n_goal += ok98
    k = kt.get((p["recipe"], p["problem"]))
    b1, n1 = best_of(k)
    b2, n2 = best_of(k, ("diff_evo",))
    n_kt += b1 is not None
    bm = med(c)
    a1, a2 = ahead(bm, b1), ahead(bm, b2)
    n_beat += a1 == "yes"
    n_beat2 += a2 == "yes"
    if a1 != "yes" and b1 is not None:
        losses.append(f"{p['recipe']} / {p['problem']} ({a1}, {n1})")
    cc = p["strategies"].get("bayes:cold", {}).get("evals", [None] * 6)[GOAL]
    if cc:
        n_cold += cc["perf_median"] >= 0.98
        n_cold_beat += ahead(med(cc), b1) == "yes"
    L.append(f"| {p['recipe']} / {p['problem']} | {p['n_points']} ({p['n_ok']}) | {p['budgets'][GOAL]['evals']} | "
             f"{c['perf_median']:.4f}{'' if ok98 else ' (below 98 %)'} | {100 * c['frac98']:.0f} % | "
             f"{cell(c)} | {'-' if b1 is None else f'{b1:.2f} ({n1})'} | {a1} | "
             f"{'-' if b2 is None else f'{b2:.2f} ({n2})'} | {a2} | "
             f"{'-' if not cc else format(cc['perf_median'], '.4f')} |")
L.append("")
L.append(f"98 % of the optimum within 10 % of the evaluations (median of the seeds): met on {n_goal} of {n_sp} spaces. "
         + (f"bayes's median P above every Kernel Tuner strategy's at 10 %: {n_beat} of the {n_kt} spaces simulated "
            f"with Kernel Tuner; above every one but diff_evo's: {n_beat2} of {n_kt}." if kt else "")
         + f" Without the warm start (bayes:cold): 98 % met on {n_cold} of {n_sp}"
         + (f", median P above every Kernel Tuner strategy's on {n_cold_beat} of {n_kt}." if kt else ".") + "\n")
if losses:
    L.append("Not ahead of every Kernel Tuner strategy: " + "; ".join(losses) + ".\n")
# tune's own strategies at the goal budget
names = []
for p in probs:
    for nm in p["strategies"]:
        if nm not in names:
            names.append(nm)
L.append("tune's strategies at the same budget, over the same spaces: on how many the median reaches 98 % of the "
         "optimum, and the share of seeds reaching 98 % averaged over the spaces.\n")
L.append("| tune strategy | spaces with median >= 98 % | mean share of seeds >= 98 % |")
L.append("| --- | --- | --- |")
for nm in names:
    cs = [p["strategies"][nm]["evals"][GOAL] for p in probs if nm in p["strategies"]]
    L.append(f"| {nm} | {sum(c['perf_median'] >= 0.98 for c in cs)} of {len(cs)} | "
             f"{sum(c['frac98'] for c in cs) / max(1, len(cs)):.2f} |")
L.append("")
rt = []
if t_tune >= 0:
    rt.append(f"tune-bench-search {t_tune} s for {len(names)} strategies x {repeats} seeds on every space ({jobs} threads)")
if kt_runtime_note:
    rt.append("Kernel Tuner " + kt_runtime_note)
elif kt_runtime is not None:
    rt.append(f"Kernel Tuner {kt_runtime:.0f} s for {kt_runs} runs ({kt_jobs} processes)")
if rt:
    L.append("Runtime of this benchmark on a 2-core machine shared with other jobs: " + "; ".join(rt) + ".\n")
L.append("## Notes\n")
L.append("- The recordings are described in `data/README.md` (every one with a memset L2 flush). "
         "A sub-recipe's own recording "
         "is benchmarked with its family's recipe when that recipe requires it (`attention.prefill_sm90.db`: "
         "recipes/attention.lua), else with the sub-recipe's own file (`softmax.stream.db`: "
         "recipes/softmax/stream.lua).")
L.append("- A problem's space is the configs its recipe does not reject for it (`applies`, `requires`: "
         "docs/search.md), for tune and for Kernel Tuner alike (the export leaves the rejected ones out, as "
         "Kernel Tuner leaves a restriction's configs out of its space). Budgets are fractions of that space: "
         "on the small ones 10 % is a handful of evaluations (1 on GEMM's 8-config M = 16 spaces, 4 on "
         "attention.prefill_sm90 / b4h32s4096d128's 38), where reaching 98 % takes a good first guess.")
L.append("- Warm start (docs/search.md): every tune strategy starts a problem from the bests it found on the "
         "recipe's earlier problems (recipe order) at the same budget, the nearest problems' first, a quarter "
         "of the budget at most; the first problem of a recipe starts cold. Kernel Tuner runs each problem on "
         "its own; `bayes:cold` is tune's default strategy run the same way.")
L.append("- On spaces under 150 configs the 1 % budget is a single evaluation; the transpose spaces give "
         "5 evaluations at 10 %: tune's `bayes` there is its centre point and four model-guided steps (its "
         "initial design is the centre point, then random points: 1 point in all up to 79 configs, 2 up to 139, "
         "3 up to 199: docs/search.md); warm-start configs come before it.")
L.append("- `bayes`'s centre point (docs/search.md) is the same few configs on every seed (ties between middle "
         "values are drawn with the seed: 2 to 24 candidates on these spaces). Where the optimum is among them or "
         "next to them, every seed finds it, so on such spaces its score says more about the recipe's value "
         "order than about the model.")
n_to = sum(ks.get("n_failed", 0) for p in kt.values() for ks in p["strategies"].values()
           if any("no result within" in e for e in ks.get("errors", [])))
L.append("- Kernel Tuner runs have a wall-clock limit (KT_RUN_TIMEOUT, kernel_tuner_sim.py --run-timeout): "
         "on the attention.prefill_sm90 spaces (10 or more parameters, most configs skipped) its `greedy_ils` "
         "can loop without end (it finds no unvisited config while its neighbour caches grow by GBs, which "
         "can stall a pool of such workers); such a run counts as failed for that seed and budget, the "
         "row's note says on how many seeds, and its cells are medians over the other seeds. In this run: "
         + (f"{n_to} run(s) stopped at the limit." if n_to else "none reached the limit.")
         + " `greedy_ils` rows that read \"TypeError\" are a different failure of Kernel Tuner 1.5.0, "
         "raised at once.")
L.append("- Kernel Tuner's `diff_evo`, at budgets below its population (16 x the tunable parameters: 64 or more "
         "here, more than any 10 % budget), evaluates one random point and then nearly a fixed prefix of Kernel Tuner's "
         "own enumeration order of the space, the same for every seed (its Latin-hypercube population is "
         "deduplicated through a set of indexes, which iterates in index order; on attention.decode / "
         "b32hq32hkv8l4096d128c its evaluations after the first are a subsequence of `Searchspace.list` for "
         "seeds 1, 2 and 3, also under several hash seeds). Its median over seeds is therefore one fixed "
         "order's luck, not a spread of independent "
         "runs: where that order reaches a near-optimal config early it scores the same high P on nearly every "
         "seed. It is counted, and also shown apart.")
if os.environ.get("PAGE_NOTE"):  # what this run did that the script cannot know (e.g. a recipe version)
    L.append("- " + os.environ["PAGE_NOTE"])
L.append("- Cells reading \"failed\" are budgets at which a Kernel Tuner strategy raised (see the row's note); "
         "\"not run\" cells are budgets the Kernel Tuner simulation was not asked to run (see the top).")
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
