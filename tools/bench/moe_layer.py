#!/usr/bin/env python3
"""moe_layer.py: tunert.torch.moe_layer against the same layer in PyTorch, eager and torch.compile.

    python3 tools/bench/moe_layer.py --bundle moe.bundle                    # on a GPU
    python3 tools/bench/moe_layer.py --bundle moe.bundle --model qwen3-235b --tokens 1,64,4096

Per model and token bucket: router, top-k, permutation, gate/up GEMM with SwiGLU, down GEMM and the
weighted combination, on three implementations of one algorithm (python/src/tunert/torch/
_ops_moe_layer.py): "torch" (moe_layer_torch: torch._grouped_mm, then silu * mul, eagerly),
"compile" (torch.compile of it, static shapes) and "tune" (tunert.torch.moe_layer: both expert GEMMs
and the weighted combination through the bundle, the router and permutation the same torch ops). Each is captured in a CUDA graph and replayed
(--mode graph, the default: a serving engine's decode step) or called eagerly (--mode eager), timed
with CUDA events over interleaved rounds (the three in rotated order per round), --calls calls per
timing. Printed: the per-call median [us] of each, tune's ratio to each (median and min-max of the
per-round ratios: "faster" needs the whole range above 1), what the bundle served for each GEMM
(tuned: this problem's entry; nearest: a portable entry tuned for another; fallback/vendor: PyTorch
ran it) and for the combination, and the relative L2 of tune's output against torch's. Routed rows = tokens * top_k. The
router is random (normal weights): a near-uniform routing with the natural spread.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys

import torch

# the package of this repository unless one is installed
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "src"))

MODELS = {  # E, hidden H, intermediate I, top_k, scoring, renormalize
    "mixtral-8x7b": (8, 4096, 14336, 2, "softmax", True),
    "e64-h2048-i1408-top8": (64, 2048, 1408, 8, "softmax", True),  # DeepSeek-V2-Lite / Qwen1.5-MoE experts
    "qwen3-235b": (128, 4096, 1536, 8, "softmax", True),
    "deepseek-v3-e64": (64, 7168, 2048, 8, "sigmoid", True),  # 64 of its 256 experts (expert parallel 4)
}
IMPLS = ("torch", "compile", "tune")
FAMILIES = ("moe.grouped_swiglu", "moe.grouped", "moe.combine")  # what tune's layer takes from the bundle


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True, help="the tune bundle with moe.grouped_swiglu, moe.grouped and moe.combine")
    ap.add_argument("--model", default="mixtral-8x7b,qwen3-235b",
                    help=f"comma-separated, of {', '.join(MODELS)} (default mixtral-8x7b,qwen3-235b)")
    ap.add_argument("--tokens", default="1,8,64,512,4096", help="token buckets (default 1,8,64,512,4096)")
    ap.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default 10)")
    ap.add_argument("--calls", type=int, default=20, help="calls (graph replays) per timing (default 20)")
    ap.add_argument("--mode", choices=("graph", "eager"), default="graph")
    ap.add_argument("--strict", action="store_true", help="raise where the bundle cannot serve a GEMM or the combination")
    ap.add_argument("--json-out", help="also write the rows as JSON")
    return ap.parse_args()


def driver_version():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i",
                            str(torch.cuda.current_device())], capture_output=True, text=True, timeout=30)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    v = ctypes.c_int()
    ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(v))
    return f"CUDA driver API {v.value // 1000}.{v.value % 1000 // 10}"


def normal(g, *shape, std=1.0):
    return torch.empty(shape, dtype=torch.bfloat16, device="cuda").normal_(0.0, std, generator=g)


def weights(E, H, I):
    """router_w [E, H], w13 [E, 2I, H], w2 [E, H, I]: bf16, normal at a trained layer's scale."""
    g = torch.Generator(device="cuda").manual_seed(1)
    return normal(g, E, H, std=H ** -0.5), normal(g, E, 2 * I, H, std=0.02), normal(g, E, H, I, std=0.02)


