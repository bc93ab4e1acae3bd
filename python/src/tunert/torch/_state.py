"""The process-wide bundle of tunert.torch, the plan cache and the counters of stats().

Owns: which bundle the ops use (one tunert.Bundle per CUDA device, opened on first use), the
plan of each distinct problem (a Selection, or why the op runs PyTorch instead), and the counts.
Plans are computed once per problem and never again, so a call after the first takes no lock,
selects nothing and allocates only its outputs (CUDA graph capture replays nothing of this).
"""
import collections
import threading

from ..bundle import Bundle
from ..errors import InvalidArgument, NoVariant, TunertError

_lock = threading.Lock()
_path = None
_open_kwargs = {}
_strict = False
_bundles = {}      # device index -> Bundle
plans = {}         # plan key -> Plan | Fallback (read without the lock: a dict get is atomic)
_counts = collections.defaultdict(collections.Counter)    # op -> {"tuned", "vendor", "fallback", "cpu"}
_kinds = collections.defaultdict(collections.Counter)     # op -> {selection kind of its tuned calls: calls}
_reasons = collections.defaultdict(collections.Counter)   # op -> {reason: calls}
_full_lengths = {}  # (device index, B, L) -> int32 [B] filled with L: decode without seq_lens


def use_bundle(path, *, strict=None, **open_kwargs):
    """Make `path` the bundle of every tunert.torch op (None: no bundle, every op runs PyTorch).
    open_kwargs go to tunert.Bundle (arch=, exact_only=, no_device=, any_arch=); the device is the
    tensors'. strict=True: an op whose problem the bundle cannot serve raises tunert.NoVariant
    instead of running the PyTorch equivalent (vendor entries still run PyTorch: that is the
    bundle's choice). Clears the plans and closes bundles opened before."""
    global _path, _open_kwargs, _strict
    with _lock:
        for b in _bundles.values():
            b.close()
        _bundles.clear()
        plans.clear()
        _path = None if path is None else str(path)
        _open_kwargs = dict(open_kwargs)
        if strict is not None:
            _strict = bool(strict)


def set_strict(strict):
    """strict=True: raise instead of falling back when the bundle cannot serve a problem."""
    global _strict
    _strict = bool(strict)


def is_strict():
    return _strict


def bundle_path():
    return _path


def bundle_for(device_index):
    """The Bundle for CUDA device `device_index`, opened on first use (None without use_bundle)."""
    b = _bundles.get(device_index)
    if b is not None or _path is None:
        return b
    with _lock:
        b = _bundles.get(device_index)
        if b is None and _path is not None:
            b = Bundle(_path, device=device_index, **_open_kwargs)
            _bundles[device_index] = b
    return b


def full_lengths(device, B, L):
    """An int32 [B] tensor of L on `device`, made once per (device, B, L) so that the calls after
    the first (and a CUDA graph capture) allocate nothing for it. Never written to."""
    import torch
    key = (device.index, B, L)
    t = _full_lengths.get(key)
    if t is None:
        t = _full_lengths.setdefault(key, torch.full((B,), L, dtype=torch.int32, device=device))
    return t


def count(op, how, reason=None):
    _counts[op][how] += 1
    if reason:
        _reasons[op][reason] += 1


def count_tuned(op, kind):
    _counts[op]["tuned"] += 1
    _kinds[op][kind] += 1


def stats():
    """{op: {"tuned": n, "vendor": n, "fallback": n, "cpu": n, "kinds": {kind: n}, "reasons":
    {why: n}}}: calls since the last reset_stats(). "tuned": our kernel ran, and "kinds" says how
    libtunert chose it ("tuned": this problem's, "nearest": a portable one tuned for another
    problem, "fallback": the family's generic one); "vendor": the bundle chose the vendor library
    and PyTorch ran it; "fallback": the bundle could not serve the problem and PyTorch ran it;
    "cpu": CPU tensors. Counted when the op's Python body runs: a CUDA graph replay or a compiled
    graph's replay runs none, so it counts at capture only."""
    out = {}
    for op in sorted(set(_counts) | set(_reasons)):
        c = _counts[op]
        out[op] = {"tuned": c["tuned"], "vendor": c["vendor"], "fallback": c["fallback"], "cpu": c["cpu"],
                   "kinds": dict(_kinds[op]), "reasons": dict(_reasons[op])}
    return out


