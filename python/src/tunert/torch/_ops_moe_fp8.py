"""tunert::grouped_scaled_mm and tunert::grouped_scaled_mm_masked: the FP8 e4m3 grouped GEMM of
Mixture-of-Experts, c_e = bf16((a_e * scale_a) @ (w[e] * scale_w[e]).T) for every expert in one
launch (w [E, N, K] as nn.Linear keeps each expert's weight), families moe.grouped_fp8 (contiguous)
and moe.grouped_fp8_masked (masked) of recipes/moe/grouped_fp8.lua, fp32 promotion every 128 of K
as gemm.fp8. The scaling mode (the families' dim `scale`) follows the scales' shapes, over the rows
of a's 2-D view (rows: T, or E * cap masked) and per expert for w:

    tensor  scale_a one element (0-d or [1]), scale_w [E] (one weight scale per expert)
    row     scale_a [rows] (per token), scale_w [E, N] (per expert and output channel)
    block   scale_a [rows, ceil(K/128)] (1 x 128), scale_w [E, ceil(N/128), ceil(K/128)] (128 x 128)

Masked, scale_a may also keep a's leading dims: [E, cap] (row) or [E, cap, ceil(K/128)] (block,
DeepGEMM's masked layout). scale_w has a different rank in each mode, so the shapes name exactly one
mode; `mode=` states it (and is checked). Scales are f32 tensors on the device, read by the kernel
(a new value needs no new plan); the routing stays on the device as for tunert::grouped_mm
(_ops_moe.py: no host sync on the tuned path, min_tokens / min_count offered at both tuned values).

The operands must lie in the kernel's domain on every device (so that a CPU run and a CUDA run of
the same call agree on what is valid): 1 <= E <= 256 (the tile table's experts), N and K multiples
of 16 (TMA rows of 16 bytes, 16-byte output stores), K >= 128 (one K block).
"""
from typing import Optional

import torch

from .._tensors import _torch_dtype_name
from ..errors import DeviceMismatch, DTypeMismatch, InvalidArgument, ShapeMismatch
from . import _ops, _state
from ._ops import _cuda_kernel, _device_index, _dt, _run
from ._ops_fp8 import MODES, _cdiv, _scaled_mm_dequant, _scaled_mm_ref
from ._ops_moe import MIN_ROWS, _check_routing

MAX_EXPERTS = 256   # expert_tiles.cuh kMaxExperts, the recipes' `requires`


def _scale_shapes(E, N, K, rows, cap, mode):
    """(the accepted scale_a shapes, the scale_w shape) of `mode`; rows: T, or E * cap with cap (None:
    contiguous) for the masked layout's [E, cap, ...] forms."""
    kb, nb = _cdiv(K, 128), _cdiv(N, 128)
    if mode == "block":
        return ((rows, kb),) + (() if cap is None else ((E, cap, kb),)), (E, nb, kb)
    if mode == "row":
        return ((rows,),) + (() if cap is None else ((E, cap),)), (E, N)
    return ((), (1,)), (E,)


def _modes_text(E, N, K, rows, cap):
    parts = []
    for m in MODES:
        sa, sw = _scale_shapes(E, N, K, rows, cap, m)
        parts.append(f"{m}: scale_a {' or '.join(map(str, sa))}, scale_w {sw}")
    return "; ".join(parts)


