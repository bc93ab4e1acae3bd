"""moe_fp8_peer.py: the FP8 Mixture-of-Experts layer as a PyTorch model runs it, the peer of
tunert.torch.moe_layer_fp8 in tools/bench/moe_layer.py (--fp8), and the layer's e4m3 test weights.

The same algorithm as tune's layer (python/src/tunert/torch/_ops_moe_layer_fp8.py): the routing, the
permutation, the layer input's quantization and the weighted combination are the package's PyTorch
ops; what differs is where PyTorch has a library call of its own:
  expert GEMMs  row and tensor scales: torch._scaled_grouped_mm, one launch over the experts (a
                tensor scale expanded to the rows and channels it scales: the same product);
                block scales: torch._scaled_mm per expert (cuBLASLt's 1 x 128 / 128 x 128 blockwise
                scaling), the experts' rows read on the host, so no CUDA graph (run it --mode eager)
  SwiGLU        h = silu(gate) * up in bf16 (two ops, as a model writes them), then quantized to e4m3
                in the down GEMM's scaling (tensor: one dynamic scale for the batch, one pass)
The values differ from tune's by the roundings of h (tune keeps it in fp32), not by the work.
"""
import torch
import torch.nn.functional as F

SCALINGS = ("row", "tensor", "block")
GRAPH_SAFE = {"row": True, "tensor": True, "block": False}   # no host read on the call path
CHECKPOINT_RANGE = 64.0   # e4m3 weights ~ N(0, 64): a quantized checkpoint's use of the format


def weight_scales(E, N, K, mode, std, g, device="cuda"):
    """f32 scales of e4m3 weights [E, N, K] ~ N(0, CHECKPOINT_RANGE) that dequantize them to about
    N(0, std): std / CHECKPOINT_RANGE * U(0.5, 1.5) per expert (tensor), per channel (row) or per
    128 x 128 block (block)."""
    shape = {"tensor": (E,), "row": (E, N), "block": (E, -(-N // 128), -(-K // 128))}[mode]
    u = torch.rand(shape, device=device, generator=g) + 0.5
    return u * (std / CHECKPOINT_RANGE)


def fp8_weights(E, H, I, mode, std=0.02):
    """(router_w bf16 [E, H], w13 e4m3 [E, 2I, H], s13, w2 e4m3 [E, H, I], s2), the scales in `mode`;
    drawn one expert at a time so that a large layer needs no fp32 copy of its weights."""
    g = torch.Generator(device="cuda").manual_seed(1)
    router_w = torch.empty((E, H), dtype=torch.bfloat16, device="cuda").normal_(0.0, H ** -0.5, generator=g)

    def draw(N, K):
        w = torch.empty((E, N, K), dtype=torch.float8_e4m3fn, device="cuda")
        for e in range(E):
            w[e] = (torch.randn((N, K), device="cuda", generator=g) * CHECKPOINT_RANGE).clamp(-448, 448).to(w.dtype)
        return w, weight_scales(E, N, K, mode, std, g)
    w13, s13 = draw(2 * I, H)
    w2, s2 = draw(H, I)
    return router_w, w13, s13, w2, s2


def _grouped_gemm(mode):
    """gemm(a8, w8, offsets, sa, sw) -> bf16 [rows, N] by PyTorch's FP8 library calls (the module)."""
    from tunert.torch import _ops_moe_fp8 as mf
    if mode == "block":
        return lambda a8, w8, offsets, sa, sw: mf._contiguous_ref(a8, w8, offsets, sa, sw, "block",
                                                                   torch.bfloat16, mf._vendor_mm)

    def gemm(a8, w8, offsets, sa, sw):
        if mode == "tensor":   # the scales each row and channel gets, as _scaled_grouped_mm takes them
            E, N = w8.shape[0], w8.shape[1]
            sa, sw = sa.reshape(1).expand(a8.shape[0]).contiguous(), sw.reshape(E, 1).expand(E, N).contiguous()
        return mf._grouped_rowwise(a8, w8, offsets, sa, sw)   # no loop fallback: a failure is reported
    return gemm


def layer_fp8(x, router_w, w13, s13, w2, s2, top_k, renormalize, scoring, mode):
    """The FP8 MoE layer in PyTorch (the module): x [T, H] bf16 -> [T, H] bf16."""
    from tunert.torch import _ops_moe_layer as ml
    from tunert.torch import _ops_moe_layer_fp8 as ml8
    gemm = _grouped_gemm(mode)

    def swiglu(a, w13_, offsets):
        a8, sa = ml8.quantize(a, mode)
        g = gemm(a8, w13_, offsets, sa, s13)
        inter = g.shape[1] // 2
        return ml8.quantize(F.silu(g[:, :inter]) * g[:, inter:], mode)

    def down(h, w2_, offsets):
        h8, sh = h
        return gemm(h8, w2_, offsets, sh, s2)
    return ml._layer(x, router_w, w13, w2, top_k, renormalize, scoring, swiglu, down, ml.combine)
