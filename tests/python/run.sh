#!/usr/bin/env bash
# Runs the python package's tests (unittest) for ctest. Interpreter: $TUNERT_PYTHON, else the CI's
# venv build/pyvenv (made by .ci/run), else python3. Tests that need torch skip
# with a message where it is not importable. MODE=gpu runs the GPU module only and exits 77 (ctest:
# skipped) without a CUDA device.
set -u
SRC="${SRC:?set SRC to the source tree}"
BUILD="${BUILD:-$SRC/build}"
PY="${TUNERT_PYTHON:-}"
[ -z "$PY" ] && [ -x "$BUILD/pyvenv/bin/python" ] && PY="$BUILD/pyvenv/bin/python"
[ -z "$PY" ] && PY=python3
export TUNE="${TUNE:-$BUILD/tune}" SRC
# an AddressSanitizer libtunert cannot load into an uninstrumented interpreter ("runtime does not come first")
if [ -n "${TUNERT_LIBRARY:-}" ] && readelf -d "$TUNERT_LIBRARY" 2>/dev/null | grep -q 'libasan'; then
  echo "SKIP: $TUNERT_LIBRARY is built with AddressSanitizer, which must come first in a process"; exit 77
fi
cd "$SRC/tests/python"
"$PY" -c 'import torch' 2>/dev/null || echo "note: torch is not importable by $PY: the torch tests skip"
if [ "${MODE:-cpu}" = gpu ]; then
  "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 77)' 2>/dev/null
  rc=$?
  [ $rc -eq 77 ] && { echo "SKIP: no CUDA device for torch (or no torch)"; exit 77; }
  [ $rc -ne 0 ] && { echo "SKIP: torch is not importable by $PY"; exit 77; }
  exec "$PY" -m unittest -v test_ops_gpu
fi
exec "$PY" -m unittest -v test_binding test_ops_cpu test_ops_serving_cpu test_ops_moe_layer_cpu test_ops_moe_layer_fp8_cpu test_bench_moe_fp8_peer_cpu test_ops_moe_fp8_cpu test_ops_norm_fp8_cpu test_ops_swiglu_fp8_cpu test_ops_decode_fp8_cpu test_ops_varlen_kv_cpu test_llama_cpu test_ops_gpu
