#!/usr/bin/env bash
# Runaway recipes fail quickly with file:line and the limit (tuner/lua_limits.h): a loop while
# loading and in a constraint (one that even catches the error with its own pcall), a memory bomb
# while loading and in a constraint; a stop signal ends a loop at once.
. "$(dirname "$0")/lib.sh"
FX="$SRC/tests/fixtures/recipes"
fails_with() { # name pattern [env...]: tune run of fixture NAME fails, within 60 s, saying pattern
  local name=$1 pattern=$2; shift 2
  local t0=$SECONDS
  env "$@" "$TUNE" run "$FX/$name.lua" --compile-only --db "$name.db" >"$name.txt" 2>&1
  local rc=$?
  check "$name fails (rc $rc)" test $rc -ne 0
  check "$name within 60 s ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -lt 60
  check "$name message" contains "$name.txt" "$pattern"
}
fails_with limit_loop_load "limit_loop_load.lua:4: instruction budget of 100000000 exceeded while loading the recipe file"
fails_with limit_loop_constraint \
  "limit_loop_constraint.lua:8: instruction budget of 2000000 exceeded while evaluating constraint 1" TUNE_LUA_MAX_INSTRUCTIONS=2e6
fails_with limit_memory "limit_memory.lua:4: memory limit of 64 MiB exceeded while loading the recipe file" TUNE_LUA_MAX_MB=64
fails_with limit_memory_constraint \
  "limit_memory_constraint.lua:9: memory limit of 64 MiB exceeded while evaluating constraint 1" TUNE_LUA_MAX_MB=64
# a limit below what a shipped recipe needs is the same error, in the recipe's own code
TUNE_LUA_MAX_INSTRUCTIONS=10 "$TUNE" run "$SRC/recipes/copy.lua" --compile-only --db small.db >small.txt 2>&1
check "a tiny budget stops copy.lua" test $? -ne 0
check "a tiny budget names copy.lua" contains small.txt "copy.lua:[0-9]*: instruction budget of 10 exceeded"
# malformed limits are refused by name
TUNE_LUA_MAX_MB=lots "$TUNE" run "$SRC/recipes/copy.lua" --compile-only --db bad.db >bad.txt 2>&1
check "a malformed TUNE_LUA_MAX_MB fails" test $? -ne 0
check "a malformed TUNE_LUA_MAX_MB is named" contains bad.txt "TUNE_LUA_MAX_MB=lots: want a whole number"
# SIGINT inside a recipe's endless constraint ends the run at once
TUNE_LUA_MAX_INSTRUCTIONS=1e15 "$TUNE" run "$FX/limit_loop_constraint.lua" --compile-only --db int.db >int.txt 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; check "SIGINT stops the endless constraint within 5 s" false; }
wait "$pid"
check "SIGINT fails the run" test $? -ne 0
check "SIGINT message" contains int.txt "limit_loop_constraint.lua:8: interrupted (signal 2) while evaluating constraint 1"
finish
