#!/usr/bin/env bash
# device_memory_run.sh: one device call that records the memory-bound families and attention decode
# (peers: tools/bench/device_compare.sh). usage: tools/bench/device_memory_run.sh OUTDIR
set -u
out=${1:?OUTDIR}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/rec /tmp/logs
# Peers are not timed here: `tune compare` (tools/bench/device_compare.sh) times them with the
# same CUPTI protocol as tune, in interleaved rounds (docs/measurement.md).
for r in elementwise transpose softmax rmsnorm; do
  t=150; [ $r = rmsnorm ] && t=220
  timeout $t build/tune run recipes/$r.lua --db /tmp/rec/$r.db --seed 1 --quiet > /tmp/logs/$r.log 2>&1
  echo "$r rc=$?" >> /tmp/logs/status.txt
  python3 tools/lean_db.py /tmp/rec/$r.db "$out/$r.db"
done
if [ "${WITH_DECODE:-0}" = 1 ]; then
dec=""
for p in b32hq32hkv8l4096d128p16 b32hq32hkv8l4096d128c b8hq32hkv8l32768d128p64 b8hq32hkv8l32768d128c b128hq32hkv8l1024d128p32 b128hq32hkv8l1024d128c; do dec="$dec --problem $p"; done
timeout 150 build/tune run recipes/attention.lua --db /tmp/rec/decode.db --seed 1 --quiet $dec > /tmp/logs/decode.log 2>&1
echo "decode rc=$?" >> /tmp/logs/status.txt
python3 tools/lean_db.py /tmp/rec/decode.db "$out/decode.db"
fi
tar czf "$out/logs.tgz" -C /tmp logs
cat /tmp/logs/status.txt
python3 tools/bench/memory_report.py /tmp/logs/memory_peers.json "$out"/elementwise.db "$out"/transpose.db "$out"/softmax.db "$out"/rmsnorm.db
[ "${WITH_DECODE:-0}" = 1 ] && python3 tools/bench/attention_report.py "$out/decode.db" /tmp/logs/attention_peers.json | grep -v "^| b[0-9]*h[0-9]*s"
