#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer harnesses of tests/fuzz with clang >= 15 (ASan + UBSan) in build-fuzz/
# and run each for FUZZ_SECONDS (default 60) on a scratch copy of its committed corpus.
# Prints the executions of each harness. A crash fails the script; the crashing input is left
# in build-fuzz/fuzz-artifacts/HARNESS/ (add it to tests/fuzz/corpus/HARNESS/ once fixed: the
# corpus replays as the unit test fuzz_corpus_test_HARNESS). FUZZ_HARNESSES picks a subset.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-60}
harnesses=(${FUZZ_HARNESSES:-recipe bundle protocol proposer})
# clang 15 or newer: tuner/inputs.c uses _Float16, which clang 14 refuses on x86-64
install() {
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "fuzz: installing $*"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}
cc=""
for v in 19 18 17 16 15; do command -v clang-$v >/dev/null && { cc=clang-$v; break; }; done
if [ -z "$cc" ]; then install clang-16 libclang-rt-16-dev; cc=clang-16; fi
# libFuzzer itself ships in the runtime package, separate from the compiler on Debian 12
[ -f "$($cc -print-runtime-dir)/libclang_rt.fuzzer-x86_64.a" ] || install "libclang-rt-${cc#clang-}-dev"
CC=$cc cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNE_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${harnesses[@]/#/fuzz_}" >/dev/null
art=build-fuzz/fuzz-artifacts
status=0
for h in "${harnesses[@]}"; do
  # libFuzzer adds what it finds to its first corpus folder: a scratch copy, so the committed
  # corpus changes only by hand
  work=build-fuzz/fuzz-corpus/$h
  rm -rf "$work" "$art/$h" && mkdir -p "$work" "$art/$h"
  cp tests/fuzz/corpus/"$h"/* "$work"/
  log=build-fuzz/fuzz-$h.log
  rc=0
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    build-fuzz/tests/fuzz/fuzz_"$h" "$work" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
    -artifact_prefix="$art/$h/" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "fuzz: $h: FAILED (exit $rc) after ${execs:-?} executions; input: $(ls "$art/$h" | head -3 | sed "s|^|$art/$h/|" | tr '\n' ' ')"
    grep -m1 -A12 -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error:' "$log" || tail -20 "$log"
  else
    echo "fuzz: $h: ${execs:-?} executions in ${seconds} s (${speed:-?}/s, $cov), no crash"
  fi
done
exit $status
