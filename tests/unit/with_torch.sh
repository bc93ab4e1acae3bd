#!/usr/bin/env bash
# Runs a python test that needs torch (CPU is enough) for ctest: the interpreter is $TUNERT_PYTHON,
# else the CI's venv $BUILD/pyvenv (made by .ci/run), else python3. Exits 77 (skipped) where that
# interpreter cannot import torch, as tests/python/run.sh does.
set -u
PY="${TUNERT_PYTHON:-}"
[ -z "$PY" ] && [ -x "${BUILD:?set BUILD to the build tree}/pyvenv/bin/python" ] && PY="$BUILD/pyvenv/bin/python"
[ -z "$PY" ] && PY=python3
"$PY" -c 'import torch' 2>/dev/null || { echo "SKIP: torch is not importable by $PY"; exit 77; }
exec "$PY" "$@"
