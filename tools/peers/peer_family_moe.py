"""peer_family_moe.py: the peers of the MoE grouped GEMM recipes (recipes/moe/grouped.lua and
recipes/moe/swiglu.lua), loaded by peer_server.py (docs/peers.md).

moe.grouped (contiguous: a [T, K] sorted by expert, offsets [E + 1], w [E, N, K], c [T, N]):
  torch-grouped-mm  torch._grouped_mm(a, w.transpose(-2, -1), offs=offsets[1:]): one launch, offs the
                    int32 cumulative ends of the experts' rows (no leading 0)
  cublas-loop       torch.matmul(a[lo:hi], w[e].t(), out=c[lo:hi]) per expert with rows: the baseline
                    of an engine without a grouped GEMM; the row ranges are known on the host (an
                    engine would copy the offsets to the host first: that sync is not timed)
moe.grouped_masked (a [E, cap, K], counts [E], c [E, cap, N]):
  cublas-bmm-padded torch.bmm(a, w.transpose(1, 2), out=c): every expert's cap rows, the padding
                    past the counts included (tune's kernel computes only the counted rows and writes
                    zeros in the others)
moe.grouped_swiglu (a [T, K] sorted by expert, offsets [E + 1], w [E, 2N, K]: gate rows, then up rows;
h [T, N] = silu(a @ gate^T) * (a @ up^T)):
  torch-grouped-mm-silu   torch._grouped_mm(a, w.transpose(-2, -1), offs=offsets[1:]) to a [T, 2N] bf16
                          tensor, then F.silu(g[:, :N]) * g[:, N:] eagerly: what a user without a fused
                          kernel has (three launches, the intermediate written and read back)
  torch-compile           the same function under torch.compile (fullgraph, static shapes): inductor
                          fuses the silu and the product into one kernel after the grouped GEMM;
                          compiled before timing
moe.grouped_swiglu_masked (a [E, cap, K], counts [E], w [E, 2N, K], h [E, cap, N]):
  cublas-bmm-padded-silu  torch.bmm over all cap rows, then silu and the product eagerly

The inputs are those of tune's worker for the same seed: a and w normal(0, 1) from torch's generator
(other values, same distribution), and the routing itself exactly: offsets and counts are computed
here as tuner/inputs.c computes them (fill_offsets, randint) from the seed and the arg's index in the
recipe's args, so both sides time the same token distribution. Each peer's output is checked
against a float64 reference (expert_reference, swiglu_reference) on the first and last 128 token
rows (contiguous) or counted rows in expert order (masked; the padding past the counts, which the
peers compute and tune's kernels zero, is not compared). torch is imported by the caller only.
"""
import worker_inputs  # noqa: E402 (tools/peers is on the path of the peer server and the tests)

# The args' positions in recipes/moe/grouped.lua and moe/swiglu.lua (the worker seeds each input by its index)
GROUPS_ARG_INDEX = 3
W13_STD = 0.02  # recipes/moe/swiglu.lua's weights (a trained layer's scale; only the timing is compared)
WEIGHT_ELEMS = 1 << 24  # an expert's weight rows taken to float64 at a time (128 MB; a whole one is up to ~1 GB)

def fill_offsets(seed, arg_index, parts, total, min_part):
    return worker_inputs.offsets(seed, arg_index, parts, total, min_part)


def fill_randint(seed, arg_index, n, lo, hi):
    return worker_inputs.randint(seed, arg_index, n, lo, hi)


