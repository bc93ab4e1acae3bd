#!/usr/bin/env bash
# sanitize.sh: build tune with AddressSanitizer and UndefinedBehaviorSanitizer (gcc) in
# build-asan/ and run the unit and integration tests there. Any sanitizer report fails its test
# (-fno-sanitize-recover: UBSan aborts like ASan). SANITIZE_TESTS: a ctest -R regex to run a
# subset; SANITIZE_EXCLUDE: a ctest -E regex of tests left out (see below).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh >/dev/null  # the build's packages (and build/, which the tests do not use)
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-asan -j"$(nproc)" >/dev/null
# Left out, as no finding can come of them: peer_server_lib_test loads an instrumented shared
# library into an uninstrumented python3, and runtime_package_test links uninstrumented
# consumer programs against the instrumented libtunert; ASan refuses both ("runtime does not
# come first").
exclude=${SANITIZE_EXCLUDE:-peer_server_lib_test|runtime_package_test}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
# tests leave out what a sanitized build cannot do (python loading the sanitized libtunert)
export TUNE_SANITIZED=1
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
args=(-L 'unit|integration' -E "$exclude" --output-on-failure -j"$(nproc)")
[ -n "${SANITIZE_TESTS:-}" ] && args+=(-R "$SANITIZE_TESTS")
ctest --test-dir build-asan "${args[@]}"
