"""A Llama-architecture decoder in plain PyTorch (Llama-3-8B layer dimensions, random weights, a
few layers), written so that its kernels are one swappable table of ops:

    model = Llama(Config(n_layers=2), device="cuda")       # stock: cuBLAS linear, SDPA
    tuned = model.with_ops(tunert_ops())                   # the same weights on tune's kernels

Prefill runs the prompts as one ragged batch (tokens packed back to back, cu_seqlens, varlen
attention causal within each prompt; `prefill` is the one-prompt case); decode runs the whole
batch as one step over a paged KV cache (page size 16, a block table per sequence, per-sequence
lengths), with static buffers so that a step can be captured in a CUDA graph and replayed while
lengths change (DecodeGraph).
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class Config:
    hidden: int = 4096
    heads: int = 32
    kv_heads: int = 8
    head_dim: int = 128
    intermediate: int = 14336
    vocab: int = 128256
    n_layers: int = 2
    rope_theta: float = 500000.0
    eps: float = 1e-5
    page_size: int = 16


# ---- the op table ------------------------------------------------------------------------------

def _repeat_kv(k, n):
    return k if n == 1 else k.repeat_interleave(n, dim=1)


def _torch_attention(q, k, v, causal):
    g = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, _repeat_kv(k, g), _repeat_kv(v, g), is_causal=causal)


def _torch_attention_varlen(q, k, v, cu_seqlens, max_seqlen):
    """q [T, HQ, D], k and v [T, HKV, D], sequences cu_seqlens [B + 1], causal within each: torch's
    FlashAttention-2 varlen kernel where this build has it (what a PyTorch engine would call),
    else SDPA per sequence."""
    op = getattr(torch.ops.aten, "_flash_attention_forward", None)
    if q.is_cuda and op is not None and torch.backends.cuda.is_flash_attention_available():
        return op(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, 0.0, True, False)[0]
    o = torch.empty_like(q)
    cu = cu_seqlens.tolist()
    for lo, hi in zip(cu[:-1], cu[1:]):
        o[lo:hi] = _torch_attention(*(t[lo:hi].transpose(0, 1)[None] for t in (q, k, v)), True)[0].transpose(0, 1)
    return o


def _torch_decode(q, k_cache, v_cache, block_table, seq_lens):
    """q [B, HQ, D]; caches [pages, page, HKV, D]; block_table [B, max_pages]; seq_lens [B]."""
    B, HQ, D = q.shape
    page, HKV = k_cache.shape[1], k_cache.shape[2]
    L = block_table.shape[1] * page
    idx = block_table.long()
    k = k_cache[idx].reshape(B, L, HKV, D).transpose(1, 2)
    v = v_cache[idx].reshape(B, L, HKV, D).transpose(1, 2)
    mask = torch.arange(L, device=q.device)[None, :] < seq_lens.long()[:, None]
    g = HQ // HKV
    o = F.scaled_dot_product_attention(q.unsqueeze(2), _repeat_kv(k, g), _repeat_kv(v, g),
                                       attn_mask=mask.view(B, 1, 1, L))
    return o.squeeze(2)


def _torch_rmsnorm(x, w, eps, residual=None):
    if residual is not None:
        x = x + residual
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)
    return y if residual is None else (y, x)


TORCH_OPS = {"linear": F.linear, "attention_varlen": _torch_attention_varlen, "decode": _torch_decode,
             "rmsnorm": _torch_rmsnorm}


def tunert_ops():
    """The op table on tune's kernels (tunert.torch, bundle set with use_bundle)."""
    import tunert.torch as tt
    return {"linear": tt.linear,
            "attention_varlen": lambda q, k, v, cu, max_len: tt.attention_varlen(q, k, v, cu, max_len, causal=True),
            "decode": lambda q, kc, vc, bt, lens: tt.decode(q, kc, vc, bt, lens),
            "rmsnorm": lambda x, w, eps, residual=None: tt.rmsnorm(x, w, eps, residual=residual)}


# ---- the model ---------------------------------------------------------------------------------

def _rope_tables(cfg, max_pos, device):
    inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, device=device, dtype=torch.float32) / cfg.head_dim))
    ang = torch.outer(torch.arange(max_pos, device=device, dtype=torch.float32), inv)
    return torch.cos(ang), torch.sin(ang)


def _rope(x, cos, sin):
    """x [..., T, H, D] rotated by the tables' rows for its positions (cos, sin [T, D/2])."""
    x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
    return out.to(x.dtype)


