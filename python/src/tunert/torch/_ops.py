"""The torch.library ops of tunert (namespace `tunert`), each with a fake implementation so that
torch.compile traces it, a tuned path through the process-wide bundle, and a PyTorch path.

Per call: CPU tensors run the PyTorch reference (so opcheck runs anywhere); CUDA tensors take the
cached plan of their problem (_state.plan): a tuned selection launches on the current stream
with outputs and scratch from torch's caching allocator (no host sync, no other allocation:
CUDA-graph capturable once the op ran before capture), anything else runs the PyTorch equivalent
and is counted. Inputs that are not contiguous are made so (a copy) before a tuned launch, except
where the family takes strides (decode's q and KV caches).
Scalars are bound by name from the selection (_state._bind): a scalar the bundle computes (its
recipe value is an expression of the dims) is passed as TUNERT_ARG_AUTO, so a recipe that adds one
(rmsnorm's H, softmax's cols) needs no change here; an op passes only its knobs (eps, scale, strides).
"""
import math
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from .._tensors import _torch_dtype_name
from ..errors import InvalidArgument
from . import _state

LOG2E = 1.4426950408889634


def _dt(t):
    return _torch_dtype_name(torch, t.dtype)


# the current CUDA device's index (torch.cuda.current_device without its lazy-init check: a
# CUDA tensor exists, so CUDA is initialized)
_cuda_device = torch._C._cuda_getDevice if hasattr(torch._C, "_cuda_getDevice") else torch.cuda.current_device


def _device_index(t):
    i = t.device.index
    return i if i is not None else _cuda_device()


def _launch(plan, device_index, tensors):
    # libtunert launches in the current context, which must be the device's
    if device_index != _cuda_device():
        with torch.cuda.device(device_index):
            plan.launch(tensors)
    else:
        plan.launch(tensors)


def _cuda_kernel(qualname, fn):
    """Register fn as op's kernel for CUDA tensors straight at the dispatcher's CUDA key (the
    op's own body serves the other devices): register_kernel would wrap it in two more Python
    layers per call (an aliasing check of a fresh output, a dynamo guard)."""
    torch.library.impl(qualname, "CUDA", fn)


def _vendor_or_reference(p, reference):
    """What runs where the bundle does not launch a kernel: for a vendor entry, the implementation
    whose measurement earned it where the op has one (reference.vendor_impls, by the entry's vendor
    name, e.g. "torch-compile"), so that the op is as fast as what the bundle chose; else the
    PyTorch reference."""
    impls = getattr(reference, "vendor_impls", None)
    if impls and p.kind == "vendor" and p.selection is not None:
        impl = impls.get(p.selection.info.vendor)
        if impl is not None:
            return impl()
    return reference()


def _run(op, dev, problem):
    """The tuned launch or the counted fallback. problem: (key, candidates, tensors_fn, reference)
    where tensors_fn() allocates the outputs and returns ({arg name: tensor}, result)."""
    key, candidates, tensors_fn, reference = problem
    p = _state.plan(op, key, dev, candidates)
    if p.__class__ is not _state.Plan:
        _state.fallback_or_raise(op, p)
        return _vendor_or_reference(p, reference)
    tensors, result = tensors_fn()
    _launch(p, dev, tensors)
    _state.count_tuned(op, p.selection_kind)
    return result


# ---- linear: y = x @ w.T (w [N, K] as nn.Linear keeps it), the gemm families with b_layout col ----

def _linear_ref(x, w):
    return F.linear(x, w)


def _linear_check(x, w):
    if not (w.dim() == 2 and x.shape[-1] == w.shape[1]):
        raise InvalidArgument(f"tunert.torch.linear: x {tuple(x.shape)} and w {tuple(w.shape)}: want "
                                     f"x [..., K], w [N, K]")