def expert_reference(torch, a_rows, w_e):
    """float64 a_rows @ w_e^T: a_rows [R, K] of one expert, w_e [N, K] its weight. -> [R, N]"""
    a64, step = a_rows.double(), max(1, WEIGHT_ELEMS // w_e.shape[1])
    return torch.cat([a64 @ w_e[n:n + step].double().t() for n in range(0, w_e.shape[0], step)], dim=1)


def swiglu_reference(torch, a_rows, w_e):
    """float64 silu(a_rows @ gate^T) * (a_rows @ up^T), w_e [2N, K] the gate rows, then the up rows;
    silu(x) = x / (1 + exp(-x)) written out. -> [R, N]"""
    g = expert_reference(torch, a_rows, w_e)
    gate, up = g[:, :g.shape[1] // 2], g[:, g.shape[1] // 2:]
    return gate / (1 + torch.exp(-gate)) * up


def contiguous_expected(torch, api, offs, reference, output):
    """expected(s, r) of a contiguous layout (a [T, K] sorted by expert, expert e owning rows offs[e] ..
    offs[e + 1]): output(s, r) [T, N] at its first and last rows against reference(torch, a rows, w[e])."""
    def expected(s, r):
        c = output(s, r)
        rows = api.edge_rows(torch, offs[-1], c.device).tolist()
        want = [reference(torch, s["a"][offs[e]:offs[e + 1]][torch.tensor(pos, device=c.device)], s["w"][e])
                for e, pos in worker_inputs.rows_by_segment(offs, rows)]
        return [("c [T,N] at its first and last rows", c[torch.tensor(rows, device=c.device)], torch.cat(want))]
    return expected


def masked_expected(torch, api, counts, reference):
    """expected(s, c) of a masked layout (a [E, cap, K], expert e's first counts[e] rows counted): c
    [E, cap, N] on the first and last counted rows, in expert order, against reference(torch, a rows, w[e])."""
    cu = [0]
    for n in counts:
        cu.append(cu[-1] + n)

    def expected(s, c):
        groups = worker_inputs.rows_by_segment(cu, api.edge_rows(torch, cu[-1], c.device).tolist())
        if not groups:  # no counted row at all: nothing a peer computes is used
            return []
        e_idx = torch.tensor([e for e, pos in groups for _ in pos], device=c.device)
        i_idx = torch.tensor([i for _, pos in groups for i in pos], device=c.device)
        want = [reference(torch, s["a"][e][torch.tensor(pos, device=c.device)], s["w"][e]) for e, pos in groups]
        return [("c [E,cap,N] at the first and last counted rows", c[e_idx, i_idx], torch.cat(want))]
    return expected


CONTIGUOUS_DIMS = ("E", "N", "K", "T", "min_tokens")
MASKED_DIMS = ("E", "N", "K", "cap", "min_count")
DIMS = {"moe_grouped": CONTIGUOUS_DIMS, "moe_grouped_masked": MASKED_DIMS,
        "moe_grouped_swiglu": CONTIGUOUS_DIMS, "moe_grouped_swiglu_masked": MASKED_DIMS}
FAMILIES = {"moe.grouped": "moe_grouped", "moe.grouped_masked": "moe_grouped_masked",
            "moe.grouped_swiglu": "moe_grouped_swiglu", "moe.grouped_swiglu_masked": "moe_grouped_swiglu_masked"}


def set_bytes(family, d):
    """Bytes of every input and output of one call, each counted once (SwiGLU: 2N weight rows per
    expert, N output columns)."""
    E, N, K = d["E"], d["N"], d["K"]
    wn = 2 * N if family.startswith("moe_grouped_swiglu") else N
    if family in ("moe_grouped", "moe_grouped_swiglu"):
        return 2 * (d["T"] * K + E * wn * K + d["T"] * N) + 4 * (E + 1)
    return 2 * (E * d["cap"] * K + E * wn * K + E * d["cap"] * N) + 4 * E


def peers(recipe, dims, api):
    family = FAMILIES.get(recipe)
    if family is None:
        return None
    api.require_dims(recipe, dims, DIMS[family])
    nbytes = set_bytes(family, dims)
    if family == "moe_grouped":
        return [api.Peer("torch-grouped-mm", family, dims, nbytes, impl="grouped_mm"),
                api.Peer("cublas-loop", family, dims, nbytes, impl="loop")]
    if family == "moe_grouped_swiglu":
        return [api.Peer("torch-grouped-mm-silu", family, dims, nbytes, impl="eager"),
                api.Peer("torch-compile", family, dims, nbytes, impl="compile")]
    if family == "moe_grouped_swiglu_masked":
        return [api.Peer("cublas-bmm-padded-silu", family, dims, nbytes, impl="bmm")]
    return [api.Peer("cublas-bmm-padded", family, dims, nbytes, impl="bmm")]


def _blas(api):
    return api._loaded_version("libcublas.so", "cublasGetProperty") or "?"


def build_contiguous(torch, peer, n_sets, seed):
    api, d = peer.api, peer.dims
    E, N, K, T = d["E"], d["N"], d["K"], d["T"]
    offs = fill_offsets(seed, GROUPS_ARG_INDEX, E, T, d["min_tokens"])
    ends = torch.tensor(offs[1:], dtype=torch.int32, device="cuda")
    sets = []
    for i in range(n_sets):
        g = api._gen(torch, seed + i)
        sets.append({"a": api._normal(torch, g, (T, K), torch.bfloat16),
                     "w": api._normal(torch, g, (E, N, K), torch.bfloat16),
                     "c": torch.empty(T, N, dtype=torch.bfloat16, device="cuda")})
    if peer.opts["impl"] == "grouped_mm":
        if not hasattr(torch, "_grouped_mm"):
            raise api.PeerError(f"torch {torch.__version__} has no torch._grouped_mm")
        fn = (lambda s: torch._grouped_mm(s["a"], s["w"].transpose(-2, -1), offs=ends))
        expr = "torch._grouped_mm(a, w.transpose(-2, -1), offs=offsets[1:] (int32 ends)), bf16 in and out"
        return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r], [(T, N)],
                           lambda: f"torch {torch.__version__} (CUDA {torch.version.cuda}): {expr}",
                           expected=contiguous_expected(torch, api, offs, expert_reference, lambda s, r: r))
    # the loop: per set, the slices of the experts that have rows, built once (not timed)
    for s in sets:
        s["calls"] = [(s["a"][lo:hi], s["w"][e].t(), s["c"][lo:hi])
                      for e, (lo, hi) in enumerate(zip(offs[:-1], offs[1:])) if hi > lo]

    def fn(s):
        for a_e, wt_e, c_e in s["calls"]:
            torch.matmul(a_e, wt_e, out=c_e)
    n_calls = len(sets[0]["calls"])
    return api.TorchOp(sets, fn, lambda s: [s["c"]], lambda s, r: [s["c"]], [(T, N)],
                       lambda: (f"torch {torch.__version__}, cuBLAS {_blas(api)} (CUDA {torch.version.cuda}): "
                                f"torch.matmul(a[lo:hi], w[e].t(), out=c[lo:hi]) for the {n_calls} of {E} experts "
                                f"with rows, one launch each, row ranges known on the host, bf16"),
                       expected=contiguous_expected(torch, api, offs, expert_reference, lambda s, r: s["c"]))


