"""tunert::attention_varlen: prefill over packed variable-length sequences (FlashAttention's varlen
layout), family attention.varlen (recipes/attention/varlen.lua's serving contract).

The tuned path reads the lengths only on the device (cu_seqlens): its grid depends on T, B and the
heads, so there is no host sync and one CUDA graph replays it while the lengths change. q, k, v
may be token-strided views (a fused QKV projection, d and heads contiguous): the kernel takes row
strides, but only its cp.async producer (USE_TMA = 0) reads them; the tensor maps of a TMA variant
assume dense rows, so on such a variant the views are copied.
"""
from typing import Optional

import torch

from ..errors import DeviceMismatch, DTypeMismatch
from . import _ops, _state
from ._ops import LOG2E, _cuda_kernel, _device_index, _dt, _launch, _sdpa


def _varlen_loop(q, k, v, cu_seqlens, causal, scale):
    """Per-sequence SDPA (a host read of cu_seqlens); rows past cu_seqlens[B] are zeros."""
    cu = cu_seqlens.tolist()
    o = torch.zeros(q.shape, dtype=q.dtype, device=q.device)
    for lo, hi in zip(cu[:-1], cu[1:]):
        if hi > lo:
            qs, ks, vs = (t[lo:hi].transpose(0, 1).unsqueeze(0) for t in (q, k, v))   # [1, H, L, D]
            o[lo:hi] = _sdpa(qs, ks, vs, causal, scale).squeeze(0).transpose(0, 1)
    return o


def _varlen_flash(q, k, v, cu_seqlens, max_seqlen, causal, scale):
    """torch's FlashAttention-2 varlen forward (GQA native), or None where it cannot run this call.
    Without max_seqlen it reads the lengths on the host."""
    op = getattr(torch.ops.aten, "_flash_attention_forward", None)
    if (op is None or q.dtype not in (torch.float16, torch.bfloat16)
            or not torch.backends.cuda.is_flash_attention_available()):
        return None
    if max_seqlen is None:
        max_seqlen = int((cu_seqlens[1:] - cu_seqlens[:-1]).max()) if cu_seqlens.numel() > 1 else 0
    try:
        return op(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, 0.0, causal, False, scale=scale)[0]
    except RuntimeError:   # an arch, head dim or layout this flash build does not take: the loop
        return None


def _varlen_ref(q, k, v, cu_seqlens, max_seqlen, causal, scale):
    """The PyTorch equivalent: flash varlen on CUDA where torch has it, else the loop."""
    o = _varlen_flash(q, k, v, cu_seqlens, max_seqlen, causal, scale) if q.is_cuda else None
    return o if o is not None else _varlen_loop(q, k, v, cu_seqlens, causal, scale)


def _check(q, k, v, cu_seqlens):
    _state.check(q.dim() == 3 and k.dim() == 3 and v.shape == k.shape and q.shape[0] == k.shape[0]
                 and q.shape[2] == k.shape[2] and k.shape[1] > 0 and q.shape[1] % k.shape[1] == 0
                 and cu_seqlens.dim() == 1 and cu_seqlens.shape[0] >= 2,
                 lambda: f"tunert.torch.attention_varlen: q {tuple(q.shape)}, k {tuple(k.shape)}, v "
                 f"{tuple(v.shape)}, cu_seqlens {tuple(cu_seqlens.shape)}: want q [T, HQ, D], k and v "
                 f"[T, HKV, D] (HQ a multiple of HKV), cu_seqlens [B + 1]")
    if cu_seqlens.dtype != torch.int32:
        raise DTypeMismatch(f"tunert.torch.attention_varlen: cu_seqlens is {cu_seqlens.dtype}, want torch.int32")
    if q.device != cu_seqlens.device and q.device.type != "meta":
        raise DeviceMismatch(f"tunert.torch.attention_varlen: cu_seqlens on {cu_seqlens.device}, "
                                     f"q on {q.device}: keep them on one device")


