"""tunert::decode_fp8: one decode step over a paged fp8 e4m3 KV cache with f32 scales per KV head
(vLLM's and FlashInfer's k_scale / v_scale) or per page and KV head, family attention.decode_fp8 of
recipes/attention/decode_fp8.lua (templates/attention/decode.cuh with KV_FP8 1), or with per-head
scales attention.decode_fp8_tma (the same kernel fed by tensor copies) where the bundle's is faster:

    o[b, hq] = softmax_j(q[b, hq] . (k[b, j, hkv] * ks) * scale) (v[b, j, hkv] * vs)
    hkv = hq / (HQ / HKV), j < seq_lens[b], page = block_table[b, j // page_size]
    ks = k_scale[hkv] (per head) or k_scale[page, hkv] (per page); vs likewise

The serving contract is tt.decode's (_ops._decode_check, _ops._decode_problem given this family,
its cache stride rule, the scales and the dim min_len): q bf16 [B, HQ, D] with any strides with d
contiguous, k_cache / v_cache float8_e4m3fn [pages, page_size, HKV, D] with the same strides, d
contiguous and every other stride a multiple of 16 elements, block_table int32 [B, max_pages],
seq_lens int32 [B] in device memory (None: every sequence max_pages * page_size long). Scales:
[HKV] per KV head, a 0-d / one-element tensor per tensor (expanded to HKV values), or [pages, HKV]
per page and KV head (the recipe's kv_scale = "page"; both scales the same layout, positive and
finite). The scales are read by the kernel: a new value needs no new plan.

min_len (the shortest length a problem was tuned with) describes the lengths drawn while tuning,
not anything the kernel needs: every variant serves any lengths. The op cannot know the lengths
without a host read, so it offers both values the recipe tunes (1: mixed, max_pages * page_size:
all full) and takes the exact tuned entry where one exists.
"""
from typing import Optional

import torch

from ..errors import DeviceMismatch, DTypeMismatch, ShapeMismatch
from . import _ops, _state
from ._ops import _cuda_kernel, _decode_check, _decode_problem, _decode_ref, _device_index, _run

FAMILY = "attention.decode_fp8"
# the same kernel fed by tensor copies, per-head scales only (dim layout: the cache's strides); where
# both have an entry for a call, the bundle's fastest exact one runs (_state._preference)
TMA_FAMILY = "attention.decode_fp8_tma"
_state.PAGED_DECODE_OPS["decode_fp8"] = (FAMILY, TMA_FAMILY)
KV_STRIDE_ELEMENTS = 16   # decode.cuh with KV_FP8: K/V strides a multiple of 16 elements (16 bytes)


def _e4m3():
    return getattr(torch, "float8_e4m3fn", None)


def _check(q, k_cache, v_cache, k_scale, v_scale, block_table, seq_lens):
    """Shapes, dtypes and devices, each failure saying what is wrong (InvalidArgument and its
    subclasses: ValueError)."""
    _decode_check("decode_fp8", q, k_cache, v_cache, block_table, seq_lens)
    op = "tunert.torch.decode_fp8"
    fp8 = _e4m3()
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if fp8 is None or t.dtype != fp8:
            raise DTypeMismatch(f"{op}: {name} is {t.dtype}, want torch.float8_e4m3fn (a bf16 cache: tt.decode)")
    if not q.dtype.is_floating_point or q.dtype.itemsize == 1:
        raise DTypeMismatch(f"{op}: q is {q.dtype}, want torch.bfloat16 (the tuned kernel's; f16 / f32 run PyTorch)")
    for name, t in (("block_table", block_table), ("seq_lens", seq_lens)):
        if t is not None and t.dtype not in (torch.int32, torch.int64):
            raise DTypeMismatch(f"{op}: {name} is {t.dtype}, want torch.int32")
    pages, HKV = k_cache.shape[0], k_cache.shape[2]
    for name, s in (("k_scale", k_scale), ("v_scale", v_scale)):
        if s.dtype != torch.float32:
            raise DTypeMismatch(f"{op}: {name} is {s.dtype}, want torch.float32")
        if not (s.numel() == 1 and s.dim() <= 1) and tuple(s.shape) not in ((HKV,), (pages, HKV)):
            raise ShapeMismatch(f"{op}: {name} {tuple(s.shape)}: want [HKV] = [{HKV}] (one scale per KV head), "
                                f"[pages, HKV] = [{pages}, {HKV}] (one per page and KV head), "
                                f"or one element (a per-tensor scale)")
    if _layout(k_scale) != _layout(v_scale):
        raise ShapeMismatch(f"{op}: k_scale {tuple(k_scale.shape)} and v_scale {tuple(v_scale.shape)}: "
                            f"both per page ([pages, HKV]) or neither")
    if q.device.type != "meta":
        for name, t in (("k_cache", k_cache), ("v_cache", v_cache), ("k_scale", k_scale), ("v_scale", v_scale),
                        ("block_table", block_table), ("seq_lens", seq_lens)):
            if t is not None and t.device != q.device:
                raise DeviceMismatch(f"{op}: {name} on {t.device}, q on {q.device}: keep them on one device")


def _layout(s):
    """The recipe's kv_scale of a checked scale: "page" for [pages, HKV], else "head"."""
    return "page" if s.dim() == 2 else "head"


def _kernel_scale(s, HKV):
    """A scale as the kernel reads it: [1, HKV] contiguous per head (a per-tensor scale repeated),
    [pages, HKV] contiguous per page."""
    if _layout(s) == "page":
        return s.contiguous()
    if s.numel() == 1 and HKV != 1:
        return _repeated_scale(s, HKV)
    return s.reshape(1, HKV).contiguous()


