"""peer_family_varlen.py: the peers of attention.varlen (packed variable-length prefill), for
peer_server.py (docs/peers.md; the module contract is in peer_server._family_modules).

The problem: B sequences packed into T tokens, q [T, HQ, D], k and v [T, HKV, D], bf16, causal or
not within each sequence. The lengths come from cu_seqlens drawn like the recipe's {"offsets", "T",
1} init (tools/peers/worker_inputs.py: tuner/inputs.c's fill_offsets with the same splitmix64 stream and arg
index: the same seed gives the same lengths, and `tune compare` sends the peer server the seed it
gives the worker, so the peers see the very batch tune's variants see; most sequences short, a
few long). Every input set of one measurement has the same lengths; only q, k, v differ.

Peers (each skipped with its reason where this torch lacks it):
  flash-varlen        torch.ops.aten._flash_attention_forward with cum_seq_q/cum_seq_k (the
                      FlashAttention-2 varlen kernel built into torch)
  torch-varlen-attn   torch.nn.attention.varlen.varlen_attn (public API; same kernel family)
  flex-document       FlexAttention (torch.compile'd) on [1, H, T, D] with a document block mask
                      (built once, outside timing)
  cudnn-sdpa-padded   cuDNN SDPA on the padded layout [B, H, Smax, D] (the baseline of an engine
                      without varlen: B * Smax^2 work instead of sum len^2; padding done outside timing)

Every peer's output is checked against a float64 reference (attention_reference, sequence by
sequence) at the first and last packed query rows (peer_server.edge_rows of T), valid positions only.
peer_family_varlen_kv and peer_family_kvfp8 check theirs with the same functions.

torch is imported by the builders only (the unit test runs without it).
"""

import worker_inputs  # noqa: E402 (tools/peers is on the path of the peer server and the tests)
from peer_reference import attention_reference  # noqa: E402 (the reference every attention peer is checked against)

RECIPE = "attention.varlen"
DIMS = ("B", "T", "HQ", "HKV", "D", "causal")
CU_SEQLENS_ARG = 4  # index of cu_seqlens among recipes/attention/varlen.lua's args (the init's stream)


def offsets(parts, total, min_part, seed, arg_index=CU_SEQLENS_ARG):
    """The worker's cu_seqlens for this seed (tuner/inputs.c fill_offsets)."""
    return worker_inputs.offsets(seed, arg_index, parts, total, min_part)


def set_bytes(d):
    """q, k, v, o and cu_seqlens of one call."""
    return 2 * d["T"] * d["D"] * (2 * d["HQ"] + 2 * d["HKV"]) + 4 * (d["B"] + 1)


def starts(lens):
    """The prefix sums 0, lens[0], lens[0] + lens[1], .. (cu_seqlens on the host)."""
    out = [0]
    for n in lens:
        out.append(out[-1] + n)
    return out


def sequence_check(torch, cu_q, rows, causal, inputs_of, output_of):
    """(got, want) [len(rows), HQ, D] at the packed query rows `rows` (sorted ints), whatever the
    layout: inputs_of(b) -> (q [Lq, HQ, D], k, v [Lk, HKV, D][, k_scale, v_scale]) of sequence b,
    output_of(b) -> its output [Lq, HQ, D] (views of the peer's tensors)."""
    got, want = [], []
    for b, pos in worker_inputs.rows_by_segment(cu_q, rows):
        q, k, v, *scales = inputs_of(b)
        idx = torch.tensor(pos, device=q.device)
        want.append(attention_reference(torch, q, k, v, causal, idx, *scales))
        got.append(output_of(b)[idx])
    return torch.cat(got), torch.cat(want)


def packed(q, k, v, cu_q, cu_k):
    """inputs_of (sequence_check) of packed [T, H, D] tensors: sequence b's rows of each."""
    return lambda b: (q[cu_q[b]:cu_q[b + 1]], k[cu_k[b]:cu_k[b + 1]], v[cu_k[b]:cu_k[b + 1]])


