#!/usr/bin/env python3
"""CPU-side Python time per call of tunert.torch.decode's and decode_fp8's CUDA bodies, on a machine
without a GPU (not a test; bench_overhead.py does the same for linear and the binding).

The op body (shape checks, the problem's key, plan lookup, output allocation, launch packing,
counting) is called directly with CPU tensors, q labelled CUDA by a subclass, the C launch
stubbed as bench_overhead.py stubs it; against the decode bundle of common.decode_bundle() and
the recorded attention.decode_fp8 bundle (B 32, HQ 32, HKV 8, D 128, page 16), with and without
seq_lens. Median of batches, microseconds per call.
"""
import sys

import torch

from bench_overhead import per_call_us, stub_launch
from common import bundle, decode_bundle
import tunert.torch as tt
from tunert.torch import _ops, _ops_decode_fp8, _state


class CudaLabelled(torch.Tensor):
    """A CPU tensor whose is_cuda is True: the op body takes its CUDA path."""
    __torch_function__ = torch._C._disabled_torch_function_impl
    is_cuda = property(lambda self: True)


def rows(name, path, maxp, cache_dtype, body):
    B, HQ, HKV, D, page = 32, 32, 8, 128, 16
    tt.use_bundle(path, no_device=True, arch="sm_90a")
    tt.reset_stats()
    q = torch.zeros(B, HQ, D, dtype=torch.bfloat16).as_subclass(CudaLabelled)
    kc = torch.zeros(B * maxp // 8 + 3, page, HKV, D, dtype=cache_dtype)   # a pool the kernel indexes
    scales = (torch.full((HKV,), 0.1),) * 2 if name == "decode_fp8" else ()
    bt = torch.zeros(B, maxp, dtype=torch.int32)
    lens = torch.ones(B, dtype=torch.int32)
    out = []
    for label, extra in (("seq_lens given", (lens,)), ("no seq_lens", ())):
        args = (q, kc, kc) + scales + (bt,) + extra
        key, candidates, _, _ = _ops.PROBLEMS[name](0, *args)
        p = _state.plan(name, key, 0, candidates)
        if not isinstance(p, _state.Plan):
            raise SystemExit(f"{name}: no tuned plan: {p.reason}")
        stub_launch(p.selection)
        out.append((f"{name} body, {label}", per_call_us(lambda: body(*args), batches=11, per_batch=1000)))
    s = tt.stats()[name]
    assert s["tuned"] > 0 and s["fallback"] == 0, s
    return out


def main():
    _ops._cuda_device = lambda: 0   # no CUDA here: the CPU tensors stand for device 0
    table = (rows("decode", decode_bundle(), 256, torch.bfloat16, _ops._decode_body)
             + rows("decode_fp8", bundle("decode_fp8"), 512, torch.float8_e4m3fn, _ops_decode_fp8._body))
    print(f"CPU-side Python time (no GPU; C launch stubbed), torch {torch.__version__}, Python {sys.version.split()[0]}")
    print("| path | us per call, median (min-max of batches) |")
    print("| --- | --- |")
    for name, (med, lo, hi) in table:
        print(f"| {name} | {med:.2f} ({lo:.2f}-{hi:.2f}) |")


if __name__ == "__main__":
    main()
