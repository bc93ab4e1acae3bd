#!/usr/bin/env bash
# device_gpu_tests.sh OUTDIR: the gpu-labelled tests of tests/CMakeLists.txt, run from a carried
# build (build/tune, build/tests/tunert_*_gpu, build/tests/inputs_fill_gpu) where ctest's absolute paths do not hold.
# Prints one line per test (passed, FAILED, skipped) and writes each log to OUTDIR. TESTS: a subset.
set -u
out=${1:?usage: device_gpu_tests.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export TUNE=${TUNE:-$PWD/build/tune} SRC=$PWD
# the test binaries: build/tests unless the environment names other copies
export TUNERT_TMAP_GPU=${TUNERT_TMAP_GPU:-$PWD/build/tests/tunert_tmap_gpu}
export TUNERT_CLUSTER_GPU=${TUNERT_CLUSTER_GPU:-$PWD/build/tests/tunert_cluster_gpu}
export TUNERT_DECODE_GRAPH_GPU=${TUNERT_DECODE_GRAPH_GPU:-$PWD/build/tests/tunert_decode_graph_gpu}
export TUNERT_VENDOR_GPU=${TUNERT_VENDOR_GPU:-$PWD/build/tests/tunert_vendor_gpu}
export INPUTS_FILL_GPU=${INPUTS_FILL_GPU:-$PWD/build/tests/inputs_fill_gpu}
export TUNERT_LIBRARY=${TUNERT_LIBRARY:-$PWD/build/lib/libtunert.so}
fails=0
for t in ${TESTS:-copy_gpu faults adversarial_inputs tensormap_gpu llm_adversarial tensormap_bundle_gpu cluster_gpu decode_graph_gpu vendor_gpu honest_tolerance ptx_jit_gpu inputs_fill_gpu}; do
  dir=$(mktemp -d)
  (cd "$dir" && env -u OUT timeout 600 bash "$SRC/tests/gpu/${t}_test.sh") > "$out/gpu-$t.log" 2>&1
  rc=$?
  case $rc in 0) s=passed ;; 77) s=skipped ;; *) s="FAILED (exit $rc)"; fails=$((fails + 1)) ;; esac
  echo "gpu test $t: $s"
done
exit $fails
