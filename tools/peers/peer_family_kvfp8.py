"""peer_family_kvfp8.py: the peers of attention.decode_fp8 (paged decode over an fp8 e4m3 KV cache with
per-head or per-page scales, recipes/attention/decode_fp8.lua), for peer_server.py (docs/peers.md; the module
contract is in peer_server._family_modules).

The problem: B sequences of one query token each, HQ query heads over HKV KV heads of D, lengths drawn
like the recipe's {"randint", "min_len", "max_pages * page_size"} init (worker_inputs.randint: the
same seed gives the same lengths as tune's variants see). Peers, in two groups (each skipped with its
reason where this torch lacks it):

What a user runs today on a bf16 cache (the same problem at twice the K/V bytes):
  flash-sdpa-bf16, cudnn-sdpa-bf16   attention.decode's own peers (peer_server.build_attention):
                      one query token against a contiguous bf16 cache [B, HKV, L, D] under
                      sdpa_kernel([FLASH_ATTENTION]) / ([CUDNN_ATTENTION]); SDPA takes one length,
                      L = the mean of the drawn lengths rounded up (the same K/V bytes as the
                      variants read; exactly the lengths when min_len is the full length)
  flash-varlen-bf16   FlashAttention-2 varlen (aten._flash_attention_forward) over a packed bf16
                      cache of exactly the drawn lengths (cu_seqlens_k), q [B, HQ, D]

What a user runs on the fp8 cache without an fp8 kernel: torch dequantizes, then attends. Timed as
one op: the dequantization (e4m3 -> bf16, times the per-head scale as bf16; with kv_scale = "page",
times a per-token scale, the page's scale already expanded to its tokens: the gather by block table a
user would also run is not timed) of K and V, then
  dequant-sdpa        scaled_dot_product_attention (torch's own backend choice) on [B, HKV, L, D], L as
                      for the SDPA peers above
  dequant-flash-varlen  FlashAttention-2 varlen on the packed cache of exactly the drawn lengths
Neither pages the cache (no torch kernel reads a block table); the pages only cost tune's variants.

Every peer's output is checked against a float64 reference of every sequence it attends (the first
and last 128 where B > 256): peer_reference.attention_reference over the cache the peer reads,
dequantized in float64 with the set's scales for the dequant peers (e4m3 times a bf16 scale is exact).

torch is imported by the builders only (the unit test runs without it).
"""
import worker_inputs  # noqa: E402 (tools/peers is on the path of the peer server and the tests)
from peer_family_varlen import sequence_check  # noqa: E402 (the same attention reference)

# attention.decode_fp8_tma: decode_fp8.lua's args (seq_lens at the same index), then two tensor maps
RECIPES = ("attention.decode_fp8", "attention.decode_fp8_tma")
FAMILY = "decode_fp8"
DIMS = ("B", "HQ", "HKV", "D", "page_size", "max_pages", "min_len")
SEQ_LENS_ARG = 6  # index of seq_lens among recipes/attention/decode_fp8.lua's args (the init's stream)
PEERS = (("flash-sdpa-bf16", "sdpa_bf16", "flash"), ("cudnn-sdpa-bf16", "sdpa_bf16", "cudnn"),
         ("flash-varlen-bf16", "varlen_bf16", None), ("dequant-sdpa", "dequant_sdpa", None),
         ("dequant-flash-varlen", "dequant_varlen", None))


def lengths(d, seed):
    """The worker's seq_lens for this seed (tuner/inputs.c randint, min_len .. max_pages * page_size)."""
    return worker_inputs.randint(seed, SEQ_LENS_ARG, d["B"], d["min_len"], d["max_pages"] * d["page_size"])


