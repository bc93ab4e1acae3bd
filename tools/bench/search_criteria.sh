#!/usr/bin/env bash
# search_criteria.sh: B98 and the search criteria (docs/search.md, "The criteria") of tune's default
# strategy, cold and warm, on the design spaces (the recordings DESIGN names) and on held-out recordings,
# against Kernel Tuner 1.5.0's strategies: prints the summary table, writes the per-space file.
#
#   tools/bench/search_criteria.sh OUT_FILE [--held-out DB[=RECIPE.lua] ...]
#
# OUT_FILE: the per-space file (markdown if it ends in .md, else JSON); a build output, not committed.
# --held-out DB: a recording the heuristics never saw (its recipe found as for data/recorded: see
# search_lib.sh's recipe_of on its file name, or given after '='); reported as a set of its own, and
# never counted in the design set even when DESIGN names it.
# Two held-out recordings may not share a file name, nor a space (recipe and problem names): Kernel
# Tuner's data is keyed by those names, so such recordings are scored in runs of their own.
# DESIGN: the design set, stems of data/recorded/*.db (default: the recordings the heuristics were
# chosen on; a recording added since is neither design nor held-out until passed with --held-out).
# Only spaces recorded in full are scored: a space with unrecorded configs (a --budget recording)
# has no known optimum, so search_criteria.py leaves it out and lists it.
# Kernel Tuner: the design spaces' trajectories are read from KT_DESIGN (default
# data/kernel_tuner/trajectories_design.json.gz, recorded with kernel_tuner_sim.py --trajectory, 100
# seeds); held-out spaces are exported (tune db export --format kernel_tuner) and Kernel Tuner runs on
# them here (KT_PYTHON: a python with kernel_tuner 1.5.0, default build/ktvenv/bin/python), unless
# KT_HELD_OUT names trajectories already made for them (data/kernel_tuner/trajectories_held_out.json.gz:
# the same command, kept; a held-out space missing from it, or whose trajectories there were made on
# an earlier recording of it (other ok configs or optimum), is run here).
# Environment: TUNE, BENCH_SEARCH (binaries), REPEATS (seeds, default 100), JOBS (default: cores),
# STRATEGIES (tune's rows, default "bayes:cold,bayes": the default strategy cold, then warm),
# KT_STRATEGIES (held-out runs, default: the strategies in KT_DESIGN), OUT (intermediate files,
# default build/search-criteria), TUNE_REUSE=1 (keep OUT/tune/*.json of an earlier run), KT_BEST (the
# bar of (b) when DESIGN is only part of the design set: the strategy the whole set chose),
# FEASIBILITY (1: add per space n, k2 within 2 % of the optimum and random search's exact B98 and W90,
# and their summary; only: those alone, from one seed of tune's random strategy per recording and no
# Kernel Tuner data, in seconds; its files go to OUT/feasibility).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TUNE=${TUNE:-$ROOT/build/tune}
BENCH_SEARCH=${BENCH_SEARCH:-$ROOT/build/tools/tune-bench-search}
REPEATS=${REPEATS:-100}
JOBS=${JOBS:-$(nproc)}
STRATEGIES=${STRATEGIES:-bayes:cold,bayes}
KT_DESIGN=${KT_DESIGN:-$ROOT/data/kernel_tuner/trajectories_design.json.gz}
KT_PYTHON=${KT_PYTHON:-$ROOT/build/ktvenv/bin/python}
OUT=${OUT:-$ROOT/build/search-criteria}
DESIGN=${DESIGN:-attention attention.decode attention.prefill_sm90 copy elementwise gemm gemm.f16 rmsnorm softmax softmax.stream transpose}
KT_HELD_OUT=${KT_HELD_OUT:-}
FEASIBILITY=${FEASIBILITY:-}
if [ "$FEASIBILITY" = only ]; then
  # n, k2 and random's figures need the enumerated spaces, not tune's trajectories: one cheap replay
  REPEATS=1 STRATEGIES=random:cold OUT=$OUT/feasibility TUNE_REUSE=0
