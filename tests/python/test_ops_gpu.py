"""tunert.torch on a GPU (skipped without CUDA): each op's tuned path against an fp32 PyTorch
reference at a recorded problem, portable kernels (nearest, generic) for untuned problems, the
PyTorch fallback outside a family's domain, CUDA graph capture and replay, opcheck on CUDA
tensors, and the binding's launch with torch tensors. Decode is tuned here first (decode_bundle:
the recorded attention.db predates the decode recipe's serving contract)."""
import unittest

from common import DECODE_PROBLEM, HAVE_TORCH, bundle, decode_bundle

if HAVE_TORCH:
    import torch
    import torch.nn.functional as F
    import tunert
    import tunert.torch as tt

CUDA = HAVE_TORCH and torch.cuda.is_available()
needs_cuda = unittest.skipUnless(CUDA, "no CUDA device (torch.cuda.is_available() is False)")


def rel_l2(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def bf(*shape, scale=1.0):
    return (torch.randn(*shape, device="cuda") * scale).to(torch.bfloat16)


@needs_cuda
class OpsGpuTest(unittest.TestCase):
    def use(self, name):
        tt.use_bundle(decode_bundle(on_gpu=True) if name == "decode" else bundle(name), strict=False)
        tt.reset_stats()

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def tuned(self, op, n=1, kind="tuned"):
        s = tt.stats()[op]
        self.assertEqual((s["tuned"], s["kinds"].get(kind, 0)), (n, n), s)

    def test_rmsnorm(self):
        self.use("norm")
        x, w, r = bf(16384, 4096), (torch.rand(4096, device="cuda") + 0.5).bfloat16(), bf(16384, 4096)
        y = tt.rmsnorm(x, w)
        self.tuned("rmsnorm")
        ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
        self.assertLess(rel_l2(y, ref), 1e-2)
        y2, h = tt.rmsnorm(x, w, residual=r)
        self.tuned("rmsnorm_add")
        self.assertEqual(rel_l2(h, (x.float() + r.float()).bfloat16()), 0.0)
        hf = h.float()
        self.assertLess(rel_l2(y2, hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()), 1e-2)

    def test_softmax(self):
        self.use("norm")
        for rows, cols in ((1024, 32768), (64, 131072)):
            x = bf(rows, cols, scale=3.0)
            self.assertLess(rel_l2(tt.softmax(x), torch.softmax(x.float(), -1)), 1e-2)
        self.tuned("softmax", 2)

    def test_untuned_problems_run_portable_kernels(self):
        # the row length is a kernel argument: any rows, cols run a kernel tuned for another problem
        self.use("norm")
        for rows, cols in ((100, 1000), (3, 50257)):
            x = bf(rows, cols, scale=3.0)
            self.assertLess(rel_l2(tt.softmax(x), torch.softmax(x.float(), -1)), 1e-2, (rows, cols))
        self.tuned("softmax", 2, kind="nearest")
        x, w = bf(7, 4000), (torch.rand(4000, device="cuda") + 0.5).bfloat16()
        ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
        self.assertLess(rel_l2(tt.rmsnorm(x, w), ref), 1e-2)
        self.tuned("rmsnorm", 1, kind="nearest")
        # H 40000: no tuned rmsnorm.add entry holds the row: the family's generic kernel
        x, r, w = bf(7, 40000), bf(7, 40000), (torch.rand(40000, device="cuda") + 0.5).bfloat16()
        y, h = tt.rmsnorm(x, w, residual=r)
        hf = (x.float() + r.float()).bfloat16().float()
        self.assertEqual(rel_l2(h, hf), 0.0)
        self.assertLess(rel_l2(y, hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()), 1e-2)
        self.tuned("rmsnorm_add", 1, kind="fallback")

    def test_outside_the_domain_falls_back_and_strict_raises(self):
        self.use("norm")
        x = bf(2, 1 << 21)
        self.assertLess(rel_l2(tt.softmax(x), torch.softmax(x.float(), -1)), 1e-2)
        self.assertEqual(tt.stats()["softmax"]["fallback"], 1)
        tt.set_strict(True)
        try:
            with self.assertRaises(tunert.NoVariant):
                tt.softmax(x)
        finally:
            tt.set_strict(False)

    def test_attention(self):
        self.use("attention")
        B, HQ, HKV, S, D = 4, 32, 8, 4096, 128
        q, k, v = bf(B, HQ, S, D), bf(B, HKV, S, D), bf(B, HKV, S, D)
        o = tt.attention(q, k, v, causal=True)
        self.tuned("attention")
        ref = F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(4, 1),
                                             v.float().repeat_interleave(4, 1), is_causal=True)
        self.assertLess(rel_l2(o, ref), 2e-2)

    def decode_inputs(self, pool_extra=7, hnd=False):
        B, HQ, HKV, D, page, maxp = 32, 32, 8, 128, 16, 256   # DECODE_PROBLEM
        pages = B * maxp + pool_extra
        if hnd:   # FlashInfer's layout [pages, HKV, page, D], passed as a [pages, page, HKV, D] view
            kc, vc = (bf(pages, HKV, page, D).transpose(1, 2) for _ in range(2))
        else:
            kc, vc = bf(pages, page, HKV, D), bf(pages, page, HKV, D)
        bt = torch.randperm(pages, device="cuda")[: B * maxp].view(B, maxp).to(torch.int32)
        lens = torch.randint(1, maxp * page + 1, (B,), device="cuda", dtype=torch.int32)
        lens[:4] = torch.tensor([0, 1, page, maxp * page], dtype=torch.int32)   # empty, one row, a page, full
        return kc, vc, bt, lens

    def test_decode(self):
        self.use("decode")
        B, HQ, HKV, D = 32, 32, 8, 128
        kc, vc, bt, lens = self.decode_inputs()
        q = bf(B, HQ, D)
        o = tt.decode(q, kc, vc, bt, lens)
        ref = tt._ops._decode_ref(q.float(), kc.float(), vc.float(), bt, lens, None)
        self.assertLess(rel_l2(o, ref), 1e-2)
        self.assertEqual(o[0].abs().max().item(), 0.0)   # length 0: zeros
        full = tt.decode(q, kc, vc, bt)                  # no lengths: every sequence max_pages * page_size
        self.assertLess(rel_l2(full, tt._ops._decode_ref(q.float(), kc.float(), vc.float(), bt, None, None)), 1e-2)
        o = tt.decode(q, kc, vc, bt, lens, scale=0.05)
        self.assertLess(rel_l2(o, tt._ops._decode_ref(q.float(), kc.float(), vc.float(), bt, lens, 0.05)), 1e-2)
        self.tuned("decode", 3)
        self.assertIn(DECODE_PROBLEM, tt.explain("decode", q, kc, vc, bt, lens).selection.info.tuned_problem)

    def test_decode_strided_without_copies(self):
        self.use("decode")
        B, HQ, HKV, D = 32, 32, 8, 128
        kc, vc, bt, lens = self.decode_inputs(hnd=True)
        qkv = bf(B, (HQ + 2 * HKV) * D)
        q = qkv[:, : HQ * D].view(B, HQ, D)             # a view of a fused QKV projection
        p = tt.explain("decode", q, kc, vc, bt, lens)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.strided, {"q", "k_cache", "v_cache"})
        self.assertEqual(p.scalars["q_stride_b"], (HQ + 2 * HKV) * D)
        o = tt.decode(q, kc, vc, bt, lens)
        self.tuned("decode")
        ref = tt._ops._decode_ref(q.float(), kc.float(), vc.float(), bt, lens, None)
        self.assertLess(rel_l2(o, ref), 1e-2)

    def test_decode_graph_replays_with_new_lengths(self):
        self.use("decode")
        B, HQ, D = 32, 32, 128
        kc, vc, bt, lens = self.decode_inputs()
        q = bf(B, HQ, D)
        tt.decode(q, kc, vc, bt, lens)   # warm up: plan, module load outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            o = tt.decode(q, kc, vc, bt, lens)
        for step in range(3):
            lens.copy_(torch.randint(0, 256 * 16 + 1, (B,), device="cuda", dtype=torch.int32))
            q.copy_(bf(B, HQ, D))
            g.replay()
            torch.cuda.synchronize()
            ref = tt._ops._decode_ref(q.float(), kc.float(), vc.float(), bt, lens, None)
            self.assertLess(rel_l2(o, ref), 1e-2, f"replay {step}")
        self.tuned("decode", 2)   # warm-up and capture; replays run no Python

    def test_linear(self):
        self.use("gemm")
        x, w = bf(4096, 4096, scale=0.1), bf(6144, 4096, scale=0.1)
        y = tt.linear(x, w)
        s = tt.stats()["linear"]
        self.assertEqual(s["tuned"] + s["vendor"], 1, s)
        self.assertLess(rel_l2(y, x.float() @ w.float().T), 1e-2)
        x, w = bf(37, 4096, scale=0.1), bf(4104, 4096, scale=0.1)   # tails: a portable entry
        y = tt.linear(x, w)
        s = tt.stats()["linear"]
        self.assertEqual(s["tuned"] + s["vendor"], 2, s)
        self.assertLess(rel_l2(y, x.float() @ w.float().T), 1e-2)

    def test_compiled_and_repeated_calls_take_the_tuned_kernel(self):
        # the CUDA kernel is registered at the dispatcher's CUDA key: a compiled graph calls it too,
        # and calls after the first (cached plan and tensor layouts) still compute each call's inputs
        self.use("gemm")
        w = bf(4096, 4096, scale=0.1)
        f = torch.compile(lambda x: tt.linear(x, w) * 2, fullgraph=True)
        for _ in range(3):
            x = bf(2, 64, 4096, scale=0.1)
            self.assertLess(rel_l2(f(x), 2 * (x.float() @ w.float().T)), 1e-2)
            self.assertLess(rel_l2(tt.linear(x, w), x.float() @ w.float().T), 1e-2)
        s = tt.stats()["linear"]
        self.assertEqual(s["tuned"] + s["vendor"], 6, s)

    def test_graph_capture_and_replay(self):
        self.use("norm")
        x, w = bf(16384, 4096), (torch.rand(4096, device="cuda") + 0.5).bfloat16()
        xs = bf(1024, 32768)
        tt.rmsnorm(x, w), tt.softmax(xs)   # warm up: plans, module loads outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = tt.rmsnorm(x, w)
            p = tt.softmax(xs)
        for _ in range(2):
            x.copy_(bf(16384, 4096))
            xs.copy_(bf(1024, 32768))
            g.replay()
            torch.cuda.synchronize()
            ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
            self.assertLess(rel_l2(y, ref), 1e-2)
            self.assertLess(rel_l2(p, torch.softmax(xs.float(), -1)), 1e-2)
        self.tuned("rmsnorm", 2)   # warm-up and capture; replays run no Python

    def test_opcheck_on_cuda(self):
        self.use("norm")
        x, w = bf(16384, 4096), (torch.rand(4096, device="cuda") + 0.5).bfloat16()
        torch.library.opcheck(torch.ops.tunert.rmsnorm.default, (x, w))
        torch.library.opcheck(torch.ops.tunert.rmsnorm_add.default, (x, bf(16384, 4096), w))
        torch.library.opcheck(torch.ops.tunert.softmax.default, (bf(1024, 32768),))
        self.use("decode")
        kc, vc, bt, lens = self.decode_inputs()
        torch.library.opcheck(torch.ops.tunert.decode.default, (bf(32, 32, 128), kc, vc, bt), {"seq_lens": lens})

    def test_binding_launch_with_torch_tensors(self):
        with tunert.Bundle(bundle("norm")) as b:
            s = b.select("softmax.split", rows=1024, cols=32768)   # its scratch from torch's allocator
            x = bf(1024, 32768)
            y = torch.empty_like(x)
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                s.launch({"x": x, "y": y})            # the current stream
            s.launch({"x": x, "y": y}, stream=stream)  # an explicit one
            stream.synchronize()
            self.assertLess(rel_l2(y, torch.softmax(x.float(), -1)), 1e-2)
            with self.assertRaises(tunert.DeviceMismatch):
                s.launch({"x": x.cpu(), "y": y})


if __name__ == "__main__":
    unittest.main()