def _check(op, a, w, groups, sa, sw, mode, masked):
    """Check every operand of op (the masked layout if `masked`) and return the scaling mode, given
    or the one whose shapes the scales have."""
    a_shape = "[E, cap, K]" if masked else "[T, K]"
    if not (w.dim() == 3 and a.dim() == (3 if masked else 2) and a.shape[-1] == w.shape[2]
            and (not masked or a.shape[0] == w.shape[0])):
        raise ShapeMismatch(f"tunert.torch.{op}: a {tuple(a.shape)}, w {tuple(w.shape)}: want a {a_shape}, "
                            f"w [E, N, K]")
    fp8 = getattr(torch, "float8_e4m3fn", None)
    for name, t in (("a", a), ("w", w)):
        if fp8 is None or t.dtype != fp8:
            raise DTypeMismatch(f"tunert.torch.{op}: {name} is {t.dtype}, want torch.float8_e4m3fn")
    if w.device != a.device and a.device.type != "meta":
        raise DeviceMismatch(f"tunert.torch.{op}: w on {w.device}, a on {a.device}: keep them on one device")
    E, N, K = w.shape
    bad = [why for ok, why in ((1 <= E <= MAX_EXPERTS, f"E {E} not in 1 .. {MAX_EXPERTS}"),
                               (N >= 16 and N % 16 == 0, f"N {N} not a positive multiple of 16"),
                               (K >= 128 and K % 16 == 0, f"K {K} not a multiple of 16 of at least 128")) if not ok]
    if bad:
        raise InvalidArgument(f"tunert.torch.{op}: a {tuple(a.shape)}, w {tuple(w.shape)}: {'; '.join(bad)} (the "
                              f"kernel's limits: 1 <= E <= {MAX_EXPERTS}, N and K multiples of 16, K >= 128)")
    if masked:
        _check_routing(op, groups, "counts", E, a)
    else:
        _check_routing(op, groups, "offsets", E + 1, a)
    for name, t in (("scale_a", sa), ("scale_w", sw)):
        if t.dtype != torch.float32:
            raise DTypeMismatch(f"tunert.torch.{op}: {name} is {t.dtype}, want torch.float32")
        if t.device != a.device and a.device.type != "meta":
            raise DeviceMismatch(f"tunert.torch.{op}: {name} on {t.device}, a on {a.device}: keep them on one device")
    cap = a.shape[1] if masked else None
    rows = a.shape[0] * a.shape[1] if masked else a.shape[0]
    got_a, got_w = tuple(sa.shape), tuple(sw.shape)

    def fits(m):
        want_a, want_w = _scale_shapes(E, N, K, rows, cap, m)
        return got_a in want_a and got_w == want_w

    if mode is None:
        for m in MODES:   # scale_w's rank differs per mode: at most one fits
            if fits(m):
                return m
        raise ShapeMismatch(f"tunert.torch.{op}: scale_a {got_a}, scale_w {got_w}: no scaling mode has these shapes "
                            f"({_modes_text(E, N, K, rows, cap)})")
    if mode not in MODES:
        raise InvalidArgument(f"tunert.torch.{op}: mode {mode!r}: want one of {', '.join(MODES)} (or None: from the "
                              f"scale shapes)")
    if not fits(mode):
        want_a, want_w = _scale_shapes(E, N, K, rows, cap, mode)
        raise ShapeMismatch(f"tunert.torch.{op}: scale_a {got_a}, scale_w {got_w} for mode {mode!r}: want scale_a "
                            f"{' or '.join(map(str, want_a))} and scale_w {want_w} ({_modes_text(E, N, K, rows, cap)})")
    return mode


# ---- contiguous: a [T, K] sorted by expert, offsets int32 [E + 1] ----

def _vendor_mm(a, b, sa, sb, mode, out_dtype):
    """One expert's product by the library call the comparison's cublas-loop peer times
    (torch._scaled_mm, cuBLASLt's blockwise scaling for block scales: _ops_fp8._scaled_mm_ref). A
    per-tensor weight scale is an element of scale_w [E]: copied, as a view of it is only 4-byte
    aligned (cuBLASLt refused the peer's per-tensor calls while they were views; copies run)."""
    return _scaled_mm_ref(a, b, sa, sb.clone() if mode == "tensor" else sb, mode, out_dtype, False)


def _contiguous_ref(a, w, offsets, sa, sw, mode, out_dtype, mm=_scaled_mm_dequant):
    """The PyTorch path: per expert with rows (a host read of offsets), both operands dequantized in
    fp32 (block scales expanded per 128 of K and per 128 x 128 weight block), multiplied, rounded
    once (mm: _vendor_mm for the library's kernels instead); rows no expert owns are zeros (offsets
    clamped to the rows of a)."""
    T, N = a.shape[0], w.shape[1]
    c = torch.zeros((T, N), dtype=out_dtype, device=a.device)
    offs = offsets.tolist()
    for e, (lo, hi) in enumerate(zip(offs[:-1], offs[1:])):
        lo, hi = max(lo, 0), min(hi, T)
        if hi > lo:
            c[lo:hi] = mm(a[lo:hi], w[e], sa if mode == "tensor" else sa[lo:hi], sw[e], mode, out_dtype)
    return c


