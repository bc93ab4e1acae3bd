"""tunert::grouped_mm and tunert::grouped_mm_masked: the Mixture-of-Experts grouped GEMM, c_e =
a_e @ w[e].T for every expert in one launch (w [E, N, K] as nn.Linear keeps each expert's weight),
families moe.grouped (contiguous) and moe.grouped_masked (recipes/moe/grouped.lua).

The routing (offsets, counts) stays on the device: the tuned kernel builds its tile list from it and
its grid depends on the dims only, so there is no host sync and a CUDA graph replays it while the
routing changes. The families' dims min_tokens / min_count describe the routing the problem was
tuned with (the least rows an expert got), not anything the kernel needs: every variant serves any
routing, empty experts included. The op cannot know the minimum without a host read, so it offers
both values it was tuned at (1 and 0) and takes the exact tuned entry where one exists.
"""
import torch

from ..errors import DeviceMismatch, DTypeMismatch
from . import _ops, _state
from ._ops import _cuda_kernel, _device_index, _dt, _run

MIN_ROWS = (1, 0)   # the min_tokens / min_count values recipes/moe/grouped.lua tunes


def _check_routing(op, t, name, want_len, x):
    _state.check(t.dim() == 1 and t.shape[0] == want_len,
                 lambda: f"tunert.torch.{op}: {name} {tuple(t.shape)}: want [{want_len}]")
    if t.dtype != torch.int32:
        raise DTypeMismatch(f"tunert.torch.{op}: {name} is {t.dtype}, want torch.int32")
    if t.device != x.device and x.device.type != "meta":
        raise DeviceMismatch(f"tunert.torch.{op}: {name} on {t.device}, a on {x.device}: keep them on one device")


def _check_weights(op, a, w, a_shape):
    """a_shape: a's layout in words, "[T, K]" or "[E, cap, K]" (its rank: the commas plus one)."""
    _state.check(w.dim() == 3 and a.dim() == a_shape.count(",") + 1 and a.shape[-1] == w.shape[2],
                 lambda: f"tunert.torch.{op}: a {tuple(a.shape)}, w {tuple(w.shape)}: want a {a_shape}, "
                 f"w [E, N, K]")
    if a.dtype != w.dtype:
        raise DTypeMismatch(f"tunert.torch.{op}: a is {a.dtype}, w {w.dtype}: want one dtype")


# ---- contiguous: a [T, K] sorted by expert, offsets int32 [E + 1] ----

def _grouped_loop(a, w, offsets):
    """One matmul per expert with rows (a host read of offsets); rows past offsets[E] are zeros."""
    c = torch.zeros((a.shape[0], w.shape[1]), dtype=a.dtype, device=a.device)
    offs = offsets.tolist()
    for e, (lo, hi) in enumerate(zip(offs[:-1], offs[1:])):
        if hi > lo:
            c[lo:hi] = a[lo:hi] @ w[e].t()
    return c


def _grouped_ref(a, w, offsets):
    """The PyTorch equivalent: torch._grouped_mm (one launch, no host read; offs are the experts'
    row ends) for bf16 CUDA tensors where torch has it, else the loop."""
    if a.is_cuda and a.dtype == torch.bfloat16 and hasattr(torch, "_grouped_mm"):
        try:
            return torch._grouped_mm(a, w.transpose(-2, -1), offs=offsets[1:])
        except RuntimeError:   # an arch or alignment this torch's kernel does not take: the loop
            pass
    return _grouped_loop(a, w, offsets)


