#!/usr/bin/env bash
# Files tune writes are replaced atomically. Concurrent `tune bundle -o same`: each writer has a temporary of its own and renames it into
# place, so every writer that can succeed does, the output is always a whole bundle once one has
# succeeded, a failing writer removes nothing of another's, and no temporary is left behind.
. "$(dirname "$0")/lib.sh"
INSPECT="${TUNERT_INSPECT:?set TUNERT_INSPECT}"
REC="$SRC/data/recorded/copy.db"
mkdir -p recipes && cp "$SRC/recipes/copy.lua" recipes/ && ln -s "$SRC/templates" templates && touch .tune-root
cp "$SRC/recipes/copy.lua" recipes/broken.lua && echo "syntax error here" >> recipes/broken.lua
for round in 1 2 3; do
  rm -f same.bundle
  pids=()
  for w in 1 2 3; do
    "$TUNE" bundle --recipe copy --db "$REC" --arch sm_90a --jobs 1 --quiet --allow-source-change -o same.bundle >"w$round.$w.txt" 2>&1 &
    pids+=($!)
  done
  "$TUNE" bundle --recipe broken --db "$REC" --arch sm_90a --jobs 1 --quiet --allow-source-change -o same.bundle >"bad$round.txt" 2>&1 &
  bad=$!
  for w in 1 2 3; do
    wait "${pids[$((w - 1))]}"
    rc=$?
    check "round $round: writer $w succeeds (rc $rc)" test $rc -eq 0
    [ $rc -eq 0 ] || sed 's/^/    /' "w$round.$w.txt" >&2
  done
  wait $bad
  check "round $round: the broken recipe fails" test $? -ne 0
  check "round $round: the bundle is there" test -f same.bundle
  "$INSPECT" same.bundle --arch sm_90a >"inspect$round.txt" 2>&1
  check "round $round: the bundle opens" test $? -eq 0
  left=$(ls -a | grep -c '\.tmp')
  check "round $round: no temporary left ($left)" test "$left" -eq 0
done
"$TUNE" bundle --recipe copy --db nowhere.db -o x.bundle >nodb.txt 2>&1
check "a missing database is named" contains nodb.txt "nowhere.db"
"$TUNE" bundle --recipe copy --db "$REC" --arch sm_90a --allow-source-change -o nodir/x.bundle >nodir.txt 2>&1
check "an unwritable bundle fails" test $? -eq 1
check "the error names the bundle" contains nodir.txt "nodir/x.bundle"
# tune db export -o: a failed export keeps the earlier file; a good one replaces it whole
echo earlier > x.json
"$TUNE" db export --db "$REC" --format t4 --recipe copy --problem nope -o x.json >ex.txt 2>&1
check "a failed export fails" test $? -eq 1
check "a failed export keeps the earlier file" test "$(cat x.json)" = earlier
"$TUNE" db export --db "$REC" --format t4 --recipe copy --problem 64MiB -o x.json >ex.txt 2>&1
check "an export succeeds" test $? -eq 0
check "it replaced the file" contains x.json '"problem": "64MiB"'
check "with the mode of a plain file" test -r x.json -a "$(stat -c %a x.json)" = "$(umask -S >/dev/null; printf '%o' $((0666 & ~0$(umask))))"
check "no export temporary is left" test -z "$(ls -a | grep '\.tmp')"
finish
