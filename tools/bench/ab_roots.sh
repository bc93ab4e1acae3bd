#!/usr/bin/env bash
# ab_roots.sh: an A/B of two source trees (templates/ and recipes/) on a GPU, in rounds that
# alternate old and new, and its verdict from a threshold fixed before the run.
#
#   tools/bench/ab_roots.sh OUT_DIR --old ROOT [--new ROOT] [--rounds N] [--min-faster F] -- RECIPE [tune run options]
#
# Each round runs `tune run RECIPE --root ROOT --strategy exhaustive --seed ROUND --quiet` on the old
# tree, then on the new one, into OUT_DIR/ab_old_ROUND.db and ab_new_ROUND.db (logs beside them),
# with the options after RECIPE appended (--problem ..., --jobs 16, --only ..., or --device replay:DB
# to try the plumbing without a GPU). Then tools/bench/ab_report.py prints best times per problem and
# round and the decision (adopt | keep) into OUT_DIR/ab.md, and the decision alone into
# OUT_DIR/decision.
# --old ROOT: a tree with .tune-root, e.g. `mkdir old && git archive HEAD templates recipes | tar x -C old
#   && touch old/.tune-root`; --new ROOT: default the tree this script is in. RECIPE is read as given
#   (its templates from each root). --rounds N: default 2. --min-faster F: ab_report.py's (default 0.8).
# Environment: TUNE (default build/tune of this tree), TIMEOUT (seconds per run, default 120).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TUNE=${TUNE:-$ROOT/build/tune}
TIMEOUT=${TIMEOUT:-120}
usage() { awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0" >&2; exit 2; }

[ $# -ge 1 ] || usage
out=$1
shift
old="" new=$ROOT rounds=2 min_faster=0.8
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --old) old=${2:?--old needs a folder}; shift 2 ;;
    --new) new=${2:?--new needs a folder}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    --min-faster) min_faster=${2:?--min-faster needs a share}; shift 2 ;;
    *) echo "ab_roots: unknown option $1" >&2; usage ;;
  esac
done
[ $# -ge 2 ] && [ "$1" = "--" ] || { echo "ab_roots: give -- RECIPE after the options" >&2; usage; }
shift
recipe=$1
shift
[ -n "$old" ] || { echo "ab_roots: --old ROOT is required" >&2; usage; }
for r in "$old" "$new"; do
  [ -f "$r/.tune-root" ] && [ -d "$r/templates" ] || { echo "ab_roots: $r: no .tune-root and templates/ there" >&2; exit 2; }
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "ab_roots: --rounds $rounds: a positive number" >&2; exit 2; }
[ -f "$recipe" ] || { echo "ab_roots: $recipe: no such recipe" >&2; exit 2; }

mkdir -p "$out"
dbs=()
for i in $(seq 1 "$rounds"); do
  for side in old new; do
    root=$old
    [ $side = new ] && root=$new
    db=$out/ab_${side}_$i.db
    rm -f "$db"
    rc=0
    timeout -s INT "$TIMEOUT" "$TUNE" run "$recipe" --root "$root" --strategy exhaustive --seed "$i" --quiet \
      --db "$db" "$@" > "$out/ab_${side}_$i.log" 2>&1 || rc=$?
    echo "ab_roots: round $i $side: rc $rc $(date -u +%FT%TZ)"
    [ $rc -eq 0 ] || { echo "ab_roots: tune run failed ($out/ab_${side}_$i.log):" >&2; tail -5 "$out/ab_${side}_$i.log" >&2; exit 1; }
    dbs+=("$db")
  done
done
python3 "$ROOT/tools/bench/ab_report.py" --min-faster "$min_faster" "${dbs[@]}" > "$out/ab.md"
cat "$out/ab.md"
sed -n 's/^decision: \([a-z]*\).*/\1/p' "$out/ab.md" > "$out/decision"
