#!/usr/bin/env python3
"""Host time per call of the Python path (issue: a Python package with PyTorch ops), on a GPU:

  op      tunert.torch.linear(x, w): the torch.library custom op (dispatch, cached plan, output
          allocation, launch through ctypes)
  launch  Selection.launch({...}) of the binding with preallocated tensors (ctypes + libtunert)
  torch   torch.nn.functional.linear(x, w) (cuBLAS) on the same shape, the eager baseline

Calls are issued in batches of 200 with a synchronize between batches (the queue never fills);
the median batch's time per call is printed. Compare with tools/runtime_overhead (C: libtunert's
select + launch against a raw cuLaunchKernel).

    python_overhead.py --bundle model.bundle [--m 4 --n 4096 --k 4096]
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import tunert
import tunert.torch as tt


def per_call_us(fn, batches=20, per_batch=200):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        times.append((t1 - t0) / per_batch * 1e6)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=4096)
    a = ap.parse_args()
    tt.use_bundle(a.bundle)
    x = torch.randn(a.m, a.k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(a.n, a.k, device="cuda", dtype=torch.bfloat16)
    b = tunert.Bundle(a.bundle)
    sel = b.select("gemm", M=a.m, N=a.n, K=a.k, b_layout="col")
    out = torch.empty(a.m, a.n, device="cuda", dtype=torch.bfloat16)
    scratch = {n: torch.empty(max(1, nbytes), device="cuda", dtype=torch.uint8) for n, nbytes in sel.scratch_bytes().items()}
    tensors = dict({"a": x, "b": w, "c": out}, **scratch)
    rows = [("op: tunert.torch.linear", per_call_us(lambda: tt.linear(x, w))),
            ("launch: Selection.launch", per_call_us(lambda: sel.launch(tensors))),
            ("torch: F.linear (cuBLAS)", per_call_us(lambda: F.linear(x, w)))]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, gemm M={a.m} N={a.n} K={a.k} ({sel.info.kind})")
    print("| path | host us per call |")
    print("| --- | --- |")
    for name, us in rows:
        print(f"| {name} | {us:.1f} |")


if __name__ == "__main__":
    main()
