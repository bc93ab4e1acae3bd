"""tunert.torch.decode_fp8 on any CPU: the PyTorch path against a plain fp64 computation over the
dequantized cache (per-head, per-tensor and per-page scales, mixed lengths with 0 and a partial page, strided q
and HND caches), argument errors, fake implementation, opcheck, torch.compile tracing, and the plans
(tuned at both min_len values, nearest, fallback with its reason, strict) read through explain() with
meta tensors against a bundle of the recorded attention.decode_fp8.db (no GPU, no driver)."""
import math
import unittest

from common import HAVE_TORCH, assert_fake_shapes, bundle, check_plan_launch, needs_torch

if HAVE_TORCH:
    import torch
    import tunert
    import tunert.torch as tt
    from tunert.torch import _ops, _ops_decode_fp8, _state

LOG2E = 1.4426950408889634


def cache(pages, page, HKV, D, g, std=32.0):
    """e4m3 of a wide normal, as the recipe's init (std 32 of the 448 range)."""
    return (torch.randn(pages, page, HKV, D, generator=g) * std).clamp(-448, 448).to(torch.float8_e4m3fn)


def inputs(B=4, HQ=8, HKV=2, D=64, page=4, maxp=5, extra=3, seed=0):
    """q, k_cache, v_cache, k_scale, v_scale, block_table: a pool with `extra` pages more than the
    table uses, scales drawn as the recipe's (k 0.05 .. 0.15: large logits; v 0.01 .. 0.03)."""
    g = torch.Generator().manual_seed(seed)
    pool = B * maxp + extra
    q = torch.randn(B, HQ, D, generator=g).bfloat16()
    kc, vc = cache(pool, page, HKV, D, g), cache(pool, page, HKV, D, g)
    ks = torch.rand(HKV, generator=g) * 0.1 + 0.05
    vs = torch.rand(HKV, generator=g) * 0.02 + 0.01
    bt = torch.randperm(pool, generator=g)[: B * maxp].view(B, maxp).to(torch.int32)
    return q, kc, vc, ks, vs, bt


def plain(q, kc, vc, ks, vs, bt, lens, scale=None):
    """fp64, one (sequence, query head) at a time: the pages of the table, each row dequantized with
    its KV head's scale, or its page's and KV head's (ks, vs [pages, HKV])."""
    B, HQ, D = q.shape
    page, HKV = kc.shape[1], kc.shape[2]
    maxp = bt.shape[1]
    scale = 1 / math.sqrt(D) if scale is None else scale

    def row_scales(s, b):   # [maxp * page, HKV]: row r's scale per KV head
        s = s.double()
        per_page = s[bt[b].long()] if s.dim() == 2 else s.reshape(-1).expand(HKV).expand(maxp, HKV)
        return per_page.repeat_interleave(page, 0)

    o = torch.zeros(B, HQ, D, dtype=torch.float64)
    for b in range(B):
        n = maxp * page if lens is None else min(int(lens[b]), maxp * page)
        if n <= 0:
            continue
        k = torch.cat([kc[int(p)].double() for p in bt[b]])[:n]   # [n, HKV, D]
        v = torch.cat([vc[int(p)].double() for p in bt[b]])[:n]
        ksr, vsr = row_scales(ks, b)[:n], row_scales(vs, b)[:n]
        for h in range(HQ):
            j = h // (HQ // HKV)
            s = (k[:, j] * ksr[:, j, None]) @ q[b, h].double() * scale
            o[b, h] = torch.softmax(s, 0) @ (v[:, j] * vsr[:, j, None])
    return o


