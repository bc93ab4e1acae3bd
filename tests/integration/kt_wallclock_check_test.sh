#!/usr/bin/env bash
# tools/bench/kt_wallclock.py --check: the spaces Kernel Tuner is given for copy, rmsnorm and gemm
# (PATH 0) equal tune run --compile-only's enumeration of the recipes (gemm's dynamic shared memory
# too); where kernel_tuner and numpy are importable, also Kernel Tuner's own enumeration, the
# verification and the simulated runs on the H100 recordings. Interpreter: $KT_PYTHON, else
# $BUILD/pyvenv/bin/python where it imports kernel_tuner, else python3 (the spaces only).
. "$(dirname "$0")/lib.sh"
PY=${KT_PYTHON:-}
if [ -z "$PY" ] && [ -x "${BUILD:-}/pyvenv/bin/python" ] && "$BUILD/pyvenv/bin/python" -c 'import kernel_tuner, numpy' 2>/dev/null; then
  PY=$BUILD/pyvenv/bin/python
fi
PY=${PY:-python3}
KT=$SRC/tools/bench/kt_wallclock.py
"$PY" "$KT" --check --tune "$TUNE" >check.txt 2>&1
check "kt_wallclock --check exits 0" test $? -eq 0
check "copy: 188 configs on both sides" contains check.txt "copy 256MiB: space: Kernel Tuner's restrictions 188 configs, tune --compile-only 188"
check "rmsnorm: 90 configs on both sides" contains check.txt "rmsnorm t16384h4096: space: Kernel Tuner's restrictions 90 configs, tune --compile-only 90"
check "gemm PATH 0: 18 configs on both sides" contains check.txt "gemm m128n8192k8192_col: space: Kernel Tuner's restrictions 18 configs, tune --compile-only 18"
check "gemm: the dynamic shared memory equals tune's" contains check.txt "gemm: dynamic shared memory of all 18 configs equals tune's launch"
if "$PY" -c 'import kernel_tuner, numpy' 2>/dev/null; then
  check "Kernel Tuner enumerates the same spaces" test "$(grep -c 'Kernel Tuner enumerates the same' check.txt)" -eq 3
  check "rmsnorm's brute_force visits the whole space in simulation" contains check.txt "brute_force: 90 evaluations"
  check "gemm's capped optimum run is random_sample" contains check.txt "random_sample capped at 150 s: 18 evaluations"
else
  check "without kernel_tuner it says what is not checked" contains check.txt "kernel_tuner or numpy not importable"
fi
"$PY" "$KT" --check --kernels gemm --problem m8192n8192k8192_col --tune "$TUNE" >badprob.txt 2>&1
check "a problem the table lacks exits 2" test $? -eq 2
check "and names the table's problems" contains badprob.txt "gemm has m128n8192k8192_col"
"$PY" "$KT" --check --kernels copy,gemm --problem 64MiB --tune "$TUNE" >twoprob.txt 2>&1
check "--problem with two kernels exits 2" test $? -eq 2
finish
