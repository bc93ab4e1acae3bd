"""tunert::grouped_swiglu and tunert::moe_layer: a Mixture-of-Experts layer over the bundle.

    h = tt.grouped_swiglu(a, w13, offsets)   # silu(a_e @ gate_e.T) * (a_e @ up_e.T), moe.grouped_swiglu
    y = tt.moe_layer(x, router_w, w13, w2, top_k)   # router, top-k, permute, experts, combine
    out = moe_combine(y, pos, weights)   # weighted un-permutation, moe.combine

w13 [E, 2I, H] holds each expert's gate rows then its up rows (vLLM's w13_weight as it is;
torch.cat([w1, w3], dim=1) of two [E, I, H] stacks), w2 [E, H, I] the down projections.

moe_layer, per call: router logits x @ router_w.T (router_w's dtype) and top-k over their softmax
(or sigmoid) in fp32, renormalized to sum 1 if asked; the T * top_k routed rows sorted by expert
(a stable argsort of the expert ids; offsets by searchsorted: no host sync); the gate/up
projection with SwiGLU in its epilogue (moe.grouped_swiglu) and the down projection
(tunert::grouped_mm, moe.grouped) through the bundle; the rows put back in token order and summed
with their routing weights in fp32, rounded once to x's dtype (tunert::moe_combine, moe.combine:
one pass over the rows, given pos, the inverse of the sort, computed on the device). The router and
the permutation are PyTorch ops; a GEMM or the combination the bundle cannot serve runs its PyTorch
equivalent (counted per op in stats()). moe_layer_torch is the same layer in PyTorch only (the
benchmark's and the fallbacks' reference).
"""
import warnings

import torch
import torch.nn.functional as F

from ..errors import DeviceMismatch, DTypeMismatch
from . import _ops, _state
from ._ops import _cuda_kernel, _device_index, _dt, _run
from ._ops_moe import MIN_ROWS, _check_routing, _grouped_ref, grouped_mm

SCORINGS = ("softmax", "sigmoid")


# ---- grouped_swiglu: a [T, H] sorted by expert, w13 [E, 2I, H], offsets int32 [E + 1] -> [T, I] ----

def _swiglu_loop(a, w13, offsets):
    """Per expert with rows (a host read of offsets), both projections in fp32 and one rounding,
    as the kernel computes them; rows past offsets[E] are zeros."""
    I = w13.shape[1] // 2
    h = torch.zeros((a.shape[0], I), dtype=a.dtype, device=a.device)
    offs = offsets.tolist()
    for e, (lo, hi) in enumerate(zip(offs[:-1], offs[1:])):
        if hi > lo:
            g = a[lo:hi].float() @ w13[e].float().t()
            h[lo:hi] = (F.silu(g[:, :I]) * g[:, I:]).to(a.dtype)
    return h


def _swiglu_ref(a, w13, offsets):
    """The PyTorch equivalent on CUDA: the gate|up grouped GEMM (torch._grouped_mm where it runs),
    then silu and the product on its bf16 result."""
    if not a.is_cuda:
        return _swiglu_loop(a, w13, offsets)
    I = w13.shape[1] // 2
    g = _grouped_ref(a, w13, offsets)
    return F.silu(g[:, :I]) * g[:, I:]


_compiled = {}


def _silu_mul(g, I):
    return F.silu(g[:, :I]) * g[:, I:]


