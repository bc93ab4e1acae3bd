#!/usr/bin/env bash
# A result's identity (db/db_identity.h) through the CLI: N concurrent `tune run`s on one database
# (replay backend) store one row per identity, their overlapping measurements as re-timings
# under it; a --compile-only rerun adds no row; `tune db merge` of two runs of the same configs
# gives one row per identity, and a second merge adds nothing.
. "$(dirname "$0")/lib.sh"
REC="$SRC/data/recorded/copy.db"
N=4
IDENTITY="recipe_id, problem_id, config_id, coalesce(binary_key, ''), device_id, timing, protocol"
rows() { sql "$1" "select count(*) from results"; }
identities() { sql "$1" "select count(*) from (select distinct $IDENTITY from results)"; }
replay() { "$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --strategy exhaustive --quiet "$@"; }

# the expected identities: one run alone
replay --db one.db >one.txt 2>&1
check "a single run exits 0" test $? -eq 0
expected=$(rows one.db)
check "a single run has results ($expected)" test "$expected" -gt 100

# N writers at once
pids=()
for i in $(seq 1 $N); do
  replay --db soak.db >"w$i.txt" 2>&1 &
  pids+=($!)
done
for i in $(seq 1 $N); do
  wait "${pids[$((i - 1))]}"
  check "writer $i exits 0" test $? -eq 0
done
stored=$(rows soak.db)
retimes=$(sql soak.db "select count(*) from measurements where comparison_id is null")
echo "soak: $N concurrent tune runs, $expected identities expected, $stored result rows stored, $retimes re-timings"
check "one row per identity" test "$stored" -eq "$(identities soak.db)"
check "as many rows as one run alone" test "$stored" -eq "$expected"
check "every re-timing is under a result of its config" \
  test "$(sql soak.db "select count(*) from measurements m join results r on r.id = m.result_id
                       where m.comparison_id is null and m.config_id = r.config_id and m.round = 0")" -eq "$retimes"
check "the database is consistent" test "$(sql soak.db "pragma foreign_key_check" | wc -l)" -eq 0

# --compile-only twice: the rerun adds nothing
co() { "$TUNE" run "$SRC/recipes/copy.lua" --compile-only --arch sm_90a --problem 64MiB --only VEC_BYTES=16,ILP=1 \
         --db co.db --quiet; }
co >co1.txt 2>&1
check "compile-only run exits 0" test $? -eq 0
n_co=$(rows co.db)
check "compile-only run stored results ($n_co)" test "$n_co" -gt 0
co >co2.txt 2>&1
check "compile-only rerun exits 0" test $? -eq 0
check "compile-only rerun adds no row" test "$(rows co.db)" -eq "$n_co"
check "compile-only rerun adds no measurement" test "$(sql co.db "select count(*) from measurements")" -eq 0

# merge: two runs of the same configs, then the same merge again
replay --db two.db >two.txt 2>&1
"$TUNE" db merge m.db one.db two.db >merge1.txt 2>&1
check "merge exits 0" test $? -eq 0
check "the second input's results all had their identity in OUT" \
  contains merge1.txt "two.db: results $expected read, 0 added, $expected duplicates"
check "merged: one row per identity" test "$(rows m.db)" -eq "$expected"
check "merged: the second run's timings are re-timings" \
  test "$(sql m.db "select count(*) from measurements where comparison_id is null")" -eq "$expected"
"$TUNE" db merge m.db one.db two.db >merge2.txt 2>&1
check "merge again exits 0" test $? -eq 0
check "merge again adds nothing" contains merge2.txt "m.db: results $((2 * expected)) read, 0 added, $((2 * expected)) duplicates"
check "merge again adds no re-timing" test "$(sql m.db "select count(*) from measurements")" -eq "$expected"
# the soak's database: its rows are re-timings of OUT's, its own re-timings come along; once
"$TUNE" db merge m.db soak.db >merge3.txt 2>&1
after3=$(sql m.db "select count(*) from measurements where comparison_id is null")
"$TUNE" db merge m.db soak.db >merge4.txt 2>&1
check "merging the soak adds no result" test "$(rows m.db)" -eq "$expected"
# replay answers every writer with the same figures: two re-timings of one config in the same
# second are the same row to the merge, so up to (not exactly) all of the soak's arrive
check "the soak's rows and re-timings are re-timings in OUT ($after3)" \
  test "$after3" -gt "$expected" -a "$after3" -le $((2 * expected + retimes))
check "... once: merging the soak again adds none" \
  test "$(sql m.db "select count(*) from measurements where comparison_id is null")" -eq "$after3"
check "merged database is consistent" test "$(sql m.db "pragma foreign_key_check" | wc -l)" -eq 0
finish
