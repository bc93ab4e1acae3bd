"""tunert::swiglu_quant_fp8 and tunert::swiglu_quant_fp8_static: SwiGLU + fp8 e4m3 quantization in
one pass, families moe.swiglu_fp8 (1 x 128 group or per-token scales) and moe.swiglu_fp8_static (one
static scale) of recipes/moe/swiglu_fp8.lua; what an FP8 MoE layer runs between its gate/up and its
down expert GEMMs:

    x [..., 2N] bf16: gate = x[..., :N], up = x[..., N:]   (vLLM's silu_and_mul layout)
    h = silu(gate) * up                                     fp32, not rounded to bf16
    quant "group":  scale [..., ceil(N/128)], per 128 columns (the last group may be partial)
    quant "token":  scale [...], per row
    quant "static": the given f32 scale (one element), returned as given
    each dynamic scale max(amax(|h|) / 448, 1 / (448 * 512)) (_ops_norm_fp8.e4m3_scale)
    y [..., N] = e4m3((h / scale).clamp(-448, 448))

    y8, s = tt.swiglu_quant_fp8(g13, "group")                   # g13: the gate/up GEMM's output
    out = tt.grouped_scaled_mm(y8, w2, offsets, s, w2_scale)     # scale 'block' of moe.grouped_fp8

The scales are scale_a of moe.grouped_fp8 as they are: group for its scale 'block' ([T, ceil(K/128)]),
token for 'row', static for 'tensor'. The tuned kernel (sm_90a) needs N % 8 == 0; other N, and x
not bf16, take the PyTorch path (counted as a fallback).
"""
import warnings
from typing import Tuple

import torch
import torch.nn.functional as F

from ..errors import DTypeMismatch, InvalidArgument
from . import _ops, _state
from ._ops import _cuda_kernel, _device_index, _dt, _run
from ._ops_fp8 import _cdiv
from ._ops_norm_fp8 import check_static_scale, quantize_e4m3, to_e4m3

GROUP = 128      # columns of a group's scale (quant "group")
QUANTS = ("group", "token", "static")


def _quantize(x, quant, scale=None):
    """The PyTorch equivalent: (y, scale) with the group scales [..., ceil(N/128)], the token scales
    [...], or scale itself (static)."""
    N = x.shape[-1] // 2
    xf = x.float()
    h = F.silu(xf[..., :N]) * xf[..., N:]
    if quant == "static":
        return to_e4m3(h / scale.float().reshape(())), scale
    return quantize_e4m3(h, "row" if quant == "token" else "group", GROUP)


_compiled = {}  # quant -> _quantize of that mode under torch.compile


def _quantize_compiled(x, quant, scale):
    """The vendor entry "torch-compile" (tools/peers/peer_family_swiglu_fp8.py): _quantize under
    torch.compile, as the peer timed it (inductor fuses it into one kernel; it beats the tuned kernels
    on a few static-scale problems of few rows). Eager where torch.compile cannot run (a warning)."""
    if x.device.type != "cuda":
        return _quantize(x, quant, scale)
    fn = _compiled.get(quant)
    if fn is None:
        fn = _compiled[quant] = torch.compile(lambda x_, s_: _quantize(x_, quant, s_))
    try:
        return fn(x, scale)
    except Exception as e:  # noqa: BLE001 - no triton / inductor here: the eager path is the same math
        warnings.warn(f"tunert.torch.swiglu_quant_fp8: torch.compile failed ({type(e).__name__}: {e}); running eagerly")
        _compiled[quant] = lambda x_, s_: _quantize(x_, quant, s_)
        return _quantize(x, quant, scale)


def _check_quant(op, quant, scale):
    """quant one of QUANTS, with a scale exactly when it is 'static': what swiglu_quant_fp8 needs to
    pick its op (the ops check the rest)."""
    if quant not in QUANTS:
        raise InvalidArgument(f"tunert.torch.{op}: quant {quant!r}: want one of {QUANTS}")
    if quant != "static":
        if scale is not None:
            raise InvalidArgument(f"tunert.torch.{op}: quant {quant!r} computes its scales: pass no scale "
                                  f"(quant 'static' reads one)")
    elif scale is None:
        raise InvalidArgument(f"tunert.torch.{op}: quant 'static' needs a scale (f32, one element)")


def _check(op, x, quant, scale):
    _check_quant(op, quant, scale)
    if x.dim() < 1 or x.shape[-1] % 2 or x.shape[-1] == 0:
        raise InvalidArgument(f"tunert.torch.{op}: x {tuple(x.shape)}: want [..., 2N] (gate columns, then up)")
    if x.dtype != torch.bfloat16:
        raise DTypeMismatch(f"tunert.torch.{op}: x is {x.dtype}, want torch.bfloat16")
    if not hasattr(torch, "float8_e4m3fn"):
        raise DTypeMismatch(f"tunert.torch.{op}: this torch has no float8_e4m3fn")
    if quant == "static":
        check_static_scale(op, x, scale)


