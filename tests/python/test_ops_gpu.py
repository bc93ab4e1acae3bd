"""tunert.torch on a GPU (skipped without CUDA): each op's tuned path against an fp32 PyTorch
reference at a recorded problem, portable kernels (nearest, generic) for untuned problems, the
PyTorch fallback outside a family's domain, CUDA graph capture and replay, opcheck on CUDA
tensors, and the binding's launch with torch tensors; the serving ops (attention_varlen,
grouped_mm(_masked), scaled_mm) on bundles of the recorded varlen, MoE and FP8 databases. Decode is tuned here first (decode_bundle:
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

    def test_decode_tma(self):
        # attention.decode_tma alone in the bundle: tt.decode runs it over the packed pool of the
        # problem's pages (tensor copies), a packed pool of twice as many (tiles with a page past
        # the maps' B * max_pages through cp.async) and an HND pool (all tiles), with and without lengths
        tt.use_bundle(decode_bundle(on_gpu=True, recipe="decode_tma"), strict=False)
        tt.reset_stats()
        B, HQ, D = 32, 32, 128
        for extra, hnd in ((0, False), (B * 256, False), (0, True)):
            kc, vc, bt, lens = self.decode_inputs(pool_extra=extra, hnd=hnd)
            q = bf(B, HQ, D)
            self.assertEqual(tt.explain("decode", q, kc, vc, bt, lens).selection.info.family, "attention.decode_tma")
            o = tt.decode(q, kc, vc, bt, lens)
            ref = tt._ops._decode_ref(q.float(), kc.float(), vc.float(), bt, lens, None)
            self.assertLess(rel_l2(o, ref), 1e-2, f"pool_extra={extra}, hnd={hnd}")
            self.assertEqual(o[0].abs().max().item(), 0.0)   # length 0: zeros
            full = tt.decode(q, kc, vc, bt)
            self.assertLess(rel_l2(full, tt._ops._decode_ref(q.float(), kc.float(), vc.float(), bt, None, None)), 1e-2)
        self.tuned("decode", 6)

    def test_decode_families_recorded_on_the_h200(self):
        # the H200 recordings' kernels of both decode families (bundled without vendor entries)
        tt.use_bundle(bundle("decode_h200"), strict=False)
        tt.reset_stats()
        B, HQ, D = 32, 32, 128
        kc, vc, bt, lens = self.decode_inputs()
        q = bf(B, HQ, D)
        p = tt.explain("decode", q, kc, vc, bt, lens)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        o = tt.decode(q, kc, vc, bt, lens)
        ref = tt._ops._decode_ref(q.float(), kc.float(), vc.float(), bt, lens, None)
        self.assertLess(rel_l2(o, ref), 1e-2)
        self.tuned("decode", 1)

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

    def test_linear_decode(self):
        # gemm.skinny's tuned entries (the H200 recording: mma.sync and wgmma variants, both checked
        # against the fp32 product); M = 128 may be its vendor entry (cuBLAS), counted as such
        self.use("skinny")
        for i, m in enumerate((1, 16, 64, 128)):
            with self.subTest(M=m):
                x, w = bf(m, 4096, scale=0.1), bf(14336, 4096, scale=0.1)
                y = tt.linear(x, w)
                s = tt.stats()["linear"]
                self.assertEqual(s["tuned"] + s["vendor"], i + 1, s)
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


def cu_seqlens(T, B):
    """int32 [B + 1] on the GPU: B lengths >= 1 summing to T."""
    cuts = (torch.randperm(T - 1)[: B - 1] + 1).sort().values
    return torch.cat([torch.tensor([0]), cuts, torch.tensor([T])]).to(torch.int32).cuda()


def expert_offsets(T, E, empty=(1,)):
    """int32 [E + 1] on the GPU: rows of E experts summing to T, the experts in `empty` without rows."""
    ends = torch.randint(0, T + 1, (E - 1,)).sort().values.tolist() + [T]
    offs = [0]
    for e in range(E):
        offs.append(offs[-1] if e in empty else max(offs[-1], ends[e]))
    offs[-1] = T
    return torch.tensor(offs, dtype=torch.int32, device="cuda")


def fp8(*shape):
    return torch.randn(*shape, device="cuda").to(torch.float8_e4m3fn)


@needs_cuda
class ServingOpsGpuTest(unittest.TestCase):
    """attention_varlen, grouped_mm(_masked) and scaled_mm on bundles of the recorded
    attention.varlen.db, moe.grouped.db and gemm.fp8.db."""

    def use(self, name):
        tt.use_bundle(bundle(name), strict=False)
        tt.reset_stats()

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def counts(self, op):
        s = tt.stats()[op]
        return s["tuned"], s["vendor"], s["fallback"], s["kinds"]

    def varlen_ref(self, q, k, v, cu, causal=True, scale=None):
        return tt._ops_varlen._varlen_loop(q.float(), k.float(), v.float(), cu, causal, scale)

    def test_varlen_tuned_nearest_and_scale(self):
        self.use("varlen")
        for T, B, kind in ((16384, 64, "tuned"), (1000, 7, "nearest")):   # b64t16384hq32kv8d128c; untuned
            q, k, v, cu = bf(T, 32, 128), bf(T, 8, 128), bf(T, 8, 128), cu_seqlens(T, B)
            o = tt.attention_varlen(q, k, v, cu)
            self.assertLess(rel_l2(o, self.varlen_ref(q, k, v, cu)), 2e-2, (T, B))
            self.assertEqual(tt.explain("attention_varlen", q, k, v, cu).selection_kind, kind)
        o = tt.attention_varlen(q, k, v, cu, scale=0.05)
        self.assertLess(rel_l2(o, self.varlen_ref(q, k, v, cu, scale=0.05)), 2e-2)
        tuned, vendor, fallback, kinds = self.counts("attention_varlen")
        self.assertEqual((tuned, fallback, kinds.get("tuned"), kinds.get("nearest")), (3, 0, 1, 2))

    def test_varlen_fused_qkv_views(self):
        # views of a fused QKV projection read in place: at the tuned problem b64t16384hq32kv8d128c
        # by its recorded TMA variant (libtunert builds its maps over the views from q_ld, k_ld,
        # v_ld), and at an untuned one by the nearest entry
        self.use("varlen")
        HQ, HKV, D = 32, 8, 128
        for T, B in ((16384, 64), (4096, 16)):
            qkv = bf(T, (HQ + 2 * HKV) * D)
            q = qkv[:, : HQ * D].view(T, HQ, D)
            k = qkv[:, HQ * D:(HQ + HKV) * D].view(T, HKV, D)
            v = qkv[:, (HQ + HKV) * D:].view(T, HKV, D)
            cu = cu_seqlens(T, B)
            p = tt.explain("attention_varlen", q, k, v, cu)
            self.assertEqual(p.strided, frozenset({"q", "k", "v"}), p.reason)
            if T == 16384:
                self.assertEqual((p.selection_kind, p.selection.info.variant["USE_TMA"]), ("tuned", 1))
            before = qkv.clone()
            o = tt.attention_varlen(q, k, v, cu)
            self.assertLess(rel_l2(o, self.varlen_ref(q, k, v, cu)), 2e-2, (T, B))
            self.assertTrue(torch.equal(qkv, before))
            # dense rows at the same address as the strided q: its map is cached per pointer and
            # strides, so this one is encoded afresh, not taken from the strided launch
            qd = qkv.view(-1)[: T * HQ * D].view(T, HQ, D)
            kd, vd = k.contiguous(), v.contiguous()
            self.assertEqual(qd.data_ptr(), q.data_ptr())
            self.assertEqual(tt.explain("attention_varlen", qd, kd, vd, cu).strided, frozenset())
            o = tt.attention_varlen(qd, kd, vd, cu)
            self.assertLess(rel_l2(o, self.varlen_ref(qd, kd, vd, cu)), 2e-2, (T, B))
        self.assertEqual(self.counts("attention_varlen")[0], 4)

    def test_varlen_fallback_and_strict(self):
        self.use("varlen")
        T, B = 2048, 9   # D 64 not causal: no entry (D and causal are compiled in)
        q, k, v, cu = bf(T, 32, 64), bf(T, 8, 64), bf(T, 8, 64), cu_seqlens(T, B)
        for max_seqlen in (None, T):
            o = tt.attention_varlen(q, k, v, cu, max_seqlen=max_seqlen, causal=False)
            self.assertLess(rel_l2(o, self.varlen_ref(q, k, v, cu, causal=False)), 2e-2)
        self.assertEqual(self.counts("attention_varlen")[:3], (0, 0, 2))
        tt.set_strict(True)
        try:
            with self.assertRaises(tunert.NoVariant):
                tt.attention_varlen(q, k, v, cu, causal=False)
        finally:
            tt.set_strict(False)

    def test_varlen_graph_replays_with_new_lengths(self):
        self.use("varlen")
        T, B = 8192, 256   # b256t8192hq32kv8d128c
        q, k, v, cu = bf(T, 32, 128), bf(T, 8, 128), bf(T, 8, 128), cu_seqlens(T, B)
        tt.attention_varlen(q, k, v, cu)   # warm up: plan, module load outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            o = tt.attention_varlen(q, k, v, cu)
        for step in range(3):
            cu.copy_(cu_seqlens(T, B))
            q.copy_(bf(T, 32, 128))
            g.replay()
            torch.cuda.synchronize()
            self.assertLess(rel_l2(o, self.varlen_ref(q, k, v, cu)), 2e-2, f"replay {step}")
        self.assertEqual(self.counts("attention_varlen")[0], 2)   # warm-up and capture

    def grouped_ref(self, a, w, offs):
        return tt._ops_moe._grouped_loop(a.float(), w.float(), offs)

    def test_grouped_mm(self):
        self.use("moe")
        E, N, K = 8, 4096, 14336
        w = bf(E, N, K, scale=0.05)
        a, offs = bf(32, K, scale=0.05), expert_offsets(32, E, empty=(1, 5))   # e8n4096k14336t32m1: tuned
        self.assertLess(rel_l2(tt.grouped_mm(a, w, offs), self.grouped_ref(a, w, offs)), 1e-2)
        self.assertEqual(self.counts("grouped_mm")[0], 1)
        a, offs = bf(8192, K, scale=0.05), expert_offsets(8192, E)   # t8192m1: the recorded vendor entry
        self.assertLess(rel_l2(tt.grouped_mm(a, w, offs), self.grouped_ref(a, w, offs)), 1e-2)
        a, w, offs = bf(100, 256), bf(16, 512, 256), expert_offsets(100, 16, empty=(0, 7, 15))   # untuned
        self.assertLess(rel_l2(tt.grouped_mm(a, w, offs), self.grouped_ref(a, w, offs)), 1e-2)
        a, w, offs = bf(100, 250), bf(16, 512, 250), expert_offsets(100, 16)   # K % 8: outside the domain
        self.assertLess(rel_l2(tt.grouped_mm(a, w, offs), self.grouped_ref(a, w, offs)), 1e-2)
        tuned, vendor, fallback, kinds = self.counts("grouped_mm")
        self.assertEqual((tuned + vendor, fallback), (3, 1), tt.stats())
        self.assertGreaterEqual(kinds.get("nearest", 0), 1, kinds)

    def test_grouped_mm_masked_zeros_past_counts(self):
        self.use("moe")
        E, cap, N, K = 8, 16, 28672, 4096   # e8n28672k4096cap16m1
        a, w = bf(E, cap, K, scale=0.05), bf(E, N, K, scale=0.05)
        counts = torch.tensor([16, 0, 3, 1, 16, 7, 0, 9], dtype=torch.int32, device="cuda")
        c = tt.grouped_mm_masked(a, w, counts)
        ref = torch.bmm(a.float(), w.float().transpose(1, 2))
        for e, n in enumerate(counts.tolist()):
            if n:
                self.assertLess(rel_l2(c[e, :n], ref[e, :n]), 1e-2, e)
            self.assertEqual(c[e, n:].abs().max().item() if n < cap else 0.0, 0.0, e)
        tuned, vendor, fallback, _ = self.counts("grouped_mm_masked")
        self.assertEqual((tuned + vendor, fallback), (1, 0))

    def test_scaled_mm_modes(self):
        self.use("fp8")
        M, N, K = 4096, 14336, 4096   # m4096n14336k4096_{tensor,row,block}
        a, b = fp8(M, K), fp8(N, K)
        f32 = dict(device="cuda", dtype=torch.float32)
        scales = {"tensor": (torch.tensor(0.8, **f32), torch.tensor([1.2 / 64], **f32)),
                  "row": (torch.rand(M, **f32) + 0.5, (torch.rand(N, **f32) + 0.5) / 64),
                  "block": (torch.rand(M, 32, **f32) * 4 + 1 / 64, (torch.rand(112, 32, **f32) * 4 + 1 / 64) / 64)}
        for mode, (sa, sb) in scales.items():
            ref = tt._ops_fp8._scaled_mm_dequant(a, b, sa, sb, mode, torch.float32)
            self.assertLess(rel_l2(tt.scaled_mm(a, b, sa, sb), ref), 5e-3, mode)
            self.assertLess(rel_l2(tt.scaled_mm(a, b, sa, sb, use_fast_accum=mode != "block"), ref), 3e-2, mode)
        tuned, vendor, fallback, _ = self.counts("scaled_mm")
        self.assertEqual((tuned + vendor, fallback), (6, 0), tt.stats())
        # untuned: a portable entry; another output dtype: PyTorch
        a, sa, sb = fp8(100, K), torch.rand(100, 32, **f32) + 0.5, torch.rand(32, 32, **f32) / 64
        b = fp8(4096, K)
        ref = tt._ops_fp8._scaled_mm_dequant(a, b, sa, sb, "block", torch.float32)
        self.assertLess(rel_l2(tt.scaled_mm(a, b, sa, sb), ref), 5e-3)
        self.assertEqual(tt.explain("scaled_mm", a, b, sa, sb).selection_kind, "nearest")
        self.assertLess(rel_l2(tt.scaled_mm(a, b, sa, sb, out_dtype=torch.float32), ref), 1e-5)
        self.assertEqual(self.counts("scaled_mm")[2], 1)

    def test_scaled_mm_blockwise_torch_path(self):
        # the PyTorch path of block scales (no entry, or a vendor entry): cuBLASLt's blockwise
        # scaling on the operands _blockwise_operands lays out, M off the 4-row grid
        F = torch.nn.functional
        if not (hasattr(F, "scaled_mm") and hasattr(F, "ScalingType")):
            self.skipTest("this torch has no torch.nn.functional.scaled_mm")
        M, N, K = 1001, 4096, 7168
        a, b = fp8(M, K), fp8(N, K)
        f32 = dict(device="cuda", dtype=torch.float32)
        sa, sb = torch.rand(M, 56, **f32) * 4 + 1 / 64, (torch.rand(32, 56, **f32) * 4 + 1 / 64) / 64
        a4, sa4, sb4 = tt._ops_fp8._blockwise_operands(a, sa, sb, M, N, K)
        direct = F.scaled_mm(a4, b.t(), sa4, F.ScalingType.BlockWise1x128, sb4, F.ScalingType.BlockWise128x128,
                             output_dtype=torch.bfloat16)[:M]
        ref = tt._ops_fp8._scaled_mm_dequant(a, b, sa, sb, "block", torch.float32)
        self.assertLess(rel_l2(direct, ref), 5e-3)
        self.assertTrue(torch.equal(tt._ops_fp8._scaled_mm_blockwise(a, b, sa, sb, torch.bfloat16), direct))

    def test_opcheck_on_cuda(self):
        self.use("moe")
        a, w, offs = bf(32, 14336), bf(8, 4096, 14336), expert_offsets(32, 8)
        torch.library.opcheck(torch.ops.tunert.grouped_mm.default, (a, w, offs))
        self.use("varlen")
        torch.library.opcheck(torch.ops.tunert.attention_varlen.default,
                              (bf(1000, 32, 128), bf(1000, 8, 128), bf(1000, 8, 128), cu_seqlens(1000, 7)))


def e4m3_cache(pages, page, HKV, D, std):
    """An e4m3 cache [pages, page, HKV, D] of a normal of `std` (clamped to +-448), as the recipe's
    init, drawn a page block at a time (no fp32 copy of the whole pool)."""
    out = torch.empty(pages, page, HKV, D, device="cuda", dtype=torch.float8_e4m3fn)
    for i in range(0, pages, 4096):
        n = min(4096, pages - i)
        out[i:i + n] = (torch.randn(n, page, HKV, D, device="cuda") * std).clamp(-448, 448).to(torch.float8_e4m3fn)
    return out


@needs_cuda
class MoeFp8GpuTest(unittest.TestCase):
    """grouped_scaled_mm(_masked) on a bundle of the H200 recording of moe.grouped_fp8 (tail problems
    of every scaling, Mixtral decode rows), against the fp32 dequantized PyTorch path; the vendor
    calls its vendor entries run (the comparison's peers) against the same."""
    E, N, K = 8, 1040, 1072   # the recipes' tail problems: N, K no tile's or scale block's multiple

    def setUp(self):
        tt.use_bundle(bundle("moe_fp8"), strict=False)
        tt.reset_stats()

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def scales(self, mode, rows, E, N, K):
        f32 = dict(device="cuda", dtype=torch.float32)
        kb, nb = -(-K // 128), -(-N // 128)
        if mode == "tensor":
            return torch.rand(1, **f32) + 0.5, (torch.rand(E, **f32) + 0.5) / K ** 0.5
        if mode == "row":
            return torch.rand(rows, **f32) + 0.5, (torch.rand(E, N, **f32) + 0.5) / K ** 0.5
        return torch.rand(rows, kb, **f32) * 4 + 1 / 64, (torch.rand(E, nb, kb, **f32) * 4 + 1 / 64) / K ** 0.5

    def test_contiguous_every_scaling_tuned(self):
        E, N, K, T = self.E, self.N, self.K, 1000   # e8n1040k1072t1000m0_{tensor,row,block}
        a, w, offs = fp8(T, K), fp8(E, N, K), expert_offsets(T, E, empty=(2, 6))
        for mode in ("tensor", "row", "block"):
            sa, sw = self.scales(mode, T, E, N, K)
            ref = tt._ops_moe_fp8._contiguous_ref(a, w, offs, sa, sw, mode, torch.float32)
            self.assertLess(rel_l2(tt.grouped_scaled_mm(a, w, offs, sa, sw), ref), 5e-3, mode)
            self.assertEqual(tt.explain("grouped_scaled_mm", a, w, offs, sa, sw).selection_kind, "tuned", mode)
        s = tt.stats()["grouped_scaled_mm"]
        self.assertEqual((s["tuned"], s["fallback"]), (3, 0), s)

    def test_masked_zeros_past_counts(self):
        E, N, K, cap = self.E, self.N, self.K, 300   # e8n1040k1072cap300m0_block
        a, w = fp8(E, cap, K), fp8(E, N, K)
        counts = torch.tensor([300, 0, 3, 1, 150, 299, 0, 64], dtype=torch.int32, device="cuda")
        sa, sw = self.scales("block", E * cap, E, N, K)
        c = tt.grouped_scaled_mm_masked(a, w, counts, sa, sw)
        ref = tt._ops_moe_fp8._masked_ref(a, w, counts, sa, sw, "block", torch.float32)
        for e, n in enumerate(counts.tolist()):
            if n:
                self.assertLess(rel_l2(c[e, :n], ref[e, :n]), 5e-3, e)
            self.assertEqual(c[e, n:].abs().max().item() if n < cap else 0.0, 0.0, e)
        self.assertEqual(tt.stats()["grouped_scaled_mm_masked"]["tuned"], 1)

    def test_untuned_routing_and_mixtral_decode(self):
        E, N, K, T = 8, 4096, 14336, 32   # e8n4096k14336t32m1_row; then an untuned T
        w = fp8(E, N, K)
        for T, kind in ((32, "tuned"), (40, "nearest")):
            a, offs = fp8(T, K), expert_offsets(T, E, empty=(1,))
            sa, sw = self.scales("row", T, E, N, K)
            ref = tt._ops_moe_fp8._contiguous_ref(a, w, offs, sa, sw, "row", torch.float32)
            self.assertLess(rel_l2(tt.grouped_scaled_mm(a, w, offs, sa, sw), ref), 5e-3, T)
            self.assertEqual(tt.explain("grouped_scaled_mm", a, w, offs, sa, sw).selection_kind, kind, T)

    def test_moe_layer_fp8_on_the_tuned_problems(self):
        # Mixtral-8x7B in FP8 with row scales, 16 tokens top-2: both expert GEMMs are tuned problems
        # (e8n28672k4096t32m1_row, e8n4096k14336t32m1_row) when every expert gets a row
        E, H, I, T = 8, 4096, 14336, 16
        x = torch.randn(T, H, device="cuda").to(torch.bfloat16)
        router_w = torch.zeros(E, H, device="cuda", dtype=torch.bfloat16)
        for t in range(T):   # token t prefers experts t % 8 and (t + 1) % 8: every expert gets rows
            x[t, :E] = 0
            x[t, t % E], x[t, (t + 1) % E] = 8, 4
        router_w[:, :E] = torch.eye(E, device="cuda", dtype=torch.bfloat16)
        w13, w2 = fp8(E, 2 * I, H), fp8(E, H, I)
        s13 = (torch.rand(E, 2 * I, device="cuda") + 0.5) / H ** 0.5
        s2 = (torch.rand(E, H, device="cuda") + 0.5) / I ** 0.5
        y = tt.moe_layer_fp8(x, router_w, w13, s13, w2, s2, 2)
        ref = tt.moe_layer_fp8_torch(x, router_w, w13, s13, w2, s2, 2)
        self.assertLess(rel_l2(y, ref), 1e-2)
        s = tt.stats()["grouped_scaled_mm"]
        self.assertEqual((s["tuned"], s["fallback"]), (2, 0), s)

    def test_vendor_calls(self):
        # what a vendor entry of these families runs: torch._scaled_grouped_mm (row) and the
        # per-expert library loop (cuBLASLt; blockwise for block scales, K and N multiples of 128)
        E, N, K, T = 4, 1024, 1024, 300
        a, w, offs = fp8(T, K), fp8(E, N, K), expert_offsets(T, E, empty=(1,))
        for mode in ("tensor", "row", "block"):
            sa, sw = self.scales(mode, T, E, N, K)
            ref = tt._ops_moe_fp8._contiguous_ref(a, w, offs, sa, sw, mode, torch.float32)
            loop = tt._ops_moe_fp8._contiguous_ref(a, w, offs, sa, sw, mode, torch.bfloat16, tt._ops_moe_fp8._vendor_mm)
            self.assertLess(rel_l2(loop, ref), 5e-3, mode)
        sa, sw = self.scales("row", T, E, N, K)
        grouped = tt._ops_moe_fp8._scaled_grouped(a, w, offs, sa, sw, "row", torch.bfloat16)
        self.assertLess(rel_l2(grouped, tt._ops_moe_fp8._contiguous_ref(a, w, offs, sa, sw, "row", torch.float32)), 5e-3)
        cap = 64
        am, counts = fp8(E, cap, K), torch.tensor([64, 0, 5, 33], dtype=torch.int32, device="cuda")
        sa, sw = self.scales("block", E * cap, E, N, K)
        got = tt._ops_moe_fp8._masked_vendor(am, w, counts, sa, sw, "block", torch.bfloat16)
        ref = tt._ops_moe_fp8._masked_ref(am, w, counts, sa, sw, "block", torch.float32)
        self.assertLess(rel_l2(got, ref), 5e-3)


@needs_cuda
class DecodeFp8GpuTest(unittest.TestCase):
    """decode_fp8 on a bundle of the recorded attention.decode_fp8.db against the fp32 reference over
    the dequantized cache: large logits (K std 32 in e4m3, k_scale 0.05 .. 0.15: the recipe's init),
    mixed lengths with 0 and partial pages, a strided q, HND caches, an untuned problem, a graph."""
    HQ, HKV, D = 32, 8, 128

    def setUp(self):
        tt.use_bundle(bundle("decode_fp8"), strict=False)
        tt.reset_stats()

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def inputs(self, B, page, maxp, k_std=32.0, hnd=False):
        pages = B * maxp + 7   # a pool with more pages than the table uses
        if hnd:   # FlashInfer's layout [pages, HKV, page, D], passed as a [pages, page, HKV, D] view
            kc, vc = (e4m3_cache(pages, self.HKV, page, self.D, s).transpose(1, 2) for s in (k_std, 32.0))
        else:
            kc, vc = e4m3_cache(pages, page, self.HKV, self.D, k_std), e4m3_cache(pages, page, self.HKV, self.D, 32.0)
        ks = torch.rand(self.HKV, device="cuda") * 0.1 + 0.05
        vs = torch.rand(self.HKV, device="cuda") * 0.02 + 0.01
        bt = torch.randperm(pages, device="cuda")[: B * maxp].view(B, maxp).to(torch.int32)
        lens = torch.randint(1, maxp * page + 1, (B,), device="cuda", dtype=torch.int32)
        head = [0, 1, page + 5, maxp * page][:B]   # empty, one row, a partial page, full
        lens[: len(head)] = torch.tensor(head, dtype=torch.int32)
        qkv = bf(B, (self.HQ + 2 * self.HKV) * self.D)
        q = qkv[:, : self.HQ * self.D].view(B, self.HQ, self.D)   # a view of a fused QKV projection
        return q, kc, vc, ks, vs, bt, lens

    def check(self, o, q, kc, vc, ks, vs, bt, lens, scale=None, what=""):
        ref = tt._ops_decode_fp8._reference(q.float(), kc, vc, ks, vs, bt, lens, scale)
        self.assertLess(rel_l2(o, ref), 1e-2, what)
        self.assertLess((o.float() - ref).abs().max().item(), 7e-2, what)   # the recipe's max_abs
        if lens is not None:
            self.assertEqual(o[lens <= 0].abs().max().item() if bool((lens <= 0).any()) else 0.0, 0.0, what)

    def test_tuned_mixed_lengths_strided_q(self):
        a = self.inputs(32, 16, 512)   # b32hq32hkv8d128p16x512m1
        p = tt.explain("decode_fp8", *a)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", "b32hq32hkv8d128p16x512m1"))
        self.assertEqual(p.strided, {"q", "k_cache", "v_cache"})
        o = tt.decode_fp8(*a)
        self.check(o, *a)
        s = tt.stats()["decode_fp8"]
        self.assertEqual((s["tuned"], s["kinds"], s["fallback"]), (1, {"tuned": 1}, 0), s)
        q, kc, vc, ks, vs, bt, lens = a
        # per-tensor scales and an explicit softmax scale; no lengths (every sequence full)
        o = tt.decode_fp8(q, kc, vc, ks[0].clone(), vs[:1].clone(), bt, lens, scale=0.05)
        self.check(o, q, kc, vc, ks[0], vs[:1], bt, lens, 0.05, "per-tensor scales")
        self.check(tt.decode_fp8(q, kc, vc, ks, vs, bt), q, kc, vc, ks, vs, bt, None, what="no lengths")
        self.assertEqual(tt.stats()["decode_fp8"]["tuned"], 3)

    def test_tuned_per_page_scales(self):
        # b32hq32hkv8d128p16x256_pagescale: scales [pages, HKV] that differ 3x between a sequence's pages,
        # over HND caches (strided) and mixed lengths; the per-head call on the same data agrees with its
        # own reference, and a per-page call whose pages all hold the head's scale gives the same values
        q, kc, vc, _, _, bt, lens = self.inputs(32, 16, 256, hnd=True)
        pages = kc.shape[0]
        ks = torch.rand(pages, self.HKV, device="cuda") * 0.1 + 0.05
        vs = torch.rand(pages, self.HKV, device="cuda") * 0.02 + 0.01
        p = tt.explain("decode_fp8", q, kc, vc, ks, vs, bt, lens)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem),
                         ("tuned", "b32hq32hkv8d128p16x256_pagescale"))
        self.check(tt.decode_fp8(q, kc, vc, ks, vs, bt, lens), q, kc, vc, ks, vs, bt, lens, what="per page")
        head_k, head_v = ks[0].contiguous(), vs[0].contiguous()
        o_page = tt.decode_fp8(q, kc, vc, head_k.expand(pages, self.HKV), head_v.expand(pages, self.HKV), bt, lens)
        self.check(o_page, q, kc, vc, head_k, head_v, bt, lens, what="per page, equal pages")
        self.assertEqual(tt.stats()["decode_fp8"]["tuned"], 2)

    def test_tuned_full_lengths_hnd_and_adversarial_logits(self):
        # b32hq32hkv8d128p16x256 (min_len 4096); K of std 100 with q of std 5: logits of std 25 .. 75
        q, kc, vc, ks, vs, bt, lens = self.inputs(32, 16, 256, k_std=100.0, hnd=True)
        q = q * 5
        self.assertEqual(tt.explain("decode_fp8", q, kc, vc, ks, vs, bt, lens).selection.info.tuned_problem,
                         "b32hq32hkv8d128p16x256")
        self.check(tt.decode_fp8(q, kc, vc, ks, vs, bt, lens), q, kc, vc, ks, vs, bt, lens, what="hnd")
        self.check(tt.decode_fp8(q, kc, vc, ks, vs, bt), q, kc, vc, ks, vs, bt, None, what="hnd, no lengths")
        self.assertEqual(tt.stats()["decode_fp8"]["kinds"], {"tuned": 2})

    def test_untuned_problem_runs_a_portable_kernel(self):
        a = self.inputs(3, 7, 5)   # page 7, 3 sequences: tuned nowhere
        self.check(tt.decode_fp8(*a), *a)
        s = tt.stats()["decode_fp8"]
        self.assertEqual((s["tuned"], s["fallback"]), (1, 0), s)
        self.assertIn(next(iter(s["kinds"])), ("nearest", "fallback"))

    def graph_replays(self, a):
        """decode_fp8 on a (inputs of 32 sequences, 16 rows a page, 512 pages) captured in a CUDA
        graph, replayed with new lengths, q and K scales, each replay against the reference."""
        q, kc, vc, ks, vs, bt, lens = a
        tt.decode_fp8(q, kc, vc, ks, vs, bt, lens)   # warm up: plan, module load outside the capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            o = tt.decode_fp8(q, kc, vc, ks, vs, bt, lens)
        for step in range(3):
            lens.copy_(torch.randint(0, 512 * 16 + 1, (32,), device="cuda", dtype=torch.int32))
            q.copy_(bf(32, self.HQ, self.D))
            ks.copy_(torch.rand(self.HKV, device="cuda") * 0.1 + 0.05)
            g.replay()
            torch.cuda.synchronize()
            self.check(o, q, kc, vc, ks, vs, bt, lens, what=f"replay {step}")

    def test_graph_replays_with_new_lengths(self):
        self.graph_replays(self.inputs(32, 16, 512))
        self.assertEqual(tt.stats()["decode_fp8"]["tuned"], 2)   # warm-up and capture; replays run no Python

    def test_opcheck_on_cuda(self):
        # test_schema leaves: it compares the float8 inputs with allclose (tests/python/test_ops_decode_fp8_cpu.py)
        q, kc, vc, ks, vs, bt, lens = self.inputs(3, 16, 4)
        torch.library.opcheck(torch.ops.tunert.decode_fp8.default, (q, kc, vc, ks, vs, bt), {"seq_lens": lens},
                              test_utils=("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic"))