@needs_torch
class ReferenceTest(unittest.TestCase):
    """CPU tensors run the PyTorch path: fp32 over the dequantized cache, rounded once to bf16."""

    def setUp(self):
        tt.use_bundle(None)
        tt.reset_stats()

    def close(self, o, want):
        self.assertEqual((o.dtype, tuple(o.shape)), (torch.bfloat16, tuple(want.shape)))
        # one bf16 rounding of an fp32 result (|o| <= 448 * 0.03 = 13.4)
        torch.testing.assert_close(o.double(), want, rtol=2.0 ** -8, atol=1e-4)

    def test_mixed_lengths_against_fp64(self):
        q, kc, vc, ks, vs, bt = inputs()
        lens = torch.tensor([0, 1, 7, 20], dtype=torch.int32)   # empty, one row, a partial page, full
        o = tt.decode_fp8(q, kc, vc, ks, vs, bt, lens)
        self.close(o, plain(q, kc, vc, ks, vs, bt, lens))
        self.assertEqual(o[0].abs().max().item(), 0.0)   # no keys: the empty sum, not NaN
        self.assertEqual(tt.stats()["decode_fp8"]["cpu"], 1)

    def test_without_lengths_and_with_scale(self):
        q, kc, vc, ks, vs, bt = inputs(seed=1)
        full = torch.full((4,), 20, dtype=torch.int32)
        self.assertTrue(torch.equal(tt.decode_fp8(q, kc, vc, ks, vs, bt), tt.decode_fp8(q, kc, vc, ks, vs, bt, full)))
        self.close(tt.decode_fp8(q, kc, vc, ks, vs, bt), plain(q, kc, vc, ks, vs, bt, None))
        lens = torch.tensor([3, 20, 9, 100], dtype=torch.int32)   # past max_pages * page_size: clamped
        self.close(tt.decode_fp8(q, kc, vc, ks, vs, bt, lens, scale=0.02), plain(q, kc, vc, ks, vs, bt, lens, 0.02))

    def test_per_tensor_scale(self):
        q, kc, vc, _, _, bt = inputs(seed=2)
        lens = torch.tensor([5, 0, 17, 20], dtype=torch.int32)
        per_head = tt.decode_fp8(q, kc, vc, torch.full((2,), 0.1), torch.full((2,), 0.02), bt, lens)
        for ks, vs in ((torch.tensor(0.1), torch.tensor([0.02])), (torch.tensor([0.1]), torch.tensor(0.02))):
            self.assertTrue(torch.equal(tt.decode_fp8(q, kc, vc, ks, vs, bt, lens), per_head))
        self.close(per_head, plain(q, kc, vc, torch.tensor(0.1), torch.tensor(0.02), bt, lens))

    def test_per_tensor_scale_repeated_once(self):
        s = torch.tensor([0.25])
        first = _ops_decode_fp8._kernel_scale(s, 4)
        self.assertTrue(torch.equal(first, torch.full((1, 4), 0.25)))
        self.assertIs(_ops_decode_fp8._kernel_scale(s, 4), first)            # the same step again: no copy
        self.assertEqual(tuple(_ops_decode_fp8._kernel_scale(s, 2).shape), (1, 2))
        s.fill_(0.5)                                                          # updated in place: repeated again
        again = _ops_decode_fp8._kernel_scale(s, 4)
        self.assertTrue(torch.equal(again, torch.full((1, 4), 0.5)))
        self.assertIsNot(again, first)
        self.assertTrue(torch.equal(_ops_decode_fp8._kernel_scale(torch.tensor(0.25), 4), torch.full((1, 4), 0.25)))
        with torch.inference_mode():                                          # no version counter: never kept
            t = torch.tensor([0.25])
            self.assertTrue(torch.equal(_ops_decode_fp8._kernel_scale(t, 4), torch.full((1, 4), 0.25)))
            t.fill_(0.5)
            self.assertTrue(torch.equal(_ops_decode_fp8._kernel_scale(t, 4), torch.full((1, 4), 0.5)))

    def test_per_page_scales(self):
        q, kc, vc, _, _, bt = inputs(seed=7)
        g = torch.Generator().manual_seed(7)
        pool, HKV = kc.shape[0], kc.shape[2]
        ks = torch.rand(pool, HKV, generator=g) * 0.1 + 0.05    # pages of one sequence differ up to 3x
        vs = torch.rand(pool, HKV, generator=g) * 0.02 + 0.01
        lens = torch.tensor([0, 3, 13, 20], dtype=torch.int32)
        o = tt.decode_fp8(q, kc, vc, ks, vs, bt, lens)
        self.close(o, plain(q, kc, vc, ks, vs, bt, lens))
        # every page at its head's scale is the per-head call
        ks_head, vs_head = ks[0], vs[0]
        self.assertTrue(torch.equal(tt.decode_fp8(q, kc, vc, ks_head.expand(pool, HKV), vs_head.expand(pool, HKV), bt,
                                                  lens),
                                    tt.decode_fp8(q, kc, vc, ks_head, vs_head, bt, lens)))

    def test_gqa_one_kv_head(self):
        q, kc, vc, ks, vs, bt = inputs(HQ=4, HKV=1, seed=3)
        lens = torch.tensor([2, 13, 20, 4], dtype=torch.int32)
        self.close(tt.decode_fp8(q, kc, vc, ks, vs, bt, lens), plain(q, kc, vc, ks, vs, bt, lens))

    def test_strided_q_and_hnd_caches(self):
        q, kc, vc, ks, vs, bt = inputs(seed=4)
        B, HQ, D = q.shape
        HKV = kc.shape[2]
        lens = torch.tensor([6, 20, 1, 11], dtype=torch.int32)
        qkv = torch.randn(B, (HQ + 2 * HKV) * D).bfloat16()
        qv = qkv[:, : HQ * D].view(B, HQ, D)            # a view of a fused QKV projection
        kh = kc.transpose(1, 2).contiguous().transpose(1, 2)   # FlashInfer's HND seen as NHD
        vh = vc.transpose(1, 2).contiguous().transpose(1, 2)
        self.assertTrue(torch.equal(tt.decode_fp8(qv, kh, vh, ks, vs, bt, lens),
                                    tt.decode_fp8(qv.contiguous(), kc, vc, ks, vs, bt, lens)))


