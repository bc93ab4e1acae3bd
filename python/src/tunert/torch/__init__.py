"""PyTorch ops over a tune bundle (torch.library custom ops in the `tunert` namespace).

    import tunert.torch as tt
    tt.use_bundle("model.bundle")
    y = tt.linear(x, w)                      # x [..., K] @ w[N, K].T, family gemm
    o = tt.attention(q, k, v, causal=True)   # [B, H, S, D], attention.prefill_sm90 / attention.prefill
    o = tt.decode(q, k_cache, v_cache, block_table, seq_lens)  # paged decode, attention.decode
    y = tt.rmsnorm(x, w); y, h = tt.rmsnorm(x, w, residual=r)  # rmsnorm / rmsnorm.add
    p = tt.softmax(x)                        # softmax / softmax.split / softmax.cluster
    print(tt.stats())                        # tuned / vendor / fallback / cpu calls per op

A problem the bundle cannot serve runs the PyTorch equivalent (counted; strict mode raises);
CPU tensors always run the PyTorch reference. See docs/python.md.
"""
from ._ops import attention, decode, linear, prefill, rmsnorm, rmsnorm_add, rmsnorm_op, softmax, softmax_op
from ._state import Fallback, Plan, bundle_path, is_strict, reset_stats, set_strict, stats, use_bundle
from ._explain import explain

__all__ = ["use_bundle", "set_strict", "is_strict", "bundle_path", "stats", "reset_stats", "explain",
           "linear", "attention", "prefill", "decode", "rmsnorm", "rmsnorm_add", "softmax",
           "rmsnorm_op", "softmax_op", "Plan", "Fallback"]
