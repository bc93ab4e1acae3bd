"""peer_family_moe_fp8.py: the peers of the FP8 e4m3 MoE grouped GEMM recipes moe.grouped_fp8
(contiguous) and moe.grouped_fp8_masked (masked), loaded by peer_server.py (docs/peers.md; the module
contract is in peer_server._family_modules).

The problem is moe.grouped's (peer_family_moe.py) on e4m3 operands with f32 scales, bf16 out:
c[row] = sum over 128-wide K blocks kb of sa(row, kb) * sw(e, n, kb) * (a[row, kb] . w[e, n, kb]),
e the expert owning the row; scale 'tensor' (sa [1], sw [E]), 'row' (sa per token, sw [E, N]) or
'block' (sa [rows, K/128] 1 x 128, sw [E, N/128, K/128] 128 x 128).
moe.grouped_fp8 (a [T, K] sorted by expert, offsets [E + 1], w [E, N, K], c [T, N]):
  torch-scaled-grouped-mm  scale 'row' only: torch._scaled_grouped_mm(a, w.transpose(-2, -1), sa [T],
                     sw [E, N], offs=offsets[1:] (int32 ends), out_dtype=bf16): one launch (torch's own
                     CUTLASS grouped kernel; sm_90 / sm_100, K and N multiples of 16)
  cublas-loop        every scale: torch._scaled_mm(a[lo:hi], w[e].t(), sa_e, sw_e, out=c[lo:hi]) per
                     expert with rows, the row ranges known on the host (an engine copies the offsets
                     to the host first: that sync is not timed); use_fast_accum=False
moe.grouped_fp8_masked (a [E, cap, K], counts [E], c [E, cap, N]):
  cublas-loop        the same per expert over its counted rows only (the padding past the counts is
                     never computed; c is zeroed once when built, so it holds zeros there, as tune's)
The loop's operands are prepared before timing, per expert, in the layouts _scaled_mm takes (as
peer_family_fp8 does for one GEMM): sa_e a copy of the expert's rows' scales ([] | [m, 1] | [m, K/128]
outer-dim-major), sw_e a view of sw[e] ([] | [1, N] | [L4, N/128], sw stored [E, N/128, L4] with the K
blocks past K/128 set to 1). Block mode takes cuBLASLt's DeepSeek path (peer_family_fp8.block_layout:
K and N multiples of 128, else skipped) with each expert's rows rounded up to m, a multiple of 4: the
up to 3 extra rows read the next expert's rows (or zero rows past the end of a and c) and their
outputs are overwritten by that expert's own later call, so each call writes its rows of the one c
in place (no copy is timed).

Inputs: a and w normal(0, 1) e4m3 and the scales drawn as gemm.fp8 draws them (U(lo, hi) for sa,
U(lo, hi) / sqrt(K) for sw; lo, hi = 1/64, 4 in block mode, else 0.5, 2) from torch's generator
(other values, same distributions as the worker's); the routing itself exactly (worker_inputs: the
offsets or counts tuner/inputs.c draws for the seed at arg index 3). Each peer's output is checked on
the first and last 128 counted rows, in expert order, against peer_family_fp8.fp8_gemm_reference
(float64) of that expert's rows and weight, the scales read back from the layouts its call was given.
torch is imported by the caller only.
"""
import math

import peer_family_fp8 as fp8  # noqa: E402 (tools/peers is on the path of the peer server and the tests)
import worker_inputs  # noqa: E402

GROUPS_ARG_INDEX = 3  # offsets / counts among the recipes' args (the worker seeds each input by its index)
CONTIGUOUS_DIMS = ("E", "N", "K", "T", "min_tokens", "scale")
MASKED_DIMS = ("E", "N", "K", "cap", "min_count", "scale")
FAMILIES = {"moe.grouped_fp8": "moe_grouped_fp8", "moe.grouped_fp8_masked": "moe_grouped_fp8_masked"}
DIMS = {"moe_grouped_fp8": CONTIGUOUS_DIMS, "moe_grouped_fp8_masked": MASKED_DIMS}
DRAW_ELEMS = 1 << 26  # e4m3 values drawn through float32 at a time (a whole expert stack would be 4x its bytes)


