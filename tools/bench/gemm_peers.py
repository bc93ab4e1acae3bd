#!/usr/bin/env python3
"""gemm_peers.py: time cuBLAS (through torch.matmul) on the problems of recipes/gemm.lua.

Same problems, names and layouts as the recipe: c[M][N] = a[M][K] @ B in bf16 (fp32 accumulation
inside cuBLAS, bf16 output), a and b random normal (never zeros: power and clocks depend on the
data). b_layout "row": b is a [K, N] tensor and c = a @ b; "col": b is stored [N, K] (nn.Linear
weight) and c = a @ b.t(), a transposed view that cuBLAS reads in place (no copy is timed).
Timing: triton.testing.do_bench, median of the repetitions, L2 flushed between them.
Metrics as the recipe: flops = 2 M N K, bytes = a + b + c once (bf16).

With --f16: fp16 a and b and the problems of recipes/gemm/f16.lua (cuBLAS writes c in fp16 there,
tune's gemm.f16 in bf16: the same bytes).

Writes JSON {problem: {"us": median microseconds, "tflops": ..., "GBps": ...}} to OUT.json and
prints one line per problem.

usage: gemm_peers.py [--f16] OUT.json
"""
import json
import sys

import torch
import triton.testing

LARGE = [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 14336, 4096)]  # M, N, K
DECODE_M = [1, 16, 64, 128]
DECODE_NK = [(8192, 8192), (14336, 4096), (4096, 14336)]
LAYOUTS = ["row", "col"]
EXTRA_COL = [(4096, 6144, 4096), (4096, 4096, 14336)]  # the decoder block's QKV and MLP-down projections


def problems():
    """(name, M, N, K, layout) in the order of recipes/gemm.lua."""
    out = []
    for m, n, k in LARGE:
        for lay in LAYOUTS:
            out.append((f"m{m}n{n}k{k}_{lay}", m, n, k, lay))
    for m, n, k in EXTRA_COL:
        out.append((f"m{m}n{n}k{k}_col", m, n, k, "col"))
    for m in DECODE_M:
        for n, k in DECODE_NK:
            for lay in LAYOUTS:
                out.append((f"m{m}n{n}k{k}_{lay}", m, n, k, lay))
    return out


# recipes/gemm/f16.lua's problems, in its order
F16_PROBLEMS = [(8192, 8192, 8192, "col"), (4096, 4096, 4096, "row"), (4096, 4096, 4096, "col"),
                (4096, 14336, 4096, "col"),
                (1, 8192, 8192, "row"), (1, 8192, 8192, "col"), (1, 14336, 4096, "col"), (1, 4096, 14336, "col"),
                (16, 8192, 8192, "col"), (16, 14336, 4096, "col"), (16, 4096, 14336, "col"),
                (64, 8192, 8192, "col"), (64, 14336, 4096, "col"), (64, 4096, 14336, "col"),
                (128, 8192, 8192, "row"), (128, 8192, 8192, "col"), (128, 14336, 4096, "col"),
                (128, 4096, 14336, "col")]


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e3  # ms -> us


def main():
    args = sys.argv[1:]
    f16 = args[:1] == ["--f16"]
    if f16:
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__.strip().splitlines()[-1])
    dt = torch.float16 if f16 else torch.bfloat16
    probs = [(f"m{m}n{n}k{k}_{lay}", m, n, k, lay) for m, n, k, lay in F16_PROBLEMS] if f16 else problems()
    torch.manual_seed(0)
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, cuBLAS via torch.matmul, {dt}", flush=True)
    out = {}
    for name, m, n, k, lay in probs:
        a = torch.randn(m, k, device="cuda", dtype=dt)
        if lay == "row":
            b = torch.randn(k, n, device="cuda", dtype=dt)
            rhs = b
        else:
            b = torch.randn(n, k, device="cuda", dtype=dt)
            rhs = b.t()
        c = torch.empty(m, n, device="cuda", dtype=dt)
        us = bench(lambda: torch.matmul(a, rhs, out=c))
        flops = 2.0 * m * n * k
        nbytes = 2.0 * (m * k + k * n + m * n)
        out[name] = {"us": us, "tflops": flops / us / 1e6, "GBps": nbytes / us / 1e3}
        print(f"{name:24s} {us:10.2f} us {out[name]['tflops']:8.1f} TFLOP/s {out[name]['GBps']:8.1f} GB/s", flush=True)
        del a, b, rhs, c
    with open(args[0], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