def build_masked(torch, peer, n_sets, seed):
    api, d = peer.api, peer.dims
    E, N, K, cap = d["E"], d["N"], d["K"], d["cap"]
    sets = []
    for i in range(n_sets):
        g = api._gen(torch, seed + i)
        sets.append({"a": api._normal(torch, g, (E, cap, K), torch.bfloat16),
                     "w": api._normal(torch, g, (E, N, K), torch.bfloat16),
                     "c": torch.empty(E, cap, N, dtype=torch.bfloat16, device="cuda")})
    counts = fill_randint(seed, GROUPS_ARG_INDEX, E, d["min_count"], cap)
    valid = sum(counts)
    return api.TorchOp(sets, lambda s: torch.bmm(s["a"], s["w"].transpose(1, 2), out=s["c"]),
                       lambda s: [s["c"]], lambda s, r: [s["c"]], [(E, cap, N)],
                       lambda: (f"torch {torch.__version__}, cuBLAS {_blas(api)} (CUDA {torch.version.cuda}): "
                                f"torch.bmm(a, w.transpose(1, 2), out=c) over all {E} x {cap} rows, the padding "
                                f"past the counts included ({valid} of {E * cap} rows are counted), bf16"),
                       expected=masked_expected(torch, api, counts, expert_reference))