class Llama:
    def __init__(self, cfg, device="cuda", dtype=torch.bfloat16, seed=0, weights=None, max_pos=8192):
        self.cfg, self.device, self.dtype, self.ops = cfg, device, dtype, TORCH_OPS
        if weights is None:
            g = torch.Generator(device="cpu").manual_seed(seed)
            w = lambda *s: (torch.randn(*s, generator=g) * 0.02).to(device=device, dtype=dtype)
            ones = lambda n: (1.0 + 0.1 * torch.randn(n, generator=g)).to(device=device, dtype=dtype)
            qkv = (cfg.heads + 2 * cfg.kv_heads) * cfg.head_dim
            weights = {"embed": w(cfg.vocab, cfg.hidden), "norm": ones(cfg.hidden), "lm_head": w(cfg.vocab, cfg.hidden),
                       "layers": [{"in_norm": ones(cfg.hidden), "qkv": w(qkv, cfg.hidden),
                                   "o": w(cfg.hidden, cfg.heads * cfg.head_dim), "post_norm": ones(cfg.hidden),
                                   "gate": w(cfg.intermediate, cfg.hidden), "up": w(cfg.intermediate, cfg.hidden),
                                   "down": w(cfg.hidden, cfg.intermediate)} for _ in range(cfg.n_layers)]}
        self.w = weights
        self.cos, self.sin = _rope_tables(cfg, max_pos, device)

    def with_ops(self, ops):
        """The same model (shared weights) running on another op table."""
        m = Llama.__new__(Llama)
        m.__dict__.update(self.__dict__)
        m.ops = ops
        return m

    # -- pieces shared by prefill and decode --
    def _qkv(self, lw, h, pos):
        cfg = self.cfg
        T = h.shape[0]
        qkv = self.ops["linear"](h, lw["qkv"])
        q, k, v = qkv.split([cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim], -1)
        q = _rope(q.view(T, cfg.heads, cfg.head_dim), self.cos[pos], self.sin[pos])
        k = _rope(k.view(T, cfg.kv_heads, cfg.head_dim), self.cos[pos], self.sin[pos])
        return q, k, v.reshape(T, cfg.kv_heads, cfg.head_dim)

    def _mlp(self, lw, h):
        g = self.ops["linear"](h, lw["gate"])
        u = self.ops["linear"](h, lw["up"])
        return self.ops["linear"](F.silu(g) * u, lw["down"])

    def _layers(self, x, attend):
        """x [T, hidden]; attend(layer index, layer weights, normed h) -> attention output [T, hidden]."""
        cfg, ops = self.cfg, self.ops
        residual = None
        for i, lw in enumerate(self.w["layers"]):
            if residual is None:
                h, residual = ops["rmsnorm"](x, lw["in_norm"], cfg.eps), x
            else:
                h, residual = ops["rmsnorm"](x, lw["in_norm"], cfg.eps, residual=residual)
            x = attend(i, lw, h)
            h, residual = ops["rmsnorm"](x, lw["post_norm"], cfg.eps, residual=residual)
            x = self._mlp(lw, h)
        h, _ = ops["rmsnorm"](x, self.w["norm"], cfg.eps, residual=residual)
        return h

    # -- prefill: prompts packed into one ragged batch, their KV written into the cache's pages --
    def prefill_batch(self, prompts, cache, seqs):
        """prompts: token tensors [S_b] (long) of the cache's sequences seqs; returns each prompt's
        last-position logits [len(prompts), vocab] (fp32)."""
        cfg = self.cfg
        lens = [int(t.shape[0]) for t in prompts]
        cu = torch.tensor([0] + lens, device=self.device, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        pos = torch.cat([torch.arange(n, device=self.device) for n in lens])
        slots = torch.cat([cache.slot_of(s, torch.arange(n, device=self.device)) for s, n in zip(seqs, lens)])
        T = pos.shape[0]
        x = self.w["embed"][torch.cat(prompts)]

        def attend(i, lw, h):
            q, k, v = self._qkv(lw, h, pos)
            cache.write_slots(i, slots, k, v)
            o = self.ops["attention_varlen"](q, k, v, cu, max(lens))
            return self.ops["linear"](o.reshape(T, cfg.heads * cfg.head_dim), lw["o"])

        h = self._layers(x, attend)
        return self.ops["linear"](h[cu[1:].long() - 1], self.w["lm_head"]).float()

    def prefill(self, tokens, cache, seq):
        """One prompt tokens [S] (long); returns its last position's logits [vocab] (fp32)."""
        return self.prefill_batch([tokens], cache, [seq])[0]

    # -- decode: one token per sequence, the whole batch --
    def decode_step(self, tokens, positions, cache):
        """tokens, positions [B] (long); the cache's seq_lens must already count the new token.
        Returns logits [B, vocab] (fp32)."""
        cfg = self.cfg
        B = tokens.shape[0]
        x = self.w["embed"][tokens]

        def attend(i, lw, h):
            q, k, v = self._qkv(lw, h, positions)
            cache.write_slots(i, cache.slots, k, v)
            o = self.ops["decode"](q.contiguous(), cache.k[i], cache.v[i], cache.block_table, cache.seq_lens)
            return self.ops["linear"](o.reshape(B, cfg.heads * cfg.head_dim), lw["o"])

        h = self._layers(x, attend)
        return self.ops["linear"](h, self.w["lm_head"]).float()


class PagedCache:
    """K/V of every layer in pages [pages, page_size, HKV, D]; sequence b owns the pages of
    block_table[b] (a shuffled assignment, as a serving engine's allocator leaves them)."""

    def __init__(self, cfg, batch, max_len, device, dtype=torch.bfloat16, seed=0):
        self.cfg = cfg
        self.max_pages = (max_len + cfg.page_size - 1) // cfg.page_size
        n_pages = batch * self.max_pages
        g = torch.Generator(device="cpu").manual_seed(seed)
        perm = torch.randperm(n_pages, generator=g).to(torch.int32)
        self.block_table = perm.view(batch, self.max_pages).to(device)
        shape = (n_pages, cfg.page_size, cfg.kv_heads, cfg.head_dim)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(cfg.n_layers)]
        self.seq_lens = torch.zeros(batch, device=device, dtype=torch.int32)
        self.slots = torch.zeros(batch, device=device, dtype=torch.long)

    def slot_of(self, seq, pos):
        """Flat row index (page * page_size + offset) of positions pos [T] of sequence seq."""
        p = self.cfg.page_size
        return self.block_table[seq, pos // p].long() * p + pos % p

    def write(self, layer, seq, pos, k, v):
        self.write_slots(layer, self.slot_of(seq, pos), k, v)

    def write_slots(self, layer, slots, k, v):
        cfg = self.cfg
        self.k[layer].view(-1, cfg.kv_heads, cfg.head_dim).index_copy_(0, slots, k)
        self.v[layer].view(-1, cfg.kv_heads, cfg.head_dim).index_copy_(0, slots, v)

    def set_step(self, lens_after):
        """Before a decode step: lengths counting the new token, and the new token's slots."""
        self.seq_lens.copy_(lens_after.to(torch.int32))
        b = torch.arange(lens_after.shape[0], device=lens_after.device)
        pos = lens_after.long() - 1
        p = self.cfg.page_size
        self.slots.copy_(self.block_table[b, pos // p].long() * p + pos % p)


class DecodeGraph:
    """One decode step of `model` captured in a CUDA graph over static buffers; replay(tokens,
    positions) copies the step's values in and replays. Selection and module loading happen in the
    warm-up step before capture."""

    def __init__(self, model, cache, batch):
        dev = model.device
        self.model, self.cache = model, cache
        self.tokens = torch.zeros(batch, device=dev, dtype=torch.long)
        self.positions = torch.zeros(batch, device=dev, dtype=torch.long)
        self.graph = None
        self.logits = None

    def capture(self):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):  # warm-up: selections, module loads, tensor maps, allocator pools
                self.logits = self.model.decode_step(self.tokens, self.positions, self.cache)
        torch.cuda.current_stream().wait_stream(s)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = self.model.decode_step(self.tokens, self.positions, self.cache)

    def replay(self, tokens, positions):
        self.tokens.copy_(tokens)
        self.positions.copy_(positions)
        self.graph.replay()
        return self.logits


def model_shapes(cfg, prompt_lens, batch, decode_lens=()):
    """The problems this model runs, as served-problem log lines (`tune run --problems-from`):
    GEMMs of the packed prefill (all prompts' tokens), of the decode batch and of the LM head (one
    row per prompt or sequence), RMSNorm rows (plain: the first norm of a forward; fused with the
    residual add: the others), the prompts' causal GQA varlen prefill and the batch's paged decode
    for each cache capacity in decode_lens (tokens)."""
    qkv = (cfg.heads + 2 * cfg.kv_heads) * cfg.head_dim
    lines = []
    mats = [(qkv, cfg.hidden), (cfg.hidden, cfg.heads * cfg.head_dim), (cfg.intermediate, cfg.hidden),
            (cfg.hidden, cfg.intermediate)]
    tokens = sum(prompt_lens)
    rows = sorted({tokens, batch})
    for m in rows:
        for n, k in mats:
            lines.append({"family": "gemm", "dims": {"M": m, "N": n, "K": k, "b_layout": "col"}})
    for m in sorted({len(prompt_lens), batch}):
        lines.append({"family": "gemm", "dims": {"M": m, "N": cfg.vocab, "K": cfg.hidden, "b_layout": "col"}})
    for t in rows:
        lines.append({"family": "rmsnorm", "dims": {"H": cfg.hidden, "T": t, "residual": False}})
        lines.append({"family": "rmsnorm.add", "dims": {"H": cfg.hidden, "T": t, "residual": True}})
    lines.append({"family": "attention.varlen", "dims": {"B": len(prompt_lens), "T": tokens, "HQ": cfg.heads,
                                                         "HKV": cfg.kv_heads, "D": cfg.head_dim, "causal": True}})
    for n in sorted(set(decode_lens)):
        lines.append({"family": "attention.decode", "dims": {"B": batch, "HQ": cfg.heads, "HKV": cfg.kv_heads,
                                                             "D": cfg.head_dim, "page_size": cfg.page_size,
                                                             "max_pages": (n + cfg.page_size - 1) // cfg.page_size}})
    return lines
