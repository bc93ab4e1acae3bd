"""tunert.torch.swiglu_quant_fp8 on any CPU: the PyTorch path against a plain fp64 computation (group,
token and static scales, a partial last group, saturation, groups of zeros), its equality with
moe_layer_fp8's own quantization of the same h, argument errors, fake implementations, opcheck,
torch.compile tracing, and the plans (tuned, nearest, fallback) read through explain() with meta tensors
against a bundle of moe.swiglu_fp8 / moe.swiglu_fp8_static made here with synthetic times (no GPU)."""
import functools
import unittest

from common import HAVE_TORCH, assert_dequantized, assert_fake_shapes, fake_bundle, needs_torch, opcheck_all

if HAVE_TORCH:
    import torch
    import tunert
    import tunert.torch as tt
    from tunert.torch import _ops_moe_layer_fp8 as lf



def cdiv(a, b):
    return -(-a // b)


def plain(x, quant, scale=None):
    """h = silu(g) * u in fp64 from the bf16 inputs, and its scale per value ([T, N]) and as returned."""
    N = x.shape[-1] // 2
    g, u = x[:, :N].double(), x[:, N:].double()
    h = g / (1 + torch.exp(-g)) * u
    if quant == "static":
        return h, scale.double(), scale
    if quant == "token":
        s = (h.abs().amax(-1) / 448).clamp(min=1 / (448 * 512))
        return h, s[:, None], s
    s = torch.stack([(h[:, k:k + 128].abs().amax(-1) / 448).clamp(min=1 / (448 * 512)) for k in range(0, N, 128)], 1)
    return h, s.repeat_interleave(128, 1)[:, :N], s


def inputs(T, N, seed, std=2.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(T, 2 * N, generator=g) * std).bfloat16()


@needs_torch
class ReferenceTest(unittest.TestCase):
    def setUp(self):
        tt.use_bundle(None)
        tt.reset_stats()

    def test_group_scales(self):
        for T, N in ((7, 2048), (3, 1096), (1, 1000), (2, 8)):   # 1096, 1000, 8: a partial last group
            x = inputs(T, N, N)
            y, s = tt.swiglu_quant_fp8(x, "group")
            h, per, want_s = plain(x, "group")
            self.assertEqual((y.dtype, y.shape, s.dtype, s.shape), (torch.float8_e4m3fn, (T, N), torch.float32,
                                                                    (T, cdiv(N, 128))))
            torch.testing.assert_close(s.double(), want_s, rtol=1e-6, atol=0)
            for k in range(0, N, 128):   # each group's largest lands on 448
                self.assertTrue(bool((y.float()[:, k:k + 128].abs().amax(-1) == 448).all()), (T, N, k))
            assert_dequantized(self, y, s.double().repeat_interleave(128, 1)[:, :N], h)
        self.assertEqual(tt.stats()["swiglu_quant_fp8"]["cpu"], 4)

    def test_groups_differ(self):
        # the test can fail: one outlier in group 1 of row 0 sets that group's scale alone
        x = inputs(2, 512, 3)
        x[0, 200], x[0, 712] = 60.0, 8.0   # gate 60, up 8: h = 480, past the other groups' amax (~15 .. 50)
        y, s = tt.swiglu_quant_fp8(x, "group")
        self.assertGreater(float(s[0, 1]), 4 * float(s[0, [0, 2, 3]].max()))
        _, st = tt.swiglu_quant_fp8(x, "token")
        self.assertEqual(float(st[0]), float(s[0].max()))

    def test_token_scales(self):
        for T, N in ((5, 1536), (3, 1096)):
            x = inputs(T, N, N + 1)
            y, s = tt.swiglu_quant_fp8(x, "token")
            h, per, want_s = plain(x, "token")
            self.assertEqual((y.shape, s.shape), ((T, N), (T,)))
            torch.testing.assert_close(s.double(), want_s, rtol=1e-6, atol=0)
            self.assertTrue(bool((y.float().abs().amax(-1) == 448).all()), "each row's amax lands on 448")
            assert_dequantized(self, y, per, h)

    def test_static_saturates(self):
        x = inputs(8, 1024, 5)
        scale = torch.tensor([16 / 448])
        y, s = tt.swiglu_quant_fp8(x, "static", scale)
        self.assertIs(s, scale)
        h, per, _ = plain(x, "static", scale)
        q = h / per
        sat = q.abs() > 448
        self.assertTrue(bool(sat.any()), "the static scale is below some rows' amax")
        self.assertTrue(torch.equal(y.float()[sat], q[sat].sign().float() * 448))
        assert_dequantized(self, y, per, h.clamp(-448 * per, 448 * per))
        self.assertEqual(tt.stats()["swiglu_quant_fp8_static"]["cpu"], 1)

    def test_zeros_take_the_floor(self):
        x = inputs(2, 256, 7)
        x[0, :128] = 0      # row 0's first group: gate 0, silu 0
        x[1, 256:] = 0      # row 1: up 0 everywhere
        y, s = tt.swiglu_quant_fp8(x, "group")
        floor = torch.tensor(1 / (448 * 512), dtype=torch.float32).item()
        self.assertEqual((float(s[0, 0]), float(s[1, 0]), float(s[1, 1])), (floor,) * 3)
        self.assertGreater(float(s[0, 1]), floor)
        self.assertTrue(bool((y.float()[0, :128] == 0).all()) and bool((y.float()[1] == 0).all()))
        _, st = tt.swiglu_quant_fp8(x, "token")
        self.assertEqual(float(st[1]), floor)

    def test_leading_dims(self):
        x = inputs(6, 256, 9)
        for quant, lead_s in (("group", (2, 3, 2)), ("token", (2, 3))):
            y, s = tt.swiglu_quant_fp8(x.view(2, 3, 512), quant)
            self.assertEqual((y.shape, s.shape), ((2, 3, 256), lead_s))
            y2, s2 = tt.swiglu_quant_fp8(x, quant)
            self.assertTrue(torch.equal(y.view(6, 256).float(), y2.float()))
            self.assertTrue(torch.equal(s.reshape(s2.shape), s2))

    def test_the_layer_quantization(self):
        # moe_layer_fp8's rule: block = group, row = token, tensor = the batch's amax (exactly)
        x = inputs(9, 272, 11)
        h = torch.nn.functional.silu(x[:, :272].float()) * x[:, 272:].float()
        for mode, quant in (("block", "group"), ("row", "token")):
            y, s = tt.swiglu_quant_fp8(x, quant)
            y2, s2 = lf.quantize(h, mode)
            self.assertTrue(torch.equal(y.float(), y2.float()) and torch.equal(s, s2), mode)
        y, s = lf.swiglu_quantize(x, "tensor")
        y2, s2 = lf.quantize(h, "tensor")
        self.assertTrue(torch.equal(y.float(), y2.float()) and torch.equal(s, s2), "tensor")

    def test_vendor_entry_runs_the_peers_function(self):
        # a bundle's vendor entry "torch-compile" (the peer that beat the kernels) runs the same
        # function; on CPU it is the eager path, which must give the reference's values
        from tunert.torch import _ops_swiglu_fp8 as sg
        x, scale = inputs(5, 264, 12), torch.tensor([20 / 448])
        for quant, sc in (("group", None), ("token", None), ("static", scale)):
            ref = sg._problem(None, x, quant, sc)[3]
            y, s = ref.vendor_impls["torch-compile"]()
            y2, s2 = ref()
            self.assertTrue(torch.equal(y.float(), y2.float()) and torch.equal(s, s2), quant)

    def test_errors(self):
        x = inputs(2, 64, 1)
        with self.assertRaisesRegex(tunert.InvalidArgument, "quant"):
            tt.swiglu_quant_fp8(x, "block")
        with self.assertRaisesRegex(tunert.InvalidArgument, r"\[..., 2N\]"):
            tt.swiglu_quant_fp8(x[:, :127])
        with self.assertRaisesRegex(tunert.DTypeMismatch, "bfloat16"):
            tt.swiglu_quant_fp8(x.float())
        with self.assertRaisesRegex(tunert.InvalidArgument, "needs a scale"):
            tt.swiglu_quant_fp8(x, "static")
        with self.assertRaisesRegex(tunert.InvalidArgument, "pass no scale"):
            tt.swiglu_quant_fp8(x, "token", torch.ones(1))
        with self.assertRaisesRegex(tunert.DTypeMismatch, "float32"):
            tt.swiglu_quant_fp8(x, "static", torch.tensor([1.0], dtype=torch.float64))
        with self.assertRaisesRegex(tunert.InvalidArgument, "one element"):
            tt.swiglu_quant_fp8(x, "static", torch.ones(2))


def op_samples():
    x = inputs(5, 136, 13)
    return [(torch.ops.tunert.swiglu_quant_fp8.default, (x,), {}),
            (torch.ops.tunert.swiglu_quant_fp8.default, (x,), {"quant": "token"}),
            (torch.ops.tunert.swiglu_quant_fp8_static.default, (x, torch.tensor([0.02])), {})]


@needs_torch
class FakeAndOpcheckTest(unittest.TestCase):
    def test_opcheck_on_cpu(self):
        opcheck_all(self, op_samples())

    def test_fake_shapes(self):
        assert_fake_shapes(self, op_samples())

    def test_compile_traces_it(self):
        def dequant(x):
            y, s = tt.swiglu_quant_fp8(x, "group")
            return y.float() * s.repeat_interleave(128, 1)[:, :y.shape[1]]
        x = inputs(4, 256, 17)
        torch.testing.assert_close(torch.compile(dequant, backend="aot_eager", fullgraph=True)(x), dequant(x))


PROBLEMS = ("t512n2048_group", "t512n2048_token", "t1001n1000_static")
FALLBACK = "ROW_MODE=1,BLOCK=128,VEC_BYTES=16,LOADS=2,CACHE_ROW=0"


@functools.lru_cache(maxsize=None)
def swiglu_fp8_bundle():
    """moe.swiglu_fp8 and moe.swiglu_fp8_static with the recipe's fallback config compiled (--compile-only)
    for PROBLEMS and given a synthetic result on a device named "FAKE GPU" (a made-up time: for
    selection only, never launched)."""
    return fake_bundle("swiglu_fp8", "recipes/moe/swiglu_fp8.lua", "moe.swiglu_fp8,moe.swiglu_fp8_static", FALLBACK,
                       PROBLEMS, 20000.0)


@needs_torch
class PlanTest(unittest.TestCase):
    """The plans a CUDA call would take, read with meta tensors (no GPU, no driver)."""

    def setUp(self):
        tt.use_bundle(swiglu_fp8_bundle(), no_device=True, arch="sm_90a", strict=False)

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def explain(self, T, N, quant="group", scale=None, dtype=None):
        x = torch.empty(T, 2 * N, dtype=dtype or torch.bfloat16, device="meta")
        return tt.explain("swiglu_quant_fp8", x, quant, scale)

    def test_tuned_and_nearest(self):
        for quant in ("group", "token"):
            p = self.explain(512, 2048, quant)
            self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
            self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", f"t512n2048_{quant}"))
            self.assertEqual(p.tensor_names, ("x", "y", "scale"))
            p = self.explain(37, 7168, quant)       # untuned: the portable entries serve it
            self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
            self.assertEqual(p.selection_kind, "nearest")
        p = self.explain(1001, 1000, "static", torch.empty(1, device="meta"))
        self.assertEqual((p.selection_kind, p.selection.info.family), ("tuned", "moe.swiglu_fp8_static"))
        p = self.explain(3, 14336, "static", torch.empty(1, device="meta"))
        self.assertEqual((p.selection_kind, p.selection.info.family), ("nearest", "moe.swiglu_fp8_static"))

    def test_what_falls_back(self):
        p = self.explain(16, 1004)      # N % 8 != 0: outside the domain
        self.assertIsInstance(p, tt.Fallback)
        self.assertIn("domain", p.reason)


if __name__ == "__main__":
    unittest.main()