def _attention_varlen_body(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor,
                           max_seqlen: Optional[int] = None, causal: bool = True,
                           scale: Optional[float] = None) -> torch.Tensor:
    """Attention over B sequences packed into T tokens: q [T, HQ, D], k and v [T, HKV, D],
    cu_seqlens int32 [B + 1] (sequence b = tokens cu_seqlens[b] .. cu_seqlens[b + 1], the same for
    queries and keys; cu_seqlens[0] = 0, cu_seqlens[B] = T), causal within each sequence, GQA.
    Returns o [T, HQ, D]. max_seqlen (the longest sequence) serves only the PyTorch path (flash
    varlen takes it; without it that path reads cu_seqlens on the host). scale None: 1/sqrt(D)."""
    _check(q, k, v, cu_seqlens)
    if not q.is_cuda:
        _state.count("attention_varlen", "cpu")
        return _varlen_loop(q, k, v, cu_seqlens, causal, scale)
    dev = _device_index(q)
    key, candidates, tensors_fn, reference = _varlen_problem(dev, q, k, v, cu_seqlens, max_seqlen, causal, scale)
    p = _state.plan("attention_varlen", key, dev, candidates)
    if p.__class__ is not _state.Plan:
        _state.fallback_or_raise("attention_varlen", p)
        return reference()
    tensors, out = tensors_fn(p)
    _launch(p, dev, tensors)
    _state.count_tuned("attention_varlen", p.selection_kind)
    return out


attention_varlen = torch.library.custom_op("tunert::attention_varlen", mutates_args=())(_attention_varlen_body)
_cuda_kernel("tunert::attention_varlen", _attention_varlen_body)


def _row_stride(t):
    """t's token stride where the kernel can read t in place ([T, H, D] with heads and d dense, the
    stride a multiple of 8 elements, the address 16-byte aligned), else None (copied)."""
    T, H, D = t.shape
    st = t.stride()
    aligned = t.device.type == "meta" or t.data_ptr() % 16 == 0
    ok = aligned and (st[2] == 1 or D == 1) and (st[1] == D or H == 1) and st[0] % 8 == 0 and st[0] >= H * D
    return st[0] if ok else None


def _no_tma(sel):
    """Strided rows need the cp.async producer: a TMA variant's maps assume dense rows."""
    if sel.info.variant.get("USE_TMA", 0):
        return "its variant reads q, k, v with TMA over dense rows: strided views are copied"
    return None


def _varlen_problem(dev, q, k, v, cu_seqlens, max_seqlen=None, causal=True, scale=None):
    """(key, candidates, tensors_fn(plan), reference). Two candidates where some input is a view the
    kernel can read in place: strided (row strides passed, any variant without TMA) before dense
    (copies); the plan's `strided` says which one won."""
    T, HQ, D = q.shape
    HKV = k.shape[1]
    B = cu_seqlens.shape[0] - 1
    dense = (HQ * D, HKV * D, HKV * D)
    views = tuple(_row_stride(t) for t in (q, k, v))
    lds = tuple(s if s is not None else d for s, d in zip(views, dense))
    key = ("attention_varlen", dev, B, T, HQ, HKV, D, causal, scale, lds, q.dtype, k.dtype, v.dtype)

    def candidates():
        dims = {"B": B, "T": T, "HQ": HQ, "HKV": HKV, "D": D, "causal": causal}
        base = {"cu_seqlens": ((B + 1,), _dt(cu_seqlens)), "o": ((T, HQ, D), _dt(q))}
        shapes = {"q": ((T, HQ, D), _dt(q)), "k": ((T, HKV, D), _dt(k)), "v": ((T, HKV, D), _dt(v))}
        knobs = {"o_ld": HQ * D}
        if scale is not None:
            knobs["scale_log2"] = scale * LOG2E
        out = []
        if lds != dense:
            strided = dict(base, **{n: s + ("strided",) for n, s in shapes.items()})
            out.append(("attention.varlen", dims, strided, dims,
                        dict(knobs, q_ld=lds[0], k_ld=lds[1], v_ld=lds[2]), (), _no_tma))
        out.append(("attention.varlen", dims, dict(base, **shapes), dims,
                    dict(knobs, q_ld=dense[0], k_ld=dense[1], v_ld=dense[2]), ()))
        return out

    def tensors_fn(plan):
        out = torch.empty((T, HQ, D), dtype=q.dtype, device=q.device)
        in_place = "q" in plan.strided
        t = {n: x if in_place and s is not None else x.contiguous() for n, x, s in zip("qkv", (q, k, v), views)}
        t["cu_seqlens"] = cu_seqlens.contiguous()
        t["o"] = out
        return t, out

    return key, candidates, tensors_fn, lambda: _varlen_ref(q, k, v, cu_seqlens, max_seqlen, causal, scale)


@attention_varlen.register_fake
def _(q, k, v, cu_seqlens, max_seqlen=None, causal=True, scale=None):
    return q.new_empty(q.shape)


_ops.PROBLEMS["attention_varlen"] = _varlen_problem
