"""tunert::attention_varlen: prefill over packed variable-length sequences (FlashAttention's varlen
layout), family attention.varlen (recipes/attention/varlen.lua's serving contract); with cu_seqlens_k,
keys longer than queries (chunked prefill, a prompt continuing a cached prefix), family
attention.varlen_kv (recipes/attention/varlen_kv.lua), causal aligned at the end.

The tuned path reads the lengths only on the device (cu_seqlens): its grid depends on T, B and the
heads, so there is no host sync and one CUDA graph replays it while the lengths change. q, k, v
may be token-strided views (a fused QKV projection, d and heads contiguous, the row stride a multiple
of 8 elements, the address 16-byte aligned): the kernel takes row strides, its cp.async producer
reads them and libtunert builds a TMA variant's tensor maps over the view from them (bundle format
1.6), so the views are read in place. Only a TMA variant of an older bundle, whose maps assume dense
rows, gets copies.
"""
from typing import Optional

import torch

from ..errors import DeviceMismatch, DTypeMismatch
from . import _ops, _state
from ._ops import LOG2E, _cuda_kernel, _device_index, _dt, _launch, _sdpa


def _lower_right(lq, lk, device):
    """The causal mask of lq queries over lk >= lq keys aligned at the end (query j sees keys
    0 .. j + lk - lq): torch's causal_lower_right where this torch has it, else the boolean mask."""
    try:
        from torch.nn.attention.bias import causal_lower_right
        return causal_lower_right(lq, lk)
    except ImportError:
        return torch.ones(lq, lk, dtype=torch.bool, device=device).tril(lk - lq)


def _varlen_loop(q, k, v, cu_seqlens, causal, scale, cu_seqlens_k=None):
    """Per-sequence SDPA (a host read of the offsets); rows past cu_seqlens[B] are zeros. With
    cu_seqlens_k, sequence b's keys are k[cu_seqlens_k[b] .. cu_seqlens_k[b + 1]) and a causal mask
    is aligned at the end."""
    cu = cu_seqlens.tolist()
    cuk = cu if cu_seqlens_k is None else cu_seqlens_k.tolist()
    o = torch.zeros(q.shape, dtype=q.dtype, device=q.device)
    for b, (lo, hi) in enumerate(zip(cu[:-1], cu[1:])):
        if hi > lo:
            klo, khi = cuk[b], cuk[b + 1]
            qs = q[lo:hi].transpose(0, 1).unsqueeze(0)   # [1, H, L, D]
            ks, vs = (t[klo:khi].transpose(0, 1).unsqueeze(0) for t in (k, v))
            if causal and khi - klo != hi - lo:
                out = _sdpa(qs, ks, vs, False, scale, _lower_right(hi - lo, khi - klo, q.device))
            else:
                out = _sdpa(qs, ks, vs, causal, scale)
            o[lo:hi] = out.squeeze(0).transpose(0, 1)
    return o


def _max_len(cu):
    return int((cu[1:] - cu[:-1]).max()) if cu.numel() > 1 else 0


def _varlen_flash(q, k, v, cu_seqlens, max_seqlen, causal, scale, cu_seqlens_k=None, max_seqlen_k=None):
    """torch's FlashAttention-2 varlen forward (GQA native; causal aligned at the end where keys
    outnumber queries), or None where it cannot run this call. Without max_seqlen(_k) it reads the
    lengths on the host."""
    op = getattr(torch.ops.aten, "_flash_attention_forward", None)
    if (op is None or q.dtype not in (torch.float16, torch.bfloat16)
            or not torch.backends.cuda.is_flash_attention_available()):
        return None
    if max_seqlen is None:
        max_seqlen = _max_len(cu_seqlens)
    if cu_seqlens_k is None:
        cu_seqlens_k, max_seqlen_k = cu_seqlens, max_seqlen
    elif max_seqlen_k is None:
        max_seqlen_k = _max_len(cu_seqlens_k)
    try:
        return op(q, k, v, cu_seqlens, cu_seqlens_k, max_seqlen, max_seqlen_k, 0.0, causal, False, scale=scale)[0]
    except RuntimeError:   # an arch, head dim or layout this flash build does not take: the loop
        return None


def _varlen_ref(q, k, v, cu_seqlens, max_seqlen, causal, scale, cu_seqlens_k=None, max_seqlen_k=None):
    """The PyTorch equivalent: flash varlen on CUDA where torch has it, else the loop."""
    o = (_varlen_flash(q, k, v, cu_seqlens, max_seqlen, causal, scale, cu_seqlens_k, max_seqlen_k)
         if q.is_cuda else None)
    return o if o is not None else _varlen_loop(q, k, v, cu_seqlens, causal, scale, cu_seqlens_k)


