#!/usr/bin/env python3
"""attention_peers.py: time the peers of recipes/attention.lua on the same GPU, same problems.

PyTorch scaled_dot_product_attention with the flash backend (FlashAttention-2) and with the
cuDNN backend, bf16, random normal inputs (never zeros), layout [B, H, S, D] as tune's
templates. Decode: one query token against a contiguous KV cache of length L (SDPA has no paged
cache; the paged tune variants are compared against these contiguous peers and say so).
Prints and writes JSON: per problem and peer, median microseconds (triton.testing.do_bench,
which flushes L2 between runs), TFLOP/s (causal counts half) and GB/s of K+V read.

usage: attention_peers.py OUT.json
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import triton.testing

PREFILL = [  # name, B, HQ, HKV, S, D, causal   (recipes/attention/prefill.lua)
    ("b4h32s4096d128", 4, 32, 32, 4096, 128, False),
    ("b4h32s4096d128c", 4, 32, 32, 4096, 128, True),
    ("b16h16s1024d64", 16, 16, 16, 1024, 64, False),
    ("b2h16s16384d128c", 2, 16, 16, 16384, 128, True),
    ("b8h32s2048d128c", 8, 32, 32, 2048, 128, True),
    ("b4h32s4096d128c_gqa8", 4, 32, 8, 4096, 128, True),
]
DECODE = [  # B, HQ, HKV, L, D   (recipes/attention/decode.lua)
    (32, 32, 8, 4096, 128),
    (8, 32, 8, 32768, 128),
    (128, 32, 8, 1024, 128),
]
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e3  # us


def main():
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "prefill": {}, "decode": {}}
    torch.manual_seed(0)
    for name, B, HQ, HKV, S, D, causal in PREFILL:
        q = torch.randn(B, HQ, S, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(B, HKV, S, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(B, HKV, S, D, device="cuda", dtype=torch.bfloat16)
        flops = 4.0 * B * HQ * S * S * D * (0.5 if causal else 1.0)
        row = {}
        for peer, be in BACKENDS.items():
            try:
                with sdpa_kernel([be]):
                    us = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=HQ != HKV))
                row[peer] = {"us": us, "tflops": flops / us / 1e6}
            except Exception as e:  # a backend that refuses the shape is reported, not hidden
                row[peer] = {"error": str(e).splitlines()[0][:200]}
            print(f"prefill {name:22s} {peer:6s} {row[peer]}", flush=True)
        out["prefill"][name] = row
        del q, k, v
    for B, HQ, HKV, L, D in DECODE:
        q = torch.randn(B, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(B, HKV, L, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(B, HKV, L, D, device="cuda", dtype=torch.bfloat16)
        kv_bytes = 2.0 * B * HKV * L * D * 2
        row = {}
        for peer, be in BACKENDS.items():
            try:
                with sdpa_kernel([be]):
                    us = bench(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
                row[peer] = {"us": us, "GBps": kv_bytes / us / 1e3}
            except Exception as e:
                row[peer] = {"error": str(e).splitlines()[0][:200]}
            print(f"decode b{B} hq{HQ} hkv{HKV} l{L} {peer:6s} {row[peer]}", flush=True)
        out["decode"][f"b{B}hq{HQ}hkv{HKV}l{L}d{D}"] = row
        del q, k, v
    # device copy bandwidth by torch, for reference next to tune's copy recipe
    x = torch.randn(64 * 1024 * 1024, device="cuda")
    y = torch.empty_like(x)
    us = bench(lambda: y.copy_(x))
    out["torch_copy_256MiB"] = {"us": us, "GBps": 2 * x.numel() * 4 / us / 1e3}
    print("copy", out["torch_copy_256MiB"])
    json.dump(out, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