def packed_expected(torch, api, cu_q, causal, cu_k=None, unpack=lambda x: x):
    """expected(s, o) of a peer whose set and output are packed [T, H, D] tensors (after unpack, e.g.
    [1, H, T, D] -> [T, H, D]): o against the reference at its first and last query rows. The keys
    are packed by cu_k (by cu_q when None)."""
    cu_k = cu_q if cu_k is None else cu_k

    def expected(s, o):
        o = unpack(o)
        rows = api.edge_rows(torch, o.shape[0], o.device).tolist()
        got, want = sequence_check(torch, cu_q, rows, causal, packed(*(unpack(s[n]) for n in "qkv"), cu_q, cu_k),
                                   lambda b: o[cu_q[b]:cu_q[b + 1]])
        return [("o [T,HQ,D] at its first and last rows", got, want)]
    return expected


def peers(recipe, dims, api):
    if recipe != RECIPE:
        return None
    api.require_dims(recipe, dims, DIMS)
    if dims["T"] < dims["B"]:
        raise api.PeerError(f"T {dims['T']} < B {dims['B']}: no sequence of length >= 1 for each")
    n = set_bytes(dims)
    return [api.Peer(name, "varlen", dims, n, backend=backend)
            for name, backend in (("flash-varlen", "flash"), ("torch-varlen-attn", "varlen_attn"),
                                  ("flex-document", "flex"), ("cudnn-sdpa-padded", "cudnn_padded"))]


def build(torch, peer, n_sets, seed):
    api = peer.api
    d = peer.dims
    B, T, HQ, HKV, D, causal = d["B"], d["T"], d["HQ"], d["HKV"], d["D"], bool(d["causal"])
    cu_host = offsets(B, T, 1, seed)
    lens = [cu_host[i + 1] - cu_host[i] for i in range(B)]
    max_len = max(lens)
    cu = torch.tensor(cu_host, dtype=torch.int32, device="cuda")
    data = []
    for i in range(n_sets):
        g = api._gen(torch, seed + i)
        data.append({"q": api._normal(torch, g, (T, HQ, D), torch.bfloat16),
                     "k": api._normal(torch, g, (T, HKV, D), torch.bfloat16),
                     "v": api._normal(torch, g, (T, HKV, D), torch.bfloat16)})
    how = f"B {B}, T {T}, lengths {min(lens)}..{max_len} (offsets init), {'causal' if causal else 'not causal'}"
    builder = {"flash": _flash, "varlen_attn": _varlen_attn, "flex": _flex, "cudnn_padded": _cudnn_padded}
    return builder[peer.opts["backend"]](torch, api, d, causal, data, cu, lens, max_len, how)


def _flash(torch, api, d, causal, sets, cu, lens, max_len, how):
    op = torch.ops.aten._flash_attention_forward

    def fn(s):
        return op(s["q"], s["k"], s["v"], cu, cu, max_len, max_len, 0.0, causal, False)[0]

    def library():
        return (f"torch {torch.__version__}, FlashAttention-2 varlen built into torch via "
                f"aten._flash_attention_forward(q, k, v, cu_seqlens, cu_seqlens, ...), bf16 [T,H,D], {how}")
    return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r], [(d["T"], d["HQ"], d["D"])], library,
                       expected=packed_expected(torch, api, starts(lens), causal))


def _varlen_attn(torch, api, d, causal, sets, cu, lens, max_len, how):
    import inspect
    from torch.nn.attention import varlen  # ImportError where this torch has none: skipped
    params = inspect.signature(varlen.varlen_attn).parameters
    if "is_causal" in params:
        kw = {"is_causal": causal}
    else:  # later torch: causal is the window (-1, 0)
        kw = {"window_size": (-1, 0) if causal else (-1, -1)}

    def fn(s):
        return varlen.varlen_attn(s["q"], s["k"], s["v"], cu, cu, max_len, max_len, **kw)

    def library():
        return f"torch {torch.__version__}, torch.nn.attention.varlen.varlen_attn({kw}), bf16 [T,H,D], {how}"
    return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r], [(d["T"], d["HQ"], d["D"])], library,
                       expected=packed_expected(torch, api, starts(lens), causal))


