#!/usr/bin/env bash
# device_decoder_run.sh: the deployment path on a GPU in one call, from the carried build/ folder
# (nothing is rebuilt): bundle the recorded databases, run the decoder block example from that
# bundle, measure libtunert's overhead, print a short table.
#   1. tune bundle --db data/recorded/{rmsnorm,elementwise,attention}.db [--db GEMM_DB...]
#      --recipe rmsnorm,elementwise,attention[,gemm] --arch <this GPU's> -o OUTDIR/decoder.bundle
#      (retried with --allow-source-change, said so, when a recording predates a template edit;
#      when the databases were measured on different GPUs, one bundle per database instead),
#   2. build/examples/decoder_block/decoder_block --plan, then the run (--standins: a step with no
#      tuned variant runs the plain reference kernel and is marked STAND-IN in the table),
#   3. build/tools/runtime_overhead --bundle OUTDIR/copy.bundle (select+launch vs cuLaunchKernel,
#      bundle open time with 100 variants).
# usage: tools/bench/device_decoder_run.sh OUTDIR [GEMM_DB...]   (data/recorded/gemm.db is taken
#        when present and no GEMM_DB is given). Logs and bundles go to OUTDIR; about 2-4 minutes.
set -u
OUT=${1:?usage: device_decoder_run.sh OUTDIR [GEMM_DB...]}
shift
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BUILD=${BUILD:-$ROOT/build}
TUNE=$BUILD/tune
DECODER=$BUILD/examples/decoder_block/decoder_block
OVERHEAD=$BUILD/tools/runtime_overhead
for b in "$TUNE" "$DECODER" "$OVERHEAD"; do
  [ -x "$b" ] || { echo "missing $b: build the tree first (cmake --build build; the example needs nvcc at build time)"; exit 1; }
done

CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
[ -n "$CC" ] || { echo "no GPU (nvidia-smi found none)"; exit 3; }
ARCH="sm_${CC}"
case "$CC" in 90|100|101|120) ARCH="sm_${CC}a" ;; esac
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
echo "GPU: $GPU; bundles for $ARCH (+ PTX)"

DBS=(data/recorded/rmsnorm.db data/recorded/elementwise.db data/recorded/attention.db)
RECIPES=rmsnorm,elementwise,attention
GEMM_DBS=("$@")
[ ${#GEMM_DBS[@]} -eq 0 ] && [ -f data/recorded/gemm.db ] && GEMM_DBS=(data/recorded/gemm.db)
if [ ${#GEMM_DBS[@]} -gt 0 ]; then DBS+=("${GEMM_DBS[@]}"); RECIPES=$RECIPES,gemm
else echo "NOTE: no GEMM database (argument or data/recorded/gemm.db): the GEMM steps will be stand-ins"; fi

SOURCE_NOTE=""
bundle() { # bundle OUT RECIPES DB... -> 0 when written; logs OUT.log
  local out=$1 recipes=$2; shift 2
  local args=()
  for d in "$@"; do args+=(--db "$d"); done
  if "$TUNE" bundle "${args[@]}" --recipe "$recipes" --arch "$ARCH" -o "$out" >"$out.log" 2>&1; then return 0; fi
  if grep -q "allow-source-change" "$out.log"; then
    SOURCE_NOTE="$SOURCE_NOTE $(basename "$out")"
    "$TUNE" bundle "${args[@]}" --recipe "$recipes" --arch "$ARCH" -o "$out" --allow-source-change >"$out.log" 2>&1 && return 0
  fi
  return 1
}
families_of() { python3 - "$@" <<'PY'
import sqlite3, sys
have = set()
for p in sys.argv[1:]:
    db = sqlite3.connect("file:%s?mode=ro" % p, uri=True)
    have |= {r[0] for r in db.execute("select distinct rc.name from results r join recipes rc on rc.id = r.recipe_id where r.status = 'ok'")}
print(",".join(sorted(have)))
PY
}

BUNDLES=()
T0=$(date +%s)
if bundle "$OUT/decoder.bundle" "$RECIPES" "${DBS[@]}"; then
  BUNDLES=("$OUT/decoder.bundle")
elif grep -q "several devices" "$OUT/decoder.bundle.log"; then
  echo "the databases were measured on different GPUs: one bundle per database"
  for d in "${DBS[@]}"; do
    name=$(basename "$d" .db)
    fams=$(families_of "$d")
    [ -n "$fams" ] && bundle "$OUT/$name.bundle" "$fams" "$d" && BUNDLES+=("$OUT/$name.bundle") || tail -3 "$OUT/$name.bundle.log"
  done
else
  tail -5 "$OUT/decoder.bundle.log"
fi
T1=$(date +%s)
[ ${#BUNDLES[@]} -gt 0 ] || { echo "no bundle could be made (logs in $OUT)"; exit 1; }
[ -n "$SOURCE_NOTE" ] && echo "NOTE: bundled with --allow-source-change (measured with older recipe/template sources, recorded in the bundle):$SOURCE_NOTE"
grep -h "^wrote" "$OUT"/*.bundle.log

echo; echo "== decoder block"
timeout 120 "$DECODER" "${BUNDLES[@]}" --plan >"$OUT/plan.txt" 2>&1
PLAN_RC=$?
timeout 300 "$DECODER" "${BUNDLES[@]}" --standins >"$OUT/decoder_block.txt" 2>&1
RUN_RC=$?
sed -n '/^reference:/,$p' "$OUT/decoder_block.txt" | tail -n +2
[ $RUN_RC -eq 0 ] || tail -20 "$OUT/decoder_block.txt"

echo; echo "== runtime overhead"
OV_RC=1
if bundle "$OUT/copy.bundle" copy data/recorded/copy.db; then
  timeout 120 "$OVERHEAD" --bundle "$OUT/copy.bundle" --family copy >"$OUT/runtime_overhead.txt" 2>&1
  OV_RC=$?
else
  tail -3 "$OUT/copy.bundle.log"
  timeout 120 "$OVERHEAD" >"$OUT/runtime_overhead.txt" 2>&1
fi
cat "$OUT/runtime_overhead.txt"

steps=$(grep -o "summary: [0-9]* of [0-9]* steps through libtunert" "$OUT/decoder_block.txt" | head -1)
checks=$(grep -o "[0-9]* of [0-9]* within rel-L2" "$OUT/decoder_block.txt" | head -1)
cross=$(grep -o "decode vs prefill.*" "$OUT/decoder_block.txt" | sed 's/.*: //' | head -1)
launch=$(grep -E "raw cuLaunchKernel|tunert_select \+ tunert_launch|output check" "$OUT/runtime_overhead.txt" | sed 's/^ *//' | tr -s ' ' | tr '\n' ';')
open=$(grep "^open:" "$OUT/runtime_overhead.txt" | head -1 | sed 's/^open: //')
echo
echo "| what | result |"
echo "| --- | --- |"
echo "| GPU | $GPU |"
echo "| bundle(s) | ${#BUNDLES[@]} file(s), $((T1 - T0)) s to make: $(for b in "${BUNDLES[@]}"; do basename "$b"; done | tr '\n' ' ') |"
echo "| decoder --plan | exit $PLAN_RC |"
echo "| decoder run | exit $RUN_RC; ${steps#summary: }; ${checks:-no checks}; decode vs prefill: ${cross:-?} |"
echo "| runtime_overhead | exit $OV_RC; $launch |"
echo "| bundle open (100 variants) | $open |"
echo "outputs: $OUT (decoder_block.txt, plan.txt, runtime_overhead.txt, *.bundle, *.log)"
