#!/usr/bin/env bash
# kt_wheels.sh: Kernel Tuner 1.5.0 and the dependencies the GPU machine lacks, as wheels for its Python
# (CPython 3.12, manylinux x86_64), into DIR, for tools/bench/device_kt_wallclock.sh to install there
# without internet (pip install --no-index --find-links DIR).
#
#   tools/bench/kt_wheels.sh DIR          (e.g. build/ktwheels; needs PyPI here, not there)
#
# pip downloads the whole dependency tree (kernel_tuner 1.5.0's requirements as declared); by default
# only what kt_wallclock.py's runs import is kept: Kernel Tuner 1.5.0 imports each strategy lazily, and
# its core, the cupy backend, brute_force, random_sample and adaptive_tabu_greywolf import only numpy
# (the machine's), python-constraint2, jsonschema (and its dependencies), xmltodict and packaging; cupy
# is the machine's. scipy, scikit-learn, pandas and pymoo (other strategies, plots) stay out: ~6 MB
# instead of ~70 MB, small enough to carry to the GPU machine. device_kt_wallclock.sh installs them
# with --no-deps.
# Environment: PIP (default python3 -m pip), KEEP_ALL=1 (keep every wheel but numpy's: other strategies).
set -euo pipefail
[ $# -eq 1 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
DIR=$1
PIP=${PIP:-python3 -m pip}
mkdir -p "$DIR"
$PIP download --quiet --dest "$DIR" --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_24_x86_64 --platform linux_x86_64 \
  kernel_tuner==1.5.0
rm -f "$DIR"/numpy-*.whl # the machine's numpy 2.5.2 (cupy is built against it)
if [ "${KEEP_ALL:-0}" != 1 ]; then
  keep=" kernel_tuner python_constraint2 jsonschema jsonschema_specifications referencing rpds_py attrs typing_extensions xmltodict packaging "
  for w in "$DIR"/*.whl; do
    name=$(basename "$w" | sed 's/-[0-9].*//' | tr 'A-Z-' 'a-z_')
    case $keep in *" $name "*) ;; *) rm -f "$w" ;; esac
  done
fi
ls "$DIR" | sed 's/-[0-9].*//' | tr '\n' ' '
echo
du -sh "$DIR"
