#!/usr/bin/env bash
# docs/benchmarks.md's tables are what tools/bench/benchmarks_tables.sh prints from data/compare/:
# a published number that its database does not back fails here.
set -u
source "$(dirname "$0")/lib.sh"
page="$SRC/docs/benchmarks.md"
want=$(mktemp)
got=$(mktemp)
sed -n '/^<!-- tables:/,/^<!-- end tables -->/p' "$page" | sed '1d;$d' > "$want"
TUNE="$TUNE" bash "$SRC/tools/bench/benchmarks_tables.sh" > "$got" 2>&1
check "the page has a tables section" test -s "$want"
check "the tables match data/compare (regenerate: tools/bench/benchmarks_tables.sh)" diff -qB "$want" "$got"
[ "$FAIL" -eq 0 ] || diff -B "$want" "$got" | head -20
# the serving tables: tools/bench/serve_tables.py from data/serve/
sed -n '/^<!-- serve tables:/,/^<!-- end serve tables -->/p' "$page" | sed '1d;$d' > "$want"
python3 "$SRC/tools/bench/serve_tables.py" > "$got" 2>&1
check "the page has a serving section" test -s "$want"
check "the serving tables match data/serve (regenerate: tools/bench/serve_tables.py)" diff -qB "$want" "$got"
rm -f "$want" "$got"
finish
