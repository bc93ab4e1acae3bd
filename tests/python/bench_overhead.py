#!/usr/bin/env python3
"""CPU-side Python time per call of tunert's Python path, on a machine without a GPU (not a test).

What it times (median of batches, microseconds per call), with a gemm bundle opened with
no_device=True and CPU torch tensors standing in for CUDA ones:

  launch      Selection.launch(tensors): the binding's checks and argument packing, with the C
              call tunert_launch replaced by a Python no-op (`ctypes call` below is its own cost)
  op body     what tunert.torch.linear runs for a CUDA tensor (plan lookup, output allocation,
              launch, counting), called directly with the launch stubbed as above
  op          tunert.torch.linear(x, w) through the torch dispatcher, its CUDA kernel registered
              for CPU here so that CPU tensors take the tuned path
  ctypes call the real tunert_launch through ctypes (no driver: it returns TUNERT_ENODRIVER)
  dispatch    a do-nothing torch.library.custom_op: the dispatcher's share of `op`

What it cannot time here: the CUDA-only pieces (the current stream's handle, a CUDA allocation,
the driver's launch). tools/bench/python_overhead.py times the whole path on a GPU.

    bench_overhead.py [--m 4 --n 4096 --k 4096]
"""
import argparse
import ctypes
import os
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("SRC", str(HERE.parents[1]))

import torch  # noqa: E402

from common import bundle  # noqa: E402
import tunert  # noqa: E402
import tunert.torch as tt  # noqa: E402
from tunert import _capi as C  # noqa: E402
from tunert import bundle as tb  # noqa: E402
from tunert.torch import _ops, _state  # noqa: E402


def per_call_us(fn, batches=15, per_batch=2000):
    fn()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            fn()
        times.append((time.perf_counter() - t0) / per_batch * 1e6)
    return statistics.median(times), min(times), max(times)


def _no_launch(*args):
    return 0


def stub_launch(sel):
    """Replace the C launch of `sel` by a no-op (and let CPU tensors pass the device check)."""
    sel._launch_c = _no_launch
    tb.LAUNCH_DEVICE_TYPES = frozenset(tb.LAUNCH_DEVICE_TYPES | {"cpu"})


def register_cpu_kernel(qualname, fn):
    """Make `fn` (an op's CUDA kernel) the op's CPU kernel, registered as _ops registers it for CUDA."""
    torch.library.impl(qualname, "CPU", fn)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=4096)
    a = ap.parse_args()
    path = bundle("gemm")
    tt.use_bundle(path, no_device=True, arch="sm_90a")
    x = torch.randn(a.m, a.k, dtype=torch.bfloat16)
    w = torch.randn(a.n, a.k, dtype=torch.bfloat16)
    out = torch.empty(a.m, a.n, dtype=torch.bfloat16)

    b = tunert.Bundle(path, no_device=True, arch="sm_90a")
    sel = b.select("gemm", M=a.m, N=a.n, K=a.k, b_layout="col")
    scratch = {n: torch.empty(max(1, nbytes), dtype=torch.uint8) for n, nbytes in sel.scratch_bytes().items()}
    tensors = dict({"a": x, "b": w, "c": out}, **scratch)
    stub_launch(sel)

    key, candidates, _, _ = _ops._linear_problem(0, x, w)
    plan = _state.plan("linear", key, 0, candidates)
    stub_launch(plan.selection)
    _ops._cuda_device = lambda: 0   # no CUDA here: the CPU tensors stand for device 0

    lib = C.lib()
    args = (C.Arg * len(sel.info.args))()
    err = C.Err()
    ctypes_call = lambda: lib.tunert_launch(b._ctx, sel._handle, None, args, len(args), ctypes.byref(err))  # noqa: E731

    @torch.library.custom_op("bench_overhead::noop", mutates_args=())
    def noop(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return out

    register_cpu_kernel("tunert::linear", _ops.linear_cuda)
    rows = [("launch: Selection.launch (C call stubbed)", per_call_us(lambda: sel.launch(tensors))),
            ("op body: linear's CUDA kernel, called directly", per_call_us(lambda: _ops.linear_cuda(x, w))),
            ("op: tunert.torch.linear (dispatcher + body)", per_call_us(lambda: tt.linear(x, w))),
            ("ctypes call: tunert_launch (no driver)", per_call_us(ctypes_call)),
            ("dispatch: a do-nothing custom_op", per_call_us(lambda: noop(x, w)))]
    print(f"CPU-side Python time (no GPU; C launch stubbed), torch {torch.__version__}, Python "
          f"{sys.version.split()[0]}, gemm M={a.m} N={a.n} K={a.k} ({sel.info.kind})")
    print("| path | us per call, median (min-max of batches) |")
    print("| --- | --- |")
    for name, (med, lo, hi) in rows:
        print(f"| {name} | {med:.2f} ({lo:.2f}-{hi:.2f}) |")
    assert tt.stats()["linear"]["tuned"] > 0, "the op did not take the tuned path"


if __name__ == "__main__":
    main()
