#!/usr/bin/env python3
"""memory_peers.py: time PyTorch's versions of the memory-bound recipes on the same GPU, same problems.

Families and the PyTorch expression timed (eager; one or more PyTorch kernels each):
  elementwise     F.silu(x * scale + bias)                      recipes/elementwise.lua
  transpose.f32   x.t().contiguous()                            recipes/transpose.lua
  transpose.bf16  x.t().contiguous()
  softmax         torch.softmax(x, dim=-1)  (bf16 in/out, fp32 math inside)   recipes/softmax.lua
  rmsnorm         F.rms_norm(x, (H,), w, eps)                   recipes/rmsnorm.lua
  rmsnorm.add     h = x + r; F.rms_norm(h, (H,), w, eps)        (two kernels: add, norm)
  copy            y.copy_(x), fp32, 64 MiB and 256 MiB          recipes/copy.lua (the yardstick)
With --compile, each family is also timed through torch.compile (a fused Triton kernel), under the
key "<family>+compile".

Inputs are random (never zeros), in the recipes' dtypes and shapes. Times are
triton.testing.do_bench medians (it clears L2 between runs) in microseconds; GBps counts each
tensor read or written once, exactly as the recipes' `metrics.bytes`, so it compares with tune's
GB/s column. Writes JSON {family: {problem: {"us": ..., "GBps": ...}}} (plus a "meta" entry) to
OUT.json and prints each line as it goes.

usage: memory_peers.py OUT.json [--compile]
"""
import json
import sys
import time

import torch
import torch.nn.functional as F
import triton
import triton.testing

BF16 = torch.bfloat16
EPS = 1e-6

# name, dims: the recipes' problems
ELEMENTWISE = [("r16384c4096", 16384, 4096), ("r4096c14336", 4096, 14336)]
TRANSPOSE_F32 = [("r8192c8192", 8192, 8192), ("r4096c14336", 4096, 14336)]
TRANSPOSE_BF16 = [("r16384c4096", 16384, 4096), ("r14336c4096", 14336, 4096)]
SOFTMAX = [("r16384c1024", 16384, 1024), ("r4096c8192", 4096, 8192), ("r1024c32768", 1024, 32768),
           ("r256c131072", 256, 131072), ("r64c131072", 64, 131072), ("r65536c1024", 65536, 1024),
           ("r4096c32768", 4096, 32768)]
RMSNORM = [("t16384h4096", 16384, 4096), ("t4096h8192", 4096, 8192)]
COPY = [("64MiB", 16 * 1024 * 1024), ("256MiB", 64 * 1024 * 1024)]


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3  # us


def record(out, family, problem, fn, nbytes):
    try:
        us = bench(fn)
        row = {"us": us, "GBps": nbytes / us / 1e3}
    except Exception as e:  # a peer that fails is reported, not hidden
        row = {"error": str(e).splitlines()[0][:200] if str(e) else type(e).__name__}
    out.setdefault(family, {})[problem] = row
    print(f"{family:22s} {problem:14s} {row}", flush=True)


def silu_scale_bias(x, scale, bias):
    return F.silu(x * scale + bias)


def transpose(x):
    return x.t().contiguous()


def softmax(x):
    return torch.softmax(x, dim=-1)


def rmsnorm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def rmsnorm_add(x, r, w):
    h = x + r
    return F.rms_norm(h, (h.shape[-1],), w, EPS), h


def run(out, suffix, wrap):
    """Every family once; wrap(f) is the identity (eager) or torch.compile."""
    dev = "cuda"
    f_ew, f_tr, f_sm, f_rn, f_ra = (wrap(f) for f in (silu_scale_bias, transpose, softmax, rmsnorm, rmsnorm_add))
    for name, rows, cols in ELEMENTWISE:
        x = torch.randn(rows, cols, device=dev, dtype=BF16)
        scale = torch.empty(cols, device=dev, dtype=BF16).uniform_(0.5, 1.5)
        bias = torch.empty(cols, device=dev, dtype=BF16).uniform_(-1, 1)
        record(out, "elementwise" + suffix, name, lambda: f_ew(x, scale, bias), 2 * (2 * rows * cols + 2 * cols))
        del x
    for family, probs, dt, es in (("transpose.f32", TRANSPOSE_F32, torch.float32, 4),
                                  ("transpose.bf16", TRANSPOSE_BF16, BF16, 2)):
        for name, R, C in probs:
            x = torch.randn(R, C, device=dev, dtype=dt)
            record(out, family + suffix, name, lambda: f_tr(x), 2 * es * R * C)
            del x
    for name, rows, cols in SOFTMAX:
        x = torch.randn(rows, cols, device=dev, dtype=BF16) * 3
        record(out, "softmax" + suffix, name, lambda: f_sm(x), 2 * 2 * rows * cols)
        del x
    for name, T, H in RMSNORM:
        x = torch.randn(T, H, device=dev, dtype=BF16)
        r = torch.randn(T, H, device=dev, dtype=BF16)
        w = torch.empty(H, device=dev, dtype=BF16).uniform_(0.5, 1.5)
        record(out, "rmsnorm" + suffix, name, lambda: f_rn(x, w), 2 * (2 * T * H + H))
        record(out, "rmsnorm.add" + suffix, name + "add", lambda: f_ra(x, r, w), 2 * (4 * T * H + H))
        del x, r


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    compiled = "--compile" in sys.argv[2:]
    out = {"meta": {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                    "triton": getattr(triton, "__version__", "?"),
                    "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "timer": "triton.testing.do_bench median, L2 cleared between runs"}}
    torch.manual_seed(0)
    with torch.inference_mode():
        run(out, "", lambda f: f)
        for name, n in COPY:
            x = torch.randn(n, device="cuda")
            y = torch.empty_like(x)
            record(out, "copy", name, lambda: y.copy_(x), 2 * 4 * n)
            del x, y
        if compiled:
            run(out, "+compile", lambda f: torch.compile(f, dynamic=False))
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
