#!/usr/bin/env bash
# run_on_gpu.sh: the decoder block on a GPU, end to end, in one command.
#   1. builds tune, libtunert and the example (cmake; scripts/setup.sh installs what is missing),
#   2. for each results database (arguments; default data/recorded/*.db) bundles, for this GPU's
#      architecture, the families the example uses that have verified results there,
#   3. when no database has attention (or RMSNorm) results, tunes those families briefly on this GPU
#      first: --budget random variants of the example's problems only (--no-tune skips this),
#   4. runs the decoder block on all the bundles (build/examples/decoder_block/decoder_block), then
#      tools/bench/runtime_overhead (bundle open time; select+launch overhead vs a raw cuLaunchKernel).
# usage: examples/decoder_block/run_on_gpu.sh [--no-tune] [--budget N] [--out DIR] [DB...]
# Everything it makes goes to --out (default a new folder under /tmp); the last lines say where.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-$ROOT/build}
TUNE_FIRST=1
BUDGET=12
OUT=""
DBS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-tune) TUNE_FIRST=0 ;;
    --budget) BUDGET=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) DBS+=("$1") ;;
  esac
  shift
done
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/decoder_block.XXXXXX)
mkdir -p "$OUT"
say() { printf '\n== %s\n' "$*"; }

say "build"
if command -v cmake >/dev/null && [ -f /usr/include/lua5.4/lua.h -o -f /usr/include/lua.h ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build "$BUILD" -j"$(nproc)" >"$OUT/build.log" 2>&1 \
    || { tail -30 "$OUT/build.log"; echo "build failed (log: $OUT/build.log)"; exit 1; }
elif [ -x scripts/setup.sh ] && [ ! -x "$BUILD/tune" ]; then
  bash scripts/setup.sh || exit 1
fi
for b in "$BUILD/tune" "$BUILD/examples/decoder_block/decoder_block" "$BUILD/tools/runtime_overhead"; do
  [ -x "$b" ] || { echo "missing $b: build tune first (scripts/setup.sh)"; exit 1; }
done
echo "built: $BUILD"

say "GPU"
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
[ -n "$CC" ] || { echo "no GPU (nvidia-smi found none): this script runs kernels"; exit 3; }
ARCH="sm_${CC}"
case "$CC" in 90|100|101|120) ARCH="sm_${CC}a" ;; esac   # Hopper/Blackwell: the arch-specific target tune uses
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "bundles are compiled for $ARCH (+ PTX)"

FAMILIES=(copy rmsnorm rmsnorm.add elementwise attention.prefill attention.decode)
[ ${#DBS[@]} -gt 0 ] || DBS=(data/recorded/*.db)
ok_families() { # families of FAMILIES with ok results in db $1, comma-separated
  python3 - "$1" "${FAMILIES[@]}" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
have = {r[0] for r in db.execute("select distinct rc.name from results r join recipes rc on rc.id = r.recipe_id "
                                 "join devices d on d.id = r.device_id where r.status = 'ok' and d.kind = 'gpu'")}
print(",".join(f for f in sys.argv[2:] if f in have))
PY
}
HAVE=""
for db in "${DBS[@]}"; do [ -f "$db" ] && HAVE="$HAVE,$(ok_families "$db")"; done

if [ "$TUNE_FIRST" = 1 ]; then
  TUNED="$OUT/tuned_here.db"
  if ! echo ",$HAVE," | grep -q ",attention.prefill,"; then
    say "tuning attention briefly on this GPU ($BUDGET random variants per problem; --no-tune skips)"
    "$BUILD/tune" run recipes/attention.lua --db "$TUNED" --strategy random --budget "$BUDGET" \
      --problem b4h32s4096d128c_gqa8 --problem b32hq32hkv8l4096d128p16 --quiet 2>&1 | tail -12
  fi
  if [ -f recipes/rmsnorm.lua ] && ! echo ",$HAVE," | grep -q ",rmsnorm,"; then
    say "tuning RMSNorm briefly on this GPU"
    "$BUILD/tune" run recipes/rmsnorm.lua --db "$TUNED" --strategy random --budget "$BUDGET" \
      --problem t16384h4096 --problem t16384h4096add --quiet 2>&1 | tail -8
  fi
  [ -f "$TUNED" ] && DBS+=("$TUNED")
fi

say "bundles"
BUNDLES=()
for db in "${DBS[@]}"; do
  [ -f "$db" ] || continue
  fams=$(ok_families "$db")
  [ -n "$fams" ] || { echo "$db: no verified results for ${FAMILIES[*]}"; continue; }
  out="$OUT/$(basename "$db" .db).bundle"
  if "$BUILD/tune" bundle --db "$db" --recipe "$fams" --arch "$ARCH" -o "$out" >"$out.log" 2>&1; then
    cat "$out.log"
  elif grep -q "allow-source-change" "$out.log"; then
    grep "tune bundle:" "$out.log" | head -3
    echo "NOTE: $db was measured with older recipe/template sources; bundling the current code with those"
    echo "      measurements (--allow-source-change, recorded in the bundle). Re-run tune run to refresh it."
    "$BUILD/tune" bundle --db "$db" --recipe "$fams" --arch "$ARCH" -o "$out" --allow-source-change 2>&1 | tail -n +1 || continue
  else
    cat "$out.log"; continue
  fi
  [ -f "$out" ] && BUNDLES+=("$out")
done
[ ${#BUNDLES[@]} -gt 0 ] || { echo "no bundle could be made"; exit 1; }

say "decoder block"
"$BUILD/examples/decoder_block/decoder_block" "${BUNDLES[@]}" | tee "$OUT/decoder_block.txt"
RC=${PIPESTATUS[0]}

say "runtime overhead"
COPYB=""
for b in "${BUNDLES[@]}"; do "$BUILD/tools/tunert_inspect" "$b" 2>/dev/null | grep -q "^copy:" && COPYB=$b && break; done
if [ -n "$COPYB" ]; then "$BUILD/tools/runtime_overhead" --bundle "$COPYB" --family copy | tee "$OUT/runtime_overhead.txt"
else "$BUILD/tools/runtime_overhead" | tee "$OUT/runtime_overhead.txt"; fi

say "done: decoder_block exit $RC; outputs in $OUT (bundles, logs, decoder_block.txt, runtime_overhead.txt)"
exit "$RC"
