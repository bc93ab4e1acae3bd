#!/usr/bin/env python3
"""The decoder block of examples/decoder_block in stock PyTorch, timed with CUDA events: the
baseline that the example's times are compared with, in the same run on the same GPU
(tools/bench/device_decoder_run.sh runs both).

The same block, shapes and steps (Llama-3-8B: hidden 4096 = 32 query heads x 128, 8 KV heads, MLP
14336; up -> SiLU(u * scale + bias) -> down; no rotary embedding; bf16 weights [N, K]):
  prefill  the prompts packed back to back into T rows; RMSNorm, the GEMMs as F.linear (cuBLAS),
           the prompts' K and V written into a paged KV cache (shuffled block table), attention by
           FlashAttention-2 varlen (torch.ops.aten._flash_attention_forward), or SDPA per sequence
           where torch has no flash varlen for this GPU or build
  decode   one new token per sequence: the same steps at B rows, the token's K and V written at
           its slot (computed on the device from seq_lens), attention by gathering every sequence's
           pages through the block table and SDPA with a length mask; the whole step captured once
           in a torch CUDA graph and replayed while seq_lens grow by one per step
Times: the prefill pass (eager), the decode step eager and as a graph replay; CUDA-event medians.
The defaults equal decoder_block's (--lens 3000,37,611,1500,200 --steps 8 --page 16).

    decoder_block_torch.py [--lens L1,L2,...] [--steps N] [--page P] [--iters K]
    decoder_block_torch.py --print-defaults     (no torch needed)
Last line: "result: prefill_us=... decode_eager_us=... decode_graph_us=... attention=..."
Exit 0; 3 without torch or a CUDA GPU.
"""
import argparse
import statistics
import sys

DEFAULT_LENS = "3000,37,611,1500,200"
HQ, HKV, D, I = 32, 8, 128, 14336
H = HQ * D
NQKV = (HQ + 2 * HKV) * D
EPS = 1e-6


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lens", default=DEFAULT_LENS, help="prompt lengths, comma-separated")
    ap.add_argument("--steps", type=int, default=8, help="decode steps")
    ap.add_argument("--page", type=int, default=16, help="KV cache page size [tokens]")
    ap.add_argument("--iters", type=int, default=20, help="timed runs per measurement (median)")
    ap.add_argument("--print-defaults", action="store_true", help="print the sizes and exit")
    a = ap.parse_args(argv)
    a.lens = [int(x) for x in a.lens.split(",")]
    if not a.lens or min(a.lens) < 1 or a.steps < 1 or a.page < 1 or a.iters < 1:
        ap.error("lengths, steps, page and iters must be positive")
    return a


