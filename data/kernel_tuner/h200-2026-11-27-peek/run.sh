#!/usr/bin/env bash
# The device call of 2026-11-27 10:52-10:53 UTC (one NVIDIA H200): the same three default bayes runs
# (budget 40, cold database, no warm start, 16 compile threads) with the tune of cfb05eb (before: the
# compile-ahead guesses unit steps from the best) and of 7165347 (after: it compiles what the
# strategy's peek names), in one call on one machine. build/before/tune: cfb05eb built RelWithDebInfo.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
for T in build/before/tune build/tune; do
  for spec in "recipes/copy.lua --problem 256MiB" "recipes/rmsnorm.lua --problem t16384h4096" \
              "recipes/attention/decode.lua --problem b32hq32hkv8d128p16x256"; do
    rm -f /tmp/gb.db*; echo "== $T $spec"
    timeout 120 $T run $spec --strategy bayes --budget 40 --seed 1 --no-warm-start --jobs 16 --db /tmp/gb.db \
      > $OUT/run.log 2>&1
    grep -E "GPU busy|compiled ahead|^compile:|results," $OUT/run.log
  done
done
