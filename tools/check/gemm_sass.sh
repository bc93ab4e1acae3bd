#!/usr/bin/env bash
# gemm_sass.sh CUBIN|DB...: instruction counts that say what a GEMM cubin really runs: HGMMA / QGMMA
# (bf16 / fp8 wgmma), WAIT0 (WARPGROUP.DEPBAR.LE gsb0, 0x0: a wait for every wgmma in flight; about
# one per k loop when ptxas pipelines them, one per wgmma when it serialized them), HMMA (mma.sync),
# UTMALDG / UTMASTG (TMA loads / stores), STSM (stmatrix), LDGSTS (cp.async), USETMAXREG, and LDL/STL
# (local memory: spills). One line per cubin. A tune database (*.db) stands for the cubins of its
# compile cache (table binaries; a recorded database has none), each named by its -D defines.
# Uses cuobjdump, else nvdisasm: the CUDA toolkit's, $NVDISASM, triton's, or PyPI's
# nvidia-cuda-cuobjdump wheel (`pip install nvidia-cuda-cuobjdump`: a toolkit without the binary
# utilities has no cuobjdump).
set -uo pipefail
py_tool() {  # py_tool MODULE SUBPATH: a binary shipped inside an importable Python package
  python3 -c "import os, sys, importlib; m = importlib.import_module(sys.argv[1]); print(os.path.join(list(m.__path__)[0], sys.argv[2]))" "$1" "$2" 2>/dev/null
}
tool=""
for c in "$(command -v cuobjdump 2>/dev/null)" "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump" \
         "$(command -v nvdisasm 2>/dev/null)" "${CUDA_HOME:-/usr/local/cuda}/bin/nvdisasm" "${NVDISASM:-}" \
         "$(py_tool triton backends/nvidia/bin/cuobjdump)" "$(py_tool triton backends/nvidia/bin/nvdisasm)" \
         "$(py_tool nvidia cu13/bin/cuobjdump)" "$(py_tool nvidia cu12/bin/cuobjdump)"; do
  [ -n "$c" ] && [ -x "$c" ] && { tool=$c; break; }
done
[ -n "$tool" ] || { echo "gemm_sass: no cuobjdump or nvdisasm found (pip install nvidia-cuda-cuobjdump)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cubins=()
: > "$tmp/names"
n_db=0
for f in "$@"; do
  case "$f" in
    *.db)  # the database's binaries into a folder of their own: "cubin<TAB>name" lines
      n_db=$((n_db + 1))
      mkdir -p "$tmp/$n_db"
      python3 - "$f" "$tmp/$n_db" > "$tmp/$n_db/list" <<'PY' || { echo "gemm_sass: cannot read $f" >&2; exit 2; }
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
for i, (opts, cubin) in enumerate(db.execute("select options, cubin from binaries where ok = 1 and cubin is not null")):
    path = "%s/%d.cubin" % (sys.argv[2], i)
    open(path, "wb").write(cubin)
    print(path + "\t" + (" ".join(o[2:] for o in opts.split() if o.startswith("-D")) or "(no defines)"))
PY
      while IFS=$'\t' read -r path name; do cubins+=("$path"); done < "$tmp/$n_db/list"
      cat "$tmp/$n_db/list" >> "$tmp/names" ;;
    *) cubins+=("$f") ;;
  esac
done
declare -A names
while IFS=$'\t' read -r path name; do names[$path]=$name; done < "$tmp/names"
for f in "${cubins[@]}"; do
  case "$tool" in
    *cuobjdump) sass=$("$tool" -sass "$f" 2>&1) ;;
    *) sass=$("$tool" -c "$f" 2>&1) ;;
  esac
  line="${names[$f]:-$(basename "$f")}:"
  for op in HGMMA QGMMA HMMA UTMALDG UTMASTG STSM LDGSTS USETMAXREG LDL STL; do
    line="$line $op $(printf '%s\n' "$sass" | grep -cE "[[:space:]]${op}[. ;]")"
  done
  line="$line WAIT0 $(printf '%s\n' "$sass" | grep -c 'WARPGROUP.DEPBAR.LE gsb0, 0x0')"
  echo "$line"
done