fi
RECIPES=$ROOT/recipes
. "$ROOT/tools/bench/search_lib.sh" # recipe_of

[ $# -ge 1 ] || { sed -n '2,32p' "$0" >&2; exit 2; }
OUT_FILE=$1
shift
held=()
while [ $# -gt 0 ]; do
  case $1 in
    --held-out) shift
      while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do held+=("$1"); shift; done ;;
    *) echo "search_criteria: unknown argument $1" >&2; exit 2 ;;
  esac
done
for b in "$TUNE" "$BENCH_SEARCH"; do
  [ -x "$b" ] || { echo "search_criteria: $b not built (cmake --build build)" >&2; exit 1; }
done
mkdir -p "$OUT/tune" "$OUT/caches"

# bench DB RECIPE NAME: tune-bench-search's JSON for one recording into OUT/tune/NAME.json
bench() {
  local db=$1 recipe=$2 name=$3
  if [ "${TUNE_REUSE:-0}" = 1 ] && [ -s "$OUT/tune/$name.json" ]; then return; fi
  echo "== tune-bench-search $name ($REPEATS seeds)" >&2
  "$BENCH_SEARCH" "$recipe" --device "replay:$db" --repeats "$REPEATS" --strategies "$STRATEGIES" \
    --jobs "$JOBS" --json > "$OUT/tune/$name.json"
}

held_paths=()
for h in "${held[@]}"; do held_paths+=("$(realpath "${h%%=*}")"); done
is_held() { local x; for x in "${held_paths[@]}"; do [ "$x" = "$(realpath "$1")" ] && return 0; done; return 1; }

