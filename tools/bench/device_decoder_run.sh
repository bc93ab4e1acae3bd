#!/usr/bin/env bash
# device_decoder_run.sh: the decoder block as a serving engine runs it, on a GPU in one call, from
# the carried build/ folder (nothing is rebuilt), against the same block in PyTorch:
#   1. bundles from the recorded databases data/recorded/{gemm,rmsnorm,elementwise,
#      attention.varlen,attention.decode}.db: one bundle per GPU the databases were measured on
#      (tune bundle takes one device's results), each with the families its databases hold, for
#      this GPU's arch (+ PTX); retried with --allow-source-change, said so, where a recording
#      predates a recipe or template edit,
#   2. build/examples/decoder_block/decoder_block --plan, then the run (--standins: a step with no
#      variant runs the plain reference kernel and is marked STAND-IN),
#   3. tools/bench/decoder_block_torch.py with the same sizes (both programs' defaults),
#   4. one short table: prefill time and decode step time (graph replay and eager) of both.
# usage: tools/bench/device_decoder_run.sh OUTDIR [decoder_block options, e.g. --lens 500,20 --steps 4]
#        Logs and bundles go to OUTDIR; a few minutes (bundling compiles every variant once).
set -u
OUT=${1:?usage: device_decoder_run.sh OUTDIR [--lens L1,L2,... --steps N --page P]}
shift
SIZES=("$@")
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BUILD=${BUILD:-$ROOT/build}
TUNE=$BUILD/tune
DECODER=$BUILD/examples/decoder_block/decoder_block
for b in "$TUNE" "$DECODER"; do
  [ -x "$b" ] || { echo "missing $b: build the tree first (cmake --build build; the example needs nvcc at build time)"; exit 1; }
done

CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
[ -n "$CC" ] || { echo "no GPU (nvidia-smi found none)"; exit 3; }
ARCH="sm_${CC}"
case "$CC" in 90|100|101|120) ARCH="sm_${CC}a" ;; esac
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
echo "GPU: $GPU; bundles for $ARCH (+ PTX)"

DBS=()
for d in gemm rmsnorm elementwise attention.varlen attention.decode; do
  if [ -f "data/recorded/$d.db" ]; then DBS+=("data/recorded/$d.db"); else echo "NOTE: data/recorded/$d.db is absent"; fi
done
# "device<TAB>family,family<TAB>db db" per device the databases' ok results were measured on
groups() { python3 - "$@" <<'PY'
import sqlite3, sys
by = {}
for p in sys.argv[1:]:
    db = sqlite3.connect("file:%s?mode=ro" % p, uri=True)
    for dev, fam in db.execute("""select distinct d.name, rc.name from results r join recipes rc on rc.id = r.recipe_id
                                  join devices d on d.id = r.device_id where r.status = 'ok'"""):
        fams, dbs = by.setdefault(dev, (set(), []))
        fams.add(fam)
        if p not in dbs: dbs.append(p)
for dev, (fams, dbs) in by.items():
    print("%s\t%s\t%s" % (dev, ",".join(sorted(fams)), " ".join(dbs)))
PY
}

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

BUNDLES=()
T0=$(date +%s)
i=0
while IFS=$'\t' read -r dev fams dbs; do
  i=$((i + 1))
  out="$OUT/decoder$i.bundle"
  echo "bundle $(basename "$out"): $fams (measured on $dev)"
  # shellcheck disable=SC2086  # dbs: space-separated paths without spaces
  if bundle "$out" "$fams" $dbs; then BUNDLES+=("$out"); else tail -5 "$out.log"; fi
done < <(groups "${DBS[@]}")
T1=$(date +%s)
[ ${#BUNDLES[@]} -gt 0 ] || { echo "no bundle could be made (logs in $OUT)"; exit 1; }
[ -n "$SOURCE_NOTE" ] && echo "NOTE: bundled with --allow-source-change (measured with older recipe/template sources, recorded in the bundle):$SOURCE_NOTE"
grep -h "^wrote" "$OUT"/*.bundle.log

echo; echo "== decoder block through libtunert"
timeout 120 "$DECODER" "${BUNDLES[@]}" "${SIZES[@]}" --plan >"$OUT/plan.txt" 2>&1
PLAN_RC=$?
timeout 400 "$DECODER" "${BUNDLES[@]}" "${SIZES[@]}" --standins >"$OUT/decoder_block.txt" 2>&1
RUN_RC=$?
sed -n '/^prefill: [0-9]* prompts, /,$p' "$OUT/decoder_block.txt"
[ $RUN_RC -eq 0 ] || tail -20 "$OUT/decoder_block.txt"

echo; echo "== the same block in PyTorch"
timeout 400 python3 tools/bench/decoder_block_torch.py "${SIZES[@]}" >"$OUT/decoder_block_torch.txt" 2>&1
TORCH_RC=$?
tail -8 "$OUT/decoder_block_torch.txt"

val() { grep -o "^result: .*" "$1" | tail -1 | grep -o "$2=[^ ]*" | cut -d= -f2; }
ratio() { python3 -c "import sys; a, b = sys.argv[1:]; print('%.2fx' % (float(b) / float(a)) if a and b else '-')" "${1:-}" "${2:-}" 2>/dev/null || echo -; }
R=$OUT/decoder_block.txt P=$OUT/decoder_block_torch.txt
steps=$(grep -o "summary: [0-9]* of [0-9]* steps through libtunert" "$R" | head -1 | sed 's/summary: //')
checks=$(grep -o "prefill [0-9]* of [0-9]* steps and decode [0-9]* of [0-9]* steps within rel-L2 [^ ]*" "$R" | head -1)
shape=$(grep -o "^prefill: [0-9]* prompts of .*decode steps" "$R" | head -1 | sed 's/ tokens packed into / -> /; s/ (causal within each); then / + /')
echo
echo "| $GPU | tunert (decoder_block) | PyTorch (cuBLAS, flash varlen / SDPA) | PyTorch / tunert |"
echo "| --- | --- | --- | --- |"
for m in prefill_us decode_graph_us decode_eager_us; do
  a=$(val "$R" $m) b=$(val "$P" $m)
  echo "| ${m%_us} [us] | ${a:--} | ${b:--} | $(ratio "$a" "$b") |"
done
echo "| checks | exit $RUN_RC (plan $PLAN_RC): ${checks:-none}; ${steps:-?} | exit $TORCH_RC; $(grep -o "graph replay vs eager.*" "$P" | head -1) | |"
echo "shape: ${shape:-?}; bundles: ${#BUNDLES[@]} in $((T1 - T0)) s; prefill attention in torch: $(val "$P" attention)"
echo "outputs: $OUT (decoder_block.txt, plan.txt, decoder_block_torch.txt, *.bundle, *.log)"