def runner(fn, mode):
    """A no-argument call of fn: a CUDA graph replay (captured after a warm-up on a side stream) or fn."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            out = fn()
    torch.cuda.current_stream().wait_stream(s)
    if mode == "eager":
        return fn, out
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph.replay, out


def time_rounds(calls, rounds, n):
    """Per-call ms of each runner in each round, the runners in rotated order per round."""
    ms = {k: [] for k in calls}
    names = list(calls)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            torch.cuda.synchronize()
            start.record()
            for _ in range(n):
                calls[k]()
            end.record()
            end.synchronize()
            ms[k].append(start.elapsed_time(end) / n)
    return ms


def plan_word(tt, op, *args):
    p = tt.explain(op, *args)
    if isinstance(p, tt.Plan):
        return p.selection_kind + ("" if p.selection_kind != "tuned" else f" {p.selection.info.tuned_problem}")
    return p.kind


def bucket(tt, ml, name, w, tokens, args):
    E, H, I, top_k, scoring, renorm = MODELS[name]
    router_w, w13, w2 = w
    x = normal(torch.Generator(device="cuda").manual_seed(tokens), tokens, H)
    layer = (lambda: ml.moe_layer_torch(x, router_w, w13, w2, top_k, renorm, scoring))
    compiled_fn = torch.compile(ml.moe_layer_torch, dynamic=False)
    fns = {"torch": layer,
           "compile": (lambda: compiled_fn(x, router_w, w13, w2, top_k, renorm, scoring)),
           "tune": (lambda: tt.moe_layer(x, router_w, w13, w2, top_k, renorm, scoring))}
    calls, outs, row = {}, {}, {"model": name, "tokens": tokens, "rows": tokens * top_k}
    for k, fn in fns.items():
        try:
            calls[k], outs[k] = runner(fn, args.mode)
        except Exception as e:  # noqa: BLE001 - a baseline that cannot run is reported, not fatal
            row[f"{k}_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    ms = time_rounds(calls, args.rounds, args.calls)
    for k in calls:
        row[f"{k}_us"] = statistics.median(ms[k]) * 1e3
    for k in ("torch", "compile"):
        if k in calls and "tune" in calls:
            r = [a / b for a, b in zip(ms[k], ms["tune"])]
            row[f"vs_{k}"] = (statistics.median(r), min(r), max(r))
    if "tune" in outs and "torch" in outs:
        d = (outs["tune"].float() - outs["torch"].float()).norm() / outs["torch"].float().norm().clamp_min(1e-30)
        row["rel_l2"] = d.item()
    routing_w, ids = ml.route(x, router_w, top_k, renorm, scoring)
    order, offsets = ml.permute(ids, E)
    xs = x.new_empty((tokens * top_k, H))
    row["swiglu_plan"] = plan_word(tt, "grouped_swiglu", xs, w13, offsets)
    row["down_plan"] = plan_word(tt, "grouped_mm", xs.new_empty((tokens * top_k, I)), w2, offsets)
    row["combine_plan"] = plan_word(tt, "moe_combine", xs, ml.inverse_order(order), routing_w)
    return row


def fmt_ratio(r):
    return f"{r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f})" if r else "-"


def table(rows):
    print("| tokens | rows | torch us | compile us | tune us | tune vs torch | tune vs compile | gate/up+SwiGLU "
          "| down | combine | rel L2 vs torch |")
    print("| ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- | --- | ---: |")
    for r in rows:
        us = [f"{r[k + '_us']:.1f}" if k + "_us" in r else "n/a" for k in IMPLS]
        rel = f"{r['rel_l2']:.1e}" if "rel_l2" in r else "-"
        print(f"| {r['tokens']} | {r['rows']} | {' | '.join(us)} | {fmt_ratio(r.get('vs_torch'))} | "
              f"{fmt_ratio(r.get('vs_compile'))} | {r['swiglu_plan']} | {r['down_plan']} | {r['combine_plan']} | {rel} |")
    for r in rows:
        for k in IMPLS:
            if k + "_error" in r:
                print(f"  {r['tokens']} tokens, {k}: {r[k + '_error']}")


def main():
    args = parse()
    if not torch.cuda.is_available():
        sys.exit("moe_layer.py: no CUDA device for torch")
    import tunert.torch as tt
    from tunert.torch import _ops_moe_layer as ml
    tt.use_bundle(args.bundle, strict=args.strict)
    from tunert.torch import _state
    missing = [f for f in FAMILIES if f not in _state.bundle_for(torch.cuda.current_device()).families]
    if missing:
        print(f"note: the bundle has no {', '.join(missing)}: PyTorch runs that part of tune's layer (counted below)")
    for knob in ("recompile_limit", "cache_size_limit"):  # a compile per (model, bucket): static shapes
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, max(getattr(torch._dynamo.config, knob), 64))
    print(f"device: {torch.cuda.get_device_name()}, driver {driver_version()}, torch {torch.__version__} "
          f"(CUDA {torch.version.cuda}), bundle {args.bundle}")
    print(f"mode {args.mode}: {args.rounds} interleaved rounds of {args.calls} calls each, per-call times\n")
    out = []
    for name in args.model.split(","):
        if name not in MODELS:
            sys.exit(f"moe_layer.py: no model {name!r} (models: {', '.join(MODELS)})")
        E, H, I, top_k, scoring, renorm = MODELS[name]
        print(f"{name}: E {E}, H {H}, I {I}, top-{top_k} {scoring}{', renormalized' if renorm else ''}")
        w = weights(E, H, I)
        rows = [bucket(tt, ml, name, w, int(t), args) for t in args.tokens.split(",")]
        del w
        table(rows)
        print()
        out += rows
    print("calls per op (tuned: our kernel; fallback/vendor: PyTorch), counted at capture in graph mode:")
    for op, c in tt.stats().items():
        print(f"  {op}: tuned {c['tuned']} {c['kinds']}, vendor {c['vendor']}, fallback {c['fallback']}"
              + (f" ({'; '.join(c['reasons'])})" if c["reasons"] else ""))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "driver": driver_version(), "torch": torch.__version__,
                       "mode": args.mode, "rounds": args.rounds, "calls": args.calls, "rows": out}, f, indent=1)


if __name__ == "__main__":
    main()
