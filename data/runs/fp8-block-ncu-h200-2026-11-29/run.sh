#!/usr/bin/env bash
# ncu: gemm.fp8 block scales against per-tensor on one tile config (128x128, two consumers,
# PART_BUFFERS 2), and the kernels torch._scaled_mm runs for the three scalings (their names)
set -u
OUT=${OUT:?}
cd "$(dirname "$0")/../../.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader | tee $OUT/gpu.txt
echo "start $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
run() {  # tag problem only
  timeout 90 ncu --target-processes all --kernel-name regex:"^gemm_fp8\$" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SourceCounters \
    -o /tmp/n/$1 -f build/dev/tune run recipes/gemm/fp8.lua --db /tmp/n/$1.db --problem $2 --only $3 --seed 1 --quiet > /tmp/n/run_$1.log 2>&1
  echo "$1 exit $?"
  ncu --import /tmp/n/$1.ncu-rep --page details > /tmp/n/details_$1.txt 2>&1
  ncu --import /tmp/n/$1.ncu-rep --page raw --csv > /tmp/n/raw_$1.csv 2>&1
  echo "== $1"; grep -E "^    Duration|SM Frequency|Compute \(SM\) Throughput|No Eligible|Warp Cycles Per Issued|Issue Slots Busy|Executed Ipc A" /tmp/n/details_$1.txt | head -10
}
C=BLOCK_M=128,BLOCK_N=128,CONSUMERS=2,STAGES=5,PART_BUFFERS=2,PERSISTENT=1,RASTER=8
run tensor_pb2 m4096n4096k7168_tensor $C
run block_pb2 m4096n4096k7168_block $C
run block_pb1 m4096n4096k7168_block BLOCK_M=128,BLOCK_N=128,CONSUMERS=2,STAGES=6,PART_BUFFERS=1,PERSISTENT=0,RASTER=8
cat /tmp/n/details_*.txt > $OUT/details.txt
tar czf $OUT/raw.tgz -C /tmp/n $(cd /tmp/n && ls raw_*.csv)
python3 - <<'PY' 2>&1 | tee $OUT/torch_kernels.txt
import torch, torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity
M, N, K = 4096, 4096, 7168
a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
kb = K // 128
calls = {
  "tensor": lambda: torch._scaled_mm(a, b.t(), torch.tensor(1.0, device="cuda"), torch.tensor(1.0, device="cuda"), out_dtype=torch.bfloat16),
  "row": lambda: torch._scaled_mm(a, b.t(), torch.ones(M, 1, device="cuda"), torch.ones(1, N, device="cuda"), out_dtype=torch.bfloat16),
  "block": lambda: F.scaled_mm(a, b.t(), torch.ones(M, kb, device="cuda").t().contiguous().t(), F.ScalingType.BlockWise1x128,
                               torch.ones(N // 128, kb, device="cuda").t(), F.ScalingType.BlockWise128x128, output_dtype=torch.bfloat16),
}
for name, fn in calls.items():
    try:
        fn(); torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(); torch.cuda.synchronize()
        for e in prof.key_averages():
            if e.device_type.name == "CUDA" or "CUDA" in str(e.device_type):
                print(name, "|", e.key[:230], "|", round(e.device_time_total, 1) if hasattr(e, "device_time_total") else "")
    except Exception as ex:
        print(name, "failed:", ex)
PY
echo "end $(date -u +%FT%TZ)" | tee -a $OUT/gpu.txt