design=()
for stem in $DESIGN; do
  db=$ROOT/data/recorded/$stem.db
  [ -f "$db" ] || { echo "search_criteria: DESIGN names $stem, no $db" >&2; exit 1; }
  if [ ${#held_paths[@]} -gt 0 ] && is_held "$db"; then
    echo "search_criteria: $stem is held out: not in the design set" >&2; continue
  fi
  r=$(recipe_of "$stem")
  [ -f "$r" ] || { echo "search_criteria: no recipe for $db, skipped" >&2; continue; }
  bench "$db" "$r" "$stem"
  design+=("$OUT/tune/$stem.json")
done

# bench_held H: the held-out recording H (DB[=RECIPE.lua]) replayed by bench, its file added to
# held_json; sets db and stem for the caller
bench_held() {
  local h=$1 r
  db=${h%%=*}
  stem=$(basename "$db" .db)
  if [ "$db" != "$h" ]; then r=${h#*=}; else r=$(recipe_of "$stem"); fi
  [ -f "$db" ] && [ -f "$r" ] || { echo "search_criteria: --held-out $h: no database or recipe ($r)" >&2; exit 1; }
  local f
  for f in "${held_json[@]}"; do
    [ "$f" != "$OUT/tune/held-$stem.json" ] || { echo "search_criteria: two --held-out recordings named $stem.db: rename one" >&2; exit 2; }
  done
  bench "$db" "$r" "held-$stem"
  held_json+=("$OUT/tune/held-$stem.json")
  distinct_spaces "${held_json[@]}"
}

# distinct_spaces JSON...: exit 2 when two held-out recordings hold a space of the same recipe and
# problem name: Kernel Tuner's exported caches and trajectories are keyed by those names, so the
# two could not be told apart (score such recordings in runs of their own)
distinct_spaces() {
  python3 - "$@" <<'PY' || exit 2
import collections, json, sys
where = collections.defaultdict(list)
for f in sys.argv[1:]:
    for p in json.load(open(f)):
        where[(p["recipe"], p["problem"])].append(f)
twice = [(k, v) for k, v in where.items() if len(v) > 1]
if twice:
    (recipe, problem), files = twice[0]
    sys.exit(f"search_criteria: {len(twice)} space(s) in more than one held-out recording, e.g. {recipe} / "
             f"{problem} in {' and '.join(files)}: Kernel Tuner's data is keyed by recipe and problem, so "
             "score each recording in a run of its own")
PY
}

if [ "$FEASIBILITY" = only ]; then
  args=(--design "${design[@]}" --out "$OUT_FILE" --feasibility-only)
  held_json=()
  for h in "${held[@]}"; do
    bench_held "$h"
  done
  [ ${#held_json[@]} -eq 0 ] || args+=(--held-out "${held_json[@]}")
  exec python3 "$ROOT/tools/bench/search_criteria.py" "${args[@]}"
fi

[ -f "$KT_DESIGN" ] || { echo "search_criteria: $KT_DESIGN missing (Kernel Tuner's design trajectories)" >&2; exit 1; }
held_json=()
kt=("$KT_DESIGN")
if [ ${#held[@]} -gt 0 ]; then
  caches=()
  for h in "${held[@]}"; do
    bench_held "$h"
    while IFS=$'\t' read -r recipe problem; do
      [ "$recipe" = - ] && continue
      # a space the export cannot write gets no Kernel Tuner data: its (b) is unknown (said in the summary)
      if "$TUNE" db export --db "$db" --format kernel_tuner --recipe "$recipe" --problem "$problem" \
        -o "$OUT/caches/${recipe}__${problem}.json"; then
        caches+=("$OUT/caches/${recipe}__${problem}.json")
      else
        echo "search_criteria: no Kernel Tuner run on $recipe / $problem (export failed)" >&2
      fi
    done < <(python3 -c 'import json, sys
sys.path.insert(0, sys.argv[3])
from search_criteria import kt_matches
known = {}
if sys.argv[2]:
    import gzip
    f = gzip.open(sys.argv[2], "rt") if sys.argv[2].endswith(".gz") else open(sys.argv[2])  # as search_criteria.py reads it
    known = {(p["recipe"], p["problem"]): p for p in json.load(f)["problems"]}
def made(p):  # trajectories already made on this space (not on an earlier recording with other configs)
    k = known.get((p["recipe"], p["problem"]))
    return k is not None and kt_matches(k, p)
for p in json.load(open(sys.argv[1])):
    # a space with unrecorded configs is not scored (search_criteria.py); one with trajectories already made is not run again
    skip = p["statuses"].get("not_recorded", 0) or made(p)
    print(("-" if skip else p["recipe"]) + "\t" + p["problem"])' "$OUT/tune/held-$stem.json" "$KT_HELD_OUT" "$ROOT/tools/bench")
  done
  [ -z "$KT_HELD_OUT" ] || kt+=("$KT_HELD_OUT")
  kts=${KT_STRATEGIES:-$(python3 -c 'import gzip, json, sys; print(",".join(json.load(gzip.open(sys.argv[1], "rt"))["strategies"]))' "$KT_DESIGN")}
  if [ ${#caches[@]} -gt 0 ]; then
    echo "== Kernel Tuner on ${#caches[@]} held-out spaces ($kts, $REPEATS seeds)" >&2
    "$KT_PYTHON" "$ROOT/tools/bench/kernel_tuner_sim.py" "${caches[@]}" --trajectory --repeats "$REPEATS" \
      --strategies "$kts" --jobs "$JOBS" --json "$OUT/kt_held_out.json" > "$OUT/kt_held_out.txt"
    kt+=("$OUT/kt_held_out.json")
  fi
fi

args=(--design "${design[@]}" --kt "${kt[@]}" --out "$OUT_FILE")
[ -z "$FEASIBILITY" ] || args+=(--feasibility)
[ -z "${KT_BEST:-}" ] || args+=(--kt-best "$KT_BEST")
[ ${#held_json[@]} -eq 0 ] || args+=(--held-out "${held_json[@]}")
IFS=, read -r cold warm _ <<< "$STRATEGIES"
python3 "$ROOT/tools/bench/search_criteria.py" "${args[@]}" --cold "$cold" --warm "${warm:-$cold}"
