"""peer_family_varlen_kv.py: the peers of attention.varlen_kv (packed variable-length attention whose
keys are longer than its queries: chunked prefill, a prompt continuing a cached prefix), for
peer_server.py (docs/peers.md; the module contract is in peer_server._family_modules).

The problem: B sequences, q [TQ, HQ, D] and k, v [TK, HKV, D] packed back to back, bf16; sequence i
has Lq queries and Lk = Lq + P keys (P its cached prefix), causal aligned at the end (query j sees
keys 0 .. j + P, FlashAttention-2's and torch's causal_lower_right) or not causal. The lengths come
from the recipe's two offsets inits, reproduced bit for bit (tools/peers/worker_inputs.py):
cu_seqlens_q {"offsets", "TQ", QMIN} and cu_prefix {"offsets", "TK - TQ", 0}; cu_seqlens_k =
cu_seqlens_q + cu_prefix. `tune compare` sends the peer server the worker's seed, so the peers see
the very batch tune's variants see. Every input set of one measurement has the same lengths.

Peers (each skipped with its reason where this torch lacks it):
  flash-varlen        torch.ops.aten._flash_attention_forward with cum_seq_q / cum_seq_k (the
                      FlashAttention-2 varlen kernel built into torch; causal is bottom-right there)
  torch-varlen-attn   torch.nn.attention.varlen.varlen_attn (public API; same kernel family)
  flex-document       FlexAttention (torch.compile'd) on [1, H, T, D] with a document mask whose
                      causal part is shifted by each sequence's prefix (built once, outside timing)
  sdpa-lower-right    scaled_dot_product_attention once per sequence with
                      torch.nn.attention.bias.causal_lower_right(Lq, Lk) (what an engine without a
                      varlen kernel runs; the per-sequence views are made outside timing)

Every peer's output is checked against a float64 reference (peer_reference.attention_reference,
causal bottom-right, sequence by sequence) at the first and last packed query rows.

torch is imported by the builders only (the unit test runs without it).
"""
import worker_inputs  # noqa: E402 (tools/peers is on the path of the peer server and the tests)
from peer_family_varlen import packed_expected, sequence_check  # noqa: E402 (the same reference)

RECIPE = "attention.varlen_kv"
DIMS = ("B", "TQ", "TK", "HQ", "HKV", "D", "causal")
# indices of cu_seqlens_q and cu_prefix among recipes/attention/varlen_kv.lua's args (their streams)
CU_SEQLENS_Q_ARG = 4
CU_PREFIX_ARG = 5


