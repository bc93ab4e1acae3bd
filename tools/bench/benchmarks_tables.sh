#!/usr/bin/env bash
# benchmarks_tables.sh [DIR...]: the comparison tables of docs/benchmarks.md, from the comparison
# databases that device runs left in data/compare/ (tune compare --report last on each; no GPU).
# Without arguments: every folder of data/compare/, in name order.
set -euo pipefail
cd "$(dirname "$0")/../.."
tune=${TUNE:-build/tune}
. tools/bench/compare_dbs.sh
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(data/compare/*/)
for d in "${dirs[@]}"; do
  d=${d%/}
  echo "## $(basename "$d")"
  echo
  while read -r db; do
    "$tune" compare --report last --db "$db"
  done < <(compare_dbs "$d")
done
