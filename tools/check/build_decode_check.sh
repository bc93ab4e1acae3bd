#!/usr/bin/env bash
# build_decode_check.sh: compile tools/check/decode_check.cu for a representative set of
# templates/attention/decode.cuh configurations, one binary each: build/check/decode_<tag>.
# Every config below lies in recipes/attention/decode.lua's space (its constraints hold).
# Usage: tools/check/build_decode_check.sh [tag...]   (no tag: all)   env: NVCC, ARCH (default sm_90)
# Registers and spills of each kernel go to build/check/decode_<tag>.ptxas.txt and one summary line.
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-nvcc}
ARCH=${ARCH:-sm_90}
OUT=build/check
mkdir -p "$OUT"

# tag                      defines (HEAD_DIM=128 GQA_RATIO=4 for all)       problem it runs (run_decode_check.sh)
CONFIGS=(
  "p16_s8_n32w4_pack1      PAGE_SIZE=16    SPLITS=8  BLOCK_N=32  WARPS=4 VEC_BYTES=16 GQA_PACK=1 STAGES=1"  # B32 L4096, tile spans 2 pages
  "p16_s8_n32w4_pack0      PAGE_SIZE=16    SPLITS=8  BLOCK_N=32  WARPS=4 VEC_BYTES=16 GQA_PACK=0 STAGES=1"  # B32 L4096, one head per block
  "p16_s1_n16w2_st2        PAGE_SIZE=16    SPLITS=1  BLOCK_N=16  WARPS=2 VEC_BYTES=16 GQA_PACK=1 STAGES=2"  # B32 L4096 (+ odd tile counts)
  "p16_s32_n128w8          PAGE_SIZE=16    SPLITS=32 BLOCK_N=128 WARPS=8 VEC_BYTES=16 GQA_PACK=1 STAGES=1"  # B32 L4096, 1 tile/split, 8 pages/tile
  "c4096_s8_n16w2_st2      PAGE_SIZE=4096  SPLITS=8  BLOCK_N=16  WARPS=2 VEC_BYTES=16 GQA_PACK=1 STAGES=2"  # B32 L4096 contiguous
  "p64_s16_n32w4_st2       PAGE_SIZE=64    SPLITS=16 BLOCK_N=32  WARPS=4 VEC_BYTES=16 GQA_PACK=1 STAGES=2"  # B8 L32768 (+ B32 L4096)
  "c32768_s8_n64w8_v8      PAGE_SIZE=32768 SPLITS=8  BLOCK_N=64  WARPS=8 VEC_BYTES=8  GQA_PACK=1 STAGES=1"  # B8 L32768 contiguous, 8-byte loads
  "p32_s2_n16w2_st2        PAGE_SIZE=32    SPLITS=2  BLOCK_N=16  WARPS=2 VEC_BYTES=16 GQA_PACK=1 STAGES=2"  # B128 L1024 (+ 3 tiles/split)
  "c1024_s1_n32w4_pack0    PAGE_SIZE=1024  SPLITS=1  BLOCK_N=32  WARPS=4 VEC_BYTES=16 GQA_PACK=0 STAGES=1"  # B128 L1024 contiguous
  "p32_s32_n32w4_pack0_st2 PAGE_SIZE=32    SPLITS=32 BLOCK_N=32  WARPS=4 VEC_BYTES=16 GQA_PACK=0 STAGES=2"  # B128 L1024, 1 tile/split
  "c4096_s1_n32w8_st2      PAGE_SIZE=4096  SPLITS=1  BLOCK_N=32  WARPS=8 VEC_BYTES=16 GQA_PACK=1 STAGES=2"  # B32 L4096 contiguous: the register path's recorded best
  "p32_s1_n16w4_st2        PAGE_SIZE=32    SPLITS=1  BLOCK_N=16  WARPS=4 VEC_BYTES=16 GQA_PACK=1 STAGES=2"  # B128 L1024: the register path's recorded best
  "p16_s1_n32w8_r3         PAGE_SIZE=16    SPLITS=1  BLOCK_N=32  WARPS=8 VEC_BYTES=16 GQA_PACK=1 STAGES=1 KV_RING=3"  # B32 L4096, smem ring (+ odd tile counts)
  "c4096_s1_n64w8_r4       PAGE_SIZE=4096  SPLITS=1  BLOCK_N=64  WARPS=8 VEC_BYTES=16 GQA_PACK=1 STAGES=1 KV_RING=4"  # B32 L4096 contiguous, ring
  "c4096_s2_n32w4_r4       PAGE_SIZE=4096  SPLITS=2  BLOCK_N=32  WARPS=4 VEC_BYTES=16 GQA_PACK=1 STAGES=1 KV_RING=4"  # B32 L4096 contiguous, ring, 2 splits
  "p64_s16_n32w4_r3        PAGE_SIZE=64    SPLITS=16 BLOCK_N=32  WARPS=4 VEC_BYTES=16 GQA_PACK=1 STAGES=1 KV_RING=3"  # B8 L32768, ring
  "p32_s1_n16w2_r4         PAGE_SIZE=32    SPLITS=1  BLOCK_N=16  WARPS=2 VEC_BYTES=16 GQA_PACK=1 STAGES=1 KV_RING=4"  # B128 L1024, ring
  "c1024_s1_n32w4_r3       PAGE_SIZE=1024  SPLITS=1  BLOCK_N=32  WARPS=4 VEC_BYTES=16 GQA_PACK=1 STAGES=1 KV_RING=3"  # B128 L1024 contiguous, ring
)

want=("$@")
for entry in "${CONFIGS[@]}"; do
  read -r tag defs <<<"$entry"
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " == *" $tag "* ]]; then continue; fi
  dflags=(-DHEAD_DIM=128 -DGQA_RATIO=4)
  for d in $defs; do dflags+=("-D$d"); done
  log="$OUT/decode_$tag.ptxas.txt"
  if ! "$NVCC" -arch="$ARCH" -O3 -std=c++17 -I templates "${dflags[@]}" -Xptxas -v \
       tools/check/decode_check.cu -o "$OUT/decode_$tag" 2>"$log"; then
    cat "$log" >&2
    echo "FAILED to build decode_$tag" >&2
    exit 1
  fi
  # "attn_decode_split: 127 regs, 0 spill bytes" from ptxas -v
  summary=$(awk '/Compiling entry function/ { match($0, /'"'"'[a-z_]+'"'"'/); f = substr($0, RSTART + 1, RLENGTH - 2) }
                 /spill stores/ { sp[f] = $5 + $9 }
                 /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($i == "Used") r[f] = $(i + 1) }
                 END { for (f in r) if (f ~ /^attn_decode/) printf "%s %s regs %s spill bytes; ", f, r[f], sp[f] }' "$log")
  echo "built $OUT/decode_$tag: $summary"
done