def reset_stats():
    _counts.clear()
    _kinds.clear()
    _reasons.clear()


class Fallback:
    """Why an op runs its PyTorch equivalent for a problem: `kind` "fallback" (the bundle cannot
    serve it) or "vendor" (the bundle chose the vendor library), and the reason in words."""
    __slots__ = ("kind", "reason", "selection")

    def __init__(self, kind, reason, selection=None):
        self.kind, self.reason, self.selection = kind, reason, selection

    def __repr__(self):
        return f"<tunert.torch {self.kind}: {self.reason}>"


class Plan:
    """A Selection bound to an op: which of the op's tensors go to which argument (inputs sliced
    to the selection's leading dim where the op's is larger), which go with their own strides
    (`strided`: the op passes the family's stride scalars), and the scalar values the op passes.
    `kind` is "tuned" (our kernel runs); `selection_kind` says how libtunert chose it."""
    __slots__ = ("selection", "tensor_names", "slices", "strided", "scalars", "kind", "selection_kind", "reason",
                 "binding")

    def __init__(self, selection, tensor_names, slices, scalars, strided=frozenset()):
        self.selection, self.tensor_names, self.slices, self.scalars = selection, tensor_names, slices, scalars
        self.strided = frozenset(strided)
        self.kind, self.selection_kind, self.reason = "tuned", selection.info.kind, selection.info.reason
        # the scalars are the same on every call: packed once into the binding's template
        self.binding = selection._binding(tuple(tensor_names), self.strided, dict(scalars))

    def __repr__(self):
        return f"<tunert.torch plan {self.selection!r}>"

    def launch(self, tensors):
        """Launch on torch's current stream with `tensors` ({arg name: tensor}, a superset of
        tensor_names), each checked as Selection.launch checks it."""
        if self.slices:
            tensors = dict(tensors)
            for name, (how, n) in self.slices.items():
                t = tensors[name]
                tensors[name] = t[:n] if how == "rows" else t.reshape(-1)[:n]
        self.selection._launch(self.binding, tensors, None)


def plan(op, key, device_index, candidates):
    """The cached Plan or Fallback for `key`; `candidates` (called only on a miss) gives, per
    family to try in order, (family, dims, tensors, scalars, knobs, needs), or a string: why the
    op cannot use the bundle for this call. dims and tensors as the op can give them (a superset:
    each family takes what it names), tensors as {name: (shape, dtype)} or {name: (shape, dtype,
    "strided")} for one passed with its own strides (see Selection.launch), scalars {name: value}
    passed where the bundle has no value, knobs {name: value} always passed (where the family has
    that scalar), needs: groups of tensor names of which the family must take one (an input the
    op cannot drop, e.g. per-sequence lengths). An optional seventh item, accept(selection) ->
    None or a reason, refuses a selection this candidate cannot use (e.g. strided inputs on a
    variant whose tensor maps assume dense rows)."""
    p = plans.get(key)
    if p is not None:
        return p
    p = _make_plan(device_index, candidates())
    if p.__class__ is Fallback and p.kind == "vendor" and op in PAGED_DECODE_OPS:
        p.reason += (" (its peer read a contiguous cache, while this op gathers the pages first: bundle "
                     f"with tune bundle --no-vendor-for {','.join(PAGED_DECODE_OPS[op])})")
    with _lock:
        return plans.setdefault(key, p)


# op -> its families, for the ops over a paged KV cache (each op module registers its own): their
# peers were timed on SDPA over a contiguous cache, a call these ops do not make, so a vendor
# fallback's reason says how to bundle them without vendor entries.
PAGED_DECODE_OPS = {}