@torch.library.custom_op("tunert::linear", mutates_args=())
def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x [..., K] @ w[N, K].T -> [..., N] (nn.Linear without bias) through the `gemm` families
    (gemm.skinny, gemm.splitk, gemm: the bundle's fastest exact entry among those it has).
    This body serves tensors on other devices than CUDA: the PyTorch reference."""
    _linear_check(x, w)
    _state.count("linear", "cpu")
    return _linear_ref(x, w)


def linear_cuda(x, w):
    """linear on CUDA: the cached plan of (device, M, N, K, dtypes), written out rather than
    through _run because it is the op a model calls most."""
    _linear_check(x, w)
    N, K = w.shape
    M = x.numel() // K if K else 0
    dev = _device_index(x)
    key = ("linear", dev, M, N, K, x.dtype, w.dtype)
    p = _state.plans.get(key)
    if p is None:
        p = _state.plan("linear", key, dev, lambda: _linear_candidates(M, N, K, x, w))
    if p.__class__ is not _state.Plan:
        _state.fallback_or_raise("linear", p)
        return _linear_ref(x, w)
    if x.dim() == 2:
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        _launch(p, dev, {"a": x.contiguous(), "b": w.contiguous(), "c": out})
    else:
        out = torch.empty(x.shape[:-1] + (N,), dtype=x.dtype, device=x.device)
        _launch(p, dev, {"a": x.contiguous().view(M, K), "b": w.contiguous(), "c": out.view(M, N)})
    _state.count_tuned("linear", p.selection_kind)
    return out


_cuda_kernel("tunert::linear", linear_cuda)


# The families that compute a linear, with the same arguments and dims: gemm.skinny (decode sizes,
# M <= 128: its domain) and gemm.splitk beside gemm; where several have an entry for a call, the
# bundle's fastest exact one runs (_state._preference).
LINEAR_FAMILIES = ("gemm.skinny", "gemm.splitk", "gemm")


def _linear_candidates(M, N, K, x, w):
    dims = {"M": M, "N": N, "K": K, "b_layout": "col"}
    tensors = {"a": ((M, K), _dt(x)), "b": ((N, K), _dt(w)), "c": ((M, N), _dt(x))}
    return [(f, dims, tensors, dims, {}, ()) for f in LINEAR_FAMILIES]


def _linear_problem(dev, x, w):
    N, K = w.shape
    M = x.numel() // K if K else 0
    key = ("linear", dev, M, N, K, x.dtype, w.dtype)

    def candidates():
        return _linear_candidates(M, N, K, x, w)

    def tensors_fn():
        out = torch.empty(x.shape[:-1] + (N,), dtype=x.dtype, device=x.device)
        return {"a": x.contiguous().view(M, K), "b": w.contiguous(), "c": out.view(M, N)}, out

    return key, candidates, tensors_fn, lambda: _linear_ref(x, w)


@linear.register_fake
def _(x, w):
    return x.new_empty(x.shape[:-1] + (w.shape[0],))


# ---- attention prefill: dense q [B, HQ, S, D], k, v [B, HKV, S, D] ----

def _sdpa(q, k, v, causal, scale, mask=None):
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale)


def _attention_body(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                    scale: Optional[float] = None) -> torch.Tensor:
    """Prefill attention, dense [B, H, S, D] q/k/v (GQA: HQ a multiple of HKV), through the
    attention.prefill_sm90 or attention.prefill family; scale None: 1/sqrt(D)."""
    _state.check(q.dim() == 4 and k.dim() == 4 and v.shape == k.shape and q.shape[0] == k.shape[0]
                 and q.shape[3] == k.shape[3] and k.shape[1] > 0 and q.shape[1] % k.shape[1] == 0,
                 lambda: f"tunert.torch.attention: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: want "
                 f"q [B, HQ, S, D], k and v [B, HKV, S, D], HQ a multiple of HKV")
    if not q.is_cuda:
        _state.count("attention", "cpu")
        return _sdpa(q, k, v, causal, scale)
    dev = _device_index(q)
    return _run("attention", dev, _attention_problem(dev, q, k, v, causal, scale))


attention = torch.library.custom_op("tunert::attention", mutates_args=())(_attention_body)
_cuda_kernel("tunert::attention", _attention_body)


def _attention_problem(dev, q, k, v, causal=False, scale=None):
    B, HQ, S, D = q.shape
    HKV, SK = k.shape[1], k.shape[2]
    key = ("attention", dev, B, HQ, HKV, S, SK, D, causal, scale, q.dtype, k.dtype, v.dtype)

    def candidates():
        if SK != S:
            return []
        dims = {"B": B, "HQ": HQ, "HKV": HKV, "S": S, "D": D, "causal": causal}
        tensors = {"q": ((B, HQ, S, D), _dt(q)), "k": ((B, HKV, S, D), _dt(k)), "v": ((B, HKV, S, D), _dt(v)),
                   "o": ((B, HQ, S, D), _dt(q))}
        knobs = {} if scale is None else {"scale_log2": scale * LOG2E}
        return [(f, dims, tensors, dims, knobs, ()) for f in ("attention.prefill_sm90", "attention.prefill")]

    def tensors_fn():
        out = torch.empty_like(q, memory_format=torch.contiguous_format)
        return {"q": q.contiguous(), "k": k.contiguous(), "v": v.contiguous(), "o": out}, out

    return key, candidates, tensors_fn, lambda: _sdpa(q, k, v, causal, scale)


@attention.register_fake
def _(q, k, v, causal=False, scale=None):
    return torch.empty_like(q, memory_format=torch.contiguous_format)


# ---- decode over a paged KV cache (recipes/attention/decode.lua's serving contract) ----

def _decode_ref(q, k_cache, v_cache, block_table, seq_lens, scale):
    B, HQ, D = q.shape
    page, HKV = k_cache.shape[1], k_cache.shape[2]
    L = block_table.shape[1] * page
    idx = block_table.long()
    k = k_cache[idx].reshape(B, L, HKV, D).transpose(1, 2)   # [B, HKV, L, D]
    v = v_cache[idx].reshape(B, L, HKV, D).transpose(1, 2)
    if seq_lens is None:
        return _sdpa(q.unsqueeze(2), k, v, False, scale).squeeze(2)
    lens = seq_lens.to(q.device).long()
    mask = (torch.arange(L, device=q.device)[None, :] < lens[:, None]).view(B, 1, 1, L)
    o = _sdpa(q.unsqueeze(2), k, v, False, scale, mask).squeeze(2)
    return o.masked_fill((lens <= 0).view(B, 1, 1), 0)   # no keys: the empty sum, as the kernel gives


def _decode_check(op, q, k_cache, v_cache, block_table, seq_lens):
    """The shapes of the decode serving contract (tt.decode, tt.decode_fp8), InvalidArgument
    naming tunert.torch.<op> and every shape where they do not fit."""
    _state.check(q.dim() == 3 and k_cache.dim() == 4 and v_cache.shape == k_cache.shape and block_table.dim() == 2
                 and block_table.shape[0] == q.shape[0] and k_cache.shape[3] == q.shape[2]
                 and k_cache.shape[2] > 0 and q.shape[1] % k_cache.shape[2] == 0
                 and (seq_lens is None or tuple(seq_lens.shape) == (q.shape[0],)),
                 lambda: f"tunert.torch.{op}: q {tuple(q.shape)}, k_cache {tuple(k_cache.shape)}, v_cache "
                 f"{tuple(v_cache.shape)}, block_table {tuple(block_table.shape)}"
                 + ("" if seq_lens is None else f", seq_lens {tuple(seq_lens.shape)}")
                 + ": want q [B, HQ, D], caches [pages, page_size, HKV, D] with HQ a multiple of HKV, "
                 "block_table [B, max_pages], seq_lens [B]")


def _decode_body(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, block_table: torch.Tensor,
                 seq_lens: Optional[torch.Tensor] = None, scale: Optional[float] = None) -> torch.Tensor:
    """One decode step over a paged KV cache: q [B, HQ, D] (any strides with d contiguous, e.g. a
    view of a fused QKV projection), k_cache and v_cache [pages, page_size, HKV, D] (a pool of any
    number of pages, any strides with d contiguous, the same for both: NHD or a permuted HND
    cache), block_table [B, max_pages] (int32 page ids), seq_lens [B] (int32 in device memory,
    clamped to max_pages * page_size; None: every sequence is max_pages * page_size long).
    Through the attention.decode family, or attention.decode_tma where the bundle's is faster."""
    _decode_check("decode", q, k_cache, v_cache, block_table, seq_lens)
    if not q.is_cuda:
        _state.count("decode", "cpu")
        return _decode_ref(q, k_cache, v_cache, block_table, seq_lens, scale)
    dev = _device_index(q)
    return _run("decode", dev, _decode_problem(dev, q, k_cache, v_cache, block_table, seq_lens, scale))


decode = torch.library.custom_op("tunert::decode", mutates_args=())(_decode_body)
_cuda_kernel("tunert::decode", _decode_body)


def _kernel_strides_ok(t, multiple=8):
    """decode.cuh's layout rule: d contiguous, every other stride a multiple of `multiple` elements
    (16 bytes: 8 of bf16, 16 of e4m3), the address 16-byte aligned (meta tensors have no address:
    taken as aligned)."""
    st = t.stride()
    if st[-1] != 1 or not (t.device.type == "meta" or t.data_ptr() % 16 == 0):
        return False
    for x in st[:-1]:   # a loop, not all(...): no generator per call (this runs per call)
        if x % multiple:
            return False
    return True


# The families that serve tt.decode, with the same arguments and dims (attention.decode_tma: two
# tensor maps more, which libtunert builds): where both have an entry for a call, the bundle's
# fastest exact one runs (_state._preference).
DECODE_FAMILIES = ("attention.decode", "attention.decode_tma")
_state.PAGED_DECODE_OPS["decode"] = DECODE_FAMILIES


def _decode_problem(dev, q, k_cache, v_cache, block_table, seq_lens=None, scale=None, *, family=DECODE_FAMILIES,
                    kv_multiple=8, extra_tensors=None, extra_pools=(), extra_dims=None, family_dims=None,
                    reference=None):
    """The problem of a decode family (or a tuple of families, each tried) over the serving contract
    of _decode_body (tt.decode's defaults). A family that adds to it passes kv_multiple (its
    caches' stride rule, see _kernel_strides_ok), extra_tensors ({name: tensor} passed to the
    kernel as given: their shapes and dtypes must follow from the key, as the op's checks make
    them; extra_pools names those, contiguous, whose leading extent is the cache's page count,
    free as the caches' is),
    extra_dims ({dim: values}: a candidate per value, in order, for a dim that describes how the
    family was tuned rather than the call), family_dims ({family: {dim: value}}: dims of that family
    alone, which follow from the key) and reference (what runs without a tuned kernel)."""
    B, HQ, D = q.shape
    page, HKV = k_cache.shape[1], k_cache.shape[2]
    maxp = block_table.shape[1]
    L = maxp * page
    q_direct = _kernel_strides_ok(q)   # else q is copied to a dense one
    q_strides = tuple(q.stride()[:2]) if q_direct else (HQ * D, D)
    kv_strides = tuple(k_cache.stride())
    kv_ok = (_kernel_strides_ok(k_cache, kv_multiple) and _kernel_strides_ok(v_cache, kv_multiple)
             and kv_strides == tuple(v_cache.stride()))
    lens_dt = None if seq_lens is None else seq_lens.dtype
    families = (family,) if isinstance(family, str) else tuple(family)
    key = (families, dev, B, HQ, HKV, D, page, maxp, q_strides, kv_strides, kv_ok, lens_dt, scale, q.dtype,
           k_cache.dtype, v_cache.dtype, block_table.dtype)

    def candidates():
        if not kv_ok:
            return [f"{' / '.join(families)}: k_cache strides {kv_strides} and v_cache strides "
                    f"{tuple(v_cache.stride())} must be equal, multiples of {kv_multiple} elements with d "
                    "contiguous, on 16-byte aligned addresses"]
        dims = {"B": B, "HQ": HQ, "HKV": HKV, "D": D, "page_size": page, "max_pages": maxp}
        tensors = {"q": ((B, HQ, D), _dt(q), "strided"), "k_cache": (tuple(k_cache.shape), _dt(k_cache), "strided"),
                   "v_cache": (tuple(v_cache.shape), _dt(v_cache), "strided"),
                   "block_table": ((B, maxp), _dt(block_table)),
                   "seq_lens": ((B,), "i32" if seq_lens is None else _dt(seq_lens)), "o": ((B, HQ, D), _dt(q))}
        for name, t in (extra_tensors or {}).items():
            tensors[name] = (tuple(t.shape), _dt(t)) + (("strided",) if name in extra_pools else ())
        knobs = {"q_stride_b": q_strides[0], "q_stride_h": q_strides[1], "o_stride_b": HQ * D, "o_stride_h": D,
                 "kv_stride_page": kv_strides[0], "kv_stride_row": kv_strides[1], "kv_stride_h": kv_strides[2]}
        if scale is not None:
            knobs["scale_log2"] = scale * LOG2E
        # a family that took no lengths would attend to every page: it cannot serve given lengths
        needs = () if seq_lens is None else (("seq_lens",),)
        dim_sets = [dims]
        for name, values in (extra_dims or {}).items():
            dim_sets = [dict(d, **{name: v}) for d in dim_sets for v in dict.fromkeys(values)]
        own = family_dims or {}
        out = []
        for f in families:
            for d in dim_sets:
                fd = dict(d, **own.get(f, {}))
                out.append((f, fd, tensors, fd, knobs, needs))
        return out

    def tensors_fn():
        out = torch.empty((B, HQ, D), dtype=q.dtype, device=q.device)
        lens = _state.full_lengths(q.device, B, L) if seq_lens is None else seq_lens.contiguous()
        t = {"q": q if q_direct else q.contiguous(), "k_cache": k_cache, "v_cache": v_cache,
             "block_table": block_table.contiguous(), "seq_lens": lens, "o": out}
        if extra_tensors:
            t.update(extra_tensors)
        return t, out

    if reference is None:
        def reference():
            return _decode_ref(q, k_cache, v_cache, block_table, seq_lens, scale)

    return key, candidates, tensors_fn, reference


@decode.register_fake
def _(q, k_cache, v_cache, block_table, seq_lens=None, scale=None):
    return q.new_empty(q.shape)


# ---- RMSNorm, and with the residual add fused ----

def _rmsnorm_ref(x, w, eps):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()
    return y.to(x.dtype)


def _rmsnorm_add_ref(x, r, w, eps):
    h = (x.float() + r.float()).to(x.dtype)   # h as stored, then normalized (templates/rmsnorm)
    return _rmsnorm_ref(h, w, eps), h


def _norm_check(op, x, w, r=None):
    _state.check(x.dim() >= 1 and w.dim() == 1 and w.shape[0] == x.shape[-1]
                 and (r is None or r.shape == x.shape),
                 lambda: f"tunert.torch.{op}: x {tuple(x.shape)}, w {tuple(w.shape)}"
                 + ("" if r is None else f", residual {tuple(r.shape)}") + ": want x [..., H], w [H]"
                 + ("" if r is None else ", residual like x"))


def _rmsnorm_op_body(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """y = x * rsqrt(mean(x^2, -1) + eps) * w, family rmsnorm."""
    _norm_check("rmsnorm", x, w)
    if not x.is_cuda:
        _state.count("rmsnorm", "cpu")
        return _rmsnorm_ref(x, w, eps)
    dev = _device_index(x)
    return _run("rmsnorm", dev, _rmsnorm_problem(dev, x, w, eps))


rmsnorm_op = torch.library.custom_op("tunert::rmsnorm", mutates_args=())(_rmsnorm_op_body)
_cuda_kernel("tunert::rmsnorm", _rmsnorm_op_body)


def _rmsnorm_problem(dev, x, w, eps=1e-6):
    H = x.shape[-1]
    T = x.numel() // H if H else 0
    key = ("rmsnorm", dev, T, H, eps, x.dtype, w.dtype)

    def candidates():
        tensors = {"x": ((T, H), _dt(x)), "w": ((H,), _dt(w)), "y": ((T, H), _dt(x))}
        dims = {"T": T, "H": H, "residual": False}
        return [("rmsnorm", dims, tensors, dims, {"eps": eps}, ())]

    def tensors_fn():
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        return {"x": x.contiguous().view(T, H), "w": w.contiguous(), "y": y.view(T, H)}, y

    return key, candidates, tensors_fn, lambda: _rmsnorm_ref(x, w, eps)


@rmsnorm_op.register_fake
def _(x, w, eps=1e-6):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _rmsnorm_add_body(x: torch.Tensor, residual: torch.Tensor, w: torch.Tensor,
                      eps: float = 1e-6) -> Tuple[torch.Tensor, torch.Tensor]:
    """h = x + residual (the new residual stream), y = rmsnorm(h) * w; returns (y, h). Family
    rmsnorm.add."""
    _norm_check("rmsnorm_add", x, w, residual)
    if not x.is_cuda:
        _state.count("rmsnorm_add", "cpu")
        return _rmsnorm_add_ref(x, residual, w, eps)
    dev = _device_index(x)
    return _run("rmsnorm_add", dev, _rmsnorm_add_problem(dev, x, residual, w, eps))


rmsnorm_add = torch.library.custom_op("tunert::rmsnorm_add", mutates_args=())(_rmsnorm_add_body)
_cuda_kernel("tunert::rmsnorm_add", _rmsnorm_add_body)


def _rmsnorm_add_problem(dev, x, residual, w, eps=1e-6):
    H = x.shape[-1]
    T = x.numel() // H if H else 0
    key = ("rmsnorm_add", dev, T, H, eps, x.dtype, residual.dtype, w.dtype)

    def candidates():
        tensors = {"x": ((T, H), _dt(x)), "r": ((T, H), _dt(residual)), "w": ((H,), _dt(w)),
                   "y": ((T, H), _dt(x)), "h": ((T, H), _dt(x))}
        dims = {"T": T, "H": H, "residual": True}
        return [("rmsnorm.add", dims, tensors, dims, {"eps": eps}, ())]

    def tensors_fn():
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        h = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        return {"x": x.contiguous().view(T, H), "r": residual.contiguous().view(T, H), "w": w.contiguous(),
                "y": y.view(T, H), "h": h.view(T, H)}, (y, h)

    return key, candidates, tensors_fn, lambda: _rmsnorm_add_ref(x, residual, w, eps)


@rmsnorm_add.register_fake
def _(x, residual, w, eps=1e-6):
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            torch.empty_like(x, memory_format=torch.contiguous_format))


def rmsnorm(x, w, eps=1e-6, residual=None):
    """RMSNorm of x over its last dim with weight w; with `residual`, the fused add: returns
    (y, h) where h = x + residual is the new residual stream."""
    if residual is None:
        return rmsnorm_op(x, w, eps)
    return rmsnorm_add(x, residual, w, eps)


# ---- softmax over the last dim ----

def _softmax_ref(x):
    return torch.softmax(x, dim=-1)


def _softmax_op_body(x: torch.Tensor) -> torch.Tensor:
    """softmax over the last dim, families softmax, softmax.split, softmax.cluster (an exact tuned
    problem first, then the fastest measured)."""
    _state.check(x.dim() >= 1, "tunert.torch.softmax: x must have a dim")
    if not x.is_cuda:
        _state.count("softmax", "cpu")
        return _softmax_ref(x)
    dev = _device_index(x)
    return _run("softmax", dev, _softmax_problem(dev, x))


softmax_op = torch.library.custom_op("tunert::softmax", mutates_args=())(_softmax_op_body)
_cuda_kernel("tunert::softmax", _softmax_op_body)


def _softmax_problem(dev, x):
    cols = x.shape[-1]
    rows = x.numel() // cols if cols else 0
    key = ("softmax", dev, rows, cols, x.dtype)

    def candidates():
        tensors = {"x": ((rows, cols), _dt(x)), "y": ((rows, cols), _dt(x))}
        dims = {"rows": rows, "cols": cols}
        return [(f, dims, tensors, dims, {}, ())
                for f in ("softmax", "softmax.split", "softmax.cluster")]

    def tensors_fn():
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        return {"x": x.contiguous().view(rows, cols), "y": y.view(rows, cols)}, y

    return key, candidates, tensors_fn, lambda: _softmax_ref(x)


@softmax_op.register_fake
def _(x):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def softmax(x, dim=-1):
    """softmax of x along `dim` (the op works on the last dim; another is moved there and back)."""
    d = dim % x.dim()
    if d == x.dim() - 1:
        return softmax_op(x)
    return softmax_op(x.movedim(d, -1)).movedim(-1, d)


prefill = attention

# op name -> its problem function (dev, *args, **kwargs), for explain()
PROBLEMS = {"linear": _linear_problem, "attention": _attention_problem, "prefill": _attention_problem,
            "decode": _decode_problem, "rmsnorm": _rmsnorm_problem, "rmsnorm_add": _rmsnorm_add_problem,
            "softmax": _softmax_problem}