def sdpa_len(lens):
    """The one length SDPA gets: the mean of lens rounded up (at least 1)."""
    return max(1, -(-sum(lens) // len(lens)))


def set_bytes(d, kv_bytes):
    """q and o (bf16) and K + V of the expected lengths at kv_bytes per element (the recipe's metric)."""
    kv = d["B"] * (d["min_len"] + d["max_pages"] * d["page_size"]) * d["HKV"] * d["D"]  # 2 caches x mean
    return 2 * d["B"] * d["HQ"] * d["D"] * 2 + kv * kv_bytes


def peers(recipe, dims, api):
    if recipe not in RECIPES:
        return None
    api.require_dims(recipe, dims, DIMS)
    if dims["HQ"] % dims["HKV"]:
        raise api.PeerError(f"HQ {dims['HQ']} is not a multiple of HKV {dims['HKV']}")
    return [api.Peer(name, FAMILY, dims, set_bytes(dims, 1 if kind.startswith("dequant") else 2),
                     kind=kind, backend=backend)
            for name, kind, backend in PEERS]


def build(torch, peer, n_sets, seed):
    api, d, kind = peer.api, peer.dims, peer.opts["kind"]
    lens = lengths(d, seed)
    if min(lens) < 1:
        raise api.PeerError(f"a sequence of length 0 (min_len {d['min_len']}): the peers need keys")
    how = (f"B {d['B']}, lengths {min(lens)}..{max(lens)} (mean {sum(lens) / len(lens):.0f}), "
           f"HQ {d['HQ']}, HKV {d['HKV']}, D {d['D']}; tune's cache is paged ({d['page_size']} rows a page)")
    if kind == "sdpa_bf16":
        L = sdpa_len(lens)
        sub = api.Peer(peer.name, "decode", {"B": d["B"], "HQ": d["HQ"], "HKV": d["HKV"], "L": L, "D": d["D"],
                                             "page": d["page_size"]}, peer.set_bytes, backend=peer.opts["backend"])
        op = api.build_attention(torch, sub, n_sets, seed)
        inner = op.library
        op.library = lambda: f"{inner()}; L {L} = the mean length of {how}"
        # every sequence, as the dequantizing peers (attention.decode's own check reads the first and
        # the last batch entry)
        op.expected = batched_expected(torch, api, d["B"], False)
        return op
    if kind in ("varlen_bf16", "dequant_varlen"):
        return _varlen(torch, api, d, kind == "dequant_varlen", lens, n_sets, seed, how)
    return _dequant_sdpa(torch, api, d, sdpa_len(lens), n_sets, seed, how)


def _fp8_cache(torch, api, g, shape):
    """e4m3 of a normal of std 32 (the recipe's init; torch's cast does not saturate, hence the clamp)."""
    return api._normal(torch, g, shape, torch.float32, 32.0).clamp_(-448, 448).to(torch.float8_e4m3fn)


def _scales(torch, api, g, lo, hi, shape):
    """Scales drawn as the recipe's, in bf16 (a bf16 tensor times an f32 one would be f32), of shape
    [1, HKV, ...] per head or [tokens..., HKV, ...] per token (kv_scale = "page")."""
    return api._uniform(torch, g, shape, torch.float32, lo, hi).to(torch.bfloat16)


def _per_page(d):
    return d.get("kv_scale") == "page"


def batched_expected(torch, api, B, per_page):
    """expected(s, o) of a peer on [B, H, L, D] tensors (one query token per sequence, one length L):
    o [B, HQ, 1, D] against the reference of each sequence, from q, k, v, or from the e4m3 caches k8,
    v8 and their scales ks, vs ([B, HKV, L, 1] per token, else [1, HKV, 1, 1])."""
    def seq(x, b):  # [B, H, L, D] -> sequence b's [L, H, D]
        return x[b].transpose(0, 1)

    def expected(s, o):
        def inputs(b):
            if "k8" in s:
                sb = b if per_page else 0
                return seq(s["q"], b), seq(s["k8"], b), seq(s["v8"], b), seq(s["ks"], sb), seq(s["vs"], sb)
            return seq(s["q"], b), seq(s["k"], b), seq(s["v"], b)
        rows = api.edge_rows(torch, B, o.device).tolist()
        got, want = sequence_check(torch, list(range(B + 1)), rows, False, inputs, lambda b: seq(o, b))
        return [("o [B,HQ,1,D] of each sequence", got, want)]
    return expected


def varlen_expected(torch, api, cu_k, per_page):
    """expected(s, o) of a FlashAttention varlen peer: q [B, HQ, D], one query token per sequence, the
    cache packed by cu_k: k, v [T, HKV, D], or the e4m3 k8, v8 with scales ks, vs ([T, HKV, 1] per token,
    else [1, HKV, 1]). o [B, HQ, D] against the reference of each sequence."""
    B = len(cu_k) - 1

    def expected(s, o):
        def inputs(b):
            lo, hi = cu_k[b], cu_k[b + 1]
            if "k8" in s:
                ks, vs = (s[n][lo:hi] if per_page else s[n] for n in ("ks", "vs"))
                return s["q"][b:b + 1], s["k8"][lo:hi], s["v8"][lo:hi], ks, vs
            return s["q"][b:b + 1], s["k"][lo:hi], s["v"][lo:hi]
        rows = api.edge_rows(torch, B, o.device).tolist()
        got, want = sequence_check(torch, list(range(B + 1)), rows, False, inputs, lambda b: o[b:b + 1])
        return [("o [B,HQ,D] of each sequence", got, want)]
    return expected


def _varlen(torch, api, d, fp8, lens, n_sets, seed, how):
    B, HQ, HKV, D = d["B"], d["HQ"], d["HKV"], d["D"]
    T = sum(lens)
    cu_k_host = [0]
    for n in lens:
        cu_k_host.append(cu_k_host[-1] + n)
    cu_q = torch.arange(B + 1, dtype=torch.int32, device="cuda")
    cu_k = torch.tensor(cu_k_host, dtype=torch.int32, device="cuda")
    max_k = max(lens)
    sets = []
    for i in range(n_sets):
        g = api._gen(torch, seed + i)
        s = {"q": api._normal(torch, g, (B, HQ, D), torch.bfloat16)}
        if fp8:
            shape = (T if _per_page(d) else 1, HKV, 1)
            s.update(k8=_fp8_cache(torch, api, g, (T, HKV, D)), v8=_fp8_cache(torch, api, g, (T, HKV, D)),
                     ks=_scales(torch, api, g, 0.05, 0.15, shape), vs=_scales(torch, api, g, 0.01, 0.03, shape))
        else:
            s.update(k=api._normal(torch, g, (T, HKV, D), torch.bfloat16),
                     v=api._normal(torch, g, (T, HKV, D), torch.bfloat16))
        sets.append(s)
    op = torch.ops.aten._flash_attention_forward

    def attend(q, k, v):
        return op(q, k, v, cu_q, cu_k, 1, max_k, 0.0, False, False)[0]

    if fp8:
        def fn(s):
            return attend(s["q"], s["k8"].to(torch.bfloat16) * s["ks"], s["v8"].to(torch.bfloat16) * s["vs"])
        expr = (f"k = k8.to(bf16) * k_scale; v = v8.to(bf16) * v_scale (e4m3 [T,HKV,D], bf16 scales "
                f"{'[T,HKV,1]' if _per_page(d) else '[1,HKV,1]'}); "
                "aten._flash_attention_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, ...)")
    else:
        def fn(s):
            return attend(s["q"], s["k"], s["v"])
        expr = "aten._flash_attention_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, ...), bf16 [T,HKV,D]"

    def library():
        return f"torch {torch.__version__}, FlashAttention-2 varlen built into torch: {expr}, {how}"
    return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r], [(B, HQ, D)], library,
                       expected=varlen_expected(torch, api, cu_k_host, _per_page(d)))