def _grouped_rowwise(a, w, offsets, sa, sw):
    """torch._scaled_grouped_mm over the experts' rows with row scales (sa [T], sw [E, N]): one launch,
    bf16 out; raises where this torch, GPU or shape does not take it."""
    return torch._scaled_grouped_mm(a, w.transpose(-2, -1), sa.reshape(-1), sw.reshape(w.shape[0], -1),
                                    offs=offsets[1:], out_dtype=torch.bfloat16)


def _scaled_grouped(a, w, offsets, sa, sw, mode, out_dtype):
    """Row scales in one launch, _grouped_rowwise (the torch-scaled-grouped-mm peer), where this
    torch, GPU and shape take it; else the library loop."""
    if mode == "row" and out_dtype == torch.bfloat16 and hasattr(torch, "_scaled_grouped_mm"):
        try:
            return _grouped_rowwise(a, w, offsets, sa, sw)
        except (RuntimeError, TypeError):   # an arch, alignment or signature this torch does not take
            pass
    return _contiguous_ref(a, w, offsets, sa, sw, mode, out_dtype, _vendor_mm)


def _flat_scales(scale_a, scale_w):
    """The scales as the recipes' 1-D tensors of their element counts."""
    return {"scale_a": scale_a.contiguous().reshape(-1), "scale_w": scale_w.contiguous().reshape(-1)}


def _with_vendors(reference, vendors):
    """reference with the implementations whose measurements earn the families' vendor entries, by the
    peer names of tools/peers/peer_family_moe_fp8.py (_ops._vendor_or_reference runs them)."""
    reference.vendor_impls = vendors
    return reference


def _grouped_scaled_mm_body(a: torch.Tensor, w: torch.Tensor, offsets: torch.Tensor, scale_a: torch.Tensor,
                            scale_w: torch.Tensor, out_dtype: Optional[torch.dtype] = None,
                            mode: Optional[str] = None) -> torch.Tensor:
    """FP8 grouped GEMM, contiguous layout: a [T, K] e4m3 rows sorted by expert, w [E, N, K] e4m3,
    offsets int32 [E + 1] on a's device (expert e owns rows offsets[e] .. offsets[e + 1]; offsets[0]
    = 0, offsets[E] = T; an expert may have none), scales f32 (see the module for each mode's shapes).
    Returns c [T, N], c[rows of e] = (a[rows of e] * scale_a) @ (w[e] * scale_w[e]).T in out_dtype
    (None: bf16, the tuned kernel's; another dtype runs PyTorch). Family moe.grouped_fp8."""
    if not a.is_cuda:
        m = _check("grouped_scaled_mm", a, w, offsets, scale_a, scale_w, mode, False)
        _state.count("grouped_scaled_mm", "cpu")
        return _contiguous_ref(a, w, offsets, scale_a, scale_w, m, torch.bfloat16 if out_dtype is None else out_dtype)
    dev = _device_index(a)
    return _run("grouped_scaled_mm", dev, _contiguous_problem(dev, a, w, offsets, scale_a, scale_w, out_dtype, mode))


grouped_scaled_mm_op = torch.library.custom_op("tunert::grouped_scaled_mm", mutates_args=())(_grouped_scaled_mm_body)
_cuda_kernel("tunert::grouped_scaled_mm", _grouped_scaled_mm_body)