def _grouped_mm_body(a: torch.Tensor, w: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Grouped GEMM, contiguous layout: a [T, K] rows sorted by expert, w [E, N, K], offsets int32
    [E + 1] on a's device (expert e owns rows offsets[e] .. offsets[e + 1]; offsets[0] = 0,
    offsets[E] = T; an expert may have none). Returns c [T, N], c[rows of e] = a[rows of e] @
    w[e].T. Family moe.grouped."""
    _check_weights("grouped_mm", a, w, "[T, K]")
    _check_routing("grouped_mm", offsets, "offsets", w.shape[0] + 1, a)
    if not a.is_cuda:
        _state.count("grouped_mm", "cpu")
        return _grouped_loop(a, w, offsets)
    dev = _device_index(a)
    return _run("grouped_mm", dev, _grouped_problem(dev, a, w, offsets))


grouped_mm = torch.library.custom_op("tunert::grouped_mm", mutates_args=())(_grouped_mm_body)
_cuda_kernel("tunert::grouped_mm", _grouped_mm_body)


def _grouped_problem(dev, a, w, offsets):
    T, K = a.shape
    E, N = w.shape[0], w.shape[1]
    key = ("grouped_mm", dev, T, E, N, K, a.dtype, w.dtype)

    def candidates():
        tensors = {"a": ((T, K), _dt(a)), "w": ((E, N, K), _dt(w)), "c": ((T, N), _dt(a)),
                   "offsets": ((E + 1,), _dt(offsets))}
        out = []
        for m in MIN_ROWS:
            dims = {"E": E, "N": N, "K": K, "T": T, "min_tokens": m}
            out.append(("moe.grouped", dims, tensors, dims, {}, ()))
        return out

    def tensors_fn():
        c = torch.empty((T, N), dtype=a.dtype, device=a.device)
        return {"a": a.contiguous(), "w": w.contiguous(), "c": c, "offsets": offsets.contiguous()}, c

    return key, candidates, tensors_fn, lambda: _grouped_ref(a, w, offsets)


@grouped_mm.register_fake
def _(a, w, offsets):
    return a.new_empty((a.shape[0], w.shape[1]))


# ---- masked: a [E, cap, K], counts int32 [E] ----

def _masked_ref(a, w, counts):
    """Every expert's cap rows by one batched matmul, the rows past each count set to zero (as the
    kernel writes them); no host read."""
    c = torch.bmm(a, w.transpose(1, 2))
    valid = torch.arange(a.shape[1], device=a.device)[None, :] < counts.to(a.device)[:, None]
    return c.masked_fill(~valid[:, :, None], 0)


def _grouped_mm_masked_body(a: torch.Tensor, w: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Grouped GEMM, masked layout: a [E, cap, K] (expert e's rows first, padding after), w [E, N,
    K], counts int32 [E] on a's device (0 <= counts[e] <= cap). Returns c [E, cap, N]: c[e, :n] =
    a[e, :n] @ w[e].T with n = counts[e], and zeros in the rows past each count (the kernel writes
    them). Family moe.grouped_masked."""
    _check_weights("grouped_mm_masked", a, w, "[E, cap, K]")
    _state.check(a.shape[0] == w.shape[0], lambda: f"tunert.torch.grouped_mm_masked: a {tuple(a.shape)} and w "
                 f"{tuple(w.shape)} differ in E")
    _check_routing("grouped_mm_masked", counts, "counts", w.shape[0], a)
    if not a.is_cuda:
        _state.count("grouped_mm_masked", "cpu")
        return _masked_ref(a, w, counts)
    dev = _device_index(a)
    return _run("grouped_mm_masked", dev, _masked_problem(dev, a, w, counts))


grouped_mm_masked = torch.library.custom_op("tunert::grouped_mm_masked", mutates_args=())(_grouped_mm_masked_body)
_cuda_kernel("tunert::grouped_mm_masked", _grouped_mm_masked_body)


def _masked_problem(dev, a, w, counts):
    E, cap, K = a.shape
    N = w.shape[1]
    key = ("grouped_mm_masked", dev, E, cap, N, K, a.dtype, w.dtype)

    def candidates():
        tensors = {"a": ((E, cap, K), _dt(a)), "w": ((E, N, K), _dt(w)), "c": ((E, cap, N), _dt(a)),
                   "counts": ((E,), _dt(counts))}
        out = []
        for m in MIN_ROWS:
            dims = {"E": E, "N": N, "K": K, "cap": cap, "min_count": m}
            out.append(("moe.grouped_masked", dims, tensors, dims, {}, ()))
        return out

    def tensors_fn():
        c = torch.empty((E, cap, N), dtype=a.dtype, device=a.device)
        return {"a": a.contiguous(), "w": w.contiguous(), "c": c, "counts": counts.contiguous()}, c

    return key, candidates, tensors_fn, lambda: _masked_ref(a, w, counts)


@grouped_mm_masked.register_fake
def _(a, w, counts):
    return a.new_empty((a.shape[0], a.shape[1], w.shape[1]))


_ops.PROBLEMS["grouped_mm"] = _grouped_problem
_ops.PROBLEMS["grouped_mm_masked"] = _masked_problem
