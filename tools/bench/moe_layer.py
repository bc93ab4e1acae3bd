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

--fp8 row,tensor,block: the layer with e4m3 experts in each scaling given (DeepSeek-V3's 128 x 128
blocks, per channel, per expert), "tune" being tunert.torch.moe_layer_fp8 (moe.grouped_fp8 for both
GEMMs, moe.swiglu_fp8 between them, moe.combine) and "torch" the layer as a PyTorch model runs it
(tools/bench/moe_fp8_peer.py: torch._scaled_grouped_mm, or torch._scaled_mm per expert for block
scales, whose host read of the expert offsets keeps it out of a CUDA graph: block runs eagerly, and
"compile" is not run for it).
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
    "deepseek-v3": (256, 7168, 2048, 8, "sigmoid", True),
}
IMPLS = ("torch", "compile", "tune")
FAMILIES = ("moe.grouped_swiglu", "moe.grouped", "moe.combine")  # what tune's layer takes from the bundle
FAMILIES_FP8 = ("moe.grouped_fp8", "moe.swiglu_fp8", "moe.swiglu_fp8_static", "moe.combine")


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True, help="the tune bundle with moe.grouped_swiglu, moe.grouped and moe.combine")
    ap.add_argument("--model", default="mixtral-8x7b,qwen3-235b",
                    help=f"comma-separated, of {', '.join(MODELS)} (default mixtral-8x7b,qwen3-235b)")
    ap.add_argument("--tokens", default="1,8,64,512,4096", help="token buckets (default 1,8,64,512,4096)")
    ap.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default 10)")
    ap.add_argument("--calls", type=int, default=20, help="calls (graph replays) per timing (default 20)")
    ap.add_argument("--mode", choices=("graph", "eager"), default="graph",
                    help="graph (default; block scales run eager: see --fp8) or eager")
    ap.add_argument("--fp8", help="comma-separated scalings of e4m3 experts, of row, tensor, block: the FP8 layer "
                    "(default: the bf16 layer)")
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


def bf16_layers(tt, model, w):
    """({impl: layer(x)}, plans(x)) of the bf16 layer: moe_layer_torch eager and compiled, tune's."""
    from tunert.torch import _ops_moe_layer as ml
    E, H, I, top_k, scoring, renorm = MODELS[model]
    router_w, w13, w2 = w
    compiled = torch.compile(ml.moe_layer_torch, dynamic=False)
    layers = {"torch": lambda x: ml.moe_layer_torch(x, router_w, w13, w2, top_k, renorm, scoring),
              "compile": lambda x: compiled(x, router_w, w13, w2, top_k, renorm, scoring),
              "tune": lambda x: tt.moe_layer(x, router_w, w13, w2, top_k, renorm, scoring)}

    def plans(x):
        routing_w, ids = ml.route(x, router_w, top_k, renorm, scoring)
        order, offsets = ml.permute(ids, E)
        xs = x.new_empty((x.shape[0] * top_k, H))
        return {"gate/up+SwiGLU": plan_word(tt, "grouped_swiglu", xs, w13, offsets),
                "down": plan_word(tt, "grouped_mm", xs.new_empty((xs.shape[0], I)), w2, offsets),
                "combine": plan_word(tt, "moe_combine", xs, ml.inverse_order(order), routing_w)}
    return layers, plans