@needs_cuda
class DecodeFp8TmaGpuTest(unittest.TestCase):
    """decode_fp8 on a bundle of attention.decode_fp8_tma's H200 recording: its kernel over a packed
    pool of more pages than the table uses and over an HND one (the producer's cp.async path), mixed
    lengths with 0 and partial pages, large logits, and a graph replayed with new lengths;
    DecodeFp8GpuTest's inputs and check. (Which family a bundle of both takes: the CPU tests.)"""
    HQ, HKV, D = DecodeFp8GpuTest.HQ, DecodeFp8GpuTest.HKV, DecodeFp8GpuTest.D
    inputs = DecodeFp8GpuTest.inputs
    check = DecodeFp8GpuTest.check
    graph_replays = DecodeFp8GpuTest.graph_replays

    def setUp(self):
        tt.use_bundle(bundle("decode_fp8_tma"), strict=False)
        tt.reset_stats()

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def tuned(self, a, problem):
        p = tt.explain("decode_fp8", *a)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection.info.family, p.selection_kind, p.selection.info.tuned_problem),
                         ("attention.decode_fp8_tma", "tuned", problem))

    def test_packed_hnd_and_large_logits(self):
        for hnd, name in ((False, "b32hq32hkv8d128p16x256"), (True, "b32hq32hkv8d128p16x256_hnd")):
            q, kc, vc, ks, vs, bt, lens = self.inputs(32, 16, 256, k_std=100.0, hnd=hnd)
            q = q * 5   # with K of std 100: logits of std 25 .. 75
            self.tuned((q, kc, vc, ks, vs, bt, lens), name)
            self.check(tt.decode_fp8(q, kc, vc, ks, vs, bt, lens), q, kc, vc, ks, vs, bt, lens, what=name)
            self.check(tt.decode_fp8(q, kc, vc, ks, vs, bt), q, kc, vc, ks, vs, bt, None, what=name + ", no lengths")
        self.assertEqual(tt.stats()["decode_fp8"]["kinds"], {"tuned": 4})

    def test_mixed_lengths_in_a_graph(self):
        a = self.inputs(32, 16, 512)
        self.tuned(a, "b32hq32hkv8d128p16x512m1")
        self.check(tt.decode_fp8(*a), *a)
        self.graph_replays(a)