@needs_torch
class ErrorTest(unittest.TestCase):
    """Bad arguments raise InvalidArgument (a ValueError) or a subclass, saying what is wrong."""

    def setUp(self):
        self.q, self.kc, self.vc, self.ks, self.vs, self.bt = inputs()
        self.lens = torch.tensor([1, 2, 3, 4], dtype=torch.int32)

    def call(self, **kw):
        a = dict(q=self.q, k_cache=self.kc, v_cache=self.vc, k_scale=self.ks, v_scale=self.vs, block_table=self.bt,
                 seq_lens=self.lens)
        a.update(kw)
        return tt.decode_fp8(**a)

    def test_dtypes(self):
        with self.assertRaisesRegex(tunert.DTypeMismatch, r"k_cache is torch.bfloat16, want torch.float8_e4m3fn"):
            self.call(k_cache=self.kc.bfloat16())
        with self.assertRaisesRegex(tunert.DTypeMismatch, r"v_cache is torch.float8_e5m2"):
            self.call(v_cache=self.vc.to(torch.float8_e5m2))
        with self.assertRaisesRegex(tunert.DTypeMismatch, r"k_scale is torch.float16, want torch.float32"):
            self.call(k_scale=self.ks.half())
        with self.assertRaisesRegex(tunert.DTypeMismatch, r"q is torch.int32"):
            self.call(q=self.q.int())
        with self.assertRaisesRegex(tunert.DTypeMismatch, r"block_table is torch.float32, want torch.int32"):
            self.call(block_table=self.bt.float())
        with self.assertRaises(ValueError):   # what code unaware of tunert catches
            self.call(k_cache=self.kc.float())

    def test_shapes(self):
        with self.assertRaisesRegex(tunert.ShapeMismatch, r"v_scale \(3,\): want \[HKV\] = \[2\]"):
            self.call(v_scale=torch.ones(3))
        with self.assertRaisesRegex(tunert.ShapeMismatch, r"k_scale \(1, 1\)"):
            self.call(k_scale=torch.ones(1, 1))
        pages = self.kc.shape[0]
        with self.assertRaisesRegex(tunert.ShapeMismatch, r"want .*\[pages, HKV\] = \[23, 2\]"):
            self.call(k_scale=torch.ones(pages - 1, 2), v_scale=torch.ones(pages - 1, 2))
        with self.assertRaisesRegex(tunert.ShapeMismatch, r"both per page \(\[pages, HKV\]\) or neither"):
            self.call(k_scale=torch.ones(pages, 2))
        with self.assertRaisesRegex(tunert.InvalidArgument, r"want q \[B, HQ, D\]"):
            self.call(q=self.q[:, 0])
        with self.assertRaisesRegex(tunert.InvalidArgument, r"HQ a multiple of HKV"):
            self.call(q=self.q[:, :3])
        with self.assertRaisesRegex(tunert.InvalidArgument, r"seq_lens \(3,\)"):
            self.call(seq_lens=self.lens[:3])
        with self.assertRaises(tunert.InvalidArgument):
            self.call(v_cache=self.vc[:, :2])
        with self.assertRaises(tunert.InvalidArgument):
            self.call(block_table=self.bt[:2])

    def test_devices(self):
        with self.assertRaisesRegex(tunert.DeviceMismatch, r"k_scale on meta, q on cpu"):
            self.call(k_scale=self.ks.to("meta"))