def fp8_layers(tt, model, w, mode):
    """({impl: layer(x)}, plans(x)) of the FP8 layer in scaling `mode`: tools/bench/moe_fp8_peer.py's
    (eager, and compiled where it runs in a graph) and tunert.torch.moe_layer_fp8."""
    import moe_fp8_peer as peer
    from tunert.torch import _ops_moe_layer as ml
    from tunert.torch import _ops_moe_layer_fp8 as ml8
    E, H, I, top_k, scoring, renorm = MODELS[model]
    router_w, w13, s13, w2, s2 = w
    args = (router_w, w13, s13, w2, s2, top_k, renorm, scoring)
    layers = {"torch": lambda x: peer.layer_fp8(x, *args, mode), "tune": lambda x: tt.moe_layer_fp8(x, *args)}
    if peer.GRAPH_SAFE[mode]:
        compiled = torch.compile(peer.layer_fp8, dynamic=False)
        layers["compile"] = lambda x: compiled(x, *args, mode)

    def operands(rows, K):   # the shapes of an expert GEMM's quantized input and its scale
        scale = {"block": (rows, -(-K // 128)), "row": (rows,), "tensor": (1,)}[mode]
        return (torch.empty((rows, K), dtype=torch.float8_e4m3fn, device="cuda"),
                torch.empty(scale, dtype=torch.float32, device="cuda"))

    def plans(x):
        routing_w, ids = ml.route(x, router_w, top_k, renorm, scoring)
        order, offsets = ml.permute(ids, E)
        rows = x.shape[0] * top_k
        g = x.new_empty((rows, 2 * I))
        quants = [ml8.QUANT_OF[mode]] if mode != "tensor" else ["token", "static"]
        static = torch.ones(1, dtype=torch.float32, device="cuda")
        (a8, sa), (h8, sh) = operands(rows, H), operands(rows, I)
        return {"gate/up": plan_word(tt, "grouped_scaled_mm", a8, w13, offsets, sa, s13),
                "SwiGLU quant": " / ".join(plan_word(tt, "swiglu_quant_fp8", g, q, static if q == "static" else None)
                                           for q in quants),
                "down": plan_word(tt, "grouped_scaled_mm", h8, w2, offsets, sh, s2),
                "combine": plan_word(tt, "moe_combine", x.new_empty((rows, H)), ml.inverse_order(order), routing_w)}
    return layers, plans


def bucket(model, layers, plans, tokens, mode, args):
    """One token bucket: each layer captured (graph) or called (eager), timed in interleaved rounds."""
    x = normal(torch.Generator(device="cuda").manual_seed(tokens), tokens, MODELS[model][1])
    calls, outs, row = {}, {}, {"model": model, "tokens": tokens, "rows": tokens * MODELS[model][3]}
    for k, layer in layers.items():
        try:
            calls[k], outs[k] = runner(lambda layer=layer: layer(x), mode)
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
    row["plans"] = plans(x)
    return row


def fmt_ratio(r):
    return f"{r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f})" if r else "-"


def table(rows):
    steps = list(rows[0]["plans"])
    print("| tokens | rows | torch us | compile us | tune us | tune vs torch | tune vs compile | "
          + " | ".join(steps) + " | rel L2 vs torch |")
    print("| ---: | ---: | ---: | ---: | ---: | --- | --- | " + "--- | " * len(steps) + "---: |")
    for r in rows:
        us = [f"{r[k + '_us']:.1f}" if k + "_us" in r else "n/a" for k in IMPLS]
        rel = f"{r['rel_l2']:.1e}" if "rel_l2" in r else "-"
        print(f"| {r['tokens']} | {r['rows']} | {' | '.join(us)} | {fmt_ratio(r.get('vs_torch'))} | "
              f"{fmt_ratio(r.get('vs_compile'))} | {' | '.join(r['plans'].values())} | {rel} |")
    for r in rows:
        for k in IMPLS:
            if k + "_error" in r:
                print(f"  {r['tokens']} tokens, {k}: {r[k + '_error']}")


def sections(args):
    """(model, scaling or None) of each table the arguments ask for, checked before any GPU work."""
    models = args.model.split(",")
    scalings = args.fp8.split(",") if args.fp8 else [None]
    for name in models:
        if name not in MODELS:
            sys.exit(f"moe_layer.py: no model {name!r} (models: {', '.join(MODELS)})")
    for mode in scalings:
        if mode is not None and mode not in ("row", "tensor", "block"):
            sys.exit(f"moe_layer.py: --fp8 {mode!r}: want row, tensor or block")
    return [(name, mode) for name in models for mode in scalings]


def run_section(tt, name, scaling, args):
    """The rows of one model (bf16, or e4m3 experts in `scaling`) over the token buckets."""
    import moe_fp8_peer as peer
    E, H, I, top_k, scoring, renorm = MODELS[name]
    mode = args.mode if scaling is None or peer.GRAPH_SAFE[scaling] else "eager"
    what = "bf16 experts" if scaling is None else f"e4m3 experts, {scaling} scales"
    print(f"{name}: E {E}, H {H}, I {I}, top-{top_k} {scoring}{', renormalized' if renorm else ''}; {what}; "
          f"mode {mode}")
    if scaling is None:
        layers, plans = bf16_layers(tt, name, weights(E, H, I))
    else:
        layers, plans = fp8_layers(tt, name, peer.fp8_weights(E, H, I, scaling), scaling)
    rows = [dict(bucket(name, layers, plans, int(t), mode, args), scaling=scaling or "bf16", mode=mode)
            for t in args.tokens.split(",")]
    table(rows)
    print()
    return rows


def main():
    args = parse()
    todo = sections(args)
    if not torch.cuda.is_available():
        sys.exit("moe_layer.py: no CUDA device for torch")
    import tunert.torch as tt
    tt.use_bundle(args.bundle, strict=args.strict)
    from tunert.torch import _state
    want = FAMILIES_FP8 if args.fp8 else FAMILIES
    missing = [f for f in want if f not in _state.bundle_for(torch.cuda.current_device()).families]
    if missing:
        print(f"note: the bundle has no {', '.join(missing)}: PyTorch runs that part of tune's layer (counted below)")
    for knob in ("recompile_limit", "cache_size_limit"):  # a compile per (model, bucket): static shapes
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, max(getattr(torch._dynamo.config, knob), 64))
    print(f"device: {torch.cuda.get_device_name()}, driver {driver_version()}, torch {torch.__version__} "
          f"(CUDA {torch.version.cuda}), bundle {args.bundle}")
    print(f"{args.rounds} interleaved rounds of {args.calls} calls each, per-call times\n")
    out = []
    for name, scaling in todo:
        out += run_section(tt, name, scaling, args)
        torch.cuda.empty_cache()
    print("calls per op (tuned: our kernel; fallback/vendor: PyTorch), counted at capture in graph mode:")
    for op, c in tt.stats().items():
        print(f"  {op}: tuned {c['tuned']} {c['kinds']}, vendor {c['vendor']}, fallback {c['fallback']}"
              + (f" ({'; '.join(c['reasons'])})" if c["reasons"] else ""))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "driver": driver_version(), "torch": torch.__version__,
                       "rounds": args.rounds, "calls": args.calls, "rows": out}, f, indent=1)


if __name__ == "__main__":
    main()