def _body(op, x, quant, scale):
    if not x.is_cuda:
        _state.count(op, "cpu")
        return _quantize(x, quant, scale)
    dev = _device_index(x)
    return _run(op, dev, _problem(dev, x, quant, scale))


def _dynamic_body(x: torch.Tensor, quant: str = "group") -> Tuple[torch.Tensor, torch.Tensor]:
    """y e4m3 and the group ("group") or per-row ("token") f32 scales of silu(gate) * up. Family
    moe.swiglu_fp8."""
    _check("swiglu_quant_fp8", x, quant, None)   # quant 'static' without a scale is refused here
    return _body("swiglu_quant_fp8", x, quant, None)


def _static_body(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """y e4m3 of silu(gate) * up / scale. Family moe.swiglu_fp8_static."""
    _check("swiglu_quant_fp8", x, "static", scale)
    return _body("swiglu_quant_fp8_static", x, "static", scale)[0]


swiglu_quant_fp8_op = torch.library.custom_op("tunert::swiglu_quant_fp8", mutates_args=())(_dynamic_body)
_cuda_kernel("tunert::swiglu_quant_fp8", _dynamic_body)
swiglu_quant_fp8_static_op = torch.library.custom_op("tunert::swiglu_quant_fp8_static",
                                                     mutates_args=())(_static_body)
_cuda_kernel("tunert::swiglu_quant_fp8_static", _static_body)


def _problem(dev, x, quant="group", scale=None):
    """(key, candidates, tensors_fn, reference) of _ops._run; the result is (y, scale)."""
    N = x.shape[-1] // 2
    T = x.numel() // (2 * N) if N else 0
    kb = _cdiv(N, GROUP)
    dynamic = quant != "static"
    family = "moe.swiglu_fp8" if dynamic else "moe.swiglu_fp8_static"
    n_scale = {"group": T * kb, "token": T, "static": 1}[quant]
    key = (family, dev, T, N, quant, x.dtype, None if dynamic else scale.dtype)

    def candidates():
        tensors = {"x": ((T, 2 * N), _dt(x)), "y": ((T, N), "e4m3"),
                   "scale": ((n_scale,), "f32" if dynamic else _dt(scale))}
        dims = {"T": T, "N": N, "quant": quant}
        return [(family, dims, tensors, dims, {}, ())]

    def tensors_fn():
        lead = x.shape[:-1]
        y = torch.empty(*lead, N, dtype=torch.float8_e4m3fn, device=x.device)
        t = {"x": x.contiguous().view(T, 2 * N), "y": y.view(T, N)}
        if quant == "group":
            s = torch.empty(*lead, kb, dtype=torch.float32, device=x.device)
        elif quant == "token":
            s = torch.empty(lead, dtype=torch.float32, device=x.device)
        else:
            s = scale
        t["scale"] = s.reshape(n_scale) if dynamic else scale.reshape(1)
        return t, (y, s)

    def reference():
        return _quantize(x, quant, scale)

    # the vendor entries' implementations, by the peer names that earn them
    reference.vendor_impls = {"torch-compile": lambda: _quantize_compiled(x, quant, scale)}
    return key, candidates, tensors_fn, reference


@swiglu_quant_fp8_op.register_fake
def _(x, quant="group"):
    N = x.shape[-1] // 2
    y = x.new_empty((*x.shape[:-1], N), dtype=torch.float8_e4m3fn)
    if quant == "group":
        return y, x.new_empty((*x.shape[:-1], _cdiv(N, GROUP)), dtype=torch.float32)
    return y, x.new_empty(x.shape[:-1], dtype=torch.float32)


@swiglu_quant_fp8_static_op.register_fake
def _(x, scale):
    return x.new_empty((*x.shape[:-1], x.shape[-1] // 2), dtype=torch.float8_e4m3fn)


def swiglu_quant_fp8(x, quant="group", scale=None):
    """silu(x[..., :N]) * x[..., N:] quantized to e4m3 in one pass: returns (y [..., N], scale), the
    scale [..., ceil(N/128)] (quant "group"), [...] ("token"), or the given f32 one-element scale
    ("static"). See the module."""
    _check_quant("swiglu_quant_fp8", quant, scale)   # the op bodies check x and the scale
    if quant == "static":
        return swiglu_quant_fp8_static_op(x, scale), scale
    return swiglu_quant_fp8_op(x, quant)


_ops.PROBLEMS["swiglu_quant_fp8"] = _problem