def _flex(torch, api, d, causal, sets, cu, lens, max_len, how):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    T = d["T"]
    doc = torch.repeat_interleave(torch.arange(len(lens), device="cuda"),
                                  torch.tensor(lens, device="cuda"))

    def mask(b, h, q_idx, kv_idx):
        same = doc[q_idx] == doc[kv_idx]
        return same & (q_idx >= kv_idx) if causal else same
    block_mask = create_block_mask(mask, None, None, T, T, device="cuda")
    flex = torch.compile(flex_attention)
    gqa = d["HQ"] != d["HKV"]
    # [1, H, T, D] contiguous, made outside timing
    hsets = [{k: s[k].transpose(0, 1).unsqueeze(0).contiguous() for k in ("q", "k", "v")} for s in sets]

    def fn(s):
        return flex(s["q"], s["k"], s["v"], block_mask=block_mask, enable_gqa=gqa)

    def library():
        return (f"torch {torch.__version__}, FlexAttention (torch.compile) with a document "
                f"{'causal ' if causal else ''}block mask over [1,H,T,D], bf16, {how}")
    unpack = (lambda x: x[0].transpose(0, 1))  # [1, H, T, D] -> [T, H, D]
    return api.TorchOp(hsets, fn, lambda s: [], lambda s, r: [r], [(1, d["HQ"], T, d["D"])], library,
                       expected=packed_expected(torch, api, starts(lens), causal, unpack=unpack))


def _cudnn_padded(torch, api, d, causal, sets, cu, lens, max_len, how):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    B, HQ, HKV, D = d["B"], d["HQ"], d["HKV"], d["D"]
    cu_host = starts(lens)

    def pad(x, heads):  # [T, H, D] -> [B, H, Smax, D], zeros past each length (outside timing)
        out = torch.zeros(B, heads, max_len, D, dtype=x.dtype, device="cuda")
        for b, n in enumerate(lens):
            out[b, :, :n] = x[cu_host[b]:cu_host[b] + n].transpose(0, 1)
        return out
    psets = [{"q": pad(s["q"], HQ), "k": pad(s["k"], HKV), "v": pad(s["v"], HKV)} for s in sets]
    kw = {"is_causal": causal}
    if HQ != HKV:
        kw["enable_gqa"] = True
    if not causal:  # keys past each length masked (causal needs none: valid rows never see them)
        valid = torch.arange(max_len, device="cuda")[None, :] < torch.tensor(lens, device="cuda")[:, None]
        kw["attn_mask"] = valid[:, None, None, :]

    def fn(s):
        return F.scaled_dot_product_attention(s["q"], s["k"], s["v"], **kw)

    def library():
        return (f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()} (CUDNN_ATTENTION) via "
                f"scaled_dot_product_attention on the padded layout [B,H,Smax={max_len},D] "
                f"({B * max_len} rows for {sum(lens)} tokens{'' if causal else ', key-padding mask'}), bf16, {how}")

    def expected(s, o):  # the packed rows' positions in the padded layout; the padding is not compared
        def seq(x, b):
            return x[b, :, :lens[b]].transpose(0, 1)
        rows = api.edge_rows(torch, cu_host[-1], o.device).tolist()
        got, want = sequence_check(torch, cu_host, rows, causal, lambda b: tuple(seq(s[n], b) for n in "qkv"),
                                   lambda b: seq(o, b))
        return [("o [B,HQ,Smax,D] at the first and last tokens' rows", got, want)]
    return api.TorchOp(psets, fn, lambda s: [], lambda s, r: [r], [(B, HQ, max_len, D)], library,
                       lambda: sdpa_kernel([SDPBackend.CUDNN_ATTENTION]), expected=expected)


BUILDERS = {"varlen": build}
