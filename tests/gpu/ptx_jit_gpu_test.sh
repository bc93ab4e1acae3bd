#!/usr/bin/env bash
# On a GPU: the PTX fallback of a bundle, JIT-compiled by the driver. A bundle made for an older
# architecture (--arch sm_80: sm_80 cubins, which an sm_90 device cannot load, and compute_80 PTX)
# is the situation of a bundle on a GPU newer than any it was compiled for: libtunert must pick
# the PTX, the driver JITs it, and the outputs must be right. rmsnorm, rmsnorm.add and softmax.split
# from the recorded databases (generic CUDA: no arch-specific instruction), through tunert.torch,
# checked against fp32 torch. Needs torch with CUDA (TUNERT_PYTHON, else python3); skipped (77)
# without a GPU. Logs in $OUT when set.
. "$(dirname "$0")/../integration/lib.sh"
PY="${TUNERT_PYTHON:-python3}"
LIB="${TUNERT_LIBRARY:?set TUNERT_LIBRARY to libtunert.so}"
LOG="${OUT:-$WORK}"
mkdir -p "$LOG"
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 77)' >"$LOG/probe.txt" 2>&1
case $? in
  0) ;;
  77) echo "skipped: no CUDA device for torch"; exit 77 ;;
  *) echo "skipped: torch is not importable by $PY"; cat "$LOG/probe.txt"; exit 77 ;;
esac
"$TUNE" bundle --db "$SRC/data/recorded/rmsnorm.db" --db "$SRC/data/recorded/softmax.db" --recipe rmsnorm,softmax.split \
  --arch sm_80 --allow-source-change -o ptx.bundle >"$LOG/bundle.txt" 2>&1
check "bundle for sm_80 written (rc $?)" contains "$LOG/bundle.txt" "checked with libtunert"
check "its variants carry compute_80 PTX" contains "$LOG/bundle.txt" "compute_80 for"
PYTHONPATH="$SRC/python/src" TUNERT_LIBRARY="$LIB" "$PY" - ptx.bundle >"$LOG/launch.txt" 2>&1 <<'PY'
import sys
import torch
import tunert.torch as tt

tt.use_bundle(sys.argv[1], strict=True)
torch.manual_seed(1)
dev = "cuda"
failures = 0


def rel_l2(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm()).item()


def report(op, plan, err, limit):
    global failures
    binary = plan.selection.info.binary
    ok = "ptx" in binary and err < limit
    failures += not ok
    print(f"{op}: binary {binary}, rel_l2 {err:.2e} (limit {limit:g}) {'ok' if ok else 'FAIL'}")


x = torch.randn(4096, 4096, device=dev).bfloat16() * 3
w = (torch.rand(4096, device=dev) + 0.5).bfloat16()
r = torch.randn(4096, 4096, device=dev).bfloat16()
y = tt.rmsnorm(x, w)
ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
report("rmsnorm", tt.explain("rmsnorm", x, w), rel_l2(y, ref), 1e-2)
y2, h = tt.rmsnorm(x, w, residual=r)
hf = (x.float() + r.float()).bfloat16().float()
ref2 = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
report("rmsnorm_add", tt.explain("rmsnorm_add", x, r, w), max(rel_l2(y2, ref2), rel_l2(h, hf)), 1e-2)
s = torch.randn(64, 131072, device=dev).bfloat16() * 3
report("softmax", tt.explain("softmax", s), rel_l2(tt.softmax(s), torch.softmax(s.float(), -1)), 1e-2)
print("stats", tt.stats())
sys.exit(1 if failures else 0)
PY
rc=$?
check "PTX variants JIT-compiled by the driver give right outputs (rc $rc)" test $rc -eq 0
check "three ops ran PTX" test "$(grep -c ': binary ptx.* ok$' "$LOG/launch.txt")" -eq 3
echo "== launches"
cat "$LOG/launch.txt"
finish
