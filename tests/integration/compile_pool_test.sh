#!/usr/bin/env bash
# The compile pool's servers (`tune compile-server`, one child per pool thread when --jobs > 1)
# store the binaries the in-process pool (TUNE_COMPILE_IN_PROCESS=1) stores: key, options,
# cubin, log (but ptxas's own run time), resources, kernel names. A server killed mid-job
# (the test hook) fails the run cleanly, naming the job and the signal, like any pool error of
# the in-process pool, and leaves no server behind; the hook means nothing in process.
. "$(dirname "$0")/lib.sh"
export COMPILE_POOL_TEST_MARK=$$ # finds this test's servers among the processes
run() { # run DB [options]: 40 copy variants in exhaustive order on two compile threads
  local db=$1; shift
  timeout 300 "$TUNE" run "$SRC/recipes/copy.lua" --compile-only --arch sm_90a --problem 64MiB --strategy exhaustive \
    --budget 40 --jobs 2 --quiet --db "$db" "$@"
}
binaries() {
  sql "$1" "select key, options, arch, nvrtc_version, ok, hex(cubin), lowered_name, registers, shared_bytes,
            local_bytes, spill_stores, spill_loads, log from binaries order by key" | sed 's/Compile time = [0-9.]* ms//'
}
servers_left() { # this test's compile servers still running
  local n=0
  for e in /proc/[0-9]*/environ; do
    { tr '\0' '\n' <"$e" | grep -qx "COMPILE_POOL_TEST_MARK=$$"; } 2>/dev/null || continue
    grep -q "compile-server" "${e%environ}cmdline" 2>/dev/null && n=$((n + 1))
  done
  echo "$n"
}

run servers.db >servers.txt 2>&1
check "through servers: exit 0" test $? -eq 0
TUNE_COMPILE_IN_PROCESS=1 run inproc.db >inproc.txt 2>&1
check "in process: exit 0" test $? -eq 0
of_results="select count(*) from binaries where ok = 1 and key in (select binary_key from results)"
check "40 binaries each" test "$(sql servers.db "$of_results")/$(sql inproc.db "$of_results")" = 40/40
binaries servers.db >servers.bin
binaries inproc.db >inproc.bin
check "binaries stored alike (with cubins and logs)" test -s servers.bin
check "... and byte for byte the same" cmp servers.bin inproc.bin
check "no server left after the run" test "$(servers_left)" = 0

# the variants with ILP=2 (17th to 32nd in exhaustive order) kill their server
TUNE_TEST_COMPILE_SERVER_KILL_ON=-DILP=2 run killed.db >killed.txt 2>&1
check "a killed server fails the run (exit 1)" test $? -eq 1
check "... naming the server's end" contains killed.txt "compile server (pid [0-9]*) was killed by signal 9"
check "... and the job" contains killed.txt "while compiling copy.cuh -DVEC_BYTES=4 -DILP=2 "
check "... and the way around it" contains killed.txt "TUNE_COMPILE_IN_PROCESS=1"
check "... keeping what compiled before it" test "$(sql killed.db 'select count(*) from binaries')" -ge 16
check "... and leaving no server behind" test "$(servers_left)" = 0
TUNE_TEST_COMPILE_SERVER_KILL_ON=-DILP=2 TUNE_COMPILE_IN_PROCESS=1 run hook_inproc.db >hook_inproc.txt 2>&1
check "in process the hook kills nothing" test $? -eq 0
# resuming the failed run through servers compiles on, the job that killed its server first
run killed.db >resumed.txt 2>&1
check "the failed run resumes (exit 0)" test $? -eq 0
check "... with a binary for every result" test "$(sql killed.db "$of_results")" = "$(sql killed.db 'select count(*) from results')"
check "... among them the one killed" test "$(sql killed.db "select count(*) from binaries where options like '%-DILP=2 -DBLOCK=128 -DGRID_STRIDE=0 -DMIN_BLOCKS=1%'")" = 1
finish
