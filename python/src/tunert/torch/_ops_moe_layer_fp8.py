"""tunert::moe_layer_fp8: moe_layer's Mixture-of-Experts MLP with FP8 e4m3 experts, as FP8 checkpoints
of MoE models ship them (DeepSeek-V3's 128 x 128 weight blocks, per-channel or per-tensor scales):

    y = tt.moe_layer_fp8(x, router_w, w13, w13_scale, w2, w2_scale, top_k)

x [T, H] bf16; router_w [E, H]; w13 [E, 2I, H] and w2 [E, H, I] e4m3 (gate rows, then up rows, as
moe_layer), their f32 scales in one of grouped_scaled_mm's scalings, which the layer takes from the
scales' shapes: block (w13_scale [E, ceil(2I/128), ceil(H/128)], w2_scale [E, ceil(H/128),
ceil(I/128)]), row ([E, 2I], [E, H]) or tensor ([E], [E]). The routing, the permutation and the
weighted combination are moe_layer's (route, permute, tunert::moe_combine); each expert GEMM's input
is quantized to e4m3 in the weights' scaling (quantize: per token and 128 of K, per token, or one
scale for the batch; scale = amax / 448, e4m3's largest, floored as rmsnorm_add_fp8's), then multiplied by
tunert::grouped_scaled_mm (moe.grouped_fp8 through the bundle; its PyTorch path elsewhere). Between
the two, the gate/up GEMM's bf16 output goes through tunert.torch.swiglu_quant_fp8 (moe.swiglu_fp8
through the bundle): silu(gate) * up in fp32, quantized to e4m3 in the down GEMM's scaling without a
bf16 h in between (block: quant "group", row: "token"; tensor: the rows' "token" scales first, whose
maximum is the batch's scale by the same rule, then "static" with it: two passes, as a dynamic
per-tensor quantization needs). The layer input's quantization is a PyTorch op; moe_layer_fp8_torch
is the same layer with every GEMM and the SwiGLU quantization on their PyTorch paths.
"""
import torch

from ..errors import DeviceMismatch, DTypeMismatch
from . import _state
from ._ops_moe_fp8 import _contiguous_ref, grouped_scaled_mm
from ._ops_moe_layer import _combine_tuned, _layer, check_layer_shapes, combine
from ._ops_norm_fp8 import quantize_e4m3
from ._ops_swiglu_fp8 import _quantize as _swiglu_quant_torch
from ._ops_swiglu_fp8 import swiglu_quant_fp8

QUANT_OF = {"block": "group", "row": "token"}   # the weights' scaling -> swiglu_quant_fp8's quant


def quantize(x, mode):
    """(x8, scale) of x [R, K]: x8 e4m3 [R, K] with x ~ x8 * scale, scale f32 [R, ceil(K/128)] (block:
    per row and 128 of K), [R] (row) or [1] (tensor), each group's by rmsnorm_add_fp8's rule
    (_ops_norm_fp8.e4m3_scale: the absolute maximum onto 448, floored so that a zero group's is finite)."""
    return quantize_e4m3(x.float(), {"block": "group", "row": "row", "tensor": "tensor"}[mode])


def _mode_of(w13_scale, w2_scale):
    """The scaling of the two weight scales: their rank names it (block 3, row 2, tensor 1), one for both."""
    modes = {3: "block", 2: "row", 1: "tensor"}
    m13, m2 = modes.get(w13_scale.dim()), modes.get(w2_scale.dim())
    _state.check(m13 is not None and m13 == m2,
                 lambda: f"tunert.torch.moe_layer_fp8: w13_scale {tuple(w13_scale.shape)}, w2_scale "
                 f"{tuple(w2_scale.shape)}: want both block ([E, N/128, K/128]), row ([E, N]) or tensor ([E])")
    return m13


def swiglu_quantize(g, mode, act=swiglu_quant_fp8):
    """(h8, scale) of silu(gate) * up of the gate/up GEMM's output g [R, 2I], in `mode` (the scale
    shapes of quantize): act(g, quant[, scale]) is swiglu_quant_fp8 or its PyTorch path. tensor: the
    batch's scale is the largest of the rows' (e4m3_scale is monotone), then one static pass."""
    if mode != "tensor":
        return act(g, QUANT_OF[mode])
    _, rows = act(g, "token")
    return act(g, "static", rows.amax().reshape(1))


