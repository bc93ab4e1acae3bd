#!/usr/bin/env bash
# A stop signal ends a run with its summary and the run recorded as interrupted, even when it comes
# twice at once: `timeout -s INT` signals tune and then its whole group, and a second signal within
# 2 s of the first is the same stop. Replay of a recipe slowed down in its Lua launch geometry, so
# that the signal finds it mid-run (in recipe code or between variants).
. "$(dirname "$0")/lib.sh"
mkdir -p recipes && ln -s "$SRC/templates" templates && touch .tune-root
sed 's/    grid = function(c, p, d)/    grid = function(c, p, d)\n      local x = 0; for i = 1, 300000 do x = x + i end/' \
  "$SRC/recipes/copy.lua" > recipes/copy.lua
run() { # out-file [timeout args]: the slowed replay run
  local out=$1; shift
  "$@" "$TUNE" run recipes/copy.lua --device "replay:$SRC/data/recorded/copy.db" --db "$out.db" --strategy exhaustive \
    --no-warm-start --quiet >"$out.txt" 2>&1
}
stopped_cleanly() { # name
  check "$1: the summary is printed" contains "$1.txt" "^copy: [0-9]* results"
  check "$1: it says how to resume" contains "$1.txt" "interrupted: results so far are stored"
  check "$1: the run is recorded interrupted" test "$(sql "$1.db" "SELECT status FROM runs")" = interrupted
}
for i in 1 2 3 4 5; do
  run "int$i" timeout -s INT 1
  check "int$i: timeout reports the timeout (rc $?)" test $? -eq 124
  stopped_cleanly "int$i"
done
# two SIGTERMs at once, sent by hand: the same stop; exit 128 + SIGTERM
(run term; echo $? > term.rc) &
sleep 1
pid=$(pgrep -n -f "replay:$SRC/data/recorded/copy.db --db term.db" || true)
check "the run was found" test -n "$pid"
[ -n "$pid" ] && kill -TERM "$pid" && kill -TERM "$pid"
wait
check "two SIGTERMs: exit 143" test "$(cat term.rc)" = 143
stopped_cleanly term
finish
