"""tunert.torch's serving ops on any CPU: attention_varlen, grouped_mm, grouped_mm_masked and scaled_mm.
Their PyTorch references against plain computations, the argument errors, fake implementations,
opcheck, torch.compile tracing, and the plans (tuned, nearest, vendor, fallback) read through
explain() with meta tensors against the recorded bundles opened without a driver."""
import math
import unittest

from common import HAVE_TORCH, OPCHECK_UTILS, assert_fake_shapes, bundle, needs_torch

if HAVE_TORCH:
    import torch
    import tunert
    import tunert.torch as tt


def varlen_plain(q, k, v, lens, causal, scale=None):
    """Attention of each packed sequence on its own, fp32, from the formula."""
    T, HQ, D = q.shape
    G = HQ // k.shape[1]
    o = torch.zeros(T, HQ, D)
    lo = 0
    for n in lens:
        for h in range(HQ):
            s = q[lo:lo + n, h].float() @ k[lo:lo + n, h // G].float().T * (scale or 1 / math.sqrt(D))
            if causal:
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
            o[lo:lo + n, h] = torch.softmax(s, -1) @ v[lo:lo + n, h // G].float()
        lo += n
    return o


def cu_of(lens):
    return torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32)


def fp8(*shape, scale=1.0):
    return (torch.randn(*shape) * scale).to(torch.float8_e4m3fn)


def scaled_plain(a, b, sa, sb, mode):
    """Each output from its K blocks, the scales applied per block as gemm.fp8 defines them."""
    M, K = a.shape
    N = b.shape[0]
    c = torch.zeros(M, N, dtype=torch.float64)
    for kb in range(0, K, 128):
        part = a[:, kb:kb + 128].double() @ b[:, kb:kb + 128].double().T
        if mode == "tensor":
            part = part * float(sa.reshape(())) * float(sb.reshape(()))
        elif mode == "row":
            part = part * sa.double()[:, None] * sb.double()[None, :]
        else:
            sbn = sb[:, kb // 128].double().repeat_interleave(128)[:N]
            part = part * sa[:, kb // 128].double()[:, None] * sbn[None, :]
        c += part
    return c




def op_samples():
    torch.manual_seed(0)
    lens = [3, 1, 8, 5]
    T = sum(lens)
    q, k, v = torch.randn(T, 4, 8), torch.randn(T, 2, 8), torch.randn(T, 2, 8)
    a, w = torch.randn(10, 16), torch.randn(3, 8, 16)
    offs = torch.tensor([0, 2, 2, 10], dtype=torch.int32)
    am, counts = torch.randn(3, 5, 16), torch.tensor([0, 5, 2], dtype=torch.int32)
    a8, b8 = fp8(6, 256), fp8(16, 256)
    return [
        (torch.ops.tunert.attention_varlen.default, (q, k, v, cu_of(lens)), {}),
        (torch.ops.tunert.attention_varlen.default, (q, k, v, cu_of(lens)), {"max_seqlen": 8, "causal": False,
                                                                              "scale": 0.3}),
        (torch.ops.tunert.grouped_mm.default, (a, w, offs), {}),
        (torch.ops.tunert.grouped_mm_masked.default, (am, w, counts), {}),
        (torch.ops.tunert.scaled_mm.default, (a8, b8, torch.tensor(0.5), torch.tensor([2.0])), {}),
        (torch.ops.tunert.scaled_mm.default, (a8, b8, torch.rand(6), torch.rand(16)), {"out_dtype": torch.float32}),
        (torch.ops.tunert.scaled_mm.default, (a8, b8, torch.rand(6, 2), torch.rand(1, 2)), {"mode": "block"}),
    ]


@needs_torch
class ReferenceTest(unittest.TestCase):
    """CPU tensors run the PyTorch reference: checked against plain formulas."""

    def setUp(self):
        tt.use_bundle(None)
        tt.reset_stats()

    def test_varlen_matches_each_sequence_alone(self):
        torch.manual_seed(1)
        lens = [5, 1, 17, 2, 9]
        T = sum(lens)
        for HQ, HKV in ((4, 2), (3, 3)):
            q, k, v = torch.randn(T, HQ, 16), torch.randn(T, HKV, 16), torch.randn(T, HKV, 16)
            for causal in (True, False):
                for scale in (None, 0.2):
                    o = tt.attention_varlen(q, k, v, cu_of(lens), causal=causal, scale=scale)
                    self.assertEqual(o.shape, (T, HQ, 16))
                    torch.testing.assert_close(o, varlen_plain(q, k, v, lens, causal, scale), atol=1e-5, rtol=1e-4)
        self.assertEqual(tt.stats()["attention_varlen"]["cpu"], 8)

    def test_varlen_views_and_bf16(self):
        torch.manual_seed(2)
        lens = [7, 4, 9]
        T, HQ, HKV, D = sum(lens), 4, 2, 8
        qkv = torch.randn(T, (HQ + 2 * HKV) * D)
        q = qkv[:, : HQ * D].view(T, HQ, D)          # a fused QKV projection's views
        k = qkv[:, HQ * D:(HQ + HKV) * D].view(T, HKV, D)
        v = qkv[:, (HQ + HKV) * D:].view(T, HKV, D)
        torch.testing.assert_close(tt.attention_varlen(q, k, v, cu_of(lens)), varlen_plain(q, k, v, lens, True))
        qb, kb, vb = q.bfloat16(), k.bfloat16(), v.bfloat16()
        ob = tt.attention_varlen(qb, kb, vb, cu_of(lens))
        self.assertEqual(ob.dtype, torch.bfloat16)
        torch.testing.assert_close(ob.float(), varlen_plain(qb, kb, vb, lens, True), atol=2e-2, rtol=2e-2)

    def test_grouped_mm_with_empty_experts(self):
        torch.manual_seed(3)
        E, N, K = 5, 24, 32
        offs = [0, 4, 4, 11, 11, 20]                    # experts 1 and 3 have no rows
        a, w = torch.randn(20, K), torch.randn(E, N, K)
        c = tt.grouped_mm(a, w, torch.tensor(offs, dtype=torch.int32))
        ref = torch.cat([a[lo:hi] @ w[e].T for e, (lo, hi) in enumerate(zip(offs[:-1], offs[1:]))])
        torch.testing.assert_close(c, ref)

    def test_grouped_mm_masked_zeros_past_counts(self):
        torch.manual_seed(4)
        E, cap, N, K = 4, 6, 16, 24
        a, w = torch.randn(E, cap, K), torch.randn(E, N, K)
        counts = [6, 0, 3, 1]
        c = tt.grouped_mm_masked(a, w, torch.tensor(counts, dtype=torch.int32))
        self.assertEqual(c.shape, (E, cap, N))
        for e, n in enumerate(counts):
            torch.testing.assert_close(c[e, :n], a[e, :n] @ w[e].T)
            self.assertEqual(c[e, n:].abs().max().item() if n < cap else 0.0, 0.0)

    def test_scaled_mm_modes(self):
        torch.manual_seed(5)
        M, N, K = 9, 144, 320          # N, K past a 128 block: partial scale blocks
        a, b = fp8(M, K), fp8(N, K)
        cases = {"tensor": (torch.tensor(0.75), torch.tensor([1.5])),
                 "row": (torch.rand(M) + 0.5, torch.rand(N) + 0.5),
                 "block": (torch.rand(M, 3) * 4 + 1 / 64, torch.rand(2, 3) * 4 + 1 / 64)}
        for mode, (sa, sb) in cases.items():
            with self.subTest(mode=mode):
                c = tt.scaled_mm(a, b, sa, sb)
                self.assertEqual((c.shape, c.dtype), ((M, N), torch.bfloat16))
                ref = scaled_plain(a, b, sa, sb, mode)
                # one bf16 rounding (scaling in fp32 first may move a value across a rounding boundary)
                torch.testing.assert_close(c.double(), ref, atol=1e-4, rtol=2 ** -8)
                torch.testing.assert_close(tt.scaled_mm(a, b, sa, sb, mode=mode), c)
                c32 = tt.scaled_mm(a, b, sa, sb, out_dtype=torch.float32)
                torch.testing.assert_close(c32.double(), ref, atol=1e-3, rtol=1e-5)
        # tensor and row as torch._scaled_mm computes them, where this torch runs it on a CPU
        sa, sb = cases["row"]
        try:
            want = torch._scaled_mm(a, b.t(), sa[:, None], sb[None, :], out_dtype=torch.bfloat16)
        except (RuntimeError, NotImplementedError, AttributeError):
            return
        torch.testing.assert_close(tt.scaled_mm(a, b, sa, sb).float(), want.float(), atol=0.5, rtol=2 ** -7)

    def test_scaled_mm_blockwise_layout(self):
        # the operands the PyTorch path hands cuBLASLt's blockwise scaling (the layout the peer
        # tools/peers/peer_family_fp8.py times): a padded to a multiple of 4 rows, scale_a
        # outer-dim-major, scale_b as [L4, N/128] with strides [1, L4], ones past K/128
        from tunert.torch import _ops_fp8
        torch.manual_seed(6)
        M, N, K = 9, 256, 640                       # K/128 = 5 blocks, L4 = 8; M4 = 12
        a, sa, sb = fp8(M, K), torch.rand(M, 5) + 0.5, torch.rand(2, 5) + 0.5
        a4, sa4, sb4 = _ops_fp8._blockwise_operands(a, sa, sb, M, N, K)
        self.assertEqual((a4.shape, a4.dtype), ((12, K), torch.float8_e4m3fn))
        self.assertTrue(torch.equal(a4[:M].float(), a.float()))
        self.assertEqual(a4[M:].float().abs().max().item(), 0.0)
        self.assertEqual((sa4.shape, sa4.stride()), ((12, 5), (1, 12)))
        self.assertTrue(torch.equal(sa4[:M], sa))
        self.assertEqual((sb4.shape, sb4.stride()), ((8, 2), (1, 8)))
        self.assertTrue(torch.equal(sb4[:5], sb.t()))
        self.assertEqual(sb4[5:].min().item(), 1.0)
        # no padding at M % 4 == 0; flat scales (the kernels' argument shapes) read the same
        a4, sa4, _ = _ops_fp8._blockwise_operands(a[:8], sa[:8].reshape(-1), sb.reshape(-1), 8, N, K)
        self.assertEqual((a4.shape, sa4.stride()), ((8, K), (1, 8)))
        # K or N off the 128 grid: not for cuBLASLt; on a CPU the dequantized reference runs
        self.assertIsNone(_ops_fp8._blockwise_operands(a, sa, sb, M, N, K - 64))
        self.assertIsNone(_ops_fp8._blockwise_operands(a, sa, sb, M, N - 16, K))
        c = _ops_fp8._scaled_mm_ref(a, fp8(N, K), sa, sb, "block", torch.bfloat16, False)
        self.assertEqual((c.shape, c.dtype), ((M, N), torch.bfloat16))

    def test_errors(self):
        lens = [2, 3]
        q, k = torch.randn(5, 4, 8), torch.randn(5, 2, 8)
        with self.assertRaises(tunert.DTypeMismatch):
            tt.attention_varlen(q, k, k, cu_of(lens).long())
        with self.assertRaises(tunert.InvalidArgument):
            tt.attention_varlen(q, torch.randn(5, 3, 8), torch.randn(5, 3, 8), cu_of(lens))   # 4 % 3
        with self.assertRaises(tunert.InvalidArgument):
            tt.attention_varlen(q.view(5, 32), k, k, cu_of(lens))
        a, w = torch.randn(10, 16), torch.randn(3, 8, 16)
        with self.assertRaises(tunert.InvalidArgument):
            tt.grouped_mm(a, w, torch.tensor([0, 10], dtype=torch.int32))      # E + 1 entries
        with self.assertRaises(tunert.DTypeMismatch):
            tt.grouped_mm(a, w, torch.tensor([0, 2, 5, 10]))                   # int64
        with self.assertRaises(tunert.InvalidArgument):
            tt.grouped_mm(a, torch.randn(3, 8, 12), torch.tensor([0, 2, 5, 10], dtype=torch.int32))
        with self.assertRaises(tunert.DTypeMismatch):
            tt.grouped_mm(a, w.bfloat16(), torch.tensor([0, 2, 5, 10], dtype=torch.int32))
        with self.assertRaises(tunert.InvalidArgument):
            tt.grouped_mm_masked(torch.randn(2, 4, 16), w, torch.tensor([1, 1, 1], dtype=torch.int32))
        a8, b8 = fp8(4, 256), fp8(16, 256)
        one = torch.tensor(1.0)
        with self.assertRaisesRegex(tunert.DTypeMismatch, "float8_e4m3fn"):
            tt.scaled_mm(a8.float(), b8, one, one)
        with self.assertRaisesRegex(tunert.DTypeMismatch, "float32"):
            tt.scaled_mm(a8, b8, one.double(), one)
        with self.assertRaisesRegex(tunert.ShapeMismatch, "want a"):
            tt.scaled_mm(a8, fp8(16, 128), one, one)
        with self.assertRaisesRegex(tunert.InvalidArgument, "no scaling mode"):
            tt.scaled_mm(a8, b8, torch.rand(4), torch.rand(4, 2))
        with self.assertRaisesRegex(tunert.ShapeMismatch, "mode 'block'"):
            tt.scaled_mm(a8, b8, torch.rand(4, 3), torch.rand(1, 2))             # ceil(256 / 128) = 2
        with self.assertRaisesRegex(tunert.ShapeMismatch, "mode 'row'"):
            tt.scaled_mm(a8, b8, torch.rand(4), torch.rand(15))
        with self.assertRaisesRegex(tunert.InvalidArgument, "mode 'rows'"):
            tt.scaled_mm(a8, b8, torch.rand(4), torch.rand(16), mode="rows")


@needs_torch
class FakeAndOpcheckTest(unittest.TestCase):
    def test_opcheck_on_cpu(self):
        for op, args, kwargs in op_samples():
            with self.subTest(op=str(op), kwargs=sorted(kwargs)):
                # test_schema compares the inputs before and after with allclose, which torch has
                # no CPU kernel for in float8: scaled_mm runs the other checks
                skip = ("test_schema",) if op is torch.ops.tunert.scaled_mm.default else ()
                utils = tuple(u for u in OPCHECK_UTILS if u not in skip)
                torch.library.opcheck(op, args, kwargs, test_utils=utils)

    def test_fake_shapes(self):
        assert_fake_shapes(self, op_samples())

    def test_compile_traces_the_ops(self):
        def layer(q, k, v, cu, a, w, offs):
            o = tt.attention_varlen(q, k, v, cu, max_seqlen=8)
            return o.sum() + tt.grouped_mm(a, w, offs).sum()
        lens = [3, 8, 5]
        args = (torch.randn(16, 4, 8), torch.randn(16, 2, 8), torch.randn(16, 2, 8), cu_of(lens),
                torch.randn(10, 16), torch.randn(3, 8, 16), torch.tensor([0, 2, 2, 10], dtype=torch.int32))
        compiled = torch.compile(layer, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(*args), layer(*args))


@needs_torch
class PlanTest(unittest.TestCase):
    """The plans a CUDA call would take, read with meta tensors (no GPU, no driver)."""

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def use(self, name):
        tt.use_bundle(bundle(name), no_device=True, arch="sm_90a", strict=False)

    def meta(self, *shape, dtype=None):
        return torch.empty(shape, dtype=dtype or torch.bfloat16, device="meta")

    def test_varlen(self):
        self.use("varlen")
        T, B = 16384, 64
        q, k, cu = self.meta(T, 32, 128), self.meta(T, 8, 128), self.meta(B + 1, dtype=torch.int32)
        p = tt.explain("attention_varlen", q, k, k, cu)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", "b64t16384hq32kv8d128c"))
        self.assertEqual(p.scalars, {"q_ld": 4096, "k_ld": 1024, "v_ld": 1024, "o_ld": 4096})
        self.assertEqual(p.strided, frozenset())
        p = tt.explain("attention_varlen", self.meta(1000, 32, 128), self.meta(1000, 8, 128), self.meta(1000, 8, 128),
                       self.meta(8, dtype=torch.int32), scale=0.1)
        self.assertEqual(p.selection_kind, "nearest")
        self.assertAlmostEqual(p.scalars["scale_log2"], 0.1 * 1.4426950408889634, places=6)
        # views of a fused QKV: the recorded winner is a TMA variant whose maps follow q_ld, k_ld,
        # v_ld, so the views are launched in place with their row stride (no copies)
        qkv = self.meta(T, 48 * 128)
        qv, kv, vv = (qkv[:, lo:hi].view(T, -1, 128) for lo, hi in ((0, 4096), (4096, 5120), (5120, 6144)))
        p = tt.explain("attention_varlen", qv, kv, vv, cu)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection.info.variant["USE_TMA"], 1)
        self.assertEqual(p.strided, frozenset({"q", "k", "v"}))
        self.assertEqual((p.scalars["q_ld"], p.scalars["k_ld"], p.scalars["v_ld"], p.scalars["o_ld"]),
                         (6144, 6144, 6144, 4096))
        # a row stride off 8 elements is no view TMA can read: copied (the dense plan)
        odd = self.meta(T, 48 * 128 + 4)
        qo, ko, vo = (odd[:, lo:hi].view(T, -1, 128) for lo, hi in ((0, 4096), (4096, 5120), (5120, 6144)))
        p = tt.explain("attention_varlen", qo, ko, vo, cu)
        self.assertEqual((p.strided, p.scalars["q_ld"]), (frozenset(), 4096))
        # D 64 not causal: no entry's defines hold (D and causal are compiled in): PyTorch
        p = tt.explain("attention_varlen", self.meta(T, 32, 64), self.meta(T, 8, 64), self.meta(T, 8, 64), cu,
                       causal=False)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("attention.varlen", p.reason)
        p = tt.explain("attention_varlen", q.float(), k.float(), k.float(), cu)
        self.assertIn("'q' is bf16 in the bundle, f32 here", p.reason)

    def test_varlen_strided_views_need_maps_that_follow_them(self):
        # a TMA variant of a bundle before format 1.6 (maps of dense rows) refuses the strided
        # candidate, so the op copies; maps that follow q_ld, k_ld, v_ld or no TMA take the views
        from types import SimpleNamespace
        from tunert.torch._ops_varlen import _reads_strides

        def sel(use_tma, strides):
            args = tuple(tunert.ArgSpec(f"tm{n.upper()}", "tensormap", "bf16", maps=n, row_stride=strides.get(n))
                         for n in "qkv")
            return SimpleNamespace(info=SimpleNamespace(variant={"USE_TMA": use_tma}, args=args))
        self.assertIn("q, k, v with TMA maps of dense rows", _reads_strides(sel(1, {})))
        self.assertIn("reads v with TMA", _reads_strides(sel(1, {"q": "q_ld", "k": "k_ld"})))
        self.assertIsNone(_reads_strides(sel(1, {"q": "q_ld", "k": "k_ld", "v": "v_ld"})))
        self.assertIsNone(_reads_strides(sel(0, {})))

    def test_grouped(self):
        self.use("moe")
        # Mixtral down at decode, tuned with min_tokens 1: the exact entry among the op's candidates
        a, w, offs = self.meta(32, 14336), self.meta(8, 4096, 14336), self.meta(9, dtype=torch.int32)
        p = tt.explain("grouped_mm", a, w, offs)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", "e8n4096k14336t32m1"))
        # the same layer at prefill: the bundle measured the vendor faster (recorded): PyTorch
        p = tt.explain("grouped_mm", self.meta(8192, 14336), w, offs)
        self.assertEqual(p.kind, "vendor", p)
        # untuned: a portable entry
        p = tt.explain("grouped_mm", self.meta(100, 256), self.meta(16, 512, 256), self.meta(17, dtype=torch.int32))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection_kind, "nearest")
        p = tt.explain("grouped_mm", self.meta(100, 250), self.meta(16, 512, 250), self.meta(17, dtype=torch.int32))
        self.assertEqual(p.kind, "fallback")   # K % 8: outside the domain
        self.assertIn("domain", p.reason)
        p = tt.explain("grouped_mm_masked", self.meta(8, 16, 4096), self.meta(8, 28672, 4096),
                       self.meta(8, dtype=torch.int32))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection.info.family, "moe.grouped_masked")
        self.assertEqual(p.selection.dims["cap"], 16)

    def test_linear_decode(self):
        # gemm.skinny serves a linear at decode sizes (M <= 128, its domain), or its vendor entry
        # where the recording's comparison had cuBLAS faster (M = 128 here); past its domain the
        # bundle has no family for the call and says why for each
        self.use("skinny")
        for m in (1, 16, 64, 128):
            with self.subTest(M=m):
                p = tt.explain("linear", self.meta(m, 4096), self.meta(14336, 4096))
                self.assertEqual(p.selection.info.family, "gemm.skinny", getattr(p, "reason", ""))
                self.assertEqual(p.selection.dims, {"M": m, "N": 14336, "K": 4096, "b_layout": "col"})
                if p.kind == "vendor":
                    self.assertTrue(p.selection.is_vendor)
                    continue
                self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
                self.assertEqual(p.selection_kind, "tuned")
        p = tt.explain("linear", self.meta(256, 4096), self.meta(14336, 4096))
        self.assertEqual(p.kind, "fallback")
        self.assertIn("gemm.skinny", p.reason)
        self.assertIn("no family gemm in the bundle", p.reason)

    def test_scaled_mm(self):
        self.use("fp8")
        e4 = torch.float8_e4m3fn
        M, N, K = 4096, 14336, 4096
        a, b = self.meta(M, K, dtype=e4), self.meta(N, K, dtype=e4)
        f32 = torch.float32
        for mode, sa, sb in (("tensor", (), (1,)), ("row", (M,), (N,)), ("block", (M, 32), (112, 32))):
            with self.subTest(mode=mode):
                p = tt.explain("scaled_mm", a, b, self.meta(*sa, dtype=f32), self.meta(*sb, dtype=f32))
                if p.kind == "vendor":
                    continue   # the bundle measured torch faster for this problem: its choice
                self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
                self.assertEqual((p.selection.info.family, p.selection.dims["scale"]), ("gemm.fp8", mode))
        p = tt.explain("scaled_mm", a, b, self.meta(M, dtype=f32), self.meta(N, dtype=f32), use_fast_accum=True)
        self.assertIn(getattr(p, "selection", None) and p.selection.info.family, ("gemm.fp8", "gemm.fp8_fast", None))
        # decode sizes: gemm.fp8_skinny's exact entry (M <= 16, its domain), gemm.fp8 past it
        for m, fam in ((1, "gemm.fp8_skinny"), (16, "gemm.fp8_skinny"), (64, "gemm.fp8")):
            with self.subTest(M=m):
                p = tt.explain("scaled_mm", self.meta(m, 14336, dtype=e4), self.meta(4096, 14336, dtype=e4),
                               self.meta(m, dtype=f32), self.meta(4096, dtype=f32))
                self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
                self.assertEqual(p.selection.info.family, fam)
        # untuned sizes run portable entries; another output dtype runs PyTorch
        p = tt.explain("scaled_mm", self.meta(100, 4096, dtype=e4), self.meta(4096, 4096, dtype=e4),
                       self.meta(100, 32, dtype=f32), self.meta(32, 32, dtype=f32))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.dims["scale"]), ("nearest", "block"))
        p = tt.explain("scaled_mm", a, b, self.meta(1, dtype=f32), self.meta(1, dtype=f32), out_dtype=torch.float16)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("'c' is bf16 in the bundle, f16 here", p.reason)


if __name__ == "__main__":
    unittest.main()
