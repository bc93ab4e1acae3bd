#!/usr/bin/env bash
# Planted faults: each variant must end with the right status while the run goes on and the good
# variant's result stays intact. Skipped (77) without a GPU. FAULTS_DEVICE (default cuda:0) runs
# it over several GPUs too (cuda:all): the same statuses, whichever card a variant lands on.
. "$(dirname "$0")/../integration/lib.sh"
DEV=${FAULTS_DEVICE:-cuda:0}
"$TUNE" run "$SRC/tests/fixtures/recipes/faults.lua" --device "$DEV" --db f.db --timeout 4000 --seed 3 >run.txt 2>&1
rc=$?
skip_without_gpu run.txt
cat run.txt
check "the run completes (rc $rc)" test $rc -eq 0
status() { sql f.db "select r.status from results r join configs c on c.id=r.config_id where c.params_json='{\"FAULT\":$1}' order by r.id desc limit 1"; }
expect() { local got; got=$(status "$1"); check "FAULT=$1 is $2 (got $got)" test "$got" = "$2"; }
expect 0 ok
expect 1 crash
expect 2 timeout
expect 3 launch_error
expect 4 launch_error
expect 5 wrong
expect 6 wrong
expect 7 wrong
expect 8 wrong
expect 9 wrong
expect 10 ok
expect 11 launch_error
expect 12 wrong
expect 13 wrong
memo=$(sql f.db "select r.error_text from results r join configs c on c.id=r.config_id where c.params_json='{\"FAULT\":12}' order by r.id desc limit 1")
check "the pointer-keyed cache is caught on new inputs at the same addresses ($memo)" grep -q "same addresses" <<<"$memo"
alt=$(sql f.db "select r.error_text from results r join configs c on c.id=r.config_id where c.params_json='{\"FAULT\":13}' order by r.id desc limit 1")
check "the alternating variant is caught in a timed launch ($alt)" grep -q "timed launch" <<<"$alt"
side=$(sql f.db "select cast(r.median_ns as int) from results r join configs c on c.id=r.config_id where c.params_json='{\"FAULT\":10}' order by r.id desc limit 1")
check "side-stream work is timed (median ${side} ns >= the 200 us spin)" test "${side:-0}" -ge 190000
clocks=$(sql f.db "select sm_mhz from results where status='ok' order by id desc limit 1")
check "SM clock recorded while timing (${clocks} MHz)" test "${clocks:--1}" -gt 0
n_ok=$(sql f.db "select count(*) from results where status='ok' and median_ns > 0 and err_rel_l2 = 0")
check "the good variants are verified and timed" test "$n_ok" -eq 2
# a second run resumes: nothing is measured again
"$TUNE" run "$SRC/tests/fixtures/recipes/faults.lua" --device "$DEV" --db f.db --timeout 4000 --seed 3 >again.txt 2>&1
check "second run resumes everything" contains again.txt "14 resumed from the database"
if [ "$DEV" = cuda:all ]; then
  # which card takes a variant depends on which is free first: all on one is fine
  check "over several GPUs: every result names its card, under one device row" \
    test "$(sql f.db "select count(*) from results where gpu = ''")|$(sql f.db "select count(*) from devices")" = "0|1"
fi
finish
