"""explain(): what an op would do for given arguments, without running it."""
from . import _ops, _state


def explain(op, *args, device=0, **kwargs):
    """The Plan (a tuned Selection, see .selection.info) or Fallback (.kind, .reason) that
    tunert.torch.<op> takes for CUDA tensors shaped like args on CUDA device `device`. The tensors
    may be on any device, "meta" included (only shapes and dtypes are read), so a plan can be
    inspected on a machine without a GPU (use_bundle(path, no_device=True, arch="sm_90a")).
    op: linear, attention (prefill), decode, decode_fp8, rmsnorm, rmsnorm_add, rmsnorm_add_fp8, softmax,
    attention_varlen, grouped_mm, grouped_mm_masked, grouped_scaled_mm, grouped_scaled_mm_masked,
    grouped_swiglu, moe_combine, scaled_mm, swiglu_quant_fp8 (an
    unknown name raises KeyError listing them)."""
    fn = _ops.PROBLEMS.get(op)
    if fn is None:
        raise KeyError(f"tunert.torch.explain: no op {op!r} (ops: {', '.join(sorted(_ops.PROBLEMS))})")
    name = "attention" if op == "prefill" else op
    key, candidates, _, _ = fn(device, *args, **kwargs)
    return _state.plan(name, key, device, candidates)
