#!/usr/bin/env bash
# Every verb has a truthful --help; bad usage exits 2; the binary travels.
. "$(dirname "$0")/lib.sh"
for v in "" "run" "db"; do
  "$TUNE" $v --help >h.txt 2>&1
  check "tune $v --help exits 0" test $? -eq 0
  check "tune $v --help prints usage" contains h.txt "usage: tune"
done
"$TUNE" run --help >h.txt
for opt in --db --device --strategy --budget --problem --jobs --compile-only --arch --seed; do
  check "run --help documents $opt" contains h.txt -- "$opt"
done
"$TUNE" run "$SRC/recipes/copy.lua" --frobnicate >bad.txt 2>&1
check "unknown option exits 2" test $? -eq 2
check "unknown option named" contains bad.txt "unknown option --frobnicate"
"$TUNE" run "$SRC/recipes/copy.lua" --budget banana >bad.txt 2>&1
check "bad budget exits 2" test $? -eq 2
"$TUNE" db best --db nowhere.db >bad.txt 2>&1
check "db on a missing file fails" test $? -ne 0
check "db names the missing file" contains bad.txt "nowhere.db"
"$TUNE" bundle -o x.tbundle >bad.txt 2>&1
check "bundle without --recipe exits 2" test $? -eq 2
check "... naming the missing option in one line" test "$(grep -c . bad.txt)" = 1 -a -n "$(grep -- '--recipe NAME is required' bad.txt)"
ldd "$TUNE" >ldd.txt
check "tune does not link libcuda" lacks ldd.txt libcuda
check "tune does not link liblua" lacks ldd.txt liblua
check "tune does not link libsqlite3" lacks ldd.txt libsqlite3
finish
