#!/usr/bin/env bash
# device_compare.sh OUTDIR SET: tune compare on the GPU of a device call, one set of recipes.
#   The candidates of each problem come from the recorded database of this GPU model
#   (data/recorded/h100/ on an H100, data/recorded/h200/ on an H200, where it has the recording;
#   else data/recorded/, whichever GPU that was recorded on: the log names the file), copied to a
#   scratch database; tune compare compiles them from the current source, verifies and re-times
#   them against the peers in interleaved rounds, both timing modes. Writes OUTDIR/SET.md (the
#   tables), OUTDIR/SET.log and OUTDIR/gpu.txt; the scratch databases go to OUTDIR/SET-dbs.tgz.
# SET: smoke (copy, one round), check (split-K, split-KV, softmax.split: one round), gemm,
#   attention, skinny (gemm.skinny), varlen, memory, rank (top 6 on four problems, then
#   tools/bench/ncu_check.py against Nsight Compute).
# env: ROUNDS (default 3), TOPK (default 2), STEP_LIMIT_S (per tune compare, default 300),
#   EXTRA (more tune compare options, e.g. --no-peers)
set -u
out=${1:?usage: device_compare.sh OUTDIR SET}
set_name=${2:?usage: device_compare.sh OUTDIR SET}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
rounds=${ROUNDS:-3}
topk=${TOPK:-2}
limit=${STEP_LIMIT_S:-300}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv >> "$out/gpu.txt" 2>&1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case $gpu in *H100*) model_dir=data/recorded/h100 ;; *H200*) model_dir=data/recorded/h200 ;; *) model_dir= ;; esac
scratch=/tmp/compare-$set_name
rm -rf "$scratch"
mkdir -p "$scratch"

# compare RECIPE_FILE RECORDING PROBLEM...: one tune compare on a copy of the recording
compare() {
  local recipe=$1 rec=$2
  shift 2
  [ -n "$model_dir" ] && [ -f "$model_dir/$(basename "$rec")" ] && rec=$model_dir/$(basename "$rec")
  local db="$scratch/$(basename "$recipe" .lua).db"
  [ -f "$db" ] || cp "$rec" "$db"
  local args=()
  for p in "$@"; do args+=(--problem "$p"); done
  echo "== $(date -u +%H:%M:%S) tune compare $recipe (candidates from $rec)" | tee -a "$out/$set_name.log"
  timeout -s INT "$limit" build/tune compare "$recipe" --db "$db" --rounds "$rounds" --top-k "$topk" \
    -o "$out/$set_name.md" ${EXTRA:-} "${args[@]}" >> "$out/$set_name.log" 2>&1
  echo "   exit $?" | tee -a "$out/$set_name.log"
}

case $set_name in
smoke)
  rounds=1 compare recipes/copy.lua data/recorded/copy.db ;;
gemm)
  compare recipes/gemm.lua data/recorded/gemm.db m4096n4096k4096_col m8192n8192k8192_col m4096n14336k4096_col \
    m1n8192k8192_row m16n14336k4096_col m64n4096k14336_col m128n8192k8192_col ;;
attention)
  compare recipes/attention/prefill_sm90.lua data/recorded/attention.prefill_sm90.db b4h32s4096d128 \
    b4h32s4096d128c b16h16s1024d64 b4h32s4096d128c_gqa8
  compare recipes/attention/decode.lua data/recorded/attention.decode.db ;;
skinny)
  compare recipes/gemm/skinny.lua data/recorded/gemm.skinny.db ;;
varlen)
  compare recipes/attention/varlen.lua data/recorded/attention.varlen.db ;;
memory)
  compare recipes/copy.lua data/recorded/copy.db
  compare recipes/softmax.lua data/recorded/softmax.db r16384c1024 r4096c32768
  compare recipes/rmsnorm.lua data/recorded/rmsnorm.db t16384h4096 t16384h4096add
  compare recipes/elementwise.lua data/recorded/elementwise.db
  compare recipes/transpose.lua data/recorded/transpose.db ;;
check)  # one round of the paths a change can break: split-K and split-KV scratch, memcpy peers
  rounds=1 compare recipes/gemm.lua data/recorded/gemm.db m64n4096k14336_col
  rounds=1 compare recipes/attention/decode.lua data/recorded/attention.decode.db b8hq32hkv8d128p32x1024
  rounds=1 compare recipes/softmax.lua data/recorded/softmax.db r1024c32768 ;;
rank)  # more variants per problem: do burst and sustained order them alike? then ncu's view
  topk=${TOPK:-6}
  compare recipes/gemm.lua data/recorded/gemm.db m4096n4096k4096_col m8192n8192k8192_col
  compare recipes/attention/prefill_sm90.lua data/recorded/attention.prefill_sm90.db b4h32s4096d128c
  compare recipes/softmax.lua data/recorded/softmax.db r16384c1024
  command -v ncu >/dev/null && python3 tools/bench/ncu_check.py "$scratch" "$out/ncu" > "$out/ncu.txt" 2>&1
  cat "$out/ncu.txt" 2>/dev/null ;;
*) echo "unknown set $set_name" >&2; exit 2 ;;
esac
tar czf "$out/$set_name-dbs.tgz" -C "$scratch" . 2>/dev/null
echo; cat "$out/$set_name.md" 2>/dev/null | grep -E '^\|' | cut -c1-160