def _check(q, k, v, cu_seqlens, cu_seqlens_k=None):
    kv = cu_seqlens_k is not None
    _state.check(q.dim() == 3 and k.dim() == 3 and v.shape == k.shape and (kv or q.shape[0] == k.shape[0])
                 and q.shape[2] == k.shape[2] and k.shape[1] > 0 and q.shape[1] % k.shape[1] == 0
                 and cu_seqlens.dim() == 1 and cu_seqlens.shape[0] >= 2
                 and (not kv or cu_seqlens_k.shape == cu_seqlens.shape),
                 lambda: f"tunert.torch.attention_varlen: q {tuple(q.shape)}, k {tuple(k.shape)}, v "
                 f"{tuple(v.shape)}, cu_seqlens {tuple(cu_seqlens.shape)}"
                 + (f", cu_seqlens_k {tuple(cu_seqlens_k.shape)}" if kv else "")
                 + ": want q [T, HQ, D], k and v [T, HKV, D] (HQ a multiple of HKV), cu_seqlens [B + 1]"
                 + (" (k and v [TK, HKV, D] and cu_seqlens_k [B + 1] with cu_seqlens_k)" if kv else ""))
    for name, cu in (("cu_seqlens", cu_seqlens), ("cu_seqlens_k", cu_seqlens_k)):
        if cu is None:
            continue
        if cu.dtype != torch.int32:
            raise DTypeMismatch(f"tunert.torch.attention_varlen: {name} is {cu.dtype}, want torch.int32")
        if q.device != cu.device and q.device.type != "meta":
            raise DeviceMismatch(f"tunert.torch.attention_varlen: {name} on {cu.device}, "
                                 f"q on {q.device}: keep them on one device")


def _check_kv_lengths(cu_seqlens, cu_seqlens_k):
    """CPU only (a host read): every sequence has at least as many keys as queries."""
    lq, lk = cu_seqlens[1:] - cu_seqlens[:-1], cu_seqlens_k[1:] - cu_seqlens_k[:-1]
    bad = (lk < lq).nonzero().flatten().tolist()
    _state.check(not bad, lambda: f"tunert.torch.attention_varlen: sequence {bad[0]} has {int(lk[bad[0]])} keys "
                 f"for {int(lq[bad[0]])} queries: cu_seqlens_k must give each sequence at least its queries")


def _attention_varlen_body(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor,
                           max_seqlen: Optional[int] = None, causal: bool = True,
                           scale: Optional[float] = None, cu_seqlens_k: Optional[torch.Tensor] = None,
                           max_seqlen_k: Optional[int] = None) -> torch.Tensor:
    """Attention over B sequences packed into T tokens: q [T, HQ, D], k and v [T, HKV, D],
    cu_seqlens int32 [B + 1] (sequence b = tokens cu_seqlens[b] .. cu_seqlens[b + 1], the same for
    queries and keys; cu_seqlens[0] = 0, cu_seqlens[B] = T), causal within each sequence, GQA.
    Returns o [T, HQ, D]. max_seqlen (the longest sequence) serves only the PyTorch path (flash
    varlen takes it; without it that path reads cu_seqlens on the host). scale None: 1/sqrt(D).
    cu_seqlens_k int32 [B + 1] (chunked prefill, a cached prefix): k and v are [TK, HKV, D] and
    sequence b's keys are tokens cu_seqlens_k[b] .. cu_seqlens_k[b + 1], at least as many as its
    queries (checked on CPU only: the CUDA path reads no lengths on the host); causal is aligned at
    the end (query j sees keys 0 .. j + Lk - Lq), as flash_attn_varlen_func. max_seqlen_k: the
    longest key range, for the PyTorch path as max_seqlen."""
    _check(q, k, v, cu_seqlens, cu_seqlens_k)
    if not q.is_cuda:
        _state.count("attention_varlen", "cpu")
        if cu_seqlens_k is not None:
            _check_kv_lengths(cu_seqlens, cu_seqlens_k)
        return _varlen_loop(q, k, v, cu_seqlens, causal, scale, cu_seqlens_k)
    dev = _device_index(q)
    key, candidates, tensors_fn, reference = _varlen_problem(dev, q, k, v, cu_seqlens, max_seqlen, causal, scale,
                                                             cu_seqlens_k, max_seqlen_k)
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


_ROW_STRIDES = {"q": "q_ld", "k": "k_ld", "v": "v_ld"}


