"""PyTorch ops over a tune bundle (torch.library custom ops in the `tunert` namespace).

    import tunert.torch as tt
    tt.use_bundle("model.bundle")
    y = tt.linear(x, w)                      # x [..., K] @ w[N, K].T, family gemm
    o = tt.attention(q, k, v, causal=True)   # [B, H, S, D], attention.prefill_sm90 / attention.prefill
    o = tt.decode(q, k_cache, v_cache, block_table, seq_lens)  # paged decode, attention.decode
    o = tt.decode_fp8(q, k8, v8, k_scale, v_scale, block_table, seq_lens)  # e4m3 KV cache, attention.decode_fp8
    y = tt.rmsnorm(x, w); y, h = tt.rmsnorm(x, w, residual=r)  # rmsnorm / rmsnorm.add
    p = tt.softmax(x)                        # softmax / softmax.split / softmax.cluster
    o = tt.attention_varlen(q, k, v, cu_seqlens)  # packed [T, H, D], attention.varlen
    c = tt.grouped_mm(a, w, offsets)         # MoE experts, moe.grouped (grouped_mm_masked: masked)
    c = tt.scaled_mm(a8, b8, sa, sb)         # FP8 e4m3, gemm.fp8 (tensor / row / block scales)
    c = tt.grouped_scaled_mm(a8, w8, offsets, sa, sw)  # FP8 MoE experts, moe.grouped_fp8 (masked: _masked)
    y = tt.moe_layer_fp8(x, router_w, w13, s13, w2, s2, top_k)  # MoE MLP on e4m3 experts
    y8, s = tt.swiglu_quant_fp8(g13, "group")  # silu(gate) * up to e4m3, moe.swiglu_fp8 (token, static too)
    print(tt.stats())                        # tuned / vendor / fallback / cpu calls per op

A problem the bundle cannot serve runs the PyTorch equivalent (counted; strict mode raises);
CPU tensors always run the PyTorch reference. See docs/python.md.
"""
from ._ops import attention, decode, linear, prefill, rmsnorm, rmsnorm_add, rmsnorm_op, softmax, softmax_op
from ._ops_varlen import attention_varlen
from ._ops_moe import grouped_mm, grouped_mm_masked
from ._ops_moe_layer import grouped_swiglu, moe_layer, moe_layer_torch
from ._ops_moe_layer import moe_combine
from ._ops_fp8 import scaled_mm, scaled_mm_op
from ._ops_moe_fp8 import (grouped_scaled_mm, grouped_scaled_mm_masked, grouped_scaled_mm_masked_op,
                           grouped_scaled_mm_op)
from ._ops_moe_layer_fp8 import moe_layer_fp8, moe_layer_fp8_torch
from ._ops_decode_fp8 import decode_fp8
from ._ops_norm_fp8 import rmsnorm_add_fp8, rmsnorm_add_fp8_op, rmsnorm_add_fp8_static_op
from ._ops_swiglu_fp8 import swiglu_quant_fp8, swiglu_quant_fp8_op, swiglu_quant_fp8_static_op
from ._state import Fallback, Plan, bundle_path, is_strict, reset_stats, set_strict, stats, use_bundle
from ._explain import explain

__all__ = ["use_bundle", "set_strict", "is_strict", "bundle_path", "stats", "reset_stats", "explain",
           "linear", "attention", "prefill", "decode", "rmsnorm", "rmsnorm_add", "softmax",
           "attention_varlen", "grouped_mm", "grouped_mm_masked", "scaled_mm",
           "grouped_swiglu", "moe_layer", "moe_layer_torch", "rmsnorm_add_fp8",
           "decode_fp8", "grouped_scaled_mm", "grouped_scaled_mm_masked", "moe_layer_fp8", "moe_layer_fp8_torch",
           "swiglu_quant_fp8", "swiglu_quant_fp8_op", "swiglu_quant_fp8_static_op",
           "rmsnorm_op", "softmax_op", "scaled_mm_op",
           "grouped_scaled_mm_op", "grouped_scaled_mm_masked_op", "Plan", "Fallback"]
