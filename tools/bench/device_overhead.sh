#!/usr/bin/env bash
# device_overhead.sh BUNDLE OUTDIR: what a launch costs, on a GPU, in one call.
#   host time per call: raw cuLaunchKernel, tunert_launch, tunert_select + tunert_launch (C,
#   tools/runtime_overhead) and tunert.torch.linear, Selection.launch, F.linear (Python,
#   tools/bench/python_overhead.py), all on the bundle's gemm problem M=4 N=4096 K=4096;
#   GPU time per launch, eager against one CUDA graph replay, for that GEMM and the bundle's paged decode.
# The bundle needs gemm served_K4096_M4_N4096_col and an attention.decode problem
# (tools/bench/device_model.sh OUTDIR tune makes such a bundle).
set -u
bundle=${1:?usage: device_overhead.sh BUNDLE OUTDIR}; out=${2:?usage: device_overhead.sh BUNDLE OUTDIR}
mkdir -p "$out"
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
decode=$(python3 -c 'import sqlite3, sys
r = sqlite3.connect(sys.argv[1]).execute("SELECT e.problem_name FROM entries e JOIN families f ON f.id = e.family_id "
                                         "WHERE f.name = ? ORDER BY e.id LIMIT 1", ("attention.decode",)).fetchone()
print(r[0] if r else "")' "$bundle")
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  build/tools/runtime_overhead --bundle "$bundle" --family gemm --problem served_K4096_M4_N4096_col --variants 100
  [ -n "$decode" ] && build/tools/runtime_overhead --bundle "$bundle" --family attention.decode --problem "$decode" --variants 1 \
    | grep -v '^open\|^select'
  PYTHONPATH=$PWD/python/src TUNERT_LIBRARY=$PWD/build/lib/libtunert.so \
    python3 tools/bench/python_overhead.py --bundle "$bundle" --m 4 --n 4096 --k 4096
} 2>&1 | tee "$out/overhead.log"
