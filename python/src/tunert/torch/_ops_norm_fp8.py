"""tunert::rmsnorm_add_fp8 and tunert::rmsnorm_add_fp8_static: residual add + RMSNorm + fp8 e4m3
quantization in one pass, families rmsnorm.fp8 (dynamic per-token scales) and rmsnorm.fp8_static
(one static scale) of recipes/rmsnorm/fp8.lua; what an FP8 engine runs before each FP8 linear:

    h = x + residual               written back into `residual` (in place, as vLLM's
                                   fused_add_rms_norm does): the new residual stream
    v = h * rsqrt(mean(h^2, -1) + eps) * weight      (fp32)
    scale None:   scale = max(amax(|v|, -1) / 448, 1 / (448 * 512)) per token, returned [...]
    scale given:  that f32 scale (one element), returned as given
    y = e4m3((v / scale).clamp(-448, 448))

    y, s = tt.rmsnorm_add_fp8(x, residual, w, 1e-6)          # residual now holds x + residual
    c = tt.scaled_mm(y.view(-1, H), w8, s.view(-1), w8_scale) # per-token scales as scale_a

The per-token scale has x's leading shape ([T] for x [T, H]: tt.scaled_mm's row scale; unsqueeze
it to [T, 1] for torch._scaled_mm). The tuned kernel updates a contiguous residual in place (it
reads each element once before writing it); a non-contiguous one is updated through a copy.
"""
from typing import Tuple

import torch

from ..errors import DeviceMismatch, DTypeMismatch, InvalidArgument
from . import _ops, _state
from ._ops import _cuda_kernel, _device_index, _dt, _norm_check, _run

E4M3_MAX = 448.0
MIN_SCALE = 1.0 / (448.0 * 512.0)   # a zero row's scale stays finite (vLLM's floor)


def e4m3_scale(amax):
    """The dynamic scale of a group of values: its absolute maximum onto e4m3's largest, floored."""
    return (amax / E4M3_MAX).clamp(min=MIN_SCALE)


def to_e4m3(v):
    """v (already divided by its scale) as e4m3: clamped first, as a cast past the largest value is not
    saturated (the division's rounding can pass it by an ulp)."""
    return v.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)


def quantize_e4m3(h, per, group=128):
    """(y e4m3, scale f32) of h [..., K] with h ~ y * scale, each scale by e4m3_scale: per "group" (of
    `group` columns, the last partial: scale [..., ceil(K / group)]), "row" ([...]) or "tensor" ([1])."""
    if per == "group":
        lead, K = h.shape[:-1], h.shape[-1]
        kb = -(-K // group)
        groups = torch.nn.functional.pad(h.reshape(-1, K), (0, kb * group - K)).view(-1, kb, group)
        s = e4m3_scale(groups.abs().amax(-1))
        y = to_e4m3((groups / s[..., None]).view(-1, kb * group)[:, :K]).contiguous()
        return y.view(*lead, K), s.view(*lead, kb)
    if per == "row":
        s = e4m3_scale(h.abs().amax(-1))
        return to_e4m3(h / s[..., None]), s
    s = e4m3_scale(h.abs().amax().reshape(1))
    return to_e4m3(h / s), s


def _quantize(x, residual, w, eps, scale):
    """The PyTorch equivalent, out of place: (y, per-token scale or None, h)."""
    h = (x.float() + residual.float()).to(residual.dtype)   # h as stored, then normalized
    hf = h.float()
    v = hf * w.float() * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps)
    s = e4m3_scale(v.abs().amax(-1, keepdim=True)) if scale is None else scale.float().reshape(())
    y = to_e4m3(v / s)
    return y, (s.squeeze(-1) if scale is None else None), h


def _reference(x, residual, w, eps, scale):
    y, s, h = _quantize(x, residual, w, eps, scale)
    residual.copy_(h)
    return y, s


def _check(op, x, residual, w, scale):
    _norm_check(op, x, w, residual)
    if not hasattr(torch, "float8_e4m3fn"):
        raise DTypeMismatch(f"tunert.torch.{op}: this torch has no float8_e4m3fn")
    if scale is not None:
        check_static_scale(op, x, scale, ", or None for per-token scales")


def check_static_scale(op, x, scale, otherwise=""):
    """scale: a static per-tensor scale, one f32 element on x's device (otherwise: what else the op takes)."""
    if scale.dtype != torch.float32:
        raise DTypeMismatch(f"tunert.torch.{op}: scale is {scale.dtype}, want torch.float32")
    if scale.device != x.device and x.device.type != "meta":
        raise DeviceMismatch(f"tunert.torch.{op}: scale on {scale.device}, x on {x.device}")
    if scale.numel() != 1:
        raise InvalidArgument(f"tunert.torch.{op}: scale {tuple(scale.shape)}: want one element (a static "
                              f"per-tensor scale){otherwise}")