if __name__ == "__main__":
    unittest.main()


@needs_cuda
class SwigluFp8GpuTest(unittest.TestCase):
    """swiglu_quant_fp8 on a bundle tuned here (moe.swiglu_fp8 / moe.swiglu_fp8_static: a few configs
    of each kind on cuda:0, each verified by the tuner against the fp64 reference), against its
    PyTorch path on the same CUDA tensors: tuned problems and portable entries for untuned T and N in
    every mode, and the PyTorch fallback outside the domain (N % 8 != 0)."""
    CONFIGS = ("ROW_MODE=0,BLOCK=256,VEC_BYTES=16,LOADS=2,CACHE_ROW=0",
               "ROW_MODE=1,BLOCK=128,VEC_BYTES=8,LOADS=4,CACHE_ROW=0",
               "ROW_MODE=1,BLOCK=256,VEC_BYTES=16,LOADS=1,CACHE_ROW=1")
    PROBLEMS = ("t512n2048_group", "t37n1096_group", "t512n2048_token", "t37n1096_token", "t37n1096_static")

    @classmethod
    def setUpClass(cls):
        from common import SRC, TUNE, _run, tmpdir
        db, out = tmpdir() / "swiglu_fp8_gpu.db", tmpdir() / "swiglu_fp8_gpu.bundle"
        run = [TUNE, "run", str(SRC / "recipes/moe/swiglu_fp8.lua"), "--db", str(db), "--strategy", "exhaustive",
               "--device", "cuda:0"]
        for p in cls.PROBLEMS:
            run += ["--problem", p]
        for c in cls.CONFIGS:
            _run(run + ["--only", c])
        _run([TUNE, "bundle", "--db", str(db), "--recipe", "moe.swiglu_fp8,moe.swiglu_fp8_static", "--arch",
              f"sm_{''.join(map(str, torch.cuda.get_device_capability()))}a", "--quiet", "-o", str(out)])
        cls.path = str(out)

    def setUp(self):
        tt.use_bundle(self.path, strict=False)
        tt.reset_stats()

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def check(self, T, N, quant, kind):
        x = bf(T, 2 * N, scale=2.0)
        scale = torch.tensor([20 / 448], device="cuda") if quant == "static" else None
        y, s = tt.swiglu_quant_fp8(x, quant, scale)
        y_ref, s_ref = tt._ops_swiglu_fp8._quantize(x, quant, scale)
        what = f"T {T} N {N} {quant}"
        op = "swiglu_quant_fp8_static" if quant == "static" else "swiglu_quant_fp8"
        self.assertEqual(tt.stats()[op]["tuned" if kind else "fallback"], 1, what)
        if kind:   # an untuned problem: a nearest tuned entry, or the family's generic one
            self.assertIn(tt.explain("swiglu_quant_fp8", x, quant, scale).selection_kind,
                          ("tuned",) if kind == "tuned" else ("nearest", "fallback"), what)
        torch.testing.assert_close(s, s_ref, rtol=1e-5, atol=0, msg=what)
        # one e4m3 step where fp32 h / scale and h * (1 / scale) straddle a midpoint: rare, never two
        diff = (y.float() - y_ref.float()).abs()
        self.assertLessEqual(float((diff > 0).float().mean()), 1e-3, what)
        self.assertTrue(bool((diff <= y_ref.float().abs() * 2.0 ** -3 + 2.0 ** -9).all()), what)
        tt.reset_stats()

    def test_tuned_problems(self):
        for T, N, quant in ((512, 2048, "group"), (37, 1096, "group"), (512, 2048, "token"), (37, 1096, "token"),
                            (37, 1096, "static")):
            self.check(T, N, quant, "tuned")

    def test_untuned_problems(self):
        for T, N, quant in ((3, 7168, "group"), (1000, 1000, "token"), (65, 14336, "static"), (1, 8, "group")):
            self.check(T, N, quant, "nearest")

    def test_outside_the_domain(self):
        self.check(5, 1004, "group", None)
