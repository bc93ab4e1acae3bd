#!/usr/bin/env bash
# device_kt_wallclock.sh: on the GPU machine (no internet), Kernel Tuner 1.5.0 against `tune run` in
# wall time to 98 % of the optimum on three kernel spaces, copy, rmsnorm and gemm (mma.sync, PATH 0),
# one after the other, a short table over them last (tools/bench/kt_wallclock.py says what is run).
#
#   tools/bench/device_kt_wallclock.sh OUT_DIR [kt_wallclock.py options: --kernels copy,rmsnorm,gemm
#                                               --budget 40 --seed 1 --kt-cap SECONDS]
#
# Needs build/ktwheels from tools/bench/kt_wheels.sh (made where PyPI is reachable, carried along) and
# build/tune (built here when missing). The wheels are installed into build/ktpy with pip --target and
# --no-deps, or unzipped when this python has no pip (a wheel is a zip of its installed files), and put
# on PYTHONPATH: the machine's python keeps seeing its own numpy and cupy. PY: the python (default python3).
# The tables' defaults aim at under seven minutes for the three kernels, build/tune present (Kernel
# Tuner's optimum runs: copy capped at 45 s, rmsnorm brute_force, gemm capped at 150 s); per kernel
# OUT_DIR/<kernel>/ holds the runs' logs, databases and summary.json.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
OUT=$1
shift
PY=${PY:-python3}
WHEELS=$ROOT/build/ktwheels
SITE=$ROOT/build/ktpy
ls "$WHEELS"/kernel_tuner-1.5.0-*.whl >/dev/null 2>&1 || { echo "device_kt_wallclock: no $WHEELS (tools/bench/kt_wheels.sh)" >&2; exit 1; }
if [ ! -d "$SITE/kernel_tuner" ]; then
  mkdir -p "$SITE"
  if "$PY" -m pip --version >/dev/null 2>&1; then
    "$PY" -m pip install --quiet --no-index --no-deps --target "$SITE" "$WHEELS"/*.whl
  else
    for w in "$WHEELS"/*.whl; do "$PY" -m zipfile -e "$w" "$SITE"; done
  fi
fi
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}
"$PY" -c 'import kernel_tuner, numpy, cupy; print("kernel_tuner", kernel_tuner.__version__, "numpy", numpy.__version__, "cupy", cupy.__version__)'
if [ ! -x "$ROOT/build/tune" ]; then
  cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$ROOT/build" -j"$(nproc)" --target tune >/dev/null
fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$OUT"
"$PY" "$ROOT/tools/bench/kt_wallclock.py" --out "$OUT" "$@" | tee "$OUT/summary.txt"
