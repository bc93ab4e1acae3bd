#!/usr/bin/env bash
# Values given on the command line are checked against the recipe before anything runs: a problem,
# parameter or value that is not there, or a malformed architecture, is a usage error (exit 2) that
# names the option and lists what is valid; a recipe whose constraints reject every config fails.
# Every verb answers --help; errors about a database or bundle name its file.
. "$(dirname "$0")/lib.sh"
COPY="$SRC/recipes/copy.lua"
usage_error() { # name pattern args...
  local name=$1 pat=$2; shift 2
  "$TUNE" run "$COPY" --compile-only --budget 1 --jobs 1 --db "$name.db" "$@" >"$name.txt" 2>&1
  local rc=$?
  check "$name exits 2 (rc $rc)" test $rc -eq 2
  check "$name message" contains "$name.txt" "$pat"
  check "$name compiled nothing" lacks "$name.txt" "configs satisfy"
}
usage_error problem "--problem nope: no problem of .*copy.lua has that name (its problems: 64MiB, 256MiB)" --problem nope
usage_error problem_near "did you mean 64MiB?" --problem 64MB
usage_error problem_dims "--problem N=3: no problem of .*copy.lua has those dims" --problem N=3
usage_error only_param "--only NOPE=1: no parameter NOPE (parameters: VEC_BYTES, ILP, BLOCK, GRID_STRIDE, MIN_BLOCKS)" --only NOPE=1
usage_error only_near "--only BLCK=128: no parameter BLCK .*did you mean BLOCK?" --only BLCK=128
usage_error only_value "--only BLOCK=7: BLOCK has no value 7 (its values: 128, 256, 512, 1024)" --only BLOCK=7
usage_error only_second "--only BLOCK=128,ILP=3: ILP has no value 3" --only BLOCK=128,ILP=3
usage_error only_bool "GRID_STRIDE has no value 1 (its values: false, true)" --only GRID_STRIDE=1
usage_error only_form "--only BLOCK: want PARAM=VALUE" --only BLOCK
usage_error arch "--arch banana: want sm_NN or sm_NNa" --arch banana
usage_error arch_digits "--arch sm_9: want sm_NN or sm_NNa" --arch sm_9

# --only narrows the space the run walks: its counters and its results are the matching configs only
"$TUNE" run "$COPY" --device "replay:$SRC/data/recorded/copy.db" --only BLOCK=128,ILP=1 --problem 64MiB --db only.db >only.txt 2>&1
check "--only run exits 0" test $? -eq 0
check "--only: the problem's heading counts the 12 matching configs" grep -q "== copy / 64MiB .*: 12 configs" only.txt
check "--only: the variants are numbered out of 12" grep -q "^\[ *1/12\]" only.txt
check "--only: 12 results stored" test "$(sql only.db "select count(*) from results")" -eq 12

# a recipe whose constraints reject every config: an error, not a quiet success
mkdir -p recipes && ln -s "$SRC/templates" templates
sed 's/"BLOCK \* MIN_BLOCKS <= 2048",/"BLOCK * MIN_BLOCKS <= 2048", "BLOCK < 0",/' "$COPY" > recipes/empty.lua
"$TUNE" run recipes/empty.lua --compile-only --budget 1 --db empty.db >empty.txt 2>&1
rc=$?
check "empty space fails (rc $rc)" test $rc -eq 1
check "empty space says why" contains empty.txt "recipes/empty.lua: recipe copy: its constraints reject every one of its 192 configs"

# --help on every verb, to stdout, exit 0
for v in "worker" "db best" "db list" "db show" "db export" "bundle" "compare" "version"; do
  "$TUNE" $v --help >h.txt 2>h.err
  check "tune $v --help exits 0" test $? -eq 0
  [ "$v" = version ] || check "tune $v --help prints usage" contains h.txt "usage: tune ${v%% *}"
done
"$TUNE" version extra >v.txt 2>&1
check "tune version takes no argument" test $? -eq 2

# database errors name the database
head -c 8192 /dev/zero | tr '\0' 'x' > notadb.db
"$TUNE" db best --db notadb.db >db.txt 2>&1
check "a corrupt database fails" test $? -eq 1
# A string dim or parameter matches with or without its JSON quotes (kv_scale=page, kv_scale="page"),
# a number never matches a string's digits (--problem kv_scale=1 is no problem)
FP8="$SRC/recipes/attention/decode_fp8.lua"
ONE=SPLITS=4,BLOCK_N=64,WARPS=4,VEC_BYTES=8,GQA_PACK=1,STAGES=1,KV_RING=0,DEQUANT=0,MMA=0
for f in kv_scale=page 'kv_scale="page"'; do
  "$TUNE" run "$FP8" --compile-only --arch sm_90a --jobs 1 --db str.db --problem "$f,B=32" --only "$ONE" >str.txt 2>&1
  check "--problem $f,B=32 runs" test $? -eq 0
  check "--problem $f,B=32 selects the per-page problem of B 32 only" test "$(grep -c '^== ' str.txt)" = 1
  check "--problem $f,B=32: it is b32...pagescale" grep -q '^== attention.decode_fp8 / b32hq32hkv8d128p16x256_pagescale ' str.txt
done
"$TUNE" run "$FP8" --compile-only --arch sm_90a --jobs 1 --db str.db --problem kv_scale=1 --only "$ONE" >str1.txt 2>&1
check "--problem kv_scale=1 is a usage error" test $? -eq 2
check "--problem kv_scale=1: no problem has those dims" contains str1.txt "has those dims"
check "the error names the database" contains db.txt "db notadb.db: file is not a database"
"$TUNE" run "$COPY" --compile-only --budget 1 --db notadb.db >db.txt 2>&1
check "tune run on a corrupt database fails" test $? -eq 1
check "tune run names the database" contains db.txt "db notadb.db: file is not a database"
finish