def _make_plan(device_index, candidates):
    b = bundle_for(device_index)
    if b is None:
        return Fallback("fallback", "no bundle: call tunert.torch.use_bundle(path)")
    have = set(b.families)
    reasons, found = [], []
    for cand in candidates:
        if isinstance(cand, str):
            reasons.append(cand)
            continue
        family, dims, tensors, scalars, knobs, needs, *accept = cand
        if family not in have:
            reasons.append(f"no family {family} in the bundle")
            continue
        r = _bind(b, family, dims, tensors, scalars, knobs, needs, accept[0] if accept else None)
        (found if isinstance(r, Plan) else reasons).append(r)
    if not found:
        return Fallback("fallback", "; ".join(reasons) or "no candidate family")
    best = min(found, key=_preference)
    if best.selection.is_vendor:
        return Fallback("vendor", f"{best.selection.info.family}: the bundle chose the vendor "
                                  f"({best.selection.info.vendor or 'vendor'}) for this problem", best.selection)
    return best


def _preference(p):
    """An exact tuned problem first, then a nearest portable entry, then a family's generic entry
    (not measured: measured_ns 0); among equals the fastest measured."""
    i = p.selection.info
    return (0 if i.exact else 2 if i.kind == "fallback" else 1, i.measured_ns)


def _bind(b, family, dims, tensors, scalars, knobs, needs, accept=None):
    f = b.family(family)
    missing = [d for d in f.dims if d not in dims]
    if missing:
        return f"{family}: takes dim(s) {', '.join(missing)} that this op cannot give"
    try:
        sel = b.select(family, {d: dims[d] for d in f.dims})
    except TunertError as e:
        return str(e) if str(e).startswith(family) else f"{family}: {e}"
    why = accept(sel) if accept is not None and not sel.is_vendor else None
    if why:
        return f"{family}: {why}"
    names, slices, strided, sc = [], {}, set(), {}
    for a in sel.info.args:
        if a.role in ("input", "output"):
            if a.name not in tensors:
                return f"{family}: takes tensor '{a.name}' that this op does not have"
            shape, dtype, *how = tensors[a.name]
            if dtype != a.dtype:
                return f"{family}: '{a.name}' is {a.dtype} in the bundle, {dtype} here"
            shape = tuple(shape)
            if how == ["strided"]:
                if len(shape) != len(a.shape) or shape[1:] != a.shape[1:]:
                    return f"{family}: '{a.name}' has shape {shape}, the selection wants {a.shape} (any leading extent)"
                strided.add(a.name)
            elif shape != a.shape:
                how = _fit(a, shape)
                if how is None:
                    return f"{family}: '{a.name}' has shape {shape}, the selection wants {a.shape}"
                slices[a.name] = how
            names.append(a.name)
        elif a.role == "scalar":
            if a.name in knobs:
                sc[a.name] = knobs[a.name]
            elif a.value is None:
                if not isinstance(scalars.get(a.name), (int, float)):
                    return f"{family}: scalar '{a.name}' has no value in the bundle and this op cannot give it"
                sc[a.name] = scalars[a.name]
    for group in needs:
        if not any(n in names for n in group):
            return f"{family}: takes none of {', '.join(group)}, which this call needs"
    return Plan(sel, tuple(names), slices, sc, strided)


def _fit(a, shape):
    """How a tensor of `shape` is passed for arg `a` whose bundle shape differs, or None: an input
    pool with more leading rows (a KV cache) is cut to the rows the problem has ("rows", n); a
    1-D bundle shape (an element count: the recipe computed the shape in Lua) takes the tensor
    flattened, an input pool cut to that count ("flat", n)."""
    n = 1
    for d in shape:
        n *= d
    row = n // shape[0] if shape and shape[0] else 0
    if len(a.shape) == 1 and len(shape) != 1:
        want = a.shape[0]
        if n == want or (a.role == "input" and row and n > want and want % row == 0):
            return ("flat", want)
        return None
    if (a.role == "input" and len(shape) == len(a.shape) and shape and shape[1:] == a.shape[1:]
            and shape[0] >= a.shape[0]):
        return ("rows", a.shape[0])
    return None


def fallback_or_raise(op, p):
    """Count a fallback; in strict mode raise for one the bundle cannot serve."""
    if p.kind == "fallback" and _strict:
        raise NoVariant(f"tunert.torch.{op} (strict): {p.reason}")
    count(op, p.kind, p.reason)


def check(cond, msg):
    """Raise InvalidArgument(msg) unless cond; msg may be a function giving it (made only then)."""
    if not cond:
        raise InvalidArgument(msg() if callable(msg) else msg)