def _dequant_sdpa(torch, api, d, L, n_sets, seed, how):
    import torch.nn.functional as F
    B, HQ, HKV, D = d["B"], d["HQ"], d["HKV"], d["D"]
    sets = []
    shape = (B, HKV, L, 1) if _per_page(d) else (1, HKV, 1, 1)
    for i in range(n_sets):
        g = api._gen(torch, seed + i)
        sets.append({"q": api._normal(torch, g, (B, HQ, 1, D), torch.bfloat16),
                     "k8": _fp8_cache(torch, api, g, (B, HKV, L, D)), "v8": _fp8_cache(torch, api, g, (B, HKV, L, D)),
                     "ks": _scales(torch, api, g, 0.05, 0.15, shape), "vs": _scales(torch, api, g, 0.01, 0.03, shape)})
    kw = {"enable_gqa": True} if HQ != HKV else {}

    def fn(s):
        return F.scaled_dot_product_attention(s["q"], s["k8"].to(torch.bfloat16) * s["ks"],
                                              s["v8"].to(torch.bfloat16) * s["vs"], **kw)

    def library():
        return (f"torch {torch.__version__}, k = k8.to(bf16) * k_scale; v = v8.to(bf16) * v_scale (e4m3 "
                f"[B,HKV,L={L},D], bf16 scales {list(shape)}); scaled_dot_product_attention(q, k, v{', enable_gqa' if kw else ''}) "
                f"with torch's own backend choice; L = the mean length of {how}")
    return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r], [(B, HQ, 1, D)], library,
                       expected=batched_expected(torch, api, B, _per_page(d)))


BUILDERS = {FAMILY: build}