def _body(op, x, residual, w, eps, scale):
    if not x.is_cuda:
        _state.count(op, "cpu")
        return _reference(x, residual, w, eps, scale)
    dev = _device_index(x)
    y, s, staged = _run(op, dev, _problem(dev, x, residual, w, eps, scale))
    if staged is not None:
        residual.copy_(staged)
    return y, s


def _dynamic_body(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor,
                  eps: float = 1e-6) -> Tuple[torch.Tensor, torch.Tensor]:
    """residual += x (in place); y e4m3 and per-token f32 scales of rmsnorm(residual) * weight.
    Family rmsnorm.fp8."""
    _check("rmsnorm_add_fp8", x, residual, weight, None)
    return _body("rmsnorm_add_fp8", x, residual, weight, eps, None)


def _static_body(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor,
                 eps: float = 1e-6) -> torch.Tensor:
    """residual += x (in place); y e4m3 of rmsnorm(residual) * weight / scale. Family
    rmsnorm.fp8_static."""
    _check("rmsnorm_add_fp8", x, residual, weight, scale)
    return _body("rmsnorm_add_fp8_static", x, residual, weight, eps, scale)[0]


rmsnorm_add_fp8_op = torch.library.custom_op("tunert::rmsnorm_add_fp8", mutates_args=("residual",))(_dynamic_body)
_cuda_kernel("tunert::rmsnorm_add_fp8", _dynamic_body)
rmsnorm_add_fp8_static_op = torch.library.custom_op("tunert::rmsnorm_add_fp8_static",
                                                    mutates_args=("residual",))(_static_body)
_cuda_kernel("tunert::rmsnorm_add_fp8_static", _static_body)


def _problem(dev, x, residual, w, eps=1e-6, scale=None):
    """(key, candidates, tensors_fn, reference) of _ops._run; the result is (y, scale, staged): staged
    is the contiguous copy of a non-contiguous residual that the kernel updated, to copy back."""
    H = x.shape[-1]
    T = x.numel() // H if H else 0
    dynamic = scale is None
    family = "rmsnorm.fp8" if dynamic else "rmsnorm.fp8_static"
    key = (family, dev, T, H, eps, x.dtype, residual.dtype, w.dtype, None if dynamic else scale.dtype)

    def candidates():
        tensors = {"x": ((T, H), _dt(x)), "r": ((T, H), _dt(residual)), "w": ((H,), _dt(w)),
                   "y": ((T, H), "e4m3"), "h": ((T, H), _dt(residual)),
                   "scale": ((T,) if dynamic else (1,), "f32" if dynamic else _dt(scale))}
        dims = {"T": T, "H": H, "quant": "dynamic" if dynamic else "static"}
        return [(family, dims, tensors, dims, {"eps": eps}, ())]

    def tensors_fn():
        y = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
        rc = residual if residual.is_contiguous() else residual.contiguous()
        r2 = rc.view(T, H)   # read as r and written as h: the in-place update
        t = {"x": x.contiguous().view(T, H), "r": r2, "w": w.contiguous(), "y": y.view(T, H), "h": r2}
        if dynamic:
            s = torch.empty(x.shape[:-1], dtype=torch.float32, device=x.device)
            t["scale"] = s.view(T)
        else:
            s = None
            t["scale"] = scale.reshape(1)
        return t, (y, s, None if rc is residual else rc)

    def reference():
        return _reference(x, residual, w, eps, scale) + (None,)

    return key, candidates, tensors_fn, reference


@rmsnorm_add_fp8_op.register_fake
def _(x, residual, weight, eps=1e-6):
    return (torch.empty_like(x, dtype=torch.float8_e4m3fn, memory_format=torch.contiguous_format),
            x.new_empty(x.shape[:-1], dtype=torch.float32))


@rmsnorm_add_fp8_static_op.register_fake
def _(x, residual, weight, scale, eps=1e-6):
    return torch.empty_like(x, dtype=torch.float8_e4m3fn, memory_format=torch.contiguous_format)


def rmsnorm_add_fp8(x, residual, weight, eps=1e-6, scale=None):
    """Fused residual add + RMSNorm + fp8 e4m3 quantization; `residual` is updated in place to
    x + residual. scale None: dynamic per-token scales, returns (y, scales [x.shape[:-1]]);
    scale (f32, one element): static, returns (y, scale)."""
    if scale is None:
        return rmsnorm_add_fp8_op(x, residual, weight, eps)
    return rmsnorm_add_fp8_static_op(x, residual, weight, scale, eps), scale


_ops.PROBLEMS["rmsnorm_add_fp8"] = _problem