def _swiglu_compiled(a, w13, offsets):
    """The vendor entry "torch-compile" of moe.grouped_swiglu (tools/peers/peer_family_moe.py): the
    grouped GEMM, then silu * mul as one kernel under torch.compile (inductor fuses it; the GEMM is
    an extern call there too). Eager where torch.compile cannot run (counted once as a warning)."""
    if a.device.type != "cuda":
        return _swiglu_ref(a, w13, offsets)
    g = _grouped_ref(a, w13, offsets)
    fn = _compiled.get("silu_mul")
    if fn is None:
        fn = _compiled["silu_mul"] = torch.compile(_silu_mul)
    try:
        return fn(g, w13.shape[1] // 2)
    except Exception as e:  # noqa: BLE001 - no triton / inductor here: the eager product is the same math
        warnings.warn(f"tunert.torch.grouped_swiglu: torch.compile of silu * mul failed ({type(e).__name__}: {e}); "
                      f"running it eagerly")
        _compiled["silu_mul"] = _silu_mul
        return _silu_mul(g, w13.shape[1] // 2)


def _check_swiglu(op, a, w13):
    _state.check(a.dim() == 2 and w13.dim() == 3 and w13.shape[1] % 2 == 0 and a.shape[1] == w13.shape[2],
                 lambda: f"tunert.torch.{op}: a {tuple(a.shape)}, w13 {tuple(w13.shape)}: want a [T, H], "
                 f"w13 [E, 2I, H]")
    if a.dtype != w13.dtype:
        raise DTypeMismatch(f"tunert.torch.{op}: a is {a.dtype}, w13 {w13.dtype}: want one dtype")


def _grouped_swiglu_body(a: torch.Tensor, w13: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """SwiGLU of the experts' gate/up projection, contiguous layout: a [T, H] rows sorted by expert,
    w13 [E, 2I, H] (expert e's gate rows 0 .. I - 1, up rows I .. 2I - 1), offsets int32 [E + 1] on
    a's device (expert e owns rows offsets[e] .. offsets[e + 1]; an expert may have none). Returns h
    [T, I], h[rows of e] = silu(a @ w13[e, :I].T) * (a @ w13[e, I:].T). Family moe.grouped_swiglu."""
    _check_swiglu("grouped_swiglu", a, w13)
    _check_routing("grouped_swiglu", offsets, "offsets", w13.shape[0] + 1, a)
    if not a.is_cuda:
        _state.count("grouped_swiglu", "cpu")
        return _swiglu_loop(a, w13, offsets)
    dev = _device_index(a)
    return _run("grouped_swiglu", dev, _swiglu_problem(dev, a, w13, offsets))


grouped_swiglu = torch.library.custom_op("tunert::grouped_swiglu", mutates_args=())(_grouped_swiglu_body)
_cuda_kernel("tunert::grouped_swiglu", _grouped_swiglu_body)


def _swiglu_problem(dev, a, w13, offsets):
    T, K = a.shape
    E, N = w13.shape[0], w13.shape[1] // 2
    key = ("grouped_swiglu", dev, T, E, N, K, a.dtype, w13.dtype)

    def candidates():
        tensors = {"a": ((T, K), _dt(a)), "w": ((E, 2 * N, K), _dt(w13)), "h": ((T, N), _dt(a)),
                   "offsets": ((E + 1,), _dt(offsets))}
        out = []
        for m in MIN_ROWS:
            dims = {"E": E, "N": N, "K": K, "T": T, "min_tokens": m}
            out.append(("moe.grouped_swiglu", dims, tensors, dims, {}, ()))
        return out

    def tensors_fn():
        h = torch.empty((T, N), dtype=a.dtype, device=a.device)
        return {"a": a.contiguous(), "w": w13.contiguous(), "h": h, "offsets": offsets.contiguous()}, h

    def reference():
        return _swiglu_ref(a, w13, offsets)
    reference.vendor_impls = {"torch-compile": lambda: _swiglu_compiled(a, w13, offsets)}
    return key, candidates, tensors_fn, reference


@grouped_swiglu.register_fake
def _(a, w13, offsets):
    return a.new_empty((a.shape[0], w13.shape[1] // 2))


# ---- moe_combine: y [T * top_k, H] in expert order, pos int32 [T * top_k], weights fp32 [T, top_k] -> [T, H] ----

def _combine_ref(y, pos, weights):
    """combine() given pos instead of order: y[pos] is the rows in token order (a gather where
    combine scatters; the same rows, the same fp32 products and sums, one rounding)."""
    T, k = weights.shape
    return (y[pos.long()].view(T, k, -1).float() * weights[..., None]).sum(1).to(y.dtype)


def _check_combine(y, pos, weights):
    T, k = weights.shape if weights.dim() == 2 else (-1, -1)
    _state.check(y.dim() == 2 and weights.dim() == 2 and y.shape[0] == T * k,
                 lambda: f"tunert.torch.moe_combine: y {tuple(y.shape)}, weights {tuple(weights.shape)}: want "
                 f"y [T * top_k, H], weights [T, top_k]")
    _state.check(pos.dim() == 1 and pos.shape[0] == T * k,
                 lambda: f"tunert.torch.moe_combine: pos {tuple(pos.shape)}: want [{T * k}] (T * top_k)")
    for name, t, want in (("pos", pos, torch.int32), ("weights", weights, torch.float32)):
        if t.dtype != want:
            raise DTypeMismatch(f"tunert.torch.moe_combine: {name} is {t.dtype}, want {want}")
        if t.device != y.device and y.device.type != "meta":
            raise DeviceMismatch(f"tunert.torch.moe_combine: {name} on {t.device}, y on {y.device}: keep them on one "
                                 f"device")


def _moe_combine_body(y: torch.Tensor, pos: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The weighted un-permutation that ends a MoE layer: y [T * top_k, H] (the experts' rows in
    expert order), pos int32 [T * top_k] on y's device (pos[t * top_k + j]: the row of y holding
    token t's slot j; a permutation), weights fp32 [T, top_k]. Returns out [T, H] in y's dtype,
    out[t] = sum_j weights[t, j] * y[pos[t * top_k + j]], products and sums in fp32, one rounding.
    Family moe.combine."""
    _check_combine(y, pos, weights)
    if not y.is_cuda:
        _state.count("moe_combine", "cpu")
        return _combine_ref(y, pos, weights)
    dev = _device_index(y)
    return _run("moe_combine", dev, _combine_problem(dev, y, pos, weights))


moe_combine = torch.library.custom_op("tunert::moe_combine", mutates_args=())(_moe_combine_body)
_cuda_kernel("tunert::moe_combine", _moe_combine_body)


def _combine_problem(dev, y, pos, weights):
    T, k = weights.shape
    H = y.shape[1]
    key = ("moe_combine", dev, T, H, k, y.dtype, pos.dtype, weights.dtype)

    def candidates():
        dims = {"T": T, "H": H, "top_k": k}
        tensors = {"y": ((T * k, H), _dt(y)), "pos": ((T * k,), _dt(pos)), "weights": ((T, k), _dt(weights)),
                   "out": ((T, H), _dt(y))}
        return [("moe.combine", dims, tensors, dims, {}, ())]

    def tensors_fn():
        out = torch.empty((T, H), dtype=y.dtype, device=y.device)
        return {"y": y.contiguous(), "pos": pos.contiguous(), "weights": weights.contiguous(), "out": out}, out

    return key, candidates, tensors_fn, lambda: _combine_ref(y, pos, weights)


@moe_combine.register_fake
def _(y, pos, weights):
    return y.new_empty((weights.shape[0], y.shape[1]))


# ---- the layer ----

def route(x, router_w, top_k, renormalize=True, scoring="softmax"):
    """(weights fp32 [T, top_k], expert ids int64 [T, top_k]) of the tokens x [T, H]: the top_k
    experts by softmax (or sigmoid) of the router logits x @ router_w.T, the weights renormalized to
    sum 1 per token if asked."""
    logits = F.linear(x.to(router_w.dtype), router_w).float()
    scores = logits.softmax(-1) if scoring == "softmax" else logits.sigmoid()
    weights, ids = torch.topk(scores, top_k, dim=-1)
    if renormalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, ids


def permute(ids, E):
    """(order, offsets) of the routed rows: order [T * top_k] lists the flat (token, slot) indices
    sorted by expert (stable: tokens in order within an expert), offsets int32 [E + 1] the experts'
    first rows in that order. On the device, no host sync."""
    flat = ids.reshape(-1)
    order = torch.argsort(flat, stable=True)
    bounds = torch.arange(E + 1, device=ids.device, dtype=flat.dtype)
    offsets = torch.searchsorted(flat[order], bounds).to(torch.int32)
    return order, offsets


def combine(y, order, weights, dtype):
    """y [T * top_k, H] in expert order -> [T, H]: each token's rows weighted and summed in fp32."""
    T, k = weights.shape
    back = torch.empty_like(y)
    back[order] = y
    return (back.view(T, k, -1).float() * weights[..., None]).sum(1).to(dtype)


def inverse_order(order):
    """pos int32 [n] with pos[order] = arange(n): the row of the sorted order that holds each flat
    (token, slot) index. On the device, no host sync."""
    n = order.shape[0]
    pos = torch.empty(n, dtype=torch.int32, device=order.device)
    pos[order] = torch.arange(n, dtype=torch.int32, device=order.device)
    return pos


def _combine_tuned(y, order, weights, dtype):
    """combine() through tunert::moe_combine (y is in x's dtype in the layer: dtype is y's)."""
    return moe_combine(y, inverse_order(order), weights)


def _layer(x, router_w, w13, w2, top_k, renormalize, scoring, swiglu, down, combine_rows):
    """The layer with the two expert GEMMs and the combination given: swiglu(a, w13, offsets),
    down(h, w2, offsets), combine_rows(y, order, weights, dtype)."""
    weights, ids = route(x, router_w, top_k, renormalize, scoring)
    order, offsets = permute(ids, w13.shape[0])
    xs = x[order // top_k]
    h = swiglu(xs, w13, offsets)
    return combine_rows(down(h, w2, offsets), order, weights, x.dtype)


def moe_layer_torch(x, router_w, w13, w2, top_k, renormalize=True, scoring="softmax"):
    """moe_layer in PyTorch only (torch._grouped_mm where it runs, else a loop over the experts),
    with the same routing, permutation and combination: the baseline a user has."""
    return _layer(x, router_w, w13, w2, top_k, renormalize, scoring, _swiglu_ref, _grouped_ref, combine)


def check_layer_shapes(op, x, router_w, w13, w2, top_k, scoring):
    """The shapes, top_k and scoring of a layer op's arguments (moe_layer, moe_layer_fp8)."""
    E = w13.shape[0] if w13.dim() == 3 else -1
    _state.check(x.dim() == 2 and router_w.dim() == 2 and w13.dim() == 3 and w2.dim() == 3
                 and router_w.shape == (E, x.shape[1]) and w13.shape[1] % 2 == 0 and w13.shape[2] == x.shape[1]
                 and w2.shape == (E, x.shape[1], w13.shape[1] // 2),
                 lambda: f"tunert.torch.{op}: x {tuple(x.shape)}, router_w {tuple(router_w.shape)}, w13 "
                 f"{tuple(w13.shape)}, w2 {tuple(w2.shape)}: want x [T, H], router_w [E, H], w13 [E, 2I, H], "
                 f"w2 [E, H, I]")
    _state.check(1 <= top_k <= E, lambda: f"tunert.torch.{op}: top_k {top_k}: want 1 .. {E} (the experts)")
    _state.check(scoring in SCORINGS, lambda: f"tunert.torch.{op}: scoring {scoring!r}: want one of {SCORINGS}")


def _check_layer(x, router_w, w13, w2, top_k, scoring):
    check_layer_shapes("moe_layer", x, router_w, w13, w2, top_k, scoring)
    if not (x.dtype == w13.dtype == w2.dtype):
        raise DTypeMismatch(f"tunert.torch.moe_layer: x {x.dtype}, w13 {w13.dtype}, w2 {w2.dtype}: want one dtype")
    for name, t in (("router_w", router_w), ("w13", w13), ("w2", w2)):
        if t.device != x.device and x.device.type != "meta":
            raise DeviceMismatch(f"tunert.torch.moe_layer: {name} on {t.device}, x on {x.device}: keep them on one device")


@torch.library.custom_op("tunert::moe_layer", mutates_args=())
def moe_layer(x: torch.Tensor, router_w: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, top_k: int,
              renormalize: bool = True, scoring: str = "softmax") -> torch.Tensor:
    """A Mixture-of-Experts MLP: x [T, H], router_w [E, H], w13 [E, 2I, H] (gate rows, then up rows),
    w2 [E, H, I]; each token goes to its top_k experts by softmax (or sigmoid) of x @ router_w.T,
    the weights renormalized to sum 1 if asked; returns sum over its experts of weight *
    (silu(x @ gate.T) * (x @ up.T)) @ w2[e].T, [T, H] in x's dtype. Families moe.grouped_swiglu,
    moe.grouped and moe.combine through the bundle (tunert.torch.grouped_swiglu, grouped_mm,
    moe_combine)."""
    _check_layer(x, router_w, w13, w2, top_k, scoring)
    if x.shape[0] == 0:
        return x.new_empty(x.shape)
    return _layer(x, router_w, w13, w2, top_k, renormalize, scoring, grouped_swiglu, grouped_mm, _combine_tuned)


@moe_layer.register_fake
def _(x, router_w, w13, w2, top_k, renormalize=True, scoring="softmax"):
    return x.new_empty(x.shape)


_ops.PROBLEMS["grouped_swiglu"] = _swiglu_problem
_ops.PROBLEMS["moe_combine"] = _combine_problem