def q_min(d):
    """The recipe's QMIN: the shortest query chunk the offsets init draws."""
    return max(1, d["TQ"] // (2 * d["B"]))


def lengths(d, seed):
    """(cu_seqlens_q, cu_seqlens_k) the worker draws for these dims and seed."""
    B, TQ, TK = d["B"], d["TQ"], d["TK"]
    cu_q = worker_inputs.offsets(seed, CU_SEQLENS_Q_ARG, B, TQ, q_min(d))
    cu_p = worker_inputs.offsets(seed, CU_PREFIX_ARG, B, TK - TQ, 0)
    return cu_q, [a + b for a, b in zip(cu_q, cu_p)]


def set_bytes(d):
    """q, k, v, o and the two offset arrays of one call."""
    return 2 * d["D"] * (2 * d["TQ"] * d["HQ"] + 2 * d["TK"] * d["HKV"]) + 2 * 4 * (d["B"] + 1)


def peers(recipe, dims, api):
    if recipe != RECIPE:
        return None
    api.require_dims(recipe, dims, DIMS)
    if dims["TQ"] < dims["B"]:
        raise api.PeerError(f"TQ {dims['TQ']} < B {dims['B']}: no sequence of at least one query for each")
    if dims["TK"] < dims["TQ"]:
        raise api.PeerError(f"TK {dims['TK']} < TQ {dims['TQ']}: fewer keys than queries")
    n = set_bytes(dims)
    return [api.Peer(name, "varlen_kv", dims, n, backend=backend)
            for name, backend in (("flash-varlen", "flash"), ("torch-varlen-attn", "varlen_attn"),
                                  ("flex-document", "flex"), ("sdpa-lower-right", "sdpa_lower_right"))]


def build(torch, peer, n_sets, seed):
    api = peer.api
    d = peer.dims
    B, TQ, TK, HQ, HKV, D = d["B"], d["TQ"], d["TK"], d["HQ"], d["HKV"], d["D"]
    causal = bool(d["causal"])
    cu_q_host, cu_k_host = lengths(d, seed)
    lq = [cu_q_host[i + 1] - cu_q_host[i] for i in range(B)]
    lk = [cu_k_host[i + 1] - cu_k_host[i] for i in range(B)]
    data = []
    for i in range(n_sets):
        g = api._gen(torch, seed + i)
        data.append({"q": api._normal(torch, g, (TQ, HQ, D), torch.bfloat16),
                     "k": api._normal(torch, g, (TK, HKV, D), torch.bfloat16),
                     "v": api._normal(torch, g, (TK, HKV, D), torch.bfloat16)})
    seqs = {"cu_q_host": cu_q_host, "cu_k_host": cu_k_host, "lq": lq, "lk": lk,
            "cu_q": torch.tensor(cu_q_host, dtype=torch.int32, device="cuda"),
            "cu_k": torch.tensor(cu_k_host, dtype=torch.int32, device="cuda")}
    prefix = [k - q for q, k in zip(lq, lk)]
    how = (f"B {B}, TQ {TQ}, TK {TK}, queries {min(lq)}..{max(lq)}, prefixes {min(prefix)}..{max(prefix)} "
           f"(offsets inits), {'causal bottom-right' if causal else 'not causal'}")
    builder = {"flash": _flash, "varlen_attn": _varlen_attn, "flex": _flex, "sdpa_lower_right": _sdpa_lower_right}
    return builder[peer.opts["backend"]](torch, api, d, causal, data, seqs, how)


def _flash(torch, api, d, causal, sets, seqs, how):
    op = torch.ops.aten._flash_attention_forward
    cu_q, cu_k, mq, mk = seqs["cu_q"], seqs["cu_k"], max(seqs["lq"]), max(seqs["lk"])

    def fn(s):
        return op(s["q"], s["k"], s["v"], cu_q, cu_k, mq, mk, 0.0, causal, False)[0]

    def library():
        return (f"torch {torch.__version__}, FlashAttention-2 varlen built into torch via "
                f"aten._flash_attention_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, ...), bf16 [T,H,D], {how}")
    return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r], [(d["TQ"], d["HQ"], d["D"])], library,
                       expected=packed_expected(torch, api, seqs["cu_q_host"], causal, cu_k=seqs["cu_k_host"]))


def _varlen_attn(torch, api, d, causal, sets, seqs, how):
    import inspect
    from torch.nn.attention import varlen  # ImportError where this torch has none: skipped
    params = inspect.signature(varlen.varlen_attn).parameters
    if "is_causal" in params:
        kw = {"is_causal": causal}
    else:  # later torch: causal is the window (-1, 0), aligned at the end
        kw = {"window_size": (-1, 0) if causal else (-1, -1)}
    cu_q, cu_k, mq, mk = seqs["cu_q"], seqs["cu_k"], max(seqs["lq"]), max(seqs["lk"])

    def fn(s):
        return varlen.varlen_attn(s["q"], s["k"], s["v"], cu_q, cu_k, mq, mk, **kw)

    def library():
        return f"torch {torch.__version__}, torch.nn.attention.varlen.varlen_attn({kw}), bf16 [T,H,D], {how}"
    return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r], [(d["TQ"], d["HQ"], d["D"])], library,
                       expected=packed_expected(torch, api, seqs["cu_q_host"], causal, cu_k=seqs["cu_k_host"]))


