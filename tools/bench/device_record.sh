#!/usr/bin/env bash
# device_record.sh PART OUTDIR: re-record a part of the replay data (the main job's, recipes/attention.lua, and gemm.skinny)
# on the GPU, exhaustive with seed 1 as data/README.md asks, each part within one device call:
#   serving  decode, then varlen (below)
#   decode   attention.decode (exhaustive; then `tune compare` as varlen's, except in serving) ->
#            OUTDIR/attention.decode.db
#   decode_tma  attention.decode_tma, the same -> OUTDIR/attention.decode_tma.db
#   varlen   attention.varlen (exhaustive on every problem, then `tune compare` against its peers,
#            3 rounds, top 2, burst) -> OUTDIR/attention.varlen.db
#   varlen_kv  attention.varlen_kv (chunked prefill), the same -> OUTDIR/attention.varlen_kv.db
#   decode_fp8  attention.decode_fp8 (fp8 KV cache), the same -> OUTDIR/attention.decode_fp8.db
#   decode_fp8_tma  attention.decode_fp8_tma, the same -> OUTDIR/attention.decode_fp8_tma.db
#   prefill  attention.prefill (mma.sync path) -> OUTDIR/attention.prefill.db
#   sm90     attention.prefill_sm90 (--only PV_SPLIT=0) -> OUTDIR/attention.prefill_sm90.db
#   skinny   gemm.skinny (recipes/gemm/skinny.lua, the decode-size GEMM; not part of the main job) ->
#            OUTDIR/gemm.skinny.db
#   combine  moe.combine (recipes/moe/combine.lua), then its comparison as varlen's ->
#            OUTDIR/moe.combine.db
# LIMIT: seconds per tune run (default 500; SIGINT at the limit: the run is recorded interrupted).
# TIMING: the comparisons' timing mode (default burst; both: burst and sustained).
# A part too long for one device call records in several: PROBLEMS="name ..." runs only those
# problems, WORK=DIR keeps the run's database there (default a fresh /tmp/record-PART; a later call
# finds it only on the same machine, and the device tool may hand out a fresh one even back to back:
# then join the calls' OUTDIR databases with `tune db merge`), COMPARE=0 skips the comparison (run it
# in the last call).
# Every run's log is kept in OUTDIR; the databases are lean (tools/lean_db.py).
set -u
part=${1:?usage: device_record.sh serving|decode|decode_tma|varlen|varlen_kv|decode_fp8|decode_fp8_tma|prefill|sm90|skinny|combine OUTDIR}
out=${2:?usage: device_record.sh serving|decode|decode_tma|varlen|varlen_kv|decode_fp8|decode_fp8_tma|prefill|sm90|skinny|combine OUTDIR}
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
TUNE=${TUNE:-build/tune}
LIMIT=${LIMIT:-500}
if [ -n "${WORK:-}" ]; then work=$WORK; else work=/tmp/record-$part; rm -rf "$work"; fi
mkdir -p "$work"
problems=()
for p in ${PROBLEMS:-}; do problems+=(--problem "$p"); done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/$part.gpu.txt"
echo "start $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')" | tee -a "$out/$part.gpu.txt"
run() { # run NAME ARGS...: one tune run into $work/NAME.db, its log appended to OUTDIR/NAME.log
  local name=$1; shift
  timeout -s INT "$LIMIT" "$TUNE" run "$@" "${problems[@]}" --db "$work/$name.db" --seed 1 --quiet --jobs 16 \
    --timeout 20000 >>"$out/$name.log" 2>&1
  echo "$name: tune run $* -> rc $? at $(date -u +%FT%TZ)" | tee -a "$out/$part.gpu.txt"
}
keep() { python3 tools/lean_db.py "$work/$1.db" "$out/$1.db" >/dev/null 2>&1 || echo "lean_db $1 failed"; }
# exhaustive_compared NAME [FAMILY]: recipes/FAMILY/NAME.lua (FAMILY default attention) exhaustive,
# then tune compare against its peers
exhaustive_compared() {
  local family=${2:-attention}
  local recipe=recipes/$family/$1.lua db=$family.$1
  run "$db" "$recipe" --strategy exhaustive
  [ "${COMPARE:-1}" = 0 ] && { keep "$db"; return; }
  timeout -s INT 200 "$TUNE" compare "$recipe" --rounds 3 --top-k 2 --timing "${TIMING:-burst}" \
    --db "$work/$db.db" >"$out/$db.compare.txt" 2>&1
  echo "compare rc $?" | tee -a "$out/$part.gpu.txt"
  keep "$db"
}
case $part in
  serving|decode|varlen)
    if [ "$part" = decode ]; then
      exhaustive_compared decode
    elif [ "$part" = serving ]; then
      run attention.decode recipes/attention/decode.lua --strategy exhaustive
      keep attention.decode
    fi
    [ "$part" != decode ] && exhaustive_compared varlen ;;
  varlen_kv|decode_fp8|decode_tma|decode_fp8_tma) exhaustive_compared "$part" ;;
  prefill) run attention.prefill recipes/attention/prefill.lua --strategy exhaustive; keep attention.prefill ;;
  sm90) run attention.prefill_sm90 recipes/attention/prefill_sm90.lua --strategy exhaustive --only PV_SPLIT=0
        keep attention.prefill_sm90 ;;
  skinny) run gemm.skinny recipes/gemm/skinny.lua --strategy exhaustive; keep gemm.skinny ;;
  combine) exhaustive_compared combine moe ;;
  *) echo "part must be serving, decode, decode_tma, varlen, varlen_kv, decode_fp8, decode_fp8_tma, prefill, sm90, skinny or combine" >&2; exit 2 ;;
esac
echo "end $(date -u +%FT%TZ)" | tee -a "$out/$part.gpu.txt"
for f in "$out"/*.log; do grep -H -E "results, |GPU busy" "$f" | cut -c1-220; done
