"""tunert.torch's MoE layer on any CPU: grouped_swiglu and moe_layer against plain per-token formulas,
the routing and permutation helpers, the argument errors, fake implementations, opcheck,
torch.compile tracing, and the plans read through explain() with meta tensors."""
import functools
import unittest

from common import HAVE_TORCH, assert_fake_shapes, bundle, fake_bundle, needs_torch, opcheck_all

if HAVE_TORCH:
    import torch
    import torch.nn.functional as F
    import tunert
    import tunert.torch as tt
    from tunert.torch import _ops_moe_layer as ml


def swiglu_plain(a, w13, offs):
    """Each expert's rows on their own, fp32, from the formula."""
    I = w13.shape[1] // 2
    out = []
    for e, (lo, hi) in enumerate(zip(offs[:-1], offs[1:])):
        x = a[lo:hi].float()
        out.append(F.silu(x @ w13[e, :I].float().T) * (x @ w13[e, I:].float().T))
    return torch.cat(out)


def layer_plain(x, router_w, w13, w2, top_k, renormalize, scoring):
    """Token by token: its top_k experts' SwiGLU MLPs, weighted, in fp64."""
    I = w13.shape[1] // 2
    logits = x.double() @ router_w.double().T
    scores = logits.softmax(-1) if scoring == "softmax" else logits.sigmoid()
    y = torch.zeros(x.shape, dtype=torch.float64)
    for t in range(x.shape[0]):
        w, ids = scores[t].topk(top_k)
        if renormalize:
            w = w / w.sum()
        for wt, e in zip(w, ids):
            xt = x[t].double()
            h = F.silu(w13[e, :I].double() @ xt) * (w13[e, I:].double() @ xt)
            y[t] += wt * (w2[e].double() @ h)
    return y


def layer_args(T=12, H=32, I=24, E=6, seed=0, dtype=None):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H, generator=g)
    rw = torch.randn(E, H, generator=g)
    w13 = torch.randn(E, 2 * I, H, generator=g) / H ** 0.5
    w2 = torch.randn(E, H, I, generator=g) / I ** 0.5
    if dtype is not None:
        x, w13, w2 = x.to(dtype), w13.to(dtype), w2.to(dtype)
    return x, rw, w13, w2


SWIGLU_PROBLEM = "e128n1536k4096t512m1"   # Qwen3-235B's experts, 64 tokens top-8
SWIGLU_FALLBACK = "BLOCK_M=64,BLOCK_N=128,CONSUMERS=1,STAGES=4,WS=1,PERSISTENT=0,RASTER=1"


@functools.lru_cache(maxsize=None)
def swiglu_bundle():
    """moe.grouped_swiglu for SWIGLU_PROBLEM, for selection tests only: the recipe's fallback config
    compiled (--compile-only) and given a synthetic result on a device named "FAKE GPU" (a made-up
    time: never launch this bundle)."""
    return fake_bundle("swiglu_fake", "recipes/moe/swiglu.lua", "moe.grouped_swiglu", SWIGLU_FALLBACK,
                       (SWIGLU_PROBLEM,), 50000.0)


COMBINE_PROBLEM = "qwen3_t100h4096k8"
COMBINE_FALLBACK = "VEC_BYTES=16,BLOCK=128,TOKENS=1,VECS=2,LOADS=4"


@functools.lru_cache(maxsize=None)
def combine_bundle():
    """moe.combine for COMBINE_PROBLEM, for selection tests only: the recipe's fallback config
    compiled (--compile-only) with a synthetic result on "FAKE GPU" (never launch this bundle)."""
    return fake_bundle("combine_fake", "recipes/moe/combine.lua", "moe.combine", COMBINE_FALLBACK, (COMBINE_PROBLEM,),
                       20000.0)


