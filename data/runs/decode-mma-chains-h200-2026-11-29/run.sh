#!/usr/bin/env bash
# The tensor-core decode kernel (decode_mma.cuh) with its rows-8 mma chained (accumulator rows 8..15
# carried, not re-zeroed) and the experiment's knobs (x_fp8.lua and its bf16 twin), against the committed
# templates (build/old_tree: `git archive HEAD templates recipes`, the knobs at their old values),
# one call: old, new, old again (drift), burst, CUPTI, exhaustive over the experiment's spaces.
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=${TUNE:-build/tune} D=data/runs/decode-mma-chains-h200-2026-11-29 W=/tmp/x; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
P8=(--problem b1hq32hkv8d128p16x2048 --problem b1hq64hkv8d128p32x4096 --problem b32hq32hkv8d128p16x256
    --problem b64hq64hkv8d128p16x512)
P16=(--problem b1hq32hkv8d128p16x2048 --problem b32hq32hkv8d128p16x256 --problem b8hq32hkv8d128p32x1024
     --problem b128hq32hkv8d128p16x64)
# the bf16 experiment is the e4m3 one on attention.decode (its DEQUANT {0} is a define the bf16
# path ignores)
sed -e 's/decode_fp8/decode/g' $D/x_fp8.lua > $W/x_bf16.lua
one() {  # tag root db extra...
  local tag=$1 root=$2 db=$3; shift 3
  for f in fp8 bf16; do
    local p=("${P8[@]}"); [ $f = bf16 ] && p=("${P16[@]}")
    local x=$D/x_fp8.lua; [ $f = bf16 ] && x=$W/x_bf16.lua
    timeout -s INT 280 $B run $x --root $root "${p[@]}" "$@" --strategy exhaustive --seed 1 --quiet \
      --jobs 16 --timeout 20000 --db $db >> $W/$tag.log 2>&1
    echo "$tag $f rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
  done
}
OLD=(--only QK_CHAINS=1,RESCALE_SKIP=0,MIN_BLOCKS=1)
one old1 build/old_tree $W/old1.db "${OLD[@]}"
one new . $W/new.db
one old2 build/old_tree $W/old2.db "${OLD[@]}"
for t in old1 new old2; do python3 tools/lean_db.py $W/$t.db $OUT/$t.db > /dev/null; done
cat $W/*.log > $OUT/runs.log
grep -E "results, |GPU busy" $OUT/runs.log | cut -c1-150
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