def _contiguous_problem(dev, a, w, offsets, scale_a, scale_w, out_dtype=None, mode=None):
    m = _check("grouped_scaled_mm", a, w, offsets, scale_a, scale_w, mode, False)
    T, K = a.shape
    E, N = w.shape[0], w.shape[1]
    odt = torch.bfloat16 if out_dtype is None else out_dtype
    key = ("grouped_scaled_mm", dev, T, E, N, K, m, odt, a.dtype, w.dtype, offsets.dtype, scale_a.dtype,
           scale_w.dtype)
    na, nw = scale_a.numel(), scale_w.numel()

    def candidates():
        # the scales as the recipe's 1-D element counts
        tensors = {"a": ((T, K), _dt(a)), "w": ((E, N, K), _dt(w)), "c": ((T, N), _torch_dtype_name(torch, odt)),
                   "offsets": ((E + 1,), _dt(offsets)), "scale_a": ((na,), _dt(scale_a)),
                   "scale_w": ((nw,), _dt(scale_w))}
        out = []
        for r in MIN_ROWS:
            dims = {"E": E, "N": N, "K": K, "T": T, "min_tokens": r, "scale": m}
            out.append(("moe.grouped_fp8", dims, tensors, dims, {}, ()))
        return out

    def tensors_fn():
        c = torch.empty((T, N), dtype=odt, device=a.device)
        return {"a": a.contiguous(), "w": w.contiguous(), "c": c, "offsets": offsets.contiguous(),
                **_flat_scales(scale_a, scale_w)}, c

    def reference():
        return _contiguous_ref(a, w, offsets, scale_a, scale_w, m, odt)
    return key, candidates, tensors_fn, _with_vendors(reference, {
        "cublas-loop": lambda: _contiguous_ref(a, w, offsets, scale_a, scale_w, m, odt, _vendor_mm),
        "torch-scaled-grouped-mm": lambda: _scaled_grouped(a, w, offsets, scale_a, scale_w, m, odt)})


@grouped_scaled_mm_op.register_fake
def _(a, w, offsets, scale_a, scale_w, out_dtype=None, mode=None):
    return a.new_empty((a.shape[0], w.shape[1]), dtype=torch.bfloat16 if out_dtype is None else out_dtype)


# ---- masked: a [E, cap, K], counts int32 [E] ----

def _by_expert(sa, mode, E, cap, K):
    """scale_a of the masked layout as [E, cap] (row) or [E, cap, ceil(K/128)] (block); tensor as it is."""
    return sa if mode == "tensor" else sa.reshape((E, cap) + ((_cdiv(K, 128),) if mode == "block" else ()))


def _masked_ref(a, w, counts, sa, sw, mode, out_dtype):
    """The PyTorch path: per expert, all cap rows dequantized and multiplied as _contiguous_ref does,
    then the rows at and past the count set to zero (a count past cap keeps every row, a negative
    one none: the kernel's clamp to 0 .. cap): no host read, and whatever the padding rows of a and
    scale_a hold (NaN included) the output there is 0."""
    E, cap, K = a.shape
    N = w.shape[1]
    c = torch.empty((E, cap, N), dtype=out_dtype, device=a.device)
    sa = _by_expert(sa, mode, E, cap, K)
    pad = torch.arange(cap, device=a.device)[None, :] >= counts.to(a.device)[:, None]   # [E, cap]
    for e in range(E):
        ce = _scaled_mm_dequant(a[e], w[e], sa if mode == "tensor" else sa[e], sw[e], mode, out_dtype)
        c[e] = ce.masked_fill(pad[e, :, None], 0)
    return c


def _masked_vendor(a, w, counts, sa, sw, mode, out_dtype):
    """The library loop the cublas-loop peer times: a host read of the counts, one _vendor_mm per
    expert over its counted rows, zeros past them."""
    E, cap, K = a.shape
    c = torch.zeros((E, cap, w.shape[1]), dtype=out_dtype, device=a.device)
    sa = _by_expert(sa, mode, E, cap, K)
    for e, n in enumerate(counts.tolist()):
        n = min(max(n, 0), cap)
        if n:
            c[e, :n] = _vendor_mm(a[e, :n], w[e], sa if mode == "tensor" else sa[e, :n], sw[e], mode, out_dtype)
    return c