class Block:
    """Weights, buffers and the two phases of the block (see the module docstring)."""

    def __init__(self, torch, lens, steps, page):
        self.torch, self.F = torch, torch.nn.functional
        dev, bf = "cuda", torch.bfloat16
        g = torch.Generator(device=dev).manual_seed(0)

        def randn(*shape, scale=1.0):
            return (torch.randn(*shape, generator=g, device=dev, dtype=torch.float32) * scale).to(bf)

        def uniform(n, lo, hi):
            return (torch.rand(n, generator=g, device=dev) * (hi - lo) + lo).to(bf)

        self.B, self.T, self.page = len(lens), sum(lens), page
        self.max_pages = (max(lens) + steps + page - 1) // page
        self.pages = self.B * self.max_pages
        self.w_n1, self.w_n2, self.w_nf = (uniform(H, 0.5, 1.5) for _ in range(3))
        self.scale, self.bias = uniform(I, 0.5, 1.5), uniform(I, -0.5, 0.5)
        self.w_qkv, self.w_o = randn(NQKV, H, scale=H ** -0.5), randn(H, H, scale=H ** -0.5)
        self.w_up, self.w_down = randn(I, H, scale=H ** -0.5), randn(H, I, scale=I ** -0.5)
        self.x = randn(self.T, H)
        self.k_cache = torch.zeros(self.pages, page, HKV, D, device=dev, dtype=bf)
        self.v_cache = torch.zeros_like(self.k_cache)
        self.block_table = torch.randperm(self.pages, generator=g, device=dev).to(torch.int32).view(self.B, self.max_pages)
        lens_t = torch.tensor(lens, device=dev, dtype=torch.int32)
        self.lens = lens
        self.max_len = max(lens)
        self.cu = torch.zeros(self.B + 1, device=dev, dtype=torch.int32)
        self.cu[1:] = torch.cumsum(lens_t, 0)
        # each prompt token's cache slot (page * page_size + row), computed once per batch
        seq = torch.repeat_interleave(torch.arange(self.B, device=dev), lens_t.long())
        pos = torch.arange(self.T, device=dev) - self.cu[:-1].long()[seq]
        self.prefill_slots = self.block_table.long()[seq, pos // page] * page + pos % page
        self.seq_lens = lens_t.clone()
        self.x_dec = torch.zeros(self.B, H, device=dev, dtype=bf)
        self.attention = self._varlen_flash_or_loop()

    def rmsnorm(self, x, w):
        F = self.F
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (H,), w, EPS)
        xf = x.float()
        return (xf * self.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w

    def mlp_and_norms(self, x, o):
        F = self.F
        h1 = x + F.linear(o, self.w_o)
        y1 = self.rmsnorm(h1, self.w_n2)
        gate = F.silu(F.linear(y1, self.w_up) * self.scale + self.bias)
        out = h1 + F.linear(gate, self.w_down)
        return out, self.rmsnorm(out, self.w_nf)

    def sdpa(self, q, k, v, mask=None, causal=False):
        """q [B, HQ, S, D], k, v [B, HKV, L, D]; GQA by SDPA itself where torch has enable_gqa."""
        F = self.F
        try:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=True)
        except TypeError:
            k, v = (t.repeat_interleave(HQ // HKV, dim=1) for t in (k, v))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    def _varlen_flash_or_loop(self):
        """'flash-varlen' where torch's FlashAttention-2 varlen runs here, else 'sdpa-loop'."""
        torch = self.torch
        op = getattr(torch.ops.aten, "_flash_attention_forward", None)
        if op is not None and torch.backends.cuda.is_flash_attention_available():
            q = torch.zeros(8, HQ, D, device="cuda", dtype=torch.bfloat16)
            kv = torch.zeros(8, HKV, D, device="cuda", dtype=torch.bfloat16)
            cu = torch.tensor([0, 8], device="cuda", dtype=torch.int32)
            try:
                op(q, kv, kv, cu, cu, 8, 8, 0.0, True, False, scale=D ** -0.5)
                return "flash-varlen"
            except RuntimeError:
                pass
        return "sdpa-loop"

    def varlen(self, q, k, v):
        if self.attention == "flash-varlen":
            return self.torch.ops.aten._flash_attention_forward(q, k, v, self.cu, self.cu, self.max_len, self.max_len, 0.0, True,
                                                                False, scale=D ** -0.5)[0]
        o = self.torch.empty_like(q)
        lo = 0
        for n in self.lens:
            qs, ks, vs = (t[lo:lo + n].transpose(0, 1).unsqueeze(0) for t in (q, k, v))
            o[lo:lo + n] = self.sdpa(qs, ks, vs, causal=True).squeeze(0).transpose(0, 1)
            lo += n
        return o

    def prefill(self):
        F, T = self.F, self.T
        qkv = F.linear(self.rmsnorm(self.x, self.w_n1), self.w_qkv)
        q, k, v = (t.view(T, -1, D) for t in qkv.split([H, HKV * D, HKV * D], dim=1))
        self.k_cache.view(-1, HKV, D)[self.prefill_slots] = k
        self.v_cache.view(-1, HKV, D)[self.prefill_slots] = v
        o = self.varlen(q, k, v).reshape(T, H)
        return self.mlp_and_norms(self.x, o)

    def decode_step(self):
        torch, F, B, page = self.torch, self.F, self.B, self.page
        x = self.x_dec
        qkv = F.linear(self.rmsnorm(x, self.w_n1), self.w_qkv)
        q, k, v = (t.view(B, -1, D) for t in qkv.split([H, HKV * D, HKV * D], dim=1))
        pos = self.seq_lens.long() - 1          # the new token's row, read on the device
        slots = self.block_table.long().gather(1, (pos // page)[:, None]).squeeze(1) * page + pos % page
        self.k_cache.view(-1, HKV, D)[slots] = k
        self.v_cache.view(-1, HKV, D)[slots] = v
        L = self.max_pages * page
        idx = self.block_table.long()
        keys = self.k_cache[idx].reshape(B, L, HKV, D).transpose(1, 2)   # [B, HKV, L, D]
        vals = self.v_cache[idx].reshape(B, L, HKV, D).transpose(1, 2)
        mask = (torch.arange(L, device=x.device)[None, :] < self.seq_lens.long()[:, None]).view(B, 1, 1, L)
        o = self.sdpa(q.unsqueeze(2), keys, vals, mask).reshape(B, H)
        return self.mlp_and_norms(x, o)


def median_us(torch, fn, iters):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3)
    return statistics.median(times)


def main():
    a = parse_args()
    if a.print_defaults:
        print(f"lens={','.join(map(str, a.lens))} steps={a.steps} page={a.page}")
        return 0
    try:
        import torch
    except ImportError:
        print("decoder_block_torch: no torch here", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("decoder_block_torch: no CUDA GPU here", file=sys.stderr)
        return 3
    blk = Block(torch, a.lens, a.steps, a.page)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; prefill {blk.B} prompts "
          f"({','.join(map(str, a.lens))}), T = {blk.T}; {a.steps} decode steps, page {a.page}, "
          f"{blk.max_pages} pages per sequence; prefill attention: {blk.attention}")
    with torch.inference_mode():
        out, _ = blk.prefill()
        torch.cuda.synchronize()
        blk.x_dec.copy_(out[blk.cu[1:].long() - 1])        # each prompt's last row: step 0's input
        lens = torch.tensor(a.lens, dtype=torch.int32)
        blk.seq_lens.copy_(lens + 1)
        # warm up on a side stream (the allocator's pools, cuBLAS handles), then capture one step
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                eager_out, _ = blk.decode_step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            graph_out, _ = blk.decode_step()
        for t in range(a.steps):                            # the steps, lengths growing by one
            blk.seq_lens.copy_(lens + t + 1)
            if t:
                blk.x_dec.copy_(graph_out)
            graph.replay()
        torch.cuda.synchronize()
        replay = graph_out.clone()
        eager_out, _ = blk.decode_step()                    # the same step eagerly: the capture's check
        diff = (replay.float() - eager_out.float()).abs().max().item()
        print(f"decode: graph replay vs eager, last step: max abs difference {diff:.2e}"
              f" ({'ok' if diff <= 1e-2 * max(1.0, eager_out.float().abs().max().item()) else 'MISMATCH'})")
        prefill_us = median_us(torch, blk.prefill, a.iters)
        eager_us = median_us(torch, blk.decode_step, a.iters)
        graph_us = median_us(torch, graph.replay, a.iters)
    print(f"prefill: {prefill_us:.1f} us; decode step: {eager_us:.1f} us eager, {graph_us:.1f} us graph replay "
          f"(CUDA-event median of {a.iters})")
    print(f"result: prefill_us={prefill_us:.1f} decode_eager_us={eager_us:.1f} decode_graph_us={graph_us:.1f} "
          f"attention={blk.attention}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