def op_samples():
    q, kc, vc, ks, vs, bt = inputs(seed=5)
    lens = torch.tensor([9, 0, 20, 3], dtype=torch.int32)
    op = torch.ops.tunert.decode_fp8.default
    return [(op, (q, kc, vc, ks, vs, bt), {"seq_lens": lens}),
            (op, (q, kc, vc, ks, vs, bt), {}),
            (op, (q, kc, vc, torch.tensor(0.1), torch.tensor([0.02]), bt), {"seq_lens": lens, "scale": 0.05})]


@needs_torch
class FakeAndOpcheckTest(unittest.TestCase):
    def test_opcheck_on_cpu(self):
        # opcheck's test_schema compares inputs before and after with allclose, which CPU torch does not
        # have for float8: the same check (no input changed, as mutates_args=() declares) is done here on
        # the bits
        for op, args, kwargs in op_samples():
            with self.subTest(kwargs=sorted(kwargs)):
                torch.library.opcheck(op, args, kwargs, test_utils=("test_autograd_registration", "test_faketensor",
                                                                    "test_aot_dispatch_dynamic"))
                before = [a.clone() for a in args]
                op(*args, **kwargs)
                for a, b in zip(args, before):
                    self.assertTrue(torch.equal(a.view(torch.uint8) if a.element_size() == 1 else a,
                                                b.view(torch.uint8) if b.element_size() == 1 else b))

    def test_fake_shapes(self):
        assert_fake_shapes(self, op_samples())

    def test_meta(self):
        q, kc, vc, ks, vs, bt = (t.to("meta") for t in inputs())
        o = tt.decode_fp8(q, kc, vc, ks, vs, bt)
        self.assertEqual((o.device.type, tuple(o.shape), o.dtype), ("meta", tuple(q.shape), torch.bfloat16))
        with self.assertRaises(tunert.DTypeMismatch):   # the fake checks too: a trace fails early
            tt.decode_fp8(q, kc.to(torch.bfloat16), vc, ks, vs, bt)

    def test_compile_traces_the_op(self):
        def step(q, kc, vc, ks, vs, bt, lens):
            return tt.decode_fp8(q, kc, vc, ks, vs, bt, lens).float().sum(-1)
        q, kc, vc, ks, vs, bt = inputs(seed=6)
        lens = torch.tensor([4, 19, 0, 8], dtype=torch.int32)
        compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(q, kc, vc, ks, vs, bt, lens), step(q, kc, vc, ks, vs, bt, lens))


