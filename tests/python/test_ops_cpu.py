"""tunert.torch on any CPU: the PyTorch reference that CPU tensors run, the fake implementations,
torch.library.opcheck, torch.compile tracing, and the plans (tuned, fallback, vendor, strict)
read through explain() with meta tensors against bundles opened without a driver."""
import math
import types
import unittest

from common import (HAVE_TORCH, assert_fake_shapes, bundle, check_plan_launch, decode_bundle, decode_families_bundle,
                    needs_torch)

if HAVE_TORCH:
    import torch
    import tunert
    import tunert.torch as tt
    from tunert.torch import _ops, _state


def bf(*shape, device="cpu", scale=1.0):
    return (torch.randn(*shape, device=device) * scale).to(torch.bfloat16)


def op_samples():
    """(op overload, args, kwargs) per op, small CPU problems."""
    torch.manual_seed(0)
    B, HQ, HKV, S, D = 2, 4, 2, 16, 8
    page, maxp = 4, 3
    q4, k4, v4 = torch.randn(B, HQ, S, D), torch.randn(B, HKV, S, D), torch.randn(B, HKV, S, D)
    kc, vc = torch.randn(B * maxp + 1, page, HKV, D), torch.randn(B * maxp + 1, page, HKV, D)
    bt = torch.randperm(B * maxp + 1)[: B * maxp].view(B, maxp).to(torch.int32)
    lens = torch.tensor([5, 0], dtype=torch.int32)
    return [
        (torch.ops.tunert.linear.default, (torch.randn(3, 5, 16), torch.randn(24, 16)), {}),
        (torch.ops.tunert.attention.default, (q4, k4, v4), {"causal": True}),
        (torch.ops.tunert.attention.default, (q4, k4, v4), {"causal": False, "scale": 0.3}),
        (torch.ops.tunert.decode.default, (torch.randn(B, HQ, D), kc, vc, bt), {"seq_lens": lens}),
        (torch.ops.tunert.decode.default, (torch.randn(B, HQ, D), kc, vc, bt), {}),
        (torch.ops.tunert.rmsnorm.default, (torch.randn(6, 32), torch.rand(32) + 0.5), {"eps": 1e-5}),
        (torch.ops.tunert.rmsnorm_add.default, (torch.randn(6, 32), torch.randn(6, 32), torch.rand(32) + 0.5), {}),
        (torch.ops.tunert.softmax.default, (torch.randn(7, 33) * 3,), {}),
    ]


