"""peer_family_moe_combine.py: the peers of recipes/moe/combine.lua (moe.combine, the weighted
un-permutation that ends a Mixture-of-Experts layer), loaded by peer_server.py (docs/peers.md).

Both peers run the combination of tunert.torch's moe_layer_torch (python/src/tunert/torch/
_ops_moe_layer.py `combine`) on the recipe's inputs: y [T * top_k, H] bf16 in expert order, weights
[T, top_k] fp32, and the routing as PyTorch keeps it, order [T * top_k] (int64: the (token, slot)
index of each row of y; the inverse of the recipe's pos, built once per problem, not timed):
    back = torch.empty_like(y); back[order] = y
    out = (back.view(T, top_k, H).float() * weights[..., None]).sum(1).to(torch.bfloat16)
  torch          eager: what a model written in PyTorch runs (the scatter, an fp32 copy of every
                 row, the product, the sum, the rounding)
  torch-compile  the function under torch.compile (inductor, mode default, static shapes): its
                 fused Triton kernels. Compiled by an explicit first call before timing; dynamo's
                 caches are reset per problem so that every problem gets kernels specialized to its
                 shape, as the tuned variants are.
The routing is the worker's exactly: pos is regenerated here as tuner/inputs.c fills it (init
{"permutation"}, worker_inputs.permutation) from the seed and the arg's index in the recipe, so both
sides gather the same rows; y and weights come from torch's generator (same distributions, other
values). Each peer's out is checked at its first and last 128 tokens against combine_reference, the
recipe's gather through pos in float64 (not PyTorch's scatter through order). torch is imported by
the caller (peer_server) only.
"""
import worker_inputs  # noqa: E402 (tools/peers is on the path of the peer server and the tests)

FAMILY = "moe_combine"
RECIPE = "moe.combine"
DIMS = ("T", "H", "top_k")
POS_ARG_INDEX = 1  # pos's position in recipes/moe/combine.lua's args (the worker seeds each input by it)


def set_bytes(T, H, top_k):
    """Bytes of one call as the recipe's metric counts them: y read, out written (bf16), the
    routing and weights (4 bytes per routed row each)."""
    return 2 * T * top_k * H + 2 * T * H + 8 * T * top_k


def peers(recipe, dims, api):
    if recipe != RECIPE:
        return None
    api.require_dims(recipe, dims, DIMS)
    nbytes = set_bytes(dims["T"], dims["H"], dims["top_k"])
    return [api.Peer("torch", FAMILY, dims, nbytes, compiled=False),
            api.Peer("torch-compile", FAMILY, dims, nbytes, compiled=True)]


def combine_fn(torch, T, H, top_k):
    """The function both peers time: moe_layer_torch's combination."""
    def combine(y, order, weights):
        back = torch.empty_like(y)
        back[order] = y
        return (back.view(T, top_k, H).float() * weights[..., None]).sum(1).to(torch.bfloat16)
    return combine


def combine_reference(torch, y, weights, pos, rows, top_k):
    """float64 out[t] = sum_j weights[t, j] * y[pos[t * top_k + j]] at the token rows `rows` (an index
    tensor); pos a tensor on y's device. -> [len(rows), H]"""
    src = pos.view(-1, top_k)[rows]  # [R, top_k]: the rows of y of each token's slots
    return (y[src].double() * weights[rows].double()[..., None]).sum(1)


def order_of(torch, pos):
    """order [n] int64 on the GPU with order[pos[i]] = i: the row index PyTorch's combine scatters by."""
    p = torch.tensor(pos, dtype=torch.int64, device="cuda")
    order = torch.empty_like(p)
    order[p] = torch.arange(len(pos), dtype=torch.int64, device="cuda")
    return order


def build_combine(torch, peer, n_sets, seed):
    api = peer.api
    T, H, k = peer.dims["T"], peer.dims["H"], peer.dims["top_k"]
    pos = worker_inputs.permutation(seed, POS_ARG_INDEX, T * k)
    order = order_of(torch, pos)
    pos_t = torch.tensor(pos, dtype=torch.int64, device="cuda")
    sets = []
    for i in range(n_sets):
        g = api._gen(torch, seed + i)
        sets.append({"y": api._normal(torch, g, (T * k, H), torch.bfloat16),
                     "w": api._uniform(torch, g, (T, k), torch.float32, 0.0, 1.0)})
    body = combine_fn(torch, T, H, k)
    if peer.opts["compiled"]:
        torch._dynamo.reset()  # kernels for this problem's shape, no automatic dynamic shapes
        body = torch.compile(body, fullgraph=True, dynamic=False)
        body(sets[0]["y"], order, sets[0]["w"])  # compiled here, not in the timed warm-up

    def library():
        how = ("torch.compile (inductor, mode default, fullgraph, dynamic=False; compiled before timing)"
               if peer.opts["compiled"] else "eager")
        return (f"torch {torch.__version__} (CUDA {torch.version.cuda}) {how}: back = empty_like(y); back[order] = y; "
                f"(back.view(T, top_k, H).float() * weights[..., None]).sum(1).to(bfloat16)")

    def expected(s, out):
        rows = api.edge_rows(torch, T, out.device)
        want = combine_reference(torch, s["y"], s["w"], pos_t, rows, k)
        return [("out [T,H] at its first and last rows", out[rows], want)]
    return api.TorchOp(sets, lambda s: body(s["y"], order, s["w"]), lambda s: [], lambda s, r: [r], [(T, H)], library,
                       expected=expected)


BUILDERS = {FAMILY: build_combine}