# Per-tensor scales repeated per head, by (storage address, device, version counter, HKV): an
# engine passes the same one-element k_scale and v_scale every step, and repeating them costs a
# copy kernel each. The entry keeps its source tensor alive, so the address is not reused while it
# is cached; an in-place update bumps the version counter and misses.
_REPEATED = {}
_REPEATED_MAX = 64


def _repeated_scale(s, HKV):
    """s (one element) repeated HKV times as [1, HKV], from _REPEATED when this tensor was repeated
    before at its current version. While a CUDA graph is captured the copy is made and not kept:
    in the graph it re-reads the scale at every replay, as an engine that updates it in place
    between replays needs. Nor is it kept for an inference tensor (torch.inference_mode), which has
    no version counter to tell an update."""
    def repeat():
        return s.reshape(1).expand(HKV).reshape(1, HKV).contiguous()

    if s.is_inference() or (s.is_cuda and torch.cuda.is_current_stream_capturing()):
        return repeat()
    key = (s.data_ptr(), str(s.device), s._version, HKV)
    hit = _REPEATED.get(key)
    if hit is not None and hit[0] is s:
        return hit[1]
    if len(_REPEATED) >= _REPEATED_MAX:
        _REPEATED.pop(next(iter(_REPEATED)), None)
    out = _REPEATED[key] = (s, repeat())
    return out[1]


def _reference(q, k_cache, v_cache, k_scale, v_scale, block_table, seq_lens, scale):
    """fp32: the used pages gathered and dequantized (e4m3 * the head's or page's scale), then
    tt.decode's reference math on them (_decode_ref over a block table of the gathered pages); q's
    dtype out."""
    B, maxp = block_table.shape
    page, HKV, D = k_cache.shape[1:]
    idx = block_table.long().reshape(-1).to(k_cache.device)

    def scales(s):  # [B * max_pages or 1, 1, HKV, 1]
        per_page = _layout(s) == "page"
        s = _kernel_scale(s, HKV).float()
        return (s[idx] if per_page else s).view(-1, 1, HKV, 1)

    k = k_cache[idx].float() * scales(k_scale)   # [B * max_pages, page_size, HKV, D]
    v = v_cache[idx].float() * scales(v_scale)
    pages = torch.arange(B * maxp, device=k.device).view(B, maxp)
    return _decode_ref(q.float(), k, v, pages, seq_lens, scale).to(q.dtype)


def _cache_layout(k_cache):
    """attention.decode_fp8_tma's dim layout for a cache: "nhd" where its strides are the packed
    [pages, page_size, HKV, D] ones the tensor maps describe, else "hnd" (read through cp.async)."""
    page, HKV, D = k_cache.shape[1:]
    return "nhd" if tuple(k_cache.stride()) == (page * HKV * D, HKV * D, D, 1) else "hnd"


def _problem(dev, q, k_cache, v_cache, k_scale, v_scale, block_table, seq_lens=None, scale=None):
    """(key, candidates, tensors_fn, reference) of _ops._run: tt.decode's problem for these
    families (attention.decode_fp8_tma for per-head scales only), with its cache strides, the scale
    tensors as the kernel reads them, their layout (dim kv_scale) and both min_len values."""
    HKV = k_cache.shape[2]
    layout = _layout(k_scale)
    families = (FAMILY, TMA_FAMILY) if layout == "head" else (FAMILY,)
    key, candidates, tensors_fn, reference = _decode_problem(
        dev, q, k_cache, v_cache, block_table, seq_lens, scale, family=families, kv_multiple=KV_STRIDE_ELEMENTS,
        extra_tensors={"k_scale": _kernel_scale(k_scale, HKV), "v_scale": _kernel_scale(v_scale, HKV)},
        extra_pools=("k_scale", "v_scale") if layout == "page" else (),
        extra_dims={"min_len": (1, block_table.shape[1] * k_cache.shape[1]), "kv_scale": (layout,)},
        family_dims={TMA_FAMILY: {"layout": _cache_layout(k_cache)}},
        reference=lambda: _reference(q, k_cache, v_cache, k_scale, v_scale, block_table, seq_lens, scale))
    return key + (layout,), candidates, tensors_fn, reference


def _body(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, k_scale: torch.Tensor,
          v_scale: torch.Tensor, block_table: torch.Tensor, seq_lens: Optional[torch.Tensor] = None,
          scale: Optional[float] = None) -> torch.Tensor:
    """One decode step over a paged fp8 e4m3 KV cache (module docstring); scale None: 1/sqrt(D).
    Through the attention.decode_fp8 family, or attention.decode_fp8_tma where the bundle's is faster
    (per-head scales)."""
    _check(q, k_cache, v_cache, k_scale, v_scale, block_table, seq_lens)
    if not q.is_cuda:
        _state.count("decode_fp8", "cpu")
        return _reference(q, k_cache, v_cache, k_scale, v_scale, block_table, seq_lens, scale)
    dev = _device_index(q)
    return _run("decode_fp8", dev, _problem(dev, q, k_cache, v_cache, k_scale, v_scale, block_table, seq_lens, scale))


decode_fp8 = torch.library.custom_op("tunert::decode_fp8", mutates_args=())(_body)
_cuda_kernel("tunert::decode_fp8", _body)


@decode_fp8.register_fake
def _(q, k_cache, v_cache, k_scale, v_scale, block_table, seq_lens=None, scale=None):
    _check(q, k_cache, v_cache, k_scale, v_scale, block_table, seq_lens)
    return q.new_empty(q.shape)


_ops.PROBLEMS["decode_fp8"] = _problem