def contiguous(family):
    return family == "moe_grouped_fp8"


def token_rows(family, d):
    """Rows of a and c: T, or every expert's capacity (E * cap)."""
    return d["T"] if contiguous(family) else d["E"] * d["cap"]


def scale_numels(rows, E, N, K, scale):
    """(scale_a, scale_w) element counts of the recipe's scale tensors over `rows` token rows."""
    kb, nb = -(-K // 128), -(-N // 128)
    if scale == "block":
        return rows * kb, E * nb * kb
    if scale == "row":
        return rows, E * N
    return 1, E


def set_bytes(family, d):
    """Bytes of one call's operands, each counted once, as the recipes' bytes metric: a and w (1 byte
    each), c (bf16), the f32 scales (the offsets or counts are left out, as there)."""
    E, N, K = d["E"], d["N"], d["K"]
    rows = token_rows(family, d)
    sa, sw = scale_numels(rows, E, N, K, d["scale"])
    return rows * K + E * N * K + 2 * rows * N + 4 * (sa + sw)


def peers(recipe, dims, api):
    family = FAMILIES.get(recipe)
    if family is None:
        return None
    api.require_dims(recipe, dims, DIMS[family])
    if dims["scale"] not in fp8.SCALES:
        raise api.PeerError(f"scale {dims['scale']!r}: tensor, row or block")
    nbytes = set_bytes(family, dims)
    loop = api.Peer("cublas-loop", family, dims, nbytes, impl="loop")
    if contiguous(family) and dims["scale"] == "row":  # _scaled_grouped_mm is rowwise only
        return [api.Peer("torch-scaled-grouped-mm", family, dims, nbytes, impl="grouped"), loop]
    return [loop]


def segments(family, d, seed):
    """[(e, lo, hi)]: expert e's rows lo .. hi of the flat [rows, K] a, every expert in order (empty ones
    too), from the routing the worker draws for this seed."""
    E = d["E"]
    if contiguous(family):
        offs = worker_inputs.offsets(seed, GROUPS_ARG_INDEX, E, d["T"], d["min_tokens"])
        return [(e, offs[e], offs[e + 1]) for e in range(E)]
    cap = d["cap"]
    counts = worker_inputs.randint(seed, GROUPS_ARG_INDEX, E, d["min_count"], cap)
    return [(e, e * cap, e * cap + n) for e, n in enumerate(counts)]


def call_rows(n, scale, N, K):
    """The rows a _scaled_mm call of an expert with n rows takes: n, rounded up to 4 in block mode."""
    return fp8.block_layout(n, N, K)[0][0] if scale == "block" else n


def e4m3_normal(torch, api, g, shape):
    """normal(0, 1) e4m3 of shape, drawn in float32 DRAW_ELEMS at a time along the first dim."""
    out = torch.empty(shape, dtype=torch.float8_e4m3fn, device="cuda")
    step = max(1, DRAW_ELEMS // max(1, math.prod(shape[1:])))
    for i in range(0, shape[0], step):
        n = min(step, shape[0] - i)
        out[i:i + n] = api._normal(torch, g, (n,) + tuple(shape[1:]), torch.float32).to(torch.float8_e4m3fn)
    return out


def operands(torch, api, g, rows, pad, E, N, K, scale):
    """One set's inputs: a [rows + pad, K] (the pad rows zero), w [E, N, K] e4m3; sa [] | [rows] |
    [rows + pad, K/128] (pad rows 1); sw [E] | [E, N] | [E, N/128, L4] (K blocks past K/128 set to 1)."""
    f32 = torch.float32
    a = torch.zeros(rows + pad, K, dtype=torch.float8_e4m3fn, device="cuda")
    a[:rows] = e4m3_normal(torch, api, g, (rows, K))
    w = e4m3_normal(torch, api, g, (E, N, K))
    ra, rw = fp8.scale_ranges(scale, K)
    if scale == "tensor":
        return a, w, api._uniform(torch, g, (), f32, *ra), api._uniform(torch, g, (E,), f32, *rw)
    if scale == "row":
        return a, w, api._uniform(torch, g, (rows,), f32, *ra), api._uniform(torch, g, (E, N), f32, *rw)
    _, kb, l4 = fp8.block_layout(rows, N, K)[0]
    sa = torch.ones(rows + pad, kb, dtype=f32, device="cuda")
    sa[:rows] = api._uniform(torch, g, (rows, kb), f32, *ra)
    sw = torch.ones(E, N // 128, l4, dtype=f32, device="cuda")
    sw[:, :, :kb] = api._uniform(torch, g, (E, N // 128, kb), f32, *rw)
    return a, w, sa, sw


def expert_scales(s, e, lo, m, scale, N):
    """(sa_e, sw_e) of expert e's call over rows lo .. lo + m, as _scaled_mm takes them: the rows'
    scales copied (row: [m, 1]; block: [m, K/128] outer-dim-major, strides [1, m]), sw[e] a view (a
    copy in tensor mode: cuBLASLt refused these calls with NOT_SUPPORTED while it was a view of one
    element of sw [E], 4-byte aligned; the copy runs)."""
    sa, sw = s["sa"], s["sw"]
    if scale == "tensor":
        return sa, sw[e].clone()
    if scale == "row":
        return sa[lo:lo + m].reshape(m, 1).clone(), sw[e].reshape(1, N)
    return sa[lo:lo + m].t().contiguous().t(), sw[e].t()


def expected_of(torch, api, family, segs, scale, N, K):
    """expected(s, r): r (c, [T, N] or [E, cap, N]) on the first and last counted rows, in expert order,
    against fp8_gemm_reference of each expert's rows with w[e] and the scales s["scales"][e] of its
    call (peer_family_fp8.block_scales reads them back from the call's layout)."""
    cu = [0]
    for _, lo, hi in segs:
        cu.append(cu[-1] + hi - lo)
    what = ("c [T,N] at its first and last rows" if contiguous(family)
            else "c [E,cap,N] at the first and last counted rows")

    def expected(s, r):
        c = r.reshape(-1, N)
        groups = worker_inputs.rows_by_segment(cu, api.edge_rows(torch, cu[-1], c.device).tolist())
        if not groups:  # no counted row at all: nothing a peer computes is used
            return []
        rows, want = [], []
        for e, pos in groups:
            lo, p = segs[e][1], torch.tensor(pos, device=c.device)
            sa, sw = fp8.block_scales(torch, *s["scales"][e], scale, p, N, K)
            want.append(fp8.fp8_gemm_reference(torch, fp8.e4m3_rows(torch, s["a"], p + lo), s["w"][e], sa, sw))
            rows.append(p + lo)
        return [(what, c[torch.cat(rows)], torch.cat(want))]
    return expected


def _require_aligned(api, what, N, K):
    """Both torch calls refuse K or N not a multiple of 16 (16-byte e4m3 rows): say so before any call."""
    if K % 16 or N % 16:
        raise api.PeerError(f"{what} needs K and N multiples of 16 (K {K}, N {N})")


def build(torch, peer, n_sets, seed):
    """The op of the peer's impl on this seed's routing; block mode refused where cuBLASLt cannot run it."""
    api, d = peer.api, peer.dims
    if d["scale"] == "block":
        _, why = fp8.block_layout(1, d["N"], d["K"])
        if why:
            raise api.PeerError(why)
    segs = segments(peer.family, d, seed)
    kind = build_grouped if peer.opts["impl"] == "grouped" else build_loop
    return kind(torch, peer, n_sets, seed, segs)


def build_grouped(torch, peer, n_sets, seed, segs):
    api, d = peer.api, peer.dims
    E, N, K, T = d["E"], d["N"], d["K"], d["T"]
    if not hasattr(torch, "_scaled_grouped_mm"):
        raise api.PeerError(f"torch {torch.__version__} has no torch._scaled_grouped_mm")
    _require_aligned(api, "torch._scaled_grouped_mm", N, K)
    ends = torch.tensor([hi for _, _, hi in segs], dtype=torch.int32, device="cuda")
    sets = []
    for i in range(n_sets):
        a, w, sa, sw = operands(torch, api, api._gen(torch, seed + i), T, 0, E, N, K, "row")
        sets.append({"a": a, "w": w, "sa": sa, "sw": sw,
                     "scales": {e: (sa[lo:hi].reshape(hi - lo, 1), sw[e].reshape(1, N)) for e, lo, hi in segs}})

    def fn(s):
        return torch._scaled_grouped_mm(s["a"], s["w"].transpose(-2, -1), s["sa"], s["sw"], offs=ends,
                                        out_dtype=torch.bfloat16, use_fast_accum=False)
    expr = ("torch._scaled_grouped_mm(a, w.transpose(-2, -1), scale_a [T], scale_b [E,N], offs=offsets[1:] "
            "(int32 ends), out_dtype=bf16, use_fast_accum=False), e4m3 in, bf16 out")
    return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r], [(T, N)],
                       lambda: f"torch {torch.__version__} (CUDA {torch.version.cuda}): {expr}",
                       expected=expected_of(torch, api, peer.family, segs, "row", N, K))


def loop_calls(s, segs, scale, N, K):
    """Per expert with rows: (a rows, w[e].t(), sa_e, sw_e, c rows) of its _scaled_mm call, over
    call_rows(n) rows from its first; s["scales"][e] its (sa_e, sw_e) for the value check."""
    calls, s["scales"] = [], {}
    for e, lo, hi in segs:
        if hi == lo:
            continue
        m = call_rows(hi - lo, scale, N, K)
        s["scales"][e] = expert_scales(s, e, lo, m, scale, N)
        calls.append((s["a"][lo:lo + m], s["w"][e].t()) + s["scales"][e] + (s["c"][lo:lo + m],))
    return calls


def build_loop(torch, peer, n_sets, seed, segs):
    api, d, family = peer.api, peer.dims, peer.family
    E, N, K, scale = d["E"], d["N"], d["K"], d["scale"]
    _require_aligned(api, "torch._scaled_mm", N, K)
    rows = token_rows(family, d)
    pad = max([lo + call_rows(hi - lo, scale, N, K) - rows for _, lo, hi in segs if hi > lo] + [0])
    shape = (rows, N) if contiguous(family) else (E, d["cap"], N)
    sets = []
    for i in range(n_sets):
        a, w, sa, sw = operands(torch, api, api._gen(torch, seed + i), rows, pad, E, N, K, scale)
        # zeros: the masked padding rows are never written, and the check reads no NaN there
        c = torch.zeros(rows + pad, N, dtype=torch.bfloat16, device="cuda")
        s = {"a": a, "w": w, "sa": sa, "sw": sw, "c": c, "out": c[:rows].view(shape)}
        s["calls"] = loop_calls(s, segs, scale, N, K)
        sets.append(s)

    def fn(s):
        for a_e, wt_e, sa_e, sw_e, c_e in s["calls"]:
            torch._scaled_mm(a_e, wt_e, sa_e, sw_e, out_dtype=torch.bfloat16, use_fast_accum=False, out=c_e)
        return s["out"]
    n_calls = len(sets[0]["calls"])
    layouts = {"tensor": "sa [], sw[e] []", "row": "sa_e [m,1], sw[e] [1,N]",
               "block": "sa_e [m,K/128] outer-dim-major, sw[e] [L4,N/128] (scaling inferred from the shapes; "
                        "m = the expert's rows rounded up to 4, the extra rows overwritten by the next expert's call)"}

    def library():
        return (f"torch {torch.__version__}, cuBLAS {fp8.blas_version(api)} (CUDA {torch.version.cuda}): torch._scaled_mm("
                f"a[lo:lo+m], w[e].t(), {layouts[scale]}, out_dtype=bf16, use_fast_accum=False, out=c[lo:lo+m]) "
                f"for the {n_calls} of {E} experts with rows, one launch each, row ranges known on the host, "
                f"written in place into one c (no copy), e4m3 in, bf16 out")
    return api.TorchOp(sets, fn, lambda s: [s["c"]], lambda s, r: [r], [shape], library,
                       expected=expected_of(torch, api, family, segs, scale, N, K))


BUILDERS = {"moe_grouped_fp8": build, "moe_grouped_fp8_masked": build}
