"""tunert::scaled_mm: FP8 e4m3 GEMM with a bf16 output, c = (a * scale_a) @ (b * scale_b).T, families
gemm.fp8 (fp32 promotion every 128 of K), gemm.fp8_skinny (the same at decode sizes, M <= 16) and
gemm.fp8_fast (use_fast_accum: one accumulator over K)
of recipes/gemm/fp8.lua and recipes/gemm/fp8_skinny.lua; where several serve a call, the bundle's
fastest measured entry runs. The scaling mode (the families' dim `scale`) follows the scales' shapes:

    tensor  scale_a, scale_b one element each (0-d or [1])
    row     scale_a [M] (per token), scale_b [N] (per output channel)
    block   scale_a [M, ceil(K/128)] (1 x 128), scale_b [ceil(N/128), ceil(K/128)] (128 x 128)

Scales are f32 tensors on the device, read by the kernel: a change of value needs no new plan.
"""
from typing import Optional

import torch

from .._tensors import _torch_dtype_name
from ..errors import DeviceMismatch, DTypeMismatch, InvalidArgument, ShapeMismatch
from . import _ops, _state
from ._ops import _cuda_kernel, _device_index, _dt, _run

MODES = ("tensor", "row", "block")


def _cdiv(x, y):
    return -(-x // y)


def _scale_shapes(M, N, K, mode):
    """The scale shapes of `mode` (a 1-element scale may also be 0-d)."""
    if mode == "block":
        kb = _cdiv(K, 128)
        return (M, kb), (_cdiv(N, 128), kb)
    if mode == "row":
        return (M,), (N,)
    return (1,), (1,)


def _infer_mode(M, N, K, sa, sb):
    if sa.dim() == 2 and sb.dim() == 2:
        return "block"
    if sa.numel() == 1 and sb.numel() == 1 and sa.dim() <= 1 and sb.dim() <= 1:
        return "tensor"
    if sa.dim() == 1 and sb.dim() == 1:
        return "row"
    return None


def _mode(a, b, sa, sb, mode):
    """Check the operands and return the scaling mode (given or inferred from the scale shapes)."""
    if not (a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[1]):
        raise ShapeMismatch(f"tunert.torch.scaled_mm: a {tuple(a.shape)}, b {tuple(b.shape)}: want a [M, K], b [N, K]")
    fp8 = getattr(torch, "float8_e4m3fn", None)
    for name, t in (("a", a), ("b", b)):
        if fp8 is None or t.dtype != fp8:
            raise DTypeMismatch(f"tunert.torch.scaled_mm: {name} is {t.dtype}, want torch.float8_e4m3fn")
    for name, t in (("scale_a", sa), ("scale_b", sb)):
        if t.dtype != torch.float32:
            raise DTypeMismatch(f"tunert.torch.scaled_mm: {name} is {t.dtype}, want torch.float32")
        if t.device != a.device and a.device.type != "meta":
            raise DeviceMismatch(f"tunert.torch.scaled_mm: {name} on {t.device}, a on {a.device}")
    M, K = a.shape
    N = b.shape[0]
    m = mode if mode is not None else _infer_mode(M, N, K, sa, sb)
    if m not in MODES:
        raise InvalidArgument(f"tunert.torch.scaled_mm: mode {mode!r}: want one of {', '.join(MODES)} (or None: "
                              f"from the scale shapes)" if mode is not None else
                              f"tunert.torch.scaled_mm: scale_a {tuple(sa.shape)}, scale_b {tuple(sb.shape)}: "
                              f"no scaling mode has these shapes ({_modes_text(M, N, K)})")
    want_a, want_b = _scale_shapes(M, N, K, m)
    ok = (sa.numel() == 1 and sb.numel() == 1 and sa.dim() <= 1 and sb.dim() <= 1) if m == "tensor" else \
        (tuple(sa.shape) == want_a and tuple(sb.shape) == want_b)
    if not ok:
        raise ShapeMismatch(f"tunert.torch.scaled_mm: scale_a {tuple(sa.shape)}, scale_b {tuple(sb.shape)} for mode "
                            f"{m!r}: want {want_a} and {want_b} ({_modes_text(M, N, K)})")
    return m


def _modes_text(M, N, K):
    return "; ".join(f"{m}: {_scale_shapes(M, N, K, m)[0]} and {_scale_shapes(M, N, K, m)[1]}" for m in MODES)


def _dequantized(x, s, mode, rows):
    """x (e4m3 [R, K]) times its scale in fp32: rows = True for a's per-row / 1 x 128 layout, False
    for b's (per row too, but 128 x 128 blocks)."""
    xf = x.float()
    if mode == "tensor":
        return xf * s.reshape(())
    if mode == "row":
        return xf * s[:, None]
    R, K = x.shape
    full = s.repeat_interleave(128, dim=1)[:, :K]
    if not rows:
        full = full.repeat_interleave(128, dim=0)[:R]
    return xf * full


def _scaled_mm_dequant(a, b, sa, sb, mode, out_dtype):
    """The reference: dequantize both in fp32 and multiply (every product of two e4m3 values is
    exact in fp32)."""
    return (_dequantized(a, sa, mode, True) @ _dequantized(b, sb, mode, False).T).to(out_dtype)


def _scaled_mm_ref(a, b, sa, sb, mode, out_dtype, use_fast_accum):
    """The PyTorch equivalent: torch._scaled_mm for per-tensor and per-row scales (b.t() is the
    column-major operand it wants; rowwise scales as [M, 1] and [1, N]) on CUDA, where this torch
    and GPU run it; block scales by cuBLASLt's blockwise scaling (_scaled_mm_blockwise); else the
    fp32 dequantized reference."""
    if a.is_cuda and mode == "block" and not use_fast_accum:
        return _scaled_mm_blockwise(a, b, sa, sb, out_dtype)
    if a.is_cuda and mode != "block" and hasattr(torch, "_scaled_mm"):
        try:
            if mode == "tensor":
                s_a, s_b = sa.reshape(()), sb.reshape(())
            else:
                s_a, s_b = sa.reshape(-1, 1), sb.reshape(1, -1)
            return torch._scaled_mm(a, b.t(), s_a, s_b, out_dtype=out_dtype, use_fast_accum=use_fast_accum)
        except RuntimeError:   # a mode, dtype or arch this torch's kernel does not take
            pass
    return _scaled_mm_dequant(a, b, sa, sb, mode, out_dtype)


def _blockwise_operands(a, sa, sb, M, N, K):
    """a, scale_a, scale_b in the layout cuBLASLt's DeepSeek scaling takes through torch (the peer
    tools/peers/peer_family_fp8.py times): a padded with zero rows to a multiple of 4, scale_a [M4,
    K/128] outer-dim-major (strides [1, M4]), scale_b [L4, N/128] with strides [1, L4] (L4: K/128
    rounded up to 4; the columns past K/128 are ones). None where it cannot run: K or N not a
    multiple of 128."""
    if K % 128 or N % 128:
        return None
    kb, m4 = K // 128, _cdiv(M, 4) * 4
    l4 = _cdiv(kb, 4) * 4
    sa2 = sa.reshape(M, kb)
    if m4 != M:
        a = torch.cat([a, torch.zeros((m4 - M, K), dtype=a.dtype, device=a.device)])
        sa2 = torch.cat([sa2, torch.ones((m4 - M, kb), dtype=sa.dtype, device=sa.device)])
    sb4 = torch.ones((N // 128, l4), dtype=sb.dtype, device=sb.device)
    sb4[:, :kb] = sb.reshape(N // 128, kb)
    return a, sa2.t().contiguous().t(), sb4.t()


def _scaled_mm_blockwise(a, b, sa, sb, out_dtype):
    """The block-scaled product by cuBLASLt's blockwise kernels (torch.nn.functional.scaled_mm with
    explicit recipes, else torch._scaled_mm), with fp32 promotion as gemm.fp8: the call that earns
    gemm.fp8's block-mode vendor entries; the fp32 dequantized reference where this torch, GPU or
    shape cannot."""
    M, K = a.shape
    N = b.shape[0]
    ops = _blockwise_operands(a.contiguous(), sa, sb, M, N, K) if a.is_cuda and out_dtype == torch.bfloat16 else None
    if ops is not None:
        a4, sa4, sb4 = ops
        bt = b.contiguous().t()
        F = torch.nn.functional
        try:
            if hasattr(F, "scaled_mm") and hasattr(F, "ScalingType"):
                st = F.ScalingType
                c = F.scaled_mm(a4, bt, sa4, st.BlockWise1x128, sb4, st.BlockWise128x128,
                                output_dtype=torch.bfloat16, use_fast_accum=False)
            else:
                c = torch._scaled_mm(a4, bt, sa4, sb4, out_dtype=torch.bfloat16, use_fast_accum=False)
            return c[:M]
        except (RuntimeError, TypeError):   # a torch or GPU without the blockwise path
            pass
    return _scaled_mm_dequant(a, b, sa, sb, "block", out_dtype)


def _scaled_mm_body(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                    out_dtype: Optional[torch.dtype] = None, mode: Optional[str] = None,
                    use_fast_accum: bool = False) -> torch.Tensor:
    """c [M, N] = (a [M, K] * scale_a) @ (b [N, K] * scale_b).T, a and b torch.float8_e4m3fn, the
    scales float32 (see the module for the three modes' shapes), out_dtype None: bf16 (the tuned
    kernels' output; another dtype runs PyTorch). use_fast_accum: gemm.fp8_fast may serve it too."""
    m = _mode(a, b, scale_a, scale_b, mode)
    odt = torch.bfloat16 if out_dtype is None else out_dtype
    if not a.is_cuda:
        _state.count("scaled_mm", "cpu")
        return _scaled_mm_dequant(a, b, scale_a, scale_b, m, odt)
    dev = _device_index(a)
    return _run("scaled_mm", dev, _fp8_problem(dev, a, b, scale_a, scale_b, out_dtype, m, use_fast_accum))


scaled_mm_op = torch.library.custom_op("tunert::scaled_mm", mutates_args=())(_scaled_mm_body)
_cuda_kernel("tunert::scaled_mm", _scaled_mm_body)


def _fp8_problem(dev, a, b, scale_a, scale_b, out_dtype=None, mode=None, use_fast_accum=False):
    M, K = a.shape
    N = b.shape[0]
    m = _mode(a, b, scale_a, scale_b, mode)
    odt = torch.bfloat16 if out_dtype is None else out_dtype
    key = ("scaled_mm", dev, M, N, K, m, use_fast_accum, odt, a.dtype, b.dtype, scale_a.dtype, scale_b.dtype)
    na, nb = scale_a.numel(), scale_b.numel()

    def candidates():
        dims = {"M": M, "N": N, "K": K, "scale": m}
        tensors = {"a": ((M, K), _dt(a)), "b": ((N, K), _dt(b)), "c": ((M, N), _torch_dtype_name(torch, odt)),
                   "scale_a": ((na,), _dt(scale_a)), "scale_b": ((nb,), _dt(scale_b))}
        # gemm.fp8_skinny (M <= 16, its domain) promotes as gemm.fp8 does: it serves either accumulation
        families = ("gemm.fp8_fast", "gemm.fp8_skinny", "gemm.fp8") if use_fast_accum else ("gemm.fp8_skinny", "gemm.fp8")
        return [(f, dims, tensors, dims, {}, ()) for f in families]

    def tensors_fn():
        c = torch.empty((M, N), dtype=odt, device=a.device)
        return {"a": a.contiguous(), "b": b.contiguous(), "c": c, "scale_a": scale_a.contiguous().reshape(na),
                "scale_b": scale_b.contiguous().reshape(nb)}, c

    return key, candidates, tensors_fn, lambda: _scaled_mm_ref(a, b, scale_a, scale_b, m, odt, use_fast_accum)


@scaled_mm_op.register_fake
def _(a, b, scale_a, scale_b, out_dtype=None, mode=None, use_fast_accum=False):
    return a.new_empty((a.shape[0], b.shape[0]), dtype=torch.bfloat16 if out_dtype is None else out_dtype)


def scaled_mm(a, b, scale_a, scale_b, out_dtype=torch.bfloat16, mode=None, use_fast_accum=False):
    """FP8 GEMM: c = (a * scale_a) @ (b * scale_b).T with bf16 output (tunert::scaled_mm)."""
    return scaled_mm_op(a, b, scale_a, scale_b, out_dtype, mode, use_fast_accum)


_ops.PROBLEMS["scaled_mm"] = _fp8_problem