def _reads_strides(sel):
    """None where sel's kernel reads q, k, v at the row strides passed: the cp.async producer, or a
    TMA variant whose maps follow q_ld, k_ld, v_ld; else why not (a TMA variant of a bundle before
    format 1.6, whose maps assume dense rows)."""
    if not sel.info.variant.get("USE_TMA", 0):
        return None
    dense = {a.maps for a in sel.info.args if a.maps in _ROW_STRIDES and a.row_stride != _ROW_STRIDES[a.maps]}
    dense = [n for n in _ROW_STRIDES if n in dense]  # in argument order: q, k, v
    if dense:
        return (f"its variant reads {', '.join(dense)} with TMA maps of dense rows (a bundle before format 1.6): "
                f"strided views are copied")
    return None


def _varlen_problem(dev, q, k, v, cu_seqlens, max_seqlen=None, causal=True, scale=None, cu_seqlens_k=None,
                    max_seqlen_k=None):
    """(key, candidates, tensors_fn(plan), reference). Two candidates where some input is a view the
    kernel can read in place: strided (row strides passed; refused only by a TMA variant whose maps
    assume dense rows) before dense (copies); the plan's `strided` says which one won. With cu_seqlens_k: family attention.varlen_kv,
    whose kernel takes cu_prefix = cu_seqlens_k - cu_seqlens (made on the device)."""
    T, HQ, D = q.shape
    TK, HKV = k.shape[0], k.shape[1]
    B = cu_seqlens.shape[0] - 1
    kv = cu_seqlens_k is not None
    dense = (HQ * D, HKV * D, HKV * D)
    views = tuple(_row_stride(t) for t in (q, k, v))
    lds = tuple(s if s is not None else d for s, d in zip(views, dense))
    key = ("attention_varlen", dev, B, T, TK if kv else None, HQ, HKV, D, causal, scale, lds, q.dtype, k.dtype,
           v.dtype)
    family = "attention.varlen_kv" if kv else "attention.varlen"

    def candidates():
        if kv:
            dims = {"B": B, "TQ": T, "TK": TK, "HQ": HQ, "HKV": HKV, "D": D, "causal": causal}
            base = {"cu_seqlens_q": ((B + 1,), _dt(cu_seqlens)), "cu_prefix": ((B + 1,), _dt(cu_seqlens_k)),
                    "o": ((T, HQ, D), _dt(q))}
        else:
            dims = {"B": B, "T": T, "HQ": HQ, "HKV": HKV, "D": D, "causal": causal}
            base = {"cu_seqlens": ((B + 1,), _dt(cu_seqlens)), "o": ((T, HQ, D), _dt(q))}
        shapes = {"q": ((T, HQ, D), _dt(q)), "k": ((TK, HKV, D), _dt(k)), "v": ((TK, HKV, D), _dt(v))}
        knobs = {"o_ld": HQ * D}
        if scale is not None:
            knobs["scale_log2"] = scale * LOG2E
        out = []
        if lds != dense:
            strided = dict(base, **{n: s + ("strided",) for n, s in shapes.items()})
            out.append((family, dims, strided, dims,
                        dict(knobs, q_ld=lds[0], k_ld=lds[1], v_ld=lds[2]), (), _reads_strides))
        out.append((family, dims, dict(base, **shapes), dims,
                    dict(knobs, q_ld=dense[0], k_ld=dense[1], v_ld=dense[2]), ()))
        return out

    def tensors_fn(plan):
        out = torch.empty((T, HQ, D), dtype=q.dtype, device=q.device)
        in_place = "q" in plan.strided
        t = {n: x if in_place and s is not None else x.contiguous() for n, x, s in zip("qkv", (q, k, v), views)}
        if kv:
            t["cu_seqlens_q"] = cu_seqlens.contiguous()
            t["cu_prefix"] = (cu_seqlens_k - cu_seqlens).contiguous()   # int32, on the device: no sync
        else:
            t["cu_seqlens"] = cu_seqlens.contiguous()
        t["o"] = out
        return t, out

    return key, candidates, tensors_fn, lambda: _varlen_ref(q, k, v, cu_seqlens, max_seqlen, causal, scale,
                                                            cu_seqlens_k, max_seqlen_k)


@attention_varlen.register_fake
def _(q, k, v, cu_seqlens, max_seqlen=None, causal=True, scale=None, cu_seqlens_k=None, max_seqlen_k=None):
    return q.new_empty(q.shape)


_ops.PROBLEMS["attention_varlen"] = _varlen_problem
