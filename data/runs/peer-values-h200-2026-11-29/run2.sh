#!/usr/bin/env bash
# every peer's values on every problem of the recorded databases, with the check's final rule
# (relative L2, a cap, 0.1 % outliers: tools/peers/peer_server.py check_values)
cd "$(dirname "$0")/../../.."
R=$(pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$R/build/gpu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
(cd tools/peers && timeout -s INT 300 python3 check_peers.py --lib $R/build/gpu/libtune_cupti_py.so $R/data/recorded/*.db $R/data/recorded/h200/*.db $R/data/recorded/h100/*.db > $OUT/check_peers.txt 2> $OUT/check_peers.err; echo "check_peers rc $? $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt)
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
grep -v ": ok$" $OUT/check_peers.txt | cut -c1-300 | tail -20