def _flex(torch, api, d, causal, sets, seqs, how):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    TQ, TK, B = d["TQ"], d["TK"], d["B"]
    ids = torch.arange(B, device="cuda")
    doc_q = torch.repeat_interleave(ids, torch.tensor(seqs["lq"], device="cuda"))
    doc_k = torch.repeat_interleave(ids, torch.tensor(seqs["lk"], device="cuda"))
    # the last key a query token sees: its own position in the keys plus the prefix, i.e.
    # q token i of sequence s sees k tokens up to i + cu_prefix[s + 1] (cu_prefix = cu_k - cu_q)
    cu_p_end = torch.tensor([k - q for q, k in zip(seqs["cu_q_host"][1:], seqs["cu_k_host"][1:])], device="cuda")
    last = torch.arange(TQ, device="cuda") + cu_p_end[doc_q]

    def mask(b, h, q_idx, kv_idx):
        same = doc_q[q_idx] == doc_k[kv_idx]
        return same & (kv_idx <= last[q_idx]) if causal else same
    block_mask = create_block_mask(mask, None, None, TQ, TK, device="cuda")
    flex = torch.compile(flex_attention)
    gqa = d["HQ"] != d["HKV"]
    # [1, H, T, D] contiguous, made outside timing
    hsets = [{k: s[k].transpose(0, 1).unsqueeze(0).contiguous() for k in ("q", "k", "v")} for s in sets]

    def fn(s):
        return flex(s["q"], s["k"], s["v"], block_mask=block_mask, enable_gqa=gqa)

    def library():
        return (f"torch {torch.__version__}, FlexAttention (torch.compile) with a document "
                f"{'causal (shifted by each prefix) ' if causal else ''}block mask over [1,H,T,D], bf16, {how}")
    unpack = (lambda x: x[0].transpose(0, 1))  # [1, H, T, D] -> [T, H, D]
    return api.TorchOp(hsets, fn, lambda s: [], lambda s, r: [r], [(1, d["HQ"], TQ, d["D"])], library,
                       expected=packed_expected(torch, api, seqs["cu_q_host"], causal, cu_k=seqs["cu_k_host"],
                                                unpack=unpack))


def _sdpa_lower_right(torch, api, d, causal, sets, seqs, how):
    import torch.nn.functional as F
    from torch.nn.attention.bias import causal_lower_right
    HQ, HKV = d["HQ"], d["HKV"]
    spans = [(seqs["cu_q_host"][i], seqs["cu_q_host"][i + 1], seqs["cu_k_host"][i], seqs["cu_k_host"][i + 1])
             for i in range(d["B"])]

    def views(s, expand):  # per sequence [1, H, L, D], contiguous (outside timing)
        out = []
        for q0, q1, k0, k1 in spans:
            k, v = (s[n][k0:k1].transpose(0, 1) for n in ("k", "v"))
            if expand:
                k, v = (x.repeat_interleave(HQ // HKV, dim=0) for x in (k, v))
            out.append((s["q"][q0:q1].transpose(0, 1).unsqueeze(0).contiguous(),
                        k.unsqueeze(0).contiguous(), v.unsqueeze(0).contiguous()))
        return out
    masks = [causal_lower_right(q1 - q0, k1 - k0) if causal else None for q0, q1, k0, k1 in spans]

    def call(parts, gqa):
        kw = {"enable_gqa": True} if gqa else {}
        return [F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw) for (q, k, v), m in zip(parts, masks)]
    # GQA natively where this torch's causal bias takes enable_gqa, else K/V repeated per query head
    gqa = HQ != HKV
    try:
        psets = [views(s, False) for s in sets]
        call(psets[0], gqa)
        expanded = False
    except (TypeError, RuntimeError):
        if not gqa:
            raise
        psets = [views(s, True) for s in sets]
        gqa, expanded = False, True

    def fn(parts):
        return call(parts, gqa)

    def library():
        return (f"torch {torch.__version__}, scaled_dot_product_attention once per sequence (B calls) with "
                f"{'causal_lower_right(Lq, Lk)' if causal else 'no mask'}"
                f"{', K/V repeated to the query heads' if expanded else ''} over [1,H,L,D], bf16, {how}")
    shapes = [(1, HQ, q1 - q0, d["D"]) for q0, q1, _, _ in spans]

    def expected(parts, outs):  # per sequence [1, H, L, D] (K/V maybe repeated: GQA of ratio 1 then)
        def seq(x):
            return x[0].transpose(0, 1)
        rows = api.edge_rows(torch, d["TQ"], outs[0].device).tolist()
        got, want = sequence_check(torch, seqs["cu_q_host"], rows, causal, lambda b: tuple(map(seq, parts[b])),
                                   lambda b: seq(outs[b]))
        return [("o of each sequence [1,HQ,Lq,D] at the first and last packed query rows", got, want)]
    return api.TorchOp(psets, fn, lambda s: [], lambda s, r: r, shapes, library, expected=expected)


BUILDERS = {"varlen_kv": build}
