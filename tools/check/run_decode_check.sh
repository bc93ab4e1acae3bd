#!/usr/bin/env bash
# run_decode_check.sh: run the binaries of build_decode_check.sh on their problems (needs a GPU).
# One line per case: PASS|FAIL|SKIP tag problem rel_l2 max_abs nan median_us min_us kv_GBps ...
# Usage: tools/check/run_decode_check.sh [--iters N]   Exit status: number of failed cases (0 = all pass).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=build/check
extra=("$@")

# tag                      B   HQ HKV L
CASES=(
  "p16_s8_n32w4_pack1      32  32 8   4096"
  "p16_s8_n32w4_pack0      32  32 8   4096"
  "p16_s1_n16w2_st2        32  32 8   4096"
  "p16_s1_n16w2_st2        32  32 8   4080"   # 255 tiles: odd count through the register double buffer
  "p16_s1_n16w2_st2        3   32 8   208"    # 13 tiles, tiny B
  "p16_s32_n128w8          32  32 8   4096"
  "c4096_s8_n16w2_st2      32  32 8   4096"
  "p64_s16_n32w4_st2       8   32 8   32768"
  "p64_s16_n32w4_st2       32  32 8   4096"
  "c32768_s8_n64w8_v8      8   32 8   32768"
  "p32_s2_n16w2_st2        128 32 8   1024"
  "p32_s2_n16w2_st2        5   32 8   96"     # 3 tiles per split
  "c1024_s1_n32w4_pack0    128 32 8   1024"
  "p32_s32_n32w4_pack0_st2 128 32 8   1024"
  "c4096_s1_n32w8_st2      32  32 8   4096"
  "p32_s1_n16w4_st2        128 32 8   1024"
  "p16_s1_n32w8_r3         32  32 8   4096"
  "p16_s1_n32w8_r3         3   32 8   224"    # 7 tiles: the ring wraps, odd count
  "p16_s1_n32w8_r3         2   32 8   32"     # 1 tile: prologue only
  "c4096_s1_n64w8_r4       32  32 8   4096"
  "c4096_s2_n32w4_r4       32  32 8   4096"
  "p64_s16_n32w4_r3        8   32 8   32768"
  "p32_s1_n16w2_r4         128 32 8   1024"
  "p32_s1_n16w2_r4         4   32 8   32"     # 2 tiles < KV_RING - 1
  "c1024_s1_n32w4_r3       128 32 8   1024"
)

fails=0
for entry in "${CASES[@]}"; do
  read -r tag B HQ HKV L <<<"$entry"
  if [ ! -x "$BIN/decode_$tag" ]; then
    echo "FAIL $tag (missing $BIN/decode_$tag: run tools/check/build_decode_check.sh)"
    fails=$((fails + 1))
    continue
  fi
  out=$("$BIN/decode_$tag" --tag "$tag" --B "$B" --HQ "$HQ" --HKV "$HKV" --L "$L" "${extra[@]}" 2>&1)
  rc=$?
  line=$(printf '%s\n' "$out" | grep -E '^(PASS|FAIL|SKIP) ' || true)
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    fails=$((fails + 1))
    [ -z "$line" ] && line="FAIL $tag b${B}hq${HQ}hkv${HKV}l${L} (exit $rc)"
    printf '%s\n' "$out" | grep -vE '^(PASS|FAIL|SKIP|#) ' | sed 's/^/    /' >&2
  fi
  echo "$line"
done
exit $fails
