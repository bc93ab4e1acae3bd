#!/usr/bin/env bash
# ncu of the peer on the same problem: cuDNN SDPA (the comparison's cudnn-sdpa: one query token, a
# contiguous [B, HKV, L, D] cache, L the mean of the worker's lengths for seed 1), the kernels of one
# call after about ten warm-up calls
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cat > /tmp/cudnn_decode.py <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
sys.path.insert(0, "tools/peers")
import peer_server
d = {"B": 32, "HQ": 32, "HKV": 8, "D": 128, "page_size": 16, "max_pages": 256}
L, lens = peer_server.decode_kv_len(d, 1)
print("L", L, "from", min(lens), max(lens))
q = torch.randn(32, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
k, v = (torch.randn(32, 8, L, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
    for _ in range(41):
        o = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
PY
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu_cudnn.txt
timeout 150 ncu --target-processes all --launch-skip 30 --launch-count 6 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  python3 /tmp/cudnn_decode.py > $OUT/details_cudnn.txt 2>&1
echo "ncu rc $?" | tee -a $OUT/gpu_cudnn.txt
grep -E "^  [a-zA-Z_].*Context|^L |^    Duration|DRAM Throughput|SM Active Cycles|Elapsed Cycles|Achieved Occupancy|Registers Per|Grid Size|Block Size|Waves" $OUT/details_cudnn.txt | head -60
