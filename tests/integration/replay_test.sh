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
finish