def _experts(w13_scale, w2_scale, mode, gemm, act=swiglu_quant_fp8):
    """(swiglu, down) for _layer over e4m3 weights: the layer input quantized in `mode`, the gate/up
    output quantized by swiglu_quantize(.., act), each GEMM gemm(a8, w8, offsets, scale_a, scale_w)."""
    def swiglu(a, w13, offsets):
        a8, sa = quantize(a, mode)
        return swiglu_quantize(gemm(a8, w13, offsets, sa, w13_scale), mode, act)

    def down(h, w2, offsets):
        h8, sh = h
        return gemm(h8, w2, offsets, sh, w2_scale)
    return swiglu, down


def _gemm_torch(mode):
    """grouped_scaled_mm's PyTorch path (fp32 dequantized, one rounding to bf16) for every expert GEMM."""
    return lambda a8, w8, offsets, sa, sw: _contiguous_ref(a8, w8, offsets, sa, sw, mode, torch.bfloat16)


def _check_layer(x, router_w, w13, w13_scale, w2, w2_scale, top_k, scoring):
    check_layer_shapes("moe_layer_fp8", x, router_w, w13, w2, top_k, scoring)
    if x.dtype != torch.bfloat16:
        raise DTypeMismatch(f"tunert.torch.moe_layer_fp8: x is {x.dtype}, want torch.bfloat16")
    for name, t in (("router_w", router_w), ("w13", w13), ("w13_scale", w13_scale), ("w2", w2),
                    ("w2_scale", w2_scale)):
        if t.device != x.device and x.device.type != "meta":
            raise DeviceMismatch(f"tunert.torch.moe_layer_fp8: {name} on {t.device}, x on {x.device}: keep them on "
                                 f"one device")
    return _mode_of(w13_scale, w2_scale)


def moe_layer_fp8_torch(x, router_w, w13, w13_scale, w2, w2_scale, top_k, renormalize=True, scoring="softmax"):
    """moe_layer_fp8 with every expert GEMM on grouped_scaled_mm's PyTorch path (fp32 dequantized), the
    SwiGLU quantization on swiglu_quant_fp8's and the combination in PyTorch: the same quantization,
    routing and roundings, the reference."""
    mode = _check_layer(x, router_w, w13, w13_scale, w2, w2_scale, top_k, scoring)
    swiglu, down = _experts(w13_scale, w2_scale, mode, _gemm_torch(mode), _swiglu_quant_torch)
    return _layer(x, router_w, w13, w2, top_k, renormalize, scoring, swiglu, down, combine)


@torch.library.custom_op("tunert::moe_layer_fp8", mutates_args=())
def moe_layer_fp8(x: torch.Tensor, router_w: torch.Tensor, w13: torch.Tensor, w13_scale: torch.Tensor,
                  w2: torch.Tensor, w2_scale: torch.Tensor, top_k: int, renormalize: bool = True,
                  scoring: str = "softmax") -> torch.Tensor:
    """A Mixture-of-Experts MLP with e4m3 experts (see the module): x [T, H] bf16 -> [T, H] bf16, each
    token's top_k experts by softmax (or sigmoid) of x @ router_w.T. The expert GEMMs are
    tunert.torch.grouped_scaled_mm (moe.grouped_fp8), the combination tunert.torch.moe_combine."""
    mode = _check_layer(x, router_w, w13, w13_scale, w2, w2_scale, top_k, scoring)
    if x.shape[0] == 0:
        return x.new_empty(x.shape)
    swiglu, down = _experts(w13_scale, w2_scale, mode, grouped_scaled_mm)
    return _layer(x, router_w, w13, w2, top_k, renormalize, scoring, swiglu, down, _combine_tuned)


@moe_layer_fp8.register_fake
def _(x, router_w, w13, w13_scale, w2, w2_scale, top_k, renormalize=True, scoring="softmax"):
    return x.new_empty(x.shape)