def _silu_mul(torch, g, N):
    """SwiGLU of a [..., 2N] gate|up projection: silu of the first half times the second."""
    return torch.nn.functional.silu(g[..., :N]) * g[..., N:]


def build_swiglu(torch, peer, n_sets, seed):
    api, d = peer.api, peer.dims
    E, N, K, T = d["E"], d["N"], d["K"], d["T"]
    if not hasattr(torch, "_grouped_mm"):
        raise api.PeerError(f"torch {torch.__version__} has no torch._grouped_mm")
    offs = fill_offsets(seed, GROUPS_ARG_INDEX, E, T, d["min_tokens"])
    ends = torch.tensor(offs[1:], dtype=torch.int32, device="cuda")
    sets = []
    for i in range(n_sets):
        g = api._gen(torch, seed + i)
        sets.append({"a": api._normal(torch, g, (T, K), torch.bfloat16),
                     "w": api._normal(torch, g, (E, 2 * N, K), torch.bfloat16, std=W13_STD)})

    def layer(a, w):
        return _silu_mul(torch, torch._grouped_mm(a, w.transpose(-2, -1), offs=ends), N)
    expr = ("h = torch._grouped_mm(a, w.transpose(-2, -1), offs=offsets[1:]); F.silu(h[:, :N]) * h[:, N:], "
            "bf16 in and out")
    if peer.opts["impl"] == "compile":
        # kernels for this problem's shape; without the reset, dynamo's recompile limit (8 shapes of
        # one function) fails the ninth problem of a comparison under fullgraph
        torch._dynamo.reset()
        compiled = torch.compile(layer, fullgraph=True, dynamic=False)
        compiled(sets[0]["a"], sets[0]["w"])  # compiled here, not in the timed warm-up
        fn, expr = (lambda s: compiled(s["a"], s["w"])), f"torch.compile(fullgraph, static) of: {expr}"
    else:
        fn = (lambda s: layer(s["a"], s["w"]))
    return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r], [(T, N)],
                       lambda: f"torch {torch.__version__} (CUDA {torch.version.cuda}): {expr}",
                       expected=contiguous_expected(torch, api, offs, swiglu_reference, lambda s, r: r))


def build_swiglu_masked(torch, peer, n_sets, seed):
    api, d = peer.api, peer.dims
    E, N, K, cap = d["E"], d["N"], d["K"], d["cap"]
    sets = []
    for i in range(n_sets):
        g = api._gen(torch, seed + i)
        sets.append({"a": api._normal(torch, g, (E, cap, K), torch.bfloat16),
                     "w": api._normal(torch, g, (E, 2 * N, K), torch.bfloat16, std=W13_STD)})
    counts = fill_randint(seed, GROUPS_ARG_INDEX, E, d["min_count"], cap)
    valid = sum(counts)
    return api.TorchOp(sets, lambda s: _silu_mul(torch, torch.bmm(s["a"], s["w"].transpose(1, 2)), N),
                       lambda s: [], lambda s, r: [r], [(E, cap, N)],
                       lambda: (f"torch {torch.__version__}, cuBLAS {_blas(api)} (CUDA {torch.version.cuda}): "
                                f"h = torch.bmm(a, w.transpose(1, 2)) over all {E} x {cap} rows ({valid} counted); "
                                f"F.silu(h[..., :N]) * h[..., N:], bf16"),
                       expected=masked_expected(torch, api, counts, swiglu_reference))


BUILDERS = {"moe_grouped": build_contiguous, "moe_grouped_masked": build_masked,
            "moe_grouped_swiglu": build_swiglu, "moe_grouped_swiglu_masked": build_swiglu_masked}