@needs_torch
class ReferenceTest(unittest.TestCase):
    """CPU tensors run the PyTorch reference; check it against plain formulas."""

    def setUp(self):
        tt.use_bundle(None)
        tt.reset_stats()

    def test_linear(self):
        x, w = torch.randn(2, 3, 16), torch.randn(8, 16)
        torch.testing.assert_close(tt.linear(x, w), x @ w.T)

    def test_rmsnorm(self):
        x, w = torch.randn(5, 64), torch.rand(64) + 0.5
        ref = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
        torch.testing.assert_close(tt.rmsnorm(x, w), ref)
        r = torch.randn(5, 64)
        y, h = tt.rmsnorm(x, w, residual=r)
        torch.testing.assert_close(h, x + r)
        torch.testing.assert_close(y, tt.rmsnorm(x + r, w))

    def test_rmsnorm_bf16_rounds_h_as_stored(self):
        x, r, w = bf(4, 64), bf(4, 64), bf(64)
        y, h = tt.rmsnorm(x, w, residual=r)
        self.assertEqual(h.dtype, torch.bfloat16)
        torch.testing.assert_close(y, tt.rmsnorm(h, w))

    def test_softmax(self):
        x = torch.randn(3, 4, 50)
        torch.testing.assert_close(tt.softmax(x), torch.softmax(x, -1))
        torch.testing.assert_close(tt.softmax(x, dim=1), torch.softmax(x, 1))

    def test_attention_gqa_and_causal(self):
        B, HQ, HKV, S, D = 2, 4, 2, 10, 8
        q, k, v = torch.randn(B, HQ, S, D), torch.randn(B, HKV, S, D), torch.randn(B, HKV, S, D)
        o = tt.attention(q, k, v, causal=True)
        for h in range(HQ):
            kh, vh = k[:, h // (HQ // HKV)], v[:, h // (HQ // HKV)]
            s = q[:, h] @ kh.transpose(-1, -2) / math.sqrt(D)
            s = s.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
            torch.testing.assert_close(o[:, h], torch.softmax(s, -1) @ vh)

    def test_decode_paged_with_lengths(self):
        B, HQ, HKV, D, page, maxp = 3, 4, 2, 8, 4, 3
        kc, vc = torch.randn(20, page, HKV, D), torch.randn(20, page, HKV, D)
        bt = torch.randperm(20)[: B * maxp].view(B, maxp).to(torch.int32)
        lens = torch.tensor([1, 7, 12], dtype=torch.int32)
        q = torch.randn(B, HQ, D)
        o = tt.decode(q, kc, vc, bt, lens)
        for b in range(B):
            n = int(lens[b])
            k = torch.cat([kc[int(p)] for p in bt[b]])[:n]   # [n, HKV, D]
            v = torch.cat([vc[int(p)] for p in bt[b]])[:n]
            for h in range(HQ):
                s = k[:, h // 2] @ q[b, h] / math.sqrt(D)
                torch.testing.assert_close(o[b, h], torch.softmax(s, 0) @ v[:, h // 2])
        full = tt.decode(q, kc, vc, bt)
        torch.testing.assert_close(full, tt.decode(q, kc, vc, bt, torch.full((B,), maxp * page, dtype=torch.int32)))
        # a sequence of length 0 gets zeros (the kernel's empty sum), not NaN
        o0 = tt.decode(q, kc, vc, bt, torch.tensor([0, 7, 12], dtype=torch.int32))
        self.assertEqual(o0[0].abs().max().item(), 0.0)
        torch.testing.assert_close(o0[1:], o[1:])
        # strided inputs as an engine has them: q a view of a fused QKV, HND caches seen as NHD
        qkv = torch.randn(B, (HQ + 2 * HKV) * D)
        qv = qkv[:, : HQ * D].view(B, HQ, D)
        kh, vh = kc.transpose(1, 2).contiguous().transpose(1, 2), vc.transpose(1, 2).contiguous().transpose(1, 2)
        torch.testing.assert_close(tt.decode(qv, kh, vh, bt, lens), tt.decode(qv.contiguous(), kc, vc, bt, lens))

    def test_shape_errors(self):
        with self.assertRaises(tunert.InvalidArgument):
            tt.linear(torch.randn(3, 5), torch.randn(4, 6))
        with self.assertRaises(tunert.InvalidArgument):
            tt.attention(torch.randn(1, 3, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8))
        with self.assertRaises(tunert.InvalidArgument):
            tt.rmsnorm(torch.randn(3, 5), torch.randn(4))

    def test_cpu_calls_are_counted_as_cpu(self):
        tt.softmax(torch.randn(2, 3))
        tt.softmax(torch.randn(2, 3))
        self.assertEqual(tt.stats()["softmax"]["cpu"], 2)
        self.assertEqual(tt.stats()["softmax"]["fallback"], 0)


@needs_torch
class FakeAndOpcheckTest(unittest.TestCase):
    def test_opcheck_on_cpu(self):
        for op, args, kwargs in op_samples():
            with self.subTest(op=str(op), kwargs=sorted(kwargs)):
                torch.library.opcheck(op, args, kwargs)

    def test_fake_shapes(self):
        assert_fake_shapes(self, op_samples())

    def test_meta(self):
        x = torch.empty(4, 16, device="meta", dtype=torch.bfloat16)
        self.assertEqual(tt.linear(x, torch.empty(8, 16, device="meta", dtype=torch.bfloat16)).shape, (4, 8))
        self.assertEqual(tt.softmax(x).device.type, "meta")

    def test_compile_traces_the_ops(self):
        def block(x, w, r, wl):
            y, h = tt.rmsnorm(x, w, residual=r)
            return tt.softmax(tt.linear(y, wl)), h
        x, r, w, wl = torch.randn(4, 32), torch.randn(4, 32), torch.rand(32) + 0.5, torch.randn(16, 32)
        compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
        for a, b in zip(compiled(x, w, r, wl), block(x, w, r, wl)):
            torch.testing.assert_close(a, b)


@needs_torch
class PlanTest(unittest.TestCase):
    """The plans a CUDA call would take, read with meta tensors (no GPU, no driver)."""

    def setUp(self):
        tt.use_bundle(bundle("norm"), no_device=True, arch="sm_90a", strict=False)

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def meta(self, *shape, dtype=None):   # (no torch in a default: this file loads without torch)
        return torch.empty(*shape, dtype=dtype or torch.bfloat16, device="meta")

    def test_tuned(self):
        p = tt.explain("rmsnorm", self.meta(16384, 4096), self.meta(4096))
        self.assertIsInstance(p, tt.Plan)
        self.assertEqual((p.selection.info.family, p.selection.info.tuned_problem), ("rmsnorm", "t16384h4096"))
        self.assertEqual((p.kind, p.selection_kind), ("tuned", "tuned"))
        self.assertEqual(p.scalars, {"eps": 1e-6})   # T and H: the bundle's values (TUNERT_ARG_AUTO)
        p = tt.explain("rmsnorm_add", self.meta(4, 4096, 4096), self.meta(4, 4096, 4096), self.meta(4096))
        self.assertEqual(p.selection.info.family, "rmsnorm.add")
        self.assertEqual(p.selection.dims, {"H": 4096, "T": 16384, "residual": True})

    def test_untuned_problems_run_portable_kernels(self):
        # rows and cols are kernel arguments: any problem in the domain has a kernel, none is bound by the op
        p = tt.explain("softmax", self.meta(100, 1000))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.kind, p.selection_kind, p.selection.info.family), ("tuned", "nearest", "softmax.split"))
        self.assertEqual((p.selection.info.arg("rows").value, p.selection.info.arg("cols").value), (100, 1000))
        self.assertEqual(p.scalars, {})
        p = tt.explain("rmsnorm", self.meta(7, 4096), self.meta(4096))
        self.assertEqual((p.selection_kind, p.selection.info.arg("H").value), ("nearest", 4096))
        p = tt.explain("rmsnorm_add", self.meta(7, 40000), self.meta(7, 40000), self.meta(40000))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.arg("H").value), ("fallback", 40000))

    def test_preference_across_families(self):
        def plan(exact, kind, ns):
            return types.SimpleNamespace(selection=types.SimpleNamespace(
                info=types.SimpleNamespace(exact=exact, kind=kind, measured_ns=ns)))
        exact_slow, nearest_fast, nearest_slow = plan(True, "tuned", 9e6), plan(False, "nearest", 1.0), plan(False, "nearest", 2.0)
        generic = plan(False, "fallback", 0.0)   # not measured: 0 must not make it win
        vendor = plan(True, "vendor", 5e6)
        order = sorted([generic, nearest_slow, exact_slow, nearest_fast, vendor], key=_state._preference)
        self.assertEqual(order, [vendor, exact_slow, nearest_fast, nearest_slow, generic])

    def test_fallbacks_say_why(self):
        p = tt.explain("rmsnorm", self.meta(16384, 4096, dtype=torch.float32), self.meta(4096, dtype=torch.float32))
        self.assertEqual(p.kind, "fallback")
        self.assertIn("'x' is bf16 in the bundle, f32 here", p.reason)
        p = tt.explain("softmax", self.meta(2, 1 << 21))
        self.assertEqual(p.kind, "fallback")
        self.assertIn("outside the domain of softmax.split", p.reason)
        self.assertIn("no family softmax in the bundle", p.reason)
        p = tt.explain("linear", self.meta(16, 4096), self.meta(4096, 4096))
        self.assertEqual(p.reason, "no family gemm.skinny in the bundle; no family gemm.splitk in the bundle; "
                                   "no family gemm in the bundle")

    def test_no_bundle(self):
        tt.use_bundle(None)
        p = tt.explain("softmax", self.meta(64, 131072))
        self.assertIn("use_bundle", p.reason)

    def test_strict_raises_and_fallback_counts(self):
        tt.reset_stats()
        fb = _state.Fallback("fallback", "why not")
        _state.fallback_or_raise("softmax", fb)
        self.assertEqual(tt.stats()["softmax"]["fallback"], 1)
        self.assertEqual(tt.stats()["softmax"]["reasons"], {"why not": 1})
        _state.count_tuned("softmax", "nearest")
        _state.count_tuned("softmax", "fallback")   # the family's generic kernel: ours, so "tuned"
        self.assertEqual((tt.stats()["softmax"]["tuned"], tt.stats()["softmax"]["fallback"]), (2, 1))
        self.assertEqual(tt.stats()["softmax"]["kinds"], {"nearest": 1, "fallback": 1})
        tt.set_strict(True)
        try:
            with self.assertRaises(tunert.NoVariant):
                _state.fallback_or_raise("softmax", fb)
            _state.fallback_or_raise("softmax", _state.Fallback("vendor", "cuBLAS chosen"))  # no raise
            self.assertEqual(tt.stats()["softmax"]["vendor"], 1)
        finally:
            tt.set_strict(False)

    def test_attention_and_gemm_plans(self):
        tt.use_bundle(bundle("attention"), no_device=True, arch="sm_90a")
        q = self.meta(4, 32, 4096, 128)
        k = self.meta(4, 8, 4096, 128)
        p = tt.explain("attention", q, k, k, causal=True)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertIn(p.selection.info.family, ("attention.prefill_sm90", "attention.prefill"))
        self.assertEqual(p.selection.dims["HKV"], 8)
        self.assertNotIn("scale_log2", p.scalars)
        p = tt.explain("attention", q, k, k, causal=True, scale=0.5)
        self.assertAlmostEqual(p.scalars["scale_log2"], 0.5 * 1.4426950408889634)
        tt.use_bundle(bundle("gemm"), no_device=True, arch="sm_90a")
        p = tt.explain("linear", self.meta(4096, 4096), self.meta(6144, 4096))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection.dims["b_layout"], "col")
        p = tt.explain("linear", self.meta(37, 4096), self.meta(4104, 4096))   # tails: any M, N % 8, K % 8
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.dims["M"]), ("nearest", 37))

    def test_decode_plans(self):
        tt.use_bundle(decode_bundle(), no_device=True, arch="sm_90a")
        B, HQ, HKV, D, page, maxp = 32, 32, 8, 128, 16, 256
        q = self.meta(B, HQ, D)
        kc = self.meta(B * maxp + 7, page, HKV, D)      # a pool with more pages than the problem's
        bt = self.meta(B, maxp, dtype=torch.int32)
        lens = self.meta(B, dtype=torch.int32)
        p = tt.explain("decode", q, kc, kc, bt, lens)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection_kind, "tuned")
        self.assertEqual(p.selection.dims, {"B": B, "HQ": HQ, "HKV": HKV, "D": D, "page_size": page, "max_pages": maxp})
        self.assertEqual(p.strided, {"q", "k_cache", "v_cache"})
        self.assertEqual(p.slices, {})
        self.assertIn("seq_lens", p.tensor_names)
        self.assertEqual(p.scalars, {"q_stride_b": HQ * D, "q_stride_h": D, "o_stride_b": HQ * D, "o_stride_h": D,
                                     "kv_stride_page": page * HKV * D, "kv_stride_row": HKV * D, "kv_stride_h": D})
        # without lengths: the same family, the op passes full lengths itself
        p = tt.explain("decode", q, kc, kc, bt)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertIn("seq_lens", p.tensor_names)
        # q a view of a fused QKV projection, HND caches seen as [pages, page, HKV, D], a smaller pool
        qkv = self.meta(B, (HQ + 2 * HKV) * D)
        hnd = self.meta(100, HKV, page, D).transpose(1, 2)
        p = tt.explain("decode", qkv[:, : HQ * D].view(B, HQ, D), hnd, hnd, bt, lens, scale=0.1)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.scalars["q_stride_b"], p.scalars["q_stride_h"]), ((HQ + 2 * HKV) * D, D))
        self.assertEqual((p.scalars["kv_stride_page"], p.scalars["kv_stride_row"], p.scalars["kv_stride_h"]),
                         (HKV * page * D, D, page * D))
        self.assertAlmostEqual(p.scalars["scale_log2"], 0.1 * 1.4426950408889634)
        # a q whose strides the kernel cannot take is copied (dense strides passed)
        odd = self.meta(B, HQ * D + 4)[:, : HQ * D].view(B, HQ, D)
        p = tt.explain("decode", odd, kc, kc, bt, lens)
        self.assertEqual((p.scalars["q_stride_b"], p.scalars["q_stride_h"]), (HQ * D, D))
        # caches it cannot take, or lengths of another dtype: PyTorch, with the reason
        p = tt.explain("decode", q, kc, hnd, bt, lens)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("must be equal", p.reason)
        p = tt.explain("decode", q, kc, kc, bt, self.meta(B, dtype=torch.int64))
        self.assertIn("'seq_lens' is i32 in the bundle, i64 here", p.reason)
        # an untuned problem (another batch, page size and GQA layout of the same head dim)
        p = tt.explain("decode", self.meta(3, HQ, D), self.meta(40, 7, HKV, D), self.meta(40, 7, HKV, D),
                       self.meta(3, 5, dtype=torch.int32))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.arg("page_size").value), ("nearest", 7))

    def test_decode_takes_the_faster_family(self):
        # tt.decode tries attention.decode and attention.decode_tma: the bundle's faster exact entry
        # runs, and decode_tma's tensor maps are the runtime's to build (not the op's arguments)
        B, HQ, HKV, D, page, maxp = 32, 32, 8, 128, 16, 256
        q = self.meta(B, HQ, D)
        kc = self.meta(B * maxp + 7, page, HKV, D)
        bt = self.meta(B, maxp, dtype=torch.int32)
        lens = self.meta(B, dtype=torch.int32)
        for decode_ns, tma_ns, want in ((50000.0, 40000.0, "attention.decode_tma"),
                                        (40000.0, 50000.0, "attention.decode")):
            tt.use_bundle(decode_families_bundle(decode_ns, tma_ns), no_device=True, arch="sm_90a")
            p = tt.explain("decode", q, kc, kc, bt, lens)
            self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
            self.assertEqual((p.selection.info.family, p.selection_kind), (want, "tuned"))
            self.assertNotIn("k_map", p.tensor_names)
            self.assertEqual(p.strided, {"q", "k_cache", "v_cache"})
        # decode_tma's call (the bundle where it is the faster family): every argument bound, the
        # maps left to the launch, over an HND pool as the op passes it
        tt.use_bundle(decode_families_bundle(50000.0, 40000.0), no_device=True, arch="sm_90a")
        q = torch.zeros(B, HQ, D, dtype=torch.bfloat16)
        kc = torch.zeros(100, HKV, page, D, dtype=torch.bfloat16).transpose(1, 2)
        key, candidates, tensors_fn, _ = _ops._decode_problem(0, q, kc, kc, torch.zeros(B, maxp, dtype=torch.int32))
        p = _state.plan("decode", key, 0, candidates)
        self.assertEqual(p.selection.info.family, "attention.decode_tma")
        t, _ = tensors_fn()
        # without its strided names the pool of 100 pages is refused as the shape of k_cache, which
        # the maps name (checked before the strides)
        check_plan_launch(self, p, t, refused=tunert.ShapeMismatch)

    def test_decode_families_recorded_on_the_h200(self):
        # both decode families' H200 recordings, bundled with --no-vendor-for them: every recorded
        # problem runs a tuned kernel of one of the two, the faster one by the bundle's times
        tt.use_bundle(bundle("decode_h200"), no_device=True, arch="sm_90a")
        families = set()
        for B, HQ, HKV, D, page, maxp in ((32, 32, 8, 128, 16, 256), (1, 32, 8, 128, 16, 2048),
                                          (128, 32, 8, 128, 16, 64), (8, 32, 8, 128, 32, 1024), (32, 64, 8, 64, 16, 128)):
            kc = self.meta(B * maxp, page, HKV, D)
            p = tt.explain("decode", self.meta(B, HQ, D), kc, kc, self.meta(B, maxp, dtype=torch.int32),
                           self.meta(B, dtype=torch.int32))
            self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
            self.assertEqual(p.selection_kind, "tuned")
            families.add(p.selection.info.family)
        self.assertEqual(families, {"attention.decode", "attention.decode_tma"})
        # bundled with the comparison's vendor entries: the op falls back and says what to do
        tt.use_bundle(bundle("decode_h200_vendor"), no_device=True, arch="sm_90a")
        kc = self.meta(32 * 256, 16, 8, 128)
        p = tt.explain("decode", self.meta(32, 32, 128), kc, kc, self.meta(32, 256, dtype=torch.int32),
                       self.meta(32, dtype=torch.int32))
        self.assertEqual(p.kind, "vendor", getattr(p, "reason", ""))
        self.assertIn("--no-vendor-for attention.decode,attention.decode_tma", p.reason)

    def test_decode_call_binds_every_argument(self):
        # what a CUDA call passes, from the op's own tensors_fn on CPU tensors re-labelled as CUDA
        # (fake_dlpack, same addresses and strides): every launch check passes, only the driver is missing
        tt.use_bundle(decode_bundle(), no_device=True, arch="sm_90a")
        B, HQ, HKV, D, page, maxp = 32, 32, 8, 128, 16, 256
        q = torch.zeros(B, (HQ + 2 * HKV) * D, dtype=torch.bfloat16)[:, : HQ * D].view(B, HQ, D)
        kc = torch.zeros(100, HKV, page, D, dtype=torch.bfloat16).transpose(1, 2)
        bt = torch.zeros(B, maxp, dtype=torch.int32)
        key, candidates, tensors_fn, _ = _ops._decode_problem(0, q, kc, kc, bt)
        p = _state.plan("decode", key, 0, candidates)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        t, out = tensors_fn()
        self.assertIs(t["q"], q)   # no copy of the strided q
        self.assertIs(t["seq_lens"], _state.full_lengths(q.device, B, maxp * page))
        self.assertIs(t["o"], out)
        check_plan_launch(self, p, t)

    def test_full_lengths_are_made_once(self):
        a = _state.full_lengths(torch.device("cpu"), 3, 48)
        self.assertIs(_state.full_lengths(torch.device("cpu"), 3, 48), a)
        self.assertEqual((a.dtype, a.tolist()), (torch.int32, [48, 48, 48]))


if __name__ == "__main__":
    unittest.main()
