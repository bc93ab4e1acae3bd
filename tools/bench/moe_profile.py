#!/usr/bin/env python3
"""moe_profile.py: where the time of one MoE layer call goes, per GPU kernel, for the three
implementations of tools/bench/moe_layer.py (torch, compile, tune).

    python3 tools/bench/moe_profile.py --bundle moe.bundle --model qwen3-235b --tokens 4096
    python3 tools/bench/moe_profile.py --bundle moe_fp8.bundle --model deepseek-v3 --tokens 1 --fp8 row

torch.profiler (CUDA activity) over --calls eager calls of each after a warm-up; printed per
implementation: the kernels by total GPU time (per call, us) and their sum. A diagnostic for
finding the stage to work on, not a benchmark: the comparison is tools/bench/moe_layer.py's.
"""
import argparse
import collections
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "..", "..", "python", "src"))
sys.path.append(HERE)
import moe_layer  # noqa: E402  (the models and weights of the benchmark)


def profile(fn, calls):
    """{kernel name: total GPU us} over `calls` calls of fn."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    per = collections.Counter()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per[e.name] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--model", default="qwen3-235b", help=f"one of {', '.join(moe_layer.MODELS)}")
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--top", type=int, default=12, help="kernels listed per implementation")
    ap.add_argument("--fp8", choices=("row", "tensor", "block"), help="e4m3 experts in this scaling (the FP8 layer)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("moe_profile.py: no CUDA device for torch")
    import moe_fp8_peer
    import tunert.torch as tt
    tt.use_bundle(args.bundle)
    E, H, I = moe_layer.MODELS[args.model][:3]
    if args.fp8:
        layers, _ = moe_layer.fp8_layers(tt, args.model, moe_fp8_peer.fp8_weights(E, H, I, args.fp8), args.fp8)
    else:
        layers, _ = moe_layer.bf16_layers(tt, args.model, moe_layer.weights(E, H, I))
    x = moe_layer.normal(torch.Generator(device="cuda").manual_seed(args.tokens), args.tokens, H)
    fns = {k: (lambda layer=layer: layer(x)) for k, layer in layers.items()}
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: {args.model}, {args.tokens} tokens, "
          f"per call over {args.calls} eager calls (us)")
    for name, fn in fns.items():
        per = profile(fn, args.calls)
        total = sum(per.values()) / args.calls
        print(f"\n{name}: {total:.1f} us of GPU kernels per call")
        for k, us in per.most_common(args.top):
            print(f"  {us / args.calls:9.1f}  {k[:110]}")


if __name__ == "__main__":
    main()
