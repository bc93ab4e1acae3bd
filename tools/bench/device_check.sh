#!/usr/bin/env bash
# device_check.sh OUTDIR: one device call that checks a carried build on the GPU before anything is
# recorded or compared: the gpu tests (device_gpu_tests.sh), the python package's GPU tests, a short
# `tune run` of the default strategy (its GPU-busy line and "compiled ahead" count) and a one-problem
# `tune compare --no-peers` with both timing modes (its selection rows, sustained last). About five
# minutes on an H100. Prints a short summary last; the logs go to OUTDIR/check.tgz.
# Carry: build/tune, build/lib, build/libtune_cupti_py.so and the gpu test binaries
# (build/tests/tunert_*_gpu and build/tests/inputs_fill_gpu, or copies named by TUNERT_*_GPU and
# INPUTS_FILL_GPU as device_gpu_tests.sh reads them). The build is RelWithDebInfo: `strip --strip-debug`
# on the carried binaries keeps tree and carry under the device tool's 64 MiB.
# env: RECIPE (default recipes/attention/decode.lua), BUDGET (default 60), SKIP_PY=1
set -u
out=${1:?usage: device_check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
R=$PWD
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
L=$out/check
mkdir -p "$L"
RECIPE=${RECIPE:-recipes/attention/decode.lua}
db=$(mktemp -d)/check.db
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$L/gpu.txt" 2>&1
date -u +%FT%TZ > "$L/start.txt"
timeout 300 bash tools/bench/device_gpu_tests.sh "$L/gpu" > "$L/gpu_tests.txt" 2>&1
echo "gpu tests exit $?" >> "$L/gpu_tests.txt"
if [ "${SKIP_PY:-0}" != 1 ]; then
  MODE=gpu TUNE=$R/build/tune SRC=$R BUILD=$R/build TUNERT_LIBRARY=$R/build/lib/libtunert.so TUNERT_PYTHON=python3 \
    timeout 300 bash tests/python/run.sh > "$L/python.txt" 2>&1
  echo "python exit $?" >> "$L/python.txt"
fi
timeout 200 build/tune run "$RECIPE" --seed 1 --budget "${BUDGET:-60}" --device cuda:0 --db "$db" --quiet > "$L/run.txt" 2>&1
echo "run exit $?" >> "$L/run.txt"
problem=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select name from problems order by id limit 1").fetchone()[0])' "$db")
timeout 150 build/tune compare "$RECIPE" --db "$db" --problem "$problem" --top-k 3 --rounds 3 --no-peers > "$L/compare.txt" 2>&1
echo "compare exit $?" >> "$L/compare.txt"
python3 - "$db" > "$L/selections.txt" 2>&1 <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for row in c.execute("select s.id, s.timing, p.name, s.rule, s.comparison_id from selections s"
                     " join problems p on p.id = s.problem_id order by s.id"):
    print(*row)
PY
(cd "$out" && tar czf check.tgz check && rm -rf check/gpu)
echo "== $(cat "$L/gpu.txt" | tail -1)"
cat "$L/gpu_tests.txt"
[ -f "$L/python.txt" ] && grep -E "^Ran |^OK|^FAILED|exit" "$L/python.txt"
grep -E "compiled ahead|GPU busy|exit" "$L/run.txt"
grep -E "exit|is not the|sustained" "$L/compare.txt" | tail -6
tail -4 "$L/selections.txt"