@needs_torch
class PlanTest(unittest.TestCase):
    """The plans a CUDA call would take, read with meta tensors (no GPU, no driver), against the
    recorded attention.decode_fp8 problems (b32hq32hkv8d128p16x512m1: mixed lengths; ...x256: full)."""
    B, HQ, HKV, D, page = 32, 32, 8, 128, 16

    def setUp(self):
        tt.use_bundle(bundle("decode_fp8"), no_device=True, arch="sm_90a", strict=False)
        tt.reset_stats()

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def meta(self, *shape, dtype=None):
        return torch.empty(shape, dtype=dtype or torch.bfloat16, device="meta")

    def args(self, maxp, B=None, HQ=None, page=None, pool_extra=7, lens_dtype=None):
        B, HQ, page = B or self.B, HQ or self.HQ, page or self.page
        lens_dtype = lens_dtype or torch.int32   # not a default: this module imports without torch
        kc = self.meta(B * maxp + pool_extra, page, self.HKV, self.D, dtype=torch.float8_e4m3fn)
        ks = self.meta(self.HKV, dtype=torch.float32)
        return [self.meta(B, HQ, self.D), kc, kc, ks, ks, self.meta(B, maxp, dtype=torch.int32),
                self.meta(B, dtype=lens_dtype)]

    def explain(self, *args, **kw):
        return tt.explain("decode_fp8", *args, **kw)

    def test_tuned_at_either_min_len(self):
        p = self.explain(*self.args(512))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", "b32hq32hkv8d128p16x512m1"))
        self.assertEqual(p.selection.dims["min_len"], 1)
        self.assertEqual(p.strided, {"q", "k_cache", "v_cache"})
        self.assertEqual(p.tensor_names, ("q", "k_cache", "v_cache", "k_scale", "v_scale", "block_table", "seq_lens", "o"))
        self.assertEqual(p.scalars, {"q_stride_b": self.HQ * self.D, "q_stride_h": self.D, "o_stride_b": self.HQ * self.D,
                                     "o_stride_h": self.D, "kv_stride_page": self.page * self.HKV * self.D,
                                     "kv_stride_row": self.HKV * self.D, "kv_stride_h": self.D})
        p = self.explain(*self.args(256))                # tuned with every sequence full (min_len 4096)
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", "b32hq32hkv8d128p16x256"))
        p = self.explain(*self.args(256)[:-1])           # no lengths: the op passes full ones
        self.assertEqual(p.selection_kind, "tuned")
        self.assertIn("seq_lens", p.tensor_names)

    def test_strided_q_hnd_caches_and_scale(self):
        B, HQ, HKV, D, page = self.B, self.HQ, self.HKV, self.D, self.page
        q, _, _, ks, vs, bt, lens = self.args(512)
        qkv = self.meta(B, (HQ + 2 * HKV) * D)
        hnd = self.meta(100, HKV, page, D, dtype=torch.float8_e4m3fn).transpose(1, 2)
        p = self.explain(qkv[:, : HQ * D].view(B, HQ, D), hnd, hnd, ks, vs, bt, lens, scale=0.1)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.scalars["q_stride_b"], p.scalars["kv_stride_row"], p.scalars["kv_stride_h"]),
                         ((HQ + 2 * HKV) * D, D, page * D))
        self.assertAlmostEqual(p.scalars["scale_log2"], 0.1 * LOG2E, places=6)
        p = self.explain(q, hnd, hnd, self.meta(dtype=torch.float32), self.meta(1, dtype=torch.float32), bt, lens)
        self.assertEqual(p.selection_kind, "tuned")      # per-tensor scales: passed as HKV values

    def test_per_page_scales_take_their_own_entries(self):
        q, kc, _, _, _, bt, lens = self.args(256)
        ks = self.meta(kc.shape[0], self.HKV, dtype=torch.float32)
        p = self.explain(q, kc, kc, ks, ks, bt, lens)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", "b32hq32hkv8d128p16x256_pagescale"))
        self.assertEqual(p.selection.dims["kv_scale"], "page")
        p = self.explain(*self.args(256))                # per head: never a per-page entry
        self.assertEqual(p.selection.dims["kv_scale"], "head")

    def test_untuned_problem_runs_a_portable_kernel(self):
        p = self.explain(*self.args(5, B=3, page=7))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.arg("page_size").value), ("nearest", 7))

    def test_what_falls_back_says_why(self):
        q, kc, _, ks, vs, bt, lens = self.args(512)
        wide = self.meta(100, self.page, self.HKV, self.D + 8, dtype=torch.float8_e4m3fn)[..., : self.D]
        p = self.explain(q, wide, wide, ks, vs, bt, lens)   # strides multiples of 8 elements, not 16
        self.assertEqual(p.kind, "fallback")
        self.assertIn("multiples of 16 elements", p.reason)
        hnd = self.meta(100, self.HKV, self.page, self.D, dtype=torch.float8_e4m3fn).transpose(1, 2)
        self.assertIn("must be equal", self.explain(q, kc, hnd, ks, vs, bt, lens).reason)
        p = self.explain(*self.args(512, lens_dtype=torch.int64))
        self.assertIn("'seq_lens' is i32 in the bundle, i64 here", p.reason)
        a = self.args(512)
        a[0] = self.meta(self.B, self.HQ, self.D, dtype=torch.float16)
        self.assertIn("'q' is bf16 in the bundle, f16 here", self.explain(*a).reason)
        p = self.explain(*self.args(64, HQ=128))          # 16 query heads per KV head: outside the domain
        self.assertEqual(p.kind, "fallback")
        self.assertIn("domain", p.reason)

    def test_strict_raises_and_fallback_counts(self):
        a = self.args(64, HQ=128)
        problem = _ops_decode_fp8._problem(0, *a)
        o = _ops._run("decode_fp8", 0, problem)          # meta tensors: the reference's shapes
        self.assertEqual((tuple(o.shape), o.dtype), ((self.B, 128, self.D), torch.bfloat16))
        s = tt.stats()["decode_fp8"]
        self.assertEqual((s["tuned"], s["fallback"]), (0, 1))
        self.assertIn("domain", next(iter(s["reasons"])))
        tt.set_strict(True)
        try:
            with self.assertRaises(tunert.NoVariant):
                _ops._run("decode_fp8", 0, _ops_decode_fp8._problem(0, *a))
        finally:
            tt.set_strict(False)

    def test_call_binds_every_argument(self):
        # what a CUDA call passes, from the op's own tensors_fn on CPU tensors re-labelled as CUDA
        # (fake_dlpack, same addresses and strides): every launch check passes, only the driver is missing
        B, HQ, HKV, D, page, maxp = self.B, self.HQ, self.HKV, self.D, self.page, 512
        q = torch.zeros(B, (HQ + 2 * HKV) * D, dtype=torch.bfloat16)[:, : HQ * D].view(B, HQ, D)
        kc = torch.zeros(100, HKV, page, D, dtype=torch.float8_e4m3fn).transpose(1, 2)
        bt = torch.zeros(B, maxp, dtype=torch.int32)
        lens = torch.zeros(B, dtype=torch.int32)
        key, candidates, tensors_fn, _ = _ops_decode_fp8._problem(0, q, kc, kc, torch.tensor(0.1),
                                                                   torch.full((HKV,), 0.2), bt, lens)
        p = _state.plan("decode_fp8", key, 0, candidates)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        t, out = tensors_fn()
        self.assertIs(t["q"], q)   # no copy of the strided q
        self.assertIs(t["o"], out)
        self.assertTrue(torch.equal(t["k_scale"], torch.full((1, HKV), 0.1)))   # a per-tensor scale as HKV values
        self.assertTrue(t["k_scale"].is_contiguous())
        check_plan_launch(self, p, t)
        # per-page scales: passed as [pages, HKV] to the entries tuned with kv_scale = "page"
        ks = torch.full((100, HKV), 0.1).t().contiguous().t()   # a strided view: the op passes a contiguous copy
        key, candidates, tensors_fn, _ = _ops_decode_fp8._problem(0, q, kc, kc, ks, ks, bt, lens)
        p = _state.plan("decode_fp8", key, 0, candidates)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection.dims["kv_scale"], "page")
        t, _ = tensors_fn()
        self.assertEqual((tuple(t["k_scale"].shape), t["k_scale"].is_contiguous()), ((100, HKV), True))
        check_plan_launch(self, p, t)


