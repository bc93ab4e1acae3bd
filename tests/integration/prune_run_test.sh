#!/usr/bin/env bash
# Compile-time pruning (tuner/prune.c) and the default strategy, on any CPU:
#  - --compile-only on the prune fixture: the variant that cannot launch (250 KiB of shared
#    memory) is stored as skipped "pruned: cannot launch"; the one under --min-occupancy 0.5
#    as "pruned: theoretical occupancy"; the full-occupancy one is compiled as usual;
#  - without --min-occupancy only the unlaunchable one is pruned;
#  - tune run without --strategy records the default strategy (bayes) in its run row and
#    prints the GPU-busy line; --strategy exhaustive is still honoured.
. "$(dirname "$0")/lib.sh"
res() { sql "$1" "select r.error_text from results r join configs c on c.id=r.config_id where c.params_json='{\"SMEM_KB\":$2}'"; }
"$TUNE" run "$SRC/tests/fixtures/recipes/prune.lua" --compile-only --arch sm_90a --db p.db --min-occupancy 0.5 >p.txt 2>&1
check "compile-only run exits 0" test $? -eq 0
check "250 KiB: cannot launch" test "$(res p.db 250 | cut -c1-21)" = "pruned: cannot launch"
check "64 KiB: under min_occupancy" test "$(res p.db 64 | cut -c1-29)" = "pruned: theoretical occupancy"
check "1 KiB: compiled, not pruned" test "$(res p.db 1)" = "compile-only"
check "pruned count printed" contains p.txt "pruned after compiling (never sent to the GPU): 2"
"$TUNE" run "$SRC/tests/fixtures/recipes/prune.lua" --compile-only --arch sm_90a --db q.db >q.txt 2>&1
check "second run exits 0" test $? -eq 0
check "no threshold: 64 KiB compiled" test "$(res q.db 64)" = "compile-only"
check "no threshold: 250 KiB still pruned" test "$(res q.db 250 | cut -c1-21)" = "pruned: cannot launch"
"$TUNE" run "$SRC/tests/fixtures/recipes/prune.lua" --compile-only --arch sm_90a --db r.db --min-occupancy 1.5 >r.txt 2>&1
check "--min-occupancy 1.5 refused" test $? -eq 2

"$TUNE" run "$SRC/recipes/softmax.lua" --device "replay:$SRC/data/recorded/softmax.db" --db s.db --budget 4 --seed 1 >s.txt 2>&1
check "replay run exits 0" test $? -eq 0
check "default strategy recorded" test "$(sql s.db "select distinct strategy from runs")" = "bayes"
check "configs' origin is the strategy" test "$(sql s.db "select distinct origin from configs")" = "bayes"
check "no GPU-busy line in replay (no GPU to keep busy)" lacks s.txt "GPU busy: "
"$TUNE" run "$SRC/recipes/softmax.lua" --device "replay:$SRC/data/recorded/softmax.db" --db e.db --budget 4 --seed 1 --strategy exhaustive >e.txt 2>&1
check "exhaustive run exits 0" test $? -eq 0
check "--strategy exhaustive recorded" test "$(sql e.db "select distinct strategy from runs")" = "exhaustive"
finish
