#!/usr/bin/env bash
# Replay answers exactly as recorded; `tune db best` prints the recorded winner;
# a config the recording lacks is not_recorded, never invented.
. "$(dirname "$0")/lib.sh"
REC="$SRC/data/recorded/copy.db"
"$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --db r.db --quiet >run.txt 2>&1
check "replay run exits 0" test $? -eq 0
check "says it replays and from which device" contains run.txt "measurements made on NVIDIA"
"$TUNE" db best --db r.db --json >best.json
check "db best --json exits 0" test $? -eq 0
for p in 64MiB 256MiB; do
  want=$(sql "$REC" "select printf('%.2f', min(r.median_ns)) from results r join problems p on p.id=r.problem_id where p.name='$p' and r.status='ok'")
  got=$(python3 -c "import json,sys; rows=[r for r in json.load(open('best.json')) if r['problem']=='$p']; print('%.2f' % rows[0]['median_ns'])")
  check "best of $p equals the recorded minimum ($got vs $want)" test "$got" = "$want"
done
"$TUNE" db best --db r.db >best.txt
check "db best prints a table" contains best.txt "NVIDIA H200"
# a result whose recording kept no register count (-1) shows "-", not a count
cp r.db noregs.db
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("update results set registers = -1"); c.commit()' noregs.db
"$TUNE" db best --db noregs.db >noregs.txt
check "unknown registers print as -" awk 'NR > 1 && $8 != "-" { bad = 1 } NR > 1 { n++ } END { exit bad || !n }' noregs.txt
check "recorded registers print as a count" awk 'NR > 1 && $8 !~ /^[0-9]+$/ { bad = 1 } END { exit bad }' best.txt
# a recipe with a value the recording never measured
sed 's/{ 128, 256, 512, 1024 }/{ 64, 128, 256, 512, 1024 }/' "$SRC/recipes/copy.lua" > "$SRC/recipes/.copy_extra_test.lua"
"$TUNE" run "$SRC/recipes/.copy_extra_test.lua" --device "replay:$REC" --db x.db --quiet >extra.txt 2>&1
rc=$?
rm -f "$SRC/recipes/.copy_extra_test.lua"
check "extended recipe replays (rc $rc)" test $rc -eq 0
n_nr=$(sql x.db "select count(*) from results where status='not_recorded'")
n_ok=$(sql x.db "select count(*) from results where status='ok'")
check "new values come back not_recorded ($n_nr)" test "$n_nr" -gt 0
check "recorded values still answer ($n_ok)" test "$n_ok" -gt 0
# SIGTERM (what `timeout` sends) stops a run as Ctrl-C does: after the variant in flight, the run
# marked interrupted, exit 143; a second run resumes from what was stored
"$TUNE" run "$SRC/recipes/attention.lua" --db t.db > term.txt 2>&1 &
pid=$!
for _ in $(seq 100); do  # until some results are stored (at most ~10 s)
  [ -f t.db ] && [ "$(sql t.db "select count(*) from results" 2>/dev/null || echo 0)" -gt 10 ] && break
  sleep 0.1
done
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM: exit 143 (rc $rc)" test $rc -eq 143
check "SIGTERM: says so" contains term.txt "SIGTERM: finishing the work in flight"
check "SIGTERM: results kept" contains term.txt "interrupted: results so far are stored"
check "SIGTERM: the run is marked interrupted" test "$(sql t.db "select status from runs order by id desc limit 1")" = interrupted
n_stored=$(sql t.db "select count(*) from results")
"$TUNE" run "$SRC/recipes/attention.lua" --db t.db --problem b4h32s4096d128 > term2.txt 2>&1
check "after SIGTERM: a rerun exits 0" test $? -eq 0
check "after SIGTERM: it resumes ($n_stored stored)" test "$(grep -o '[0-9]* resumed' term2.txt | head -1 | cut -d' ' -f1)" -gt 0
finish