def _grouped_scaled_mm_masked_body(a: torch.Tensor, w: torch.Tensor, counts: torch.Tensor, scale_a: torch.Tensor,
                                   scale_w: torch.Tensor, out_dtype: Optional[torch.dtype] = None,
                                   mode: Optional[str] = None) -> torch.Tensor:
    """FP8 grouped GEMM, masked layout: a [E, cap, K] e4m3 (expert e's rows first, padding after),
    w [E, N, K] e4m3, counts int32 [E] on a's device (0 <= counts[e] <= cap; the kernel clamps
    others into that range), scales f32 over a's E * cap rows (see the module). Returns c [E, cap, N]:
    c[e, :n] = (a[e, :n] * scale_a) @ (w[e] * scale_w[e]).T with n = counts[e], zeros in the rows past
    each count (the kernel writes them). Family moe.grouped_fp8_masked."""
    if not a.is_cuda:
        m = _check("grouped_scaled_mm_masked", a, w, counts, scale_a, scale_w, mode, True)
        _state.count("grouped_scaled_mm_masked", "cpu")
        return _masked_ref(a, w, counts, scale_a, scale_w, m, torch.bfloat16 if out_dtype is None else out_dtype)
    dev = _device_index(a)
    return _run("grouped_scaled_mm_masked", dev,
                _masked_problem(dev, a, w, counts, scale_a, scale_w, out_dtype, mode))


grouped_scaled_mm_masked_op = torch.library.custom_op("tunert::grouped_scaled_mm_masked",
                                                      mutates_args=())(_grouped_scaled_mm_masked_body)
_cuda_kernel("tunert::grouped_scaled_mm_masked", _grouped_scaled_mm_masked_body)


def _masked_problem(dev, a, w, counts, scale_a, scale_w, out_dtype=None, mode=None):
    m = _check("grouped_scaled_mm_masked", a, w, counts, scale_a, scale_w, mode, True)
    E, cap, K = a.shape
    N = w.shape[1]
    odt = torch.bfloat16 if out_dtype is None else out_dtype
    key = ("grouped_scaled_mm_masked", dev, E, cap, N, K, m, odt, a.dtype, w.dtype, counts.dtype, scale_a.dtype,
           scale_w.dtype)
    na, nw = scale_a.numel(), scale_w.numel()

    def candidates():
        tensors = {"a": ((E, cap, K), _dt(a)), "w": ((E, N, K), _dt(w)),
                   "c": ((E, cap, N), _torch_dtype_name(torch, odt)), "counts": ((E,), _dt(counts)),
                   "scale_a": ((na,), _dt(scale_a)), "scale_w": ((nw,), _dt(scale_w))}
        out = []
        for r in MIN_ROWS:
            dims = {"E": E, "N": N, "K": K, "cap": cap, "min_count": r, "scale": m}
            out.append(("moe.grouped_fp8_masked", dims, tensors, dims, {}, ()))
        return out

    def tensors_fn():
        c = torch.empty((E, cap, N), dtype=odt, device=a.device)
        return {"a": a.contiguous(), "w": w.contiguous(), "c": c, "counts": counts.contiguous(),
                **_flat_scales(scale_a, scale_w)}, c

    def reference():
        return _masked_ref(a, w, counts, scale_a, scale_w, m, odt)
    return key, candidates, tensors_fn, _with_vendors(reference, {
        "cublas-loop": lambda: _masked_vendor(a, w, counts, scale_a, scale_w, m, odt)})


@grouped_scaled_mm_masked_op.register_fake
def _(a, w, counts, scale_a, scale_w, out_dtype=None, mode=None):
    return a.new_empty((a.shape[0], a.shape[1], w.shape[1]), dtype=torch.bfloat16 if out_dtype is None else out_dtype)


def grouped_scaled_mm(a, w, offsets, scale_a, scale_w, out_dtype=torch.bfloat16, mode=None):
    """FP8 MoE grouped GEMM, contiguous layout (tunert::grouped_scaled_mm): c [T, N] with c[rows of e]
    = (a[rows of e] * scale_a) @ (w[e] * scale_w[e]).T, bf16 output."""
    return grouped_scaled_mm_op(a, w, offsets, scale_a, scale_w, out_dtype, mode)


def grouped_scaled_mm_masked(a, w, counts, scale_a, scale_w, out_dtype=torch.bfloat16, mode=None):
    """FP8 MoE grouped GEMM, masked layout (tunert::grouped_scaled_mm_masked): c [E, cap, N], zeros
    past each expert's count, bf16 output."""
    return grouped_scaled_mm_masked_op(a, w, counts, scale_a, scale_w, out_dtype, mode)


_ops.PROBLEMS["grouped_scaled_mm"] = _contiguous_problem
_ops.PROBLEMS["grouped_scaled_mm_masked"] = _masked_problem
