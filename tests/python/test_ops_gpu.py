"""tunert.torch on a GPU (skipped without CUDA): each op's tuned path against an fp32 PyTorch
reference at a recorded problem, the fallback for a problem the bundle lacks, CUDA graph capture
and replay, opcheck on CUDA tensors, and the binding's launch with torch tensors."""
import unittest

from common import HAVE_TORCH, bundle

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
        tt.use_bundle(bundle(name), strict=False)
        tt.reset_stats()

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def tuned(self, op, n=1):
        s = tt.stats()[op]
        self.assertEqual(s["tuned"], n, s)

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
        for rows, cols in ((4096, 8192), (64, 131072)):
            x = bf(rows, cols, scale=3.0)
            self.assertLess(rel_l2(tt.softmax(x), torch.softmax(x.float(), -1)), 1e-2)
        self.tuned("softmax", 2)

    def test_untuned_problem_falls_back_and_strict_raises(self):
        self.use("norm")
        x = bf(100, 1000)
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

    def test_decode(self):
        self.use("attention")
        B, HQ, HKV, D, page, L = 32, 32, 8, 128, 16, 4096
        pages = B * L // page
        kc, vc = bf(pages, page, HKV, D), bf(pages, page, HKV, D)
        bt = torch.randperm(pages, device="cuda").view(B, L // page).to(torch.int32)
        q = bf(B, HQ, D)
        o = tt.decode(q, kc, vc, bt)
        self.tuned("decode")
        ref = tt._ops._decode_ref(q.float(), kc.float(), vc.float(), bt, None, None)
        self.assertLess(rel_l2(o, ref), 1e-2)

    def test_linear(self):
        self.use("gemm")
        x, w = bf(4096, 4096, scale=0.1), bf(6144, 4096, scale=0.1)
        y = tt.linear(x, w)
        s = tt.stats()["linear"]
        self.assertEqual(s["tuned"] + s["vendor"], 1, s)
        self.assertLess(rel_l2(y, x.float() @ w.float().T), 1e-2)

    def test_graph_capture_and_replay(self):
        self.use("norm")
        x, w = bf(16384, 4096), (torch.rand(4096, device="cuda") + 0.5).bfloat16()
        xs = bf(4096, 8192)
        tt.rmsnorm(x, w), tt.softmax(xs)   # warm up: plans, module loads outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = tt.rmsnorm(x, w)
            p = tt.softmax(xs)
        for _ in range(2):
            x.copy_(bf(16384, 4096))
            xs.copy_(bf(4096, 8192))
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
        torch.library.opcheck(torch.ops.tunert.softmax.default, (bf(4096, 8192),))

    def test_binding_launch_with_torch_tensors(self):
        with tunert.Bundle(bundle("norm")) as b:
            s = b.select("softmax", rows=4096, cols=8192)
            x = bf(4096, 8192)
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