@needs_torch
class DecodeFp8FamiliesTest(unittest.TestCase):
    """tt.decode_fp8 over a bundle of both fp8 decode families' H200 recordings: per-head scales try
    attention.decode_fp8 and attention.decode_fp8_tma and take the bundle's faster exact entry,
    per-page scales attention.decode_fp8 alone; the cache's strides give decode_fp8_tma's layout."""
    HKV, D = 8, 128

    def setUp(self):
        tt.use_bundle(bundle("decode_fp8_h200"), no_device=True, arch="sm_90a", strict=False)

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def meta(self, *shape, dtype=None):
        return torch.empty(shape, dtype=dtype or torch.bfloat16, device="meta")

    def args(self, B, HQ, page, maxp, kc=None, scale_rows=None):
        kc = self.meta(B * maxp, page, self.HKV, self.D, dtype=torch.float8_e4m3fn) if kc is None else kc
        ks = self.meta(*((scale_rows, self.HKV) if scale_rows else (self.HKV,)), dtype=torch.float32)
        return [self.meta(B, HQ, self.D), kc, kc, ks, ks, self.meta(B, maxp, dtype=torch.int32),
                self.meta(B, dtype=torch.int32)]

    def plan(self, *shape, **kw):
        p = tt.explain("decode_fp8", *self.args(*shape, **kw))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection_kind, "tuned")
        return p

    def test_the_faster_family_per_problem(self):
        chosen = set()
        for shape in ((1, 32, 16, 2048), (1, 64, 32, 4096), (32, 32, 16, 256), (128, 32, 32, 64), (64, 64, 16, 512)):
            p = self.plan(*shape)
            # each family's exact entry for the problem alone: the op took the faster
            _, candidates, _, _ = _ops_decode_fp8._problem(0, *self.args(*shape))
            times = {}
            for f in _state.PAGED_DECODE_OPS["decode_fp8"]:
                own = _state._make_plan(0, [c for c in candidates() if not isinstance(c, str) and c[0] == f])
                if isinstance(own, tt.Plan) and own.selection.info.exact:
                    times[f] = own.selection.info.measured_ns
            self.assertEqual(len(times), 2, shape)
            self.assertEqual(p.selection.info.family, min(times, key=times.get), (shape, times))
            chosen.add(p.selection.info.family)
        self.assertEqual(chosen, {"attention.decode_fp8", "attention.decode_fp8_tma"})

    def test_layout_and_scales_choose_the_entries(self):
        p = self.plan(32, 32, 16, 256, scale_rows=32 * 256)   # per page: attention.decode_fp8's own entries
        self.assertEqual((p.selection.info.family, p.selection.dims["kv_scale"]), ("attention.decode_fp8", "page"))
        # the TMA-fed family alone: the cache's strides pick its NHD or HND entry
        tt.use_bundle(bundle("decode_fp8_tma"), no_device=True, arch="sm_90a", strict=False)
        p = self.plan(32, 32, 16, 256)
        self.assertEqual((p.selection.info.tuned_problem, p.selection.dims["layout"]), ("b32hq32hkv8d128p16x256", "nhd"))
        hnd = self.meta(32 * 256, self.HKV, 16, self.D, dtype=torch.float8_e4m3fn).transpose(1, 2)
        p = self.plan(32, 32, 16, 256, kc=hnd)
        self.assertEqual((p.selection.info.tuned_problem, p.selection.dims["layout"]),
                         ("b32hq32hkv8d128p16x256_hnd", "hnd"))
        self.assertEqual((p.scalars["kv_stride_row"], p.scalars["kv_stride_h"]), (self.D, 16 * self.D))
        p = tt.explain("decode_fp8", *self.args(32, 32, 16, 256, scale_rows=32 * 256))
        self.assertNotIsInstance(p, tt.Plan)   # per-page scales: not this family's


if __name__ == "__main__":
    unittest.main()
