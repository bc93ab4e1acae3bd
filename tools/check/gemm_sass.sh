#!/usr/bin/env bash
# gemm_sass.sh CUBIN...: instruction counts that say what a GEMM cubin really runs: HGMMA (wgmma),
# HMMA (mma.sync), UTMALDG / UTMASTG (TMA loads / stores), STSM (stmatrix), LDGSTS (cp.async), USETMAXREG, and LDL/STL (local memory:
# spills). One line per cubin. Uses cuobjdump, else nvdisasm (the CUDA toolkit's, triton's, or $NVDISASM).
set -uo pipefail
tool=""
for c in "$(command -v cuobjdump 2>/dev/null)" "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump" \
         "$(command -v nvdisasm 2>/dev/null)" "${CUDA_HOME:-/usr/local/cuda}/bin/nvdisasm" \
         "$(python3 -c 'import os, triton; print(os.path.dirname(triton.__file__) + "/backends/nvidia/bin/cuobjdump")' 2>/dev/null)" \
         "$(python3 -c 'import os, triton; print(os.path.dirname(triton.__file__) + "/backends/nvidia/bin/nvdisasm")' 2>/dev/null)" \
         "${NVDISASM:-}"; do
  [ -n "$c" ] && [ -x "$c" ] && { tool=$c; break; }
done
[ -n "$tool" ] || { echo "gemm_sass: no cuobjdump or nvdisasm found" >&2; exit 2; }
for f in "$@"; do
  case "$tool" in
    *cuobjdump) sass=$("$tool" -sass "$f" 2>&1) ;;
    *) sass=$("$tool" -c "$f" 2>&1) ;;
  esac
  line="$(basename "$f"):"
  for op in HGMMA HMMA UTMALDG UTMASTG STSM LDGSTS USETMAXREG LDL STL; do
    line="$line $op $(printf '%s\n' "$sass" | grep -cE "[[:space:]]${op}[. ;]")"
  done
  echo "$line"
done
