#!/bin/sh
# The compile-time measurements of README.md, on the CPU machine (no GPU needed), from the repository root.
set -e
db=${TMPDIR:-/tmp}/nvrtc_bench
mkdir -p "$db"
# variants as tune instantiates them: compile-only databases (their binaries keep each variant's options)
build/tune run recipes/rmsnorm.lua --compile-only --db "$db/rmsnorm.db"
for r in copy attention/decode gemm; do
  build/tune run recipes/$r.lua --compile-only --jobs 1 --budget 6 --strategy random --db "$db/$(echo $r | tr / .).db"
done
fams="copy=templates/copy/copy.cuh:$db/copy.db@copy_kernel
rmsnorm=templates/rmsnorm/rmsnorm.cuh:$db/rmsnorm.db@rmsnorm_kernel
attention.decode=templates/attention/decode.cuh:$db/attention.decode.db@attn_decode_split
gemm=templates/gemm/gemm.cuh:$db/gemm.db@gemm_bf16"
python3 tools/bench/nvrtc_compile_time.py $fams --variants 4 --reps 4
python3 tools/bench/nvrtc_compile_time.py $fams --variants 4 --reps 3 --procs 2 --modes base,no_lineinfo,split2,pch_defs
python3 tools/bench/nvrtc_compile_time.py $(echo "$fams" | tail -3) --variants 6 --reps 4 --modes base,pch_defs,minimal
