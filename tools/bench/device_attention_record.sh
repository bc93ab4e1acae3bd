#!/usr/bin/env bash
# device_attention_record.sh: re-record a part of recipes/attention.lua on the GPU and time the
# peers (PyTorch SDPA flash / cuDNN) in the same call. Two parts, so that each fits one device call
# (at most 10 minutes):
#   decode    attention.decode and attention.prefill (mma.sync path) -> OUTDIR/attention.db
#   sm90      attention.prefill_sm90                                  -> OUTDIR/attention.prefill_sm90.db
# usage: tools/bench/device_attention_record.sh decode|sm90 OUTDIR
# Environment: TUNE (default build/tune), LIMIT (seconds for the tune run, default 480).
# Writes OUTDIR/tune.log (the run), OUTDIR/peers.json, OUTDIR/report.md (attention_report.py) and
# prints the report last. Exhaustive, seed 1; a variant that hangs costs 20 s (--timeout 20000).
set -u
part=${1:?usage: device_attention_record.sh decode|sm90 OUTDIR}
out=${2:?usage: device_attention_record.sh decode|sm90 OUTDIR}
cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
TUNE=${TUNE:-build/tune}
LIMIT=${LIMIT:-480}
work=/tmp/attn-record-$part
rm -rf "$work"; mkdir -p "$work"
case $part in
  # params only the named sub-recipes have: KV_HINT (decode), SWIZZLE (the mma.sync prefill)
  decode) only=(--only KV_HINT=1 --only SWIZZLE=0 --only SWIZZLE=1); db=attention.db ;;
  sm90) only=(--only PV_SPLIT=0); db=attention.prefill_sm90.db ;;
  *) echo "part must be decode or sm90" >&2; exit 2 ;;
esac
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
echo "start $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')" | tee -a "$out/gpu.txt"
timeout "$LIMIT" "$TUNE" run recipes/attention.lua "${only[@]}" --strategy exhaustive --db "$work/a.db" --seed 1 \
  --quiet --jobs 16 --timeout 20000 > "$out/tune.log" 2>&1
echo "tune rc=$? (124: stopped by the time limit; results so far are in the database)  end $(date -u +%FT%TZ)" | tee -a "$out/gpu.txt"
python3 tools/lean_db.py "$work/a.db" "$out/$db" > "$out/lean_db.txt" 2>&1 || cat "$out/lean_db.txt"
# Peers are not timed here: `tune compare` (tools/bench/device_compare.sh) times them with the
# same CUPTI protocol as tune, in interleaved rounds (docs/measurement.md).
grep -E "^best for|GPU busy" "$out/tune.log" | cut -c1-200
python3 tools/bench/attention_report.py "$work/a.db" "$out/peers.json" > "$out/report.md" 2>&1
cat "$out/report.md"
