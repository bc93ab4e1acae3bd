"""tunert.torch.rmsnorm_add_fp8 on any CPU: the PyTorch path against a plain fp64 computation (per-token
and static scales, saturation, the in-place residual), argument errors, fake implementations, opcheck,
torch.compile tracing, and the plans (tuned, nearest, fallback) read through explain() with meta tensors
against a bundle of rmsnorm.fp8 / rmsnorm.fp8_static made here with synthetic times (no GPU)."""
import functools
import unittest

from common import HAVE_TORCH, assert_dequantized, assert_fake_shapes, fake_bundle, needs_torch, opcheck_all

if HAVE_TORCH:
    import torch
    import tunert
    import tunert.torch as tt



def plain(x, r, w, eps, scale=None):
    """h, v = rmsnorm(h) * w in fp64 from h as stored (bf16 add), the scale (per row or given)."""
    h = (x.float() + r.float()).to(r.dtype)
    hd = h.double()
    v = hd * w.double() / torch.sqrt(hd.pow(2).mean(-1, keepdim=True) + eps)
    s = (v.abs().amax(-1, keepdim=True) / 448).clamp(min=1 / (448 * 512)) if scale is None else scale.double()
    return h, v, s


def inputs(T, H, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H, generator=g).bfloat16()
    r = (torch.randn(T, H, generator=g) * 2).bfloat16()
    w = torch.randn(H, generator=g).bfloat16()
    return x, r, w


@needs_torch
class ReferenceTest(unittest.TestCase):
    def setUp(self):
        tt.use_bundle(None)
        tt.reset_stats()

    def test_dynamic_per_token(self):
        for T, H in ((7, 4096), (3, 2049), (1, 5120)):
            x, r, w = inputs(T, H, H)
            res = r.clone()
            y, s = tt.rmsnorm_add_fp8(x, res, w, 1e-6)
            h, v, want_s = plain(x, r, w, 1e-6)
            self.assertEqual((y.dtype, y.shape, s.dtype, s.shape), (torch.float8_e4m3fn, (T, H), torch.float32, (T,)))
            self.assertTrue(torch.equal(res, h), "the residual is updated in place to bf16(x + r)")
            torch.testing.assert_close(s.double(), want_s.squeeze(-1), rtol=1e-6, atol=0)
            self.assertTrue(bool((y.float().abs().amax(-1) == 448).all()), "each row's amax lands on 448")
            assert_dequantized(self, y, s.double()[:, None], v)
        self.assertEqual(tt.stats()["rmsnorm_add_fp8"]["cpu"], 3)

    def test_static_saturates(self):
        x, r, w = inputs(8, 1024, 3)
        scale = torch.tensor([6 / 448])
        res = r.clone()
        y, s = tt.rmsnorm_add_fp8(x, res, w, 1e-6, scale=scale)
        self.assertIs(s, scale)
        h, v, _ = plain(x, r, w, 1e-6, scale)
        self.assertTrue(torch.equal(res, h))
        q = v / scale.double()
        sat = q.abs() > 448
        self.assertTrue(bool(sat.any()), "the static scale is below some rows' amax")
        self.assertTrue(torch.equal(y.float()[sat], q[sat].sign().float() * 448))
        assert_dequantized(self, y, scale.double(), v.clamp(-448 * scale.double(), 448 * scale.double()))

    def test_zero_row_and_non_contiguous_residual(self):
        x = torch.zeros(2, 64, dtype=torch.bfloat16)
        big = torch.zeros(64, 4, dtype=torch.bfloat16)
        res = big.t()                             # [4, 64] with strides (1, 4): not contiguous
        y, s = tt.rmsnorm_add_fp8(torch.zeros(4, 64, dtype=torch.bfloat16), res, torch.ones(64, dtype=torch.bfloat16))
        self.assertTrue(bool((y.float() == 0).all()))
        torch.testing.assert_close(s, torch.full((4,), 1 / (448 * 512)))   # the floor: finite, not 0
        x, r, w = inputs(4, 64, 5)
        res = r.t().contiguous().t()
        tt.rmsnorm_add_fp8(x, res, w)
        self.assertTrue(torch.equal(res, (x.float() + r.float()).bfloat16()))
        self.assertEqual(x.shape, (4, 64))

    def test_leading_dims(self):
        x, r, w = inputs(6, 256, 7)
        y, s = tt.rmsnorm_add_fp8(x.view(2, 3, 256), r.clone().view(2, 3, 256), w)
        self.assertEqual((y.shape, s.shape), ((2, 3, 256), (2, 3)))
        y2, s2 = tt.rmsnorm_add_fp8(x, r.clone(), w)
        self.assertTrue(torch.equal(y.view(6, 256).float(), y2.float()))
        self.assertTrue(torch.equal(s.view(6), s2))

    def test_errors(self):
        x, r, w = inputs(2, 64, 1)
        with self.assertRaises(tunert.InvalidArgument):
            tt.rmsnorm_add_fp8(x, r[:, :32], w)
        with self.assertRaises(tunert.InvalidArgument):
            tt.rmsnorm_add_fp8(x, r, w[:32])
        with self.assertRaisesRegex(tunert.DTypeMismatch, "float32"):
            tt.rmsnorm_add_fp8(x, r, w, scale=torch.tensor([1.0], dtype=torch.float64))
        with self.assertRaisesRegex(tunert.InvalidArgument, "one element"):
            tt.rmsnorm_add_fp8(x, r, w, scale=torch.ones(2))