def combine_args(T=9, H=16, k=3, E=5, seed=0, dtype=None):
    """(y, order, pos, weights) of a real routing: y [T * k, H] in expert order."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(T)])
    order, _ = ml.permute(ids, E)
    y = torch.randn(T * k, H, generator=g).to(dtype or torch.bfloat16)
    w = torch.rand(T, k, generator=g)
    return y, order, ml.inverse_order(order), w




def op_samples():
    x, rw, w13, w2 = layer_args(T=7, E=4)
    a = torch.randn(9, 32)
    offs = torch.tensor([0, 3, 3, 9, 9], dtype=torch.int32)
    y, _, pos, wts = combine_args(T=5, k=2)
    return [
        (torch.ops.tunert.grouped_swiglu.default, (a, w13, offs), {}),
        (torch.ops.tunert.moe_combine.default, (y, pos, wts), {}),
        (torch.ops.tunert.moe_layer.default, (x, rw, w13, w2, 2), {}),
        (torch.ops.tunert.moe_layer.default, (x, rw, w13, w2, 3), {"renormalize": False, "scoring": "sigmoid"}),
    ]


@needs_torch
class ReferenceTest(unittest.TestCase):
    """CPU tensors run the PyTorch reference: checked against plain formulas."""

    def setUp(self):
        tt.use_bundle(None)
        tt.reset_stats()

    def test_grouped_swiglu_with_empty_experts(self):
        torch.manual_seed(1)
        E, I, H = 5, 24, 32
        offs = [0, 4, 4, 11, 11, 20]                    # experts 1 and 3 have no rows
        a, w13 = torch.randn(20, H), torch.randn(E, 2 * I, H)
        h = tt.grouped_swiglu(a, w13, torch.tensor(offs, dtype=torch.int32))
        self.assertEqual(h.shape, (20, I))
        torch.testing.assert_close(h, swiglu_plain(a, w13, offs))
        # bf16: both projections in fp32, one rounding of silu(g) * u
        hb = tt.grouped_swiglu(a.bfloat16(), w13.bfloat16(), torch.tensor(offs, dtype=torch.int32))
        self.assertEqual(hb.dtype, torch.bfloat16)
        torch.testing.assert_close(hb, swiglu_plain(a.bfloat16(), w13.bfloat16(), offs).bfloat16(), atol=1e-6, rtol=2 ** -7)
        self.assertEqual(tt.stats()["grouped_swiglu"]["cpu"], 2)

    def test_route_and_permute(self):
        torch.manual_seed(2)
        x, rw = torch.randn(9, 16), torch.randn(5, 16)
        w, ids = ml.route(x, rw, 2)
        self.assertEqual((w.shape, w.dtype, ids.shape), ((9, 2), torch.float32, (9, 2)))
        torch.testing.assert_close(w.sum(-1), torch.ones(9))
        top = (x @ rw.T).softmax(-1).topk(2)
        torch.testing.assert_close(ids, top.indices)
        w, _ = ml.route(x, rw, 2, renormalize=False, scoring="sigmoid")
        torch.testing.assert_close(w, (x @ rw.T).sigmoid().topk(2).values)
        ids = torch.tensor([[3, 0], [0, 3], [1, 3], [4, 0]])
        order, offs = ml.permute(ids, 6)
        self.assertEqual(order.tolist(), [1, 2, 7, 4, 0, 3, 5, 6])   # stable: token order within an expert
        self.assertEqual((offs.dtype, offs.tolist()), (torch.int32, [0, 3, 4, 4, 7, 8, 8]))
        y = torch.arange(8.0)[:, None].expand(8, 3)                    # row r of the sorted order holds r
        out = ml.combine(y, order, torch.full((4, 2), 0.5), torch.float32)
        want = [(4 + 0) / 2, (1 + 5) / 2, (3 + 6) / 2, (7 + 2) / 2]    # each token's two sorted positions
        torch.testing.assert_close(out[:, 0], torch.tensor(want))

    def test_inverse_order(self):
        order = torch.tensor([1, 2, 7, 4, 0, 3, 5, 6])
        pos = ml.inverse_order(order)
        self.assertEqual((pos.dtype, pos.tolist()), (torch.int32, [4, 0, 1, 5, 3, 6, 7, 2]))
        self.assertEqual(pos[order].tolist(), list(range(8)))

    def test_combine_is_the_torch_combine(self):
        """moe_combine(y, pos, w) gives combine(y, order, w) bit for bit (the same fp32 products and
        sums, one rounding), and each element is the fp64 sum rounded once to bf16 or one ulp off."""
        for T, H, k in ((9, 16, 3), (1, 8, 1), (33, 24, 8)):
            with self.subTest(T=T, H=H, k=k):
                y, order, pos, w = combine_args(T, H, k, E=8, seed=T)
                out = tt.moe_combine(y, pos, w)
                self.assertEqual((out.shape, out.dtype), ((T, H), torch.bfloat16))
                self.assertTrue(torch.equal(out, ml.combine(y, order, w, torch.bfloat16)))
                exact = torch.zeros(T, H, dtype=torch.float64)
                for t in range(T):
                    for j in range(k):
                        exact[t] += w[t, j].double() * y[pos[t * k + j]].double()
                ulp = torch.finfo(torch.bfloat16).eps * exact.abs().clamp_min(2 ** -100)
                self.assertTrue(bool(((out.double() - exact).abs() <= ulp).all()))
        self.assertEqual(tt.stats()["moe_combine"]["cpu"], 3)
        # fp32 rows: the output in y's dtype
        y, order, pos, w = combine_args(dtype=torch.float32)
        torch.testing.assert_close(tt.moe_combine(y, pos, w), ml.combine(y, order, w, torch.float32))

    def test_combine_errors(self):
        y, _, pos, w = combine_args(T=4, k=2)
        with self.assertRaisesRegex(tunert.InvalidArgument, "pos \(7,\): want \[8\]"):
            tt.moe_combine(y, pos[:7], w)
        with self.assertRaisesRegex(tunert.InvalidArgument, "want y \[T \* top_k, H\]"):
            tt.moe_combine(y[:6], pos, w)
        with self.assertRaisesRegex(tunert.DTypeMismatch, "pos is torch.int64"):
            tt.moe_combine(y, pos.long(), w)
        with self.assertRaisesRegex(tunert.DTypeMismatch, "weights is torch.bfloat16"):
            tt.moe_combine(y, pos, w.bfloat16())

    def test_layer_matches_the_formula(self):
        for top_k, renormalize, scoring in ((2, True, "softmax"), (1, False, "softmax"), (3, True, "sigmoid"),
                                            (6, False, "sigmoid")):
            with self.subTest(top_k=top_k, renormalize=renormalize, scoring=scoring):
                x, rw, w13, w2 = layer_args(seed=top_k)
                y = tt.moe_layer(x, rw, w13, w2, top_k, renormalize=renormalize, scoring=scoring)
                self.assertEqual((y.shape, y.dtype), (x.shape, x.dtype))
                want = layer_plain(x, rw, w13, w2, top_k, renormalize, scoring)
                torch.testing.assert_close(y.double(), want, atol=1e-5, rtol=1e-4)
                torch.testing.assert_close(ml.moe_layer_torch(x, rw, w13, w2, top_k, renormalize, scoring), y)
        self.assertEqual(tt.stats()["grouped_mm"]["cpu"], 4)
        self.assertEqual(tt.stats()["moe_combine"]["cpu"], 4)   # the layer combines through the op

    def test_layer_bf16_and_no_tokens(self):
        x, rw, w13, w2 = layer_args(dtype=torch.bfloat16, seed=5)
        y = tt.moe_layer(x, rw, w13, w2, 2)
        self.assertEqual(y.dtype, torch.bfloat16)
        want = layer_plain(x, rw, w13, w2, 2, True, "softmax")
        torch.testing.assert_close(y.double(), want, atol=3e-2, rtol=3e-2)
        y0 = tt.moe_layer(x[:0], rw, w13, w2, 2)
        self.assertEqual(y0.shape, (0, 32))

    def test_errors(self):
        x, rw, w13, w2 = layer_args(E=4)
        with self.assertRaisesRegex(tunert.InvalidArgument, "top_k 5"):
            tt.moe_layer(x, rw, w13, w2, 5)
        with self.assertRaisesRegex(tunert.InvalidArgument, "top_k 0"):
            tt.moe_layer(x, rw, w13, w2, 0)
        with self.assertRaisesRegex(tunert.InvalidArgument, "scoring 'tanh'"):
            tt.moe_layer(x, rw, w13, w2, 2, scoring="tanh")
        with self.assertRaisesRegex(tunert.InvalidArgument, "want x \\[T, H\\]"):
            tt.moe_layer(x, rw, w13, w2[:, :, :-1], 2)                  # w2 [E, H, I - 1]
        with self.assertRaisesRegex(tunert.InvalidArgument, "want x \\[T, H\\]"):
            tt.moe_layer(x, rw[:3], w13, w2, 2)                         # the router's experts
        with self.assertRaises(tunert.DTypeMismatch):
            tt.moe_layer(x, rw, w13.bfloat16(), w2, 2)
        a = torch.randn(10, 32)
        offs = torch.tensor([0, 2, 5, 7, 10], dtype=torch.int32)
        with self.assertRaisesRegex(tunert.InvalidArgument, "w13 \\[E, 2I, H\\]"):
            tt.grouped_swiglu(a, torch.randn(4, 7, 32), offs)            # odd: no gate/up halves
        with self.assertRaisesRegex(tunert.InvalidArgument, "want \\[5\\]"):
            tt.grouped_swiglu(a, w13, offs[:4])
        with self.assertRaises(tunert.DTypeMismatch):
            tt.grouped_swiglu(a, w13, offs.long())


@needs_torch
class FakeAndOpcheckTest(unittest.TestCase):
    def test_opcheck_on_cpu(self):
        opcheck_all(self, op_samples())

    def test_fake_shapes(self):
        assert_fake_shapes(self, op_samples())

    def test_compile_traces_the_layer(self):
        def block(x, rw, w13, w2):
            return x + tt.moe_layer(F.rms_norm(x, (x.shape[1],)), rw, w13, w2, 2)
        args = layer_args()
        compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(*args), block(*args))
        # the torch layer itself compiles (the benchmark's torch.compile baseline)
        torch.testing.assert_close(torch.compile(ml.moe_layer_torch, backend="aot_eager")(*args, 2),
                                   ml.moe_layer_torch(*args, 2))


@needs_torch
class PlanTest(unittest.TestCase):
    """The plans a CUDA call would take, read with meta tensors (no GPU, no driver)."""

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def meta(self, *shape, dtype=None):
        return torch.empty(shape, dtype=dtype or torch.bfloat16, device="meta")

    def test_swiglu_needs_its_family(self):
        a, w13, offs = self.meta(512, 4096), self.meta(128, 3072, 4096), self.meta(129, dtype=torch.int32)
        p = tt.explain("grouped_swiglu", a, w13, offs)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("no bundle", p.reason)
        # a bundle of the plain grouped GEMM only: the swiglu family is missing, the down GEMM is served
        tt.use_bundle(bundle("moe"), no_device=True, arch="sm_90a", strict=False)
        p = tt.explain("grouped_swiglu", a, w13, offs)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("no family moe.grouped_swiglu in the bundle", p.reason)
        p = tt.explain("grouped_mm", self.meta(512, 1536), self.meta(128, 4096, 1536), offs)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection.info.family, "moe.grouped")

    def test_swiglu_binds_the_recipes_arguments(self):
        tt.use_bundle(swiglu_bundle(), no_device=True, arch="sm_90a", strict=False)
        a, w13, offs = self.meta(512, 4096), self.meta(128, 3072, 4096), self.meta(129, dtype=torch.int32)
        p = tt.explain("grouped_swiglu", a, w13, offs)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", SWIGLU_PROBLEM))
        self.assertEqual(sorted(p.tensor_names), ["a", "h", "offsets", "w"])
        self.assertEqual(p.selection.dims["N"], 1536)
        # every field is an expression: the entry serves other shapes of the domain (Mixtral's experts)
        p = tt.explain("grouped_swiglu", self.meta(32, 4096), self.meta(8, 28672, 4096), self.meta(9, dtype=torch.int32))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection_kind, "nearest")
        self.assertEqual((p.selection.dims["E"], p.selection.dims["N"], p.selection.dims["T"]), (8, 14336, 32))
        # outside the domain (hidden under 64: the TMA boxes are 64 wide), and another dtype: PyTorch
        p = tt.explain("grouped_swiglu", self.meta(32, 48), self.meta(8, 256, 48), self.meta(9, dtype=torch.int32))
        self.assertEqual(p.kind, "fallback")
        self.assertIn("domain", p.reason)
        p = tt.explain("grouped_swiglu", a.half(), w13.half(), offs)
        self.assertIn("'a' is bf16 in the bundle, f16 here", p.reason)

    def test_combine_needs_its_family(self):
        y, pos, w = self.meta(32768, 4096), self.meta(32768, dtype=torch.int32), self.meta(4096, 8, dtype=torch.float32)
        p = tt.explain("moe_combine", y, pos, w)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("no bundle", p.reason)
        tt.use_bundle(bundle("moe"), no_device=True, arch="sm_90a", strict=False)
        p = tt.explain("moe_combine", y, pos, w)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("no family moe.combine in the bundle", p.reason)

    def test_combine_binds_the_recipes_arguments(self):
        tt.use_bundle(combine_bundle(), no_device=True, arch="sm_90a", strict=False)
        i32, f32 = torch.int32, torch.float32
        p = tt.explain("moe_combine", self.meta(800, 4096), self.meta(800, dtype=i32), self.meta(100, 8, dtype=f32))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", COMBINE_PROBLEM))
        self.assertEqual(sorted(p.tensor_names), ["out", "pos", "weights", "y"])
        # every field is an expression: any T, H and top_k of the domain (Mixtral's top-2 at 3 tokens)
        p = tt.explain("moe_combine", self.meta(6, 4096), self.meta(6, dtype=i32), self.meta(3, 2, dtype=f32))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection_kind, "nearest")
        self.assertEqual((p.selection.dims["T"], p.selection.dims["H"], p.selection.dims["top_k"]), (3, 4096, 2))
        # H no multiple of 8 (outside the domain), and fp16 rows: PyTorch
        p = tt.explain("moe_combine", self.meta(6, 4100), self.meta(6, dtype=i32), self.meta(3, 2, dtype=f32))
        self.assertEqual(p.kind, "fallback")
        self.assertIn("domain", p.reason)
        p = tt.explain("moe_combine", self.meta(6, 4096).half(), self.meta(6, dtype=i32), self.meta(3, 2, dtype=f32))
        self.assertIn("'y' is bf16 in the bundle, f16 here", p.reason)


if __name__ == "__main__":
    unittest.main()


@needs_torch
class VendorImplTest(unittest.TestCase):
    """A vendor entry runs the implementation whose measurement earned it (_ops._vendor_or_reference)."""

    class _Sel:
        def __init__(self, vendor):
            self.info = type("Info", (), {"vendor": vendor})()

    def reference(self):
        def ref():
            return "eager"
        ref.vendor_impls = {"torch-compile": lambda: "compiled"}
        return ref

    def test_vendor_entry_runs_its_implementation(self):
        from tunert.torch import _ops, _state
        p = _state.Fallback("vendor", "chose torch-compile", self._Sel("torch-compile"))
        self.assertEqual(_ops._vendor_or_reference(p, self.reference()), "compiled")

    def test_other_vendors_and_fallbacks_run_the_reference(self):
        from tunert.torch import _ops, _state
        ref = self.reference()
        self.assertEqual(_ops._vendor_or_reference(_state.Fallback("vendor", "x", self._Sel("cublas-loop")), ref), "eager")
        self.assertEqual(_ops._vendor_or_reference(_state.Fallback("fallback", "no entry"), ref), "eager")
        self.assertEqual(_ops._vendor_or_reference(_state.Fallback("vendor", "x", self._Sel("torch-compile")),
                                                   lambda: "plain"), "plain")

    def test_swiglu_compiled_is_the_reference_math(self):
        g = torch.Generator().manual_seed(3)
        E, I, H, T = 3, 8, 16, 10
        a = torch.randn(T, H, generator=g)
        w13 = torch.randn(E, 2 * I, H, generator=g)
        offsets = torch.tensor([0, 4, 4, T], dtype=torch.int32)
        # on the CPU the vendor implementation is the reference (no compile)
        self.assertTrue(torch.equal(ml._swiglu_compiled(a, w13, offsets), ml._swiglu_ref(a, w13, offsets)))
