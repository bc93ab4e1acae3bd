#!/usr/bin/env bash
# tune compare's sustained selection on any CPU (tests/support/fake_worker.c stands in for the GPU
# worker, one card, answering timer "cupti" so that its timings are compared;
# FAKE_SUSTAINED_REVERSED makes sustained timings order the variants opposite to burst ones):
#  - with sustained rounds, each problem gets a selection of timing 'sustained', recorded with the
#    comparison, and `tune db best` (so bundles) takes its choice first;
#  - where the sustained winner is not the run's burst-timed fastest, the comparison says so;
#  - burst-only rounds record no selection; the same answer in both modes changes no choice;
#  - --problem takes a name or K=V on the dims, as tune run's does, and refuses one that matches nothing.
. "$(dirname "$0")/lib.sh"
export TUNE_WORKER_PROGRAM="${FAKE_WORKER:?set FAKE_WORKER to the stand-in worker}" FAKE_GPUS=1 FAKE_MEASURE_MS=10 \
  FAKE_TIMER=cupti
R="$SRC/tests/fixtures/recipes/pool.lua"
"$TUNE" run "$R" --strategy exhaustive --seed 1 --device cuda:0 --db a.db >run.txt 2>&1
check "the run exits 0" test $? -eq 0
burst_best=$("$TUNE" db best --db a.db | awk '$2 == "64K"' | sed 's/.* us .*  //')
check "the run selected in burst mode" test "$(sql a.db "select count(*) from selections where timing = 'burst'")" = 2

"$TUNE" compare "$R" --no-peers --top-k 3 --timing burst --db a.db >burst.txt 2>&1
check "a burst-only comparison exits 0" test $? -eq 0
check "... and records no selection" test "$(sql a.db "select count(*) from selections")" = 2

cp a.db filter.db
"$TUNE" compare "$R" --no-peers --top-k 2 --timing burst --problem N=131072 --db filter.db >filter.txt 2>&1
check "--problem K=V compares the problems whose dims match" contains filter.txt "| 128K | burst"
check "... and only those" lacks filter.txt "| 64K |"
n_cmp=$(sql filter.db "select count(*) from comparisons")
"$TUNE" compare "$R" --no-peers --problem 64k --db filter.db >typo.txt 2>&1
check "a --problem no problem has fails" test $? -ne 0
check "... naming the nearest problem" contains typo.txt "did you mean 64K"
check "... before it measures anything" test "$(sql filter.db "select count(*) from comparisons")" = "$n_cmp"

cp a.db same.db
"$TUNE" compare "$R" --no-peers --top-k 3 --db same.db >same.txt 2>&1
check "a comparison with the same answer in both modes exits 0" test $? -eq 0
check "... selects in sustained mode per problem" \
  test "$(sql same.db "select count(*) from selections where timing = 'sustained' and comparison_id is not null")" = 2
check "... the run's fastest stays the choice" lacks same.txt "is not the database's fastest"
check "... db best unchanged" test "$("$TUNE" db best --db same.db | awk '$2 == "64K"' | sed 's/.* us .*  //')" = "$burst_best"

FAKE_SUSTAINED_REVERSED=1 "$TUNE" compare "$R" --no-peers --top-k 3 --db a.db >salt.txt 2>&1
check "a comparison whose modes disagree exits 0" test $? -eq 0
check "... selects in sustained mode per problem" \
  test "$(sql a.db "select count(*) from selections where timing = 'sustained'")" = 2
check "... says the sustained winner is not the burst-timed fastest" contains salt.txt "is not the database's fastest"
sus=$(sql a.db "select c.params_json from selections s join results r on r.id = s.result_id join configs c on c.id = r.config_id join problems p on p.id = s.problem_id where s.timing = 'sustained' and p.name = '64K'")
check "... which db best now takes ($sus)" test "$("$TUNE" db best --db a.db | awk '$2 == "64K"' | sed 's/.* us .*  //')" != "$burst_best"
"$TUNE" db best --db a.db --json >best.json
check "... and says it was chosen in sustained rounds" contains best.json '"selection": "fastest in sustained rounds: '
check "... the sustained choice is one of the re-timed candidates" \
  test "$(sql a.db "select count(*) from measurements m join selections s on s.comparison_id = m.comparison_id and s.result_id = m.result_id where s.timing = 'sustained' and m.timing = 'sustained'")" -ge 6
finish