def op_samples():
    x, r, w = inputs(5, 96, 11)
    return [(torch.ops.tunert.rmsnorm_add_fp8.default, (x, r.clone(), w), {}),
            (torch.ops.tunert.rmsnorm_add_fp8.default, (x, r.clone(), w), {"eps": 1e-5}),
            (torch.ops.tunert.rmsnorm_add_fp8_static.default, (x, r.clone(), w, torch.tensor([0.02])), {})]


@needs_torch
class FakeAndOpcheckTest(unittest.TestCase):
    def test_opcheck_on_cpu(self):
        opcheck_all(self, op_samples())

    def test_fake_shapes(self):
        assert_fake_shapes(self, op_samples())

    def test_compile_traces_the_in_place_update(self):
        def layer(x, residual, w):
            y, s = tt.rmsnorm_add_fp8(x, residual, w)
            return y.float() * s[:, None]
        x, r, w = inputs(4, 128, 13)
        r_eager, r_comp = r.clone(), r.clone()
        want = layer(x, r_eager, w)
        got = torch.compile(layer, backend="aot_eager", fullgraph=True)(x, r_comp, w)
        torch.testing.assert_close(got, want)
        self.assertTrue(torch.equal(r_comp, r_eager), "the compiled graph keeps the residual's update")


PROBLEMS = ("t4096h8192_dynamic", "t1000h2049_dynamic", "t16h7168_static")
FALLBACK = "ROW_MODE=1,BLOCK=256,VEC_BYTES=16,CACHE_ROW=0,CACHE_HINT=1,MIN_BLOCKS=1"


@functools.lru_cache(maxsize=None)
def norm_fp8_bundle():
    """rmsnorm.fp8 and rmsnorm.fp8_static with the recipe's fallback config compiled (--compile-only)
    for PROBLEMS and given a synthetic result on a device named "FAKE GPU" (a made-up time: for
    selection only, never launched)."""
    return fake_bundle("norm_fp8", "recipes/rmsnorm/fp8.lua", "rmsnorm.fp8,rmsnorm.fp8_static", FALLBACK, PROBLEMS,
                       20000.0)


@needs_torch
class PlanTest(unittest.TestCase):
    """The plans a CUDA call would take, read with meta tensors (no GPU, no driver)."""

    def setUp(self):
        tt.use_bundle(norm_fp8_bundle(), no_device=True, arch="sm_90a", strict=False)

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def meta(self, *shape, dtype=None):
        return torch.empty(shape, dtype=dtype or torch.bfloat16, device="meta")

    def explain(self, T, H, scale=None, dtype=None, eps=1e-6):
        x = self.meta(T, H, dtype=dtype)
        return tt.explain("rmsnorm_add_fp8", x, self.meta(T, H, dtype=dtype), self.meta(H, dtype=dtype), eps, scale)

    def test_tuned_and_nearest(self):
        p = self.explain(4096, 8192)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", "t4096h8192_dynamic"))
        self.assertEqual(p.scalars, {"eps": 1e-6})
        self.assertEqual(p.tensor_names, ("x", "r", "w", "y", "h", "scale"))
        p = self.explain(3000, 5120, eps=1e-5)           # untuned: the portable entries serve it
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection_kind, "nearest")
        self.assertAlmostEqual(p.scalars["eps"], 1e-5)
        p = self.explain(16, 7168, scale=self.meta(1, dtype=torch.float32))
        self.assertEqual((p.selection_kind, p.selection.info.family), ("tuned", "rmsnorm.fp8_static"))

    def test_what_falls_back(self):
        p = self.explain(16, 4096, dtype=torch.float16)
        self.assertIsInstance(p, tt.Fallback)
        self.assertIn("f16 here", p.reason)


if __name__ == "__main__":
    unittest.main()
