"""tunert.torch's FP8 MoE grouped GEMM on any CPU: grouped_scaled_mm and grouped_scaled_mm_masked
against a float64 computation from the kernel's formula (every scaling, both layouts, empty experts,
the tail N 1040, K 1072, masked padding), the argument errors, fake implementations, opcheck,
torch.compile tracing, and the plans read through explain() with meta tensors against a bundle of
compiled variants with synthetic results (no GPU, no driver)."""
import functools
import unittest

from common import HAVE_TORCH, assert_fake_shapes, bundle, fake_bundle, needs_torch

if HAVE_TORCH:
    import torch
    import tunert
    import tunert.torch as tt
    from tunert.torch import _ops, _ops_moe_fp8, _state


MODES = ("tensor", "row", "block")


def cdiv(x, y):
    return -(-x // y)


def fp8(g, *shape):
    return torch.randn(*shape, generator=g).to(torch.float8_e4m3fn)


def scales(g, mode, E, N, K, rows, masked_cap=None):
    """(scale_a, scale_w) of `mode` drawn as the recipe draws them (U(1/64, 4) in block mode, else
    U(0.5, 2); scale_w again / sqrt(K)); masked_cap: scale_a as [E, cap, ...] instead of [rows, ...]."""
    lo, hi = (1 / 64, 4.0) if mode == "block" else (0.5, 2.0)

    def u(*shape):
        return torch.rand(*shape, generator=g) * (hi - lo) + lo
    kb, nb = cdiv(K, 128), cdiv(N, 128)
    lead = (rows,) if masked_cap is None else (E, masked_cap)
    if mode == "tensor":
        return u(1), u(E) / K ** 0.5
    if mode == "row":
        return u(*lead), u(E, N) / K ** 0.5
    return u(*lead, kb), u(E, nb, kb) / K ** 0.5


def expert_plain(a, w, sa, sw, mode):
    """c [m, N] in float64 from the kernel's formula: per 128-wide K block the exact sum of products,
    times sa(row, kb) * sw(n, kb) in block mode, the scales applied to the whole sum otherwise.
    a [m, K], w [N, K] (one expert's), sa the rows' scale_a (tensor: one element), sw the expert's."""
    m, K = a.shape
    N = w.shape[0]
    c = torch.zeros(m, N, dtype=torch.float64)
    nblk = torch.arange(N) // 128                         # each output column's 128-row weight block
    for k0 in range(0, K, 128):
        part = a[:, k0:k0 + 128].double() @ w[:, k0:k0 + 128].double().T
        if mode == "block":
            part = part * sa[:, k0 // 128].double()[:, None] * sw[nblk, k0 // 128].double()[None, :]
        c += part
    if mode == "tensor":
        return c * float(sa.reshape(())) * float(sw)
    if mode == "row":
        return c * sa.double()[:, None] * sw.double()[None, :]
    return c


def contiguous_plain(a, w, offs, sa, sw, mode):
    c = torch.zeros(a.shape[0], w.shape[1], dtype=torch.float64)
    for e, (lo, hi) in enumerate(zip(offs[:-1], offs[1:])):
        if hi > lo:
            c[lo:hi] = expert_plain(a[lo:hi], w[e], sa if mode == "tensor" else sa[lo:hi], sw[e], mode)
    return c


def masked_plain(a, w, counts, sa, sw, mode):
    E, cap, K = a.shape
    c = torch.zeros(E, cap, w.shape[1], dtype=torch.float64)
    if mode != "tensor":
        sa = sa.reshape((E, cap) + ((cdiv(K, 128),) if mode == "block" else ()))
    for e, n in enumerate(counts):
        n = max(0, min(n, cap))
        if n:
            c[e, :n] = expert_plain(a[e, :n], w[e], sa if mode == "tensor" else sa[e, :n], sw[e], mode)
    return c


def assert_one_rounding(tc, c, ref):
    """c (bf16) is ref (float64) rounded once: within half a bf16 ulp (2^-8 relative) plus the fp32
    sums' error."""
    tc.assertEqual(c.dtype, torch.bfloat16)
    torch.testing.assert_close(c.double(), ref, atol=1e-4, rtol=2 ** -8)


OPCHECK_UTILS = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def op_samples():
    g = torch.Generator().manual_seed(0)
    E, N, K, T, cap = 3, 32, 144, 10, 5           # K 144: a partial second K block
    a, w, am = fp8(g, T, K), fp8(g, E, N, K), fp8(g, E, cap, K)
    offs = torch.tensor([0, 2, 2, T], dtype=torch.int32)
    counts = torch.tensor([0, cap, 2], dtype=torch.int32)
    c_op, m_op = torch.ops.tunert.grouped_scaled_mm.default, torch.ops.tunert.grouped_scaled_mm_masked.default
    out = []
    for mode in MODES:
        out.append((c_op, (a, w, offs) + scales(g, mode, E, N, K, T), {}))
        out.append((m_op, (am, w, counts) + scales(g, mode, E, N, K, E * cap), {}))
    out.append((m_op, (am, w, counts) + scales(g, "block", E, N, K, E * cap, masked_cap=cap), {"mode": "block"}))
    out.append((c_op, (a, w, offs, torch.tensor(0.5), torch.rand(E, generator=g)), {"out_dtype": torch.float32}))
    return out


@needs_torch
class ReferenceTest(unittest.TestCase):
    """CPU tensors run the PyTorch path: checked against the float64 formula."""

    def setUp(self):
        tt.use_bundle(None)
        tt.reset_stats()

    def test_contiguous_every_mode(self):
        # the recipe's tail: N and K no multiple of 128 (partial last scale blocks), an empty expert
        E, N, K = 5, 1040, 1072
        offs = [0, 7, 7, 40, 41, 60]                  # expert 1 has no rows, expert 3 one
        T = offs[-1]
        for mode in MODES:
            with self.subTest(mode=mode):
                g = torch.Generator().manual_seed(MODES.index(mode))
                a, w = fp8(g, T, K), fp8(g, E, N, K)
                sa, sw = scales(g, mode, E, N, K, T)
                o = torch.tensor(offs, dtype=torch.int32)
                c = tt.grouped_scaled_mm(a, w, o, sa, sw)
                self.assertEqual(c.shape, (T, N))
                ref = contiguous_plain(a, w, offs, sa, sw, mode)
                assert_one_rounding(self, c, ref)
                self.assertTrue(torch.equal(tt.grouped_scaled_mm(a, w, o, sa, sw, mode=mode), c))
                c32 = tt.grouped_scaled_mm(a, w, o, sa, sw, out_dtype=torch.float32)
                self.assertEqual(c32.dtype, torch.float32)
                torch.testing.assert_close(c32.double(), ref, atol=1e-4, rtol=1e-5)
        self.assertEqual(tt.stats()["grouped_scaled_mm"]["cpu"], 9)

    def test_masked_every_mode(self):
        E, cap, N, K = 5, 24, 1040, 1072
        counts = [24, 0, 7, 1, 13]                    # a full expert, an empty one, padding in the rest
        for mode in MODES:
            with self.subTest(mode=mode):
                g = torch.Generator().manual_seed(10 + MODES.index(mode))
                a, w = fp8(g, E, cap, K), fp8(g, E, N, K)
                sa, sw = scales(g, mode, E, N, K, E * cap)
                pad = torch.arange(cap)[None, :] >= torch.tensor(counts)[:, None]
                # padding that would poison any product it entered: NaN activations, infinite scales
                a[pad] = torch.full((int(pad.sum()), K), float("nan")).to(torch.float8_e4m3fn)
                if mode != "tensor":
                    sa.view((E, cap) + sa.shape[1:])[pad] = float("inf")
                cn = torch.tensor(counts, dtype=torch.int32)
                c = tt.grouped_scaled_mm_masked(a, w, cn, sa, sw)
                self.assertEqual(c.shape, (E, cap, N))
                self.assertTrue(bool((c[pad] == 0).all()), "rows past a count are zeros")
                assert_one_rounding(self, c, masked_plain(a, w, counts, sa, sw, mode))
                if mode != "tensor":   # scale_a with a's leading dims [E, cap, ...] reads the same
                    sa3 = sa.reshape((E, cap) + sa.shape[1:])
                    self.assertTrue(torch.equal(tt.grouped_scaled_mm_masked(a, w, cn, sa3, sw), c))
        self.assertEqual(tt.stats()["grouped_scaled_mm_masked"]["cpu"], 5)

    def test_masked_counts_clamped_as_the_kernel_takes_them(self):
        g = torch.Generator().manual_seed(20)
        E, cap, N, K = 3, 6, 16, 128
        a, w = fp8(g, E, cap, K), fp8(g, E, N, K)
        sa, sw = scales(g, "row", E, N, K, E * cap)
        c = tt.grouped_scaled_mm_masked(a, w, torch.tensor([9, -2, 3], dtype=torch.int32), sa, sw)
        want = tt.grouped_scaled_mm_masked(a, w, torch.tensor([cap, 0, 3], dtype=torch.int32), sa, sw)
        self.assertTrue(torch.equal(c, want))
        self.assertGreater(c[0, cap - 1].abs().max().item(), 0.0)

    def test_each_scale_block_reaches_only_its_outputs(self):
        # the last, partial blocks of the tail: doubling the scale of weight block (expert 2, the last
        # 16 columns) or of one row's last K block changes exactly those outputs, by about 2x where the
        # block dominates
        g = torch.Generator().manual_seed(30)
        E, N, K = 3, 1040, 1072
        offs = torch.tensor([0, 5, 9, 15], dtype=torch.int32)
        a, w = fp8(g, 15, K), fp8(g, E, N, K)
        sa, sw = scales(g, "block", E, N, K, 15)
        c0 = tt.grouped_scaled_mm(a, w, offs, sa, sw)
        sw2 = sw.clone()
        sw2[2, -1, :] *= 2
        c1 = tt.grouped_scaled_mm(a, w, offs, sa, sw2)
        changed = (c1 != c0)
        self.assertFalse(bool(changed[:9].any()), "other experts' rows")
        self.assertFalse(bool(changed[:, :1024].any()), "other weight blocks' columns")
        self.assertTrue(bool(changed[9:, 1024:].any()))
        torch.testing.assert_close(c1[9:, 1024:].float(), 2 * c0[9:, 1024:].float(), atol=1e-2, rtol=2 ** -7)
        sa2 = sa.clone()
        sa2[3, -1] *= 1024                             # K 1024 .. 1071 of row 3 dominates its sums
        c2 = tt.grouped_scaled_mm(a, w, offs, sa2, sw)
        changed = (c2 != c0)
        self.assertTrue(bool(changed[3].any()))
        changed[3] = False
        self.assertFalse(bool(changed.any()), "only row 3")
        assert_one_rounding(self, c2, contiguous_plain(a, w, offs.tolist(), sa2, sw, "block"))

    def test_no_rows(self):
        g = torch.Generator().manual_seed(40)
        E, N, K = 2, 16, 128
        w = fp8(g, E, N, K)
        c = tt.grouped_scaled_mm(fp8(g, 0, K), w, torch.zeros(E + 1, dtype=torch.int32), torch.ones(0, 1),
                                 torch.ones(E, 1, 1))
        self.assertEqual((c.shape, c.dtype), ((0, N), torch.bfloat16))

    def test_errors(self):
        g = torch.Generator().manual_seed(50)
        E, N, K, T, cap = 3, 32, 256, 10, 4
        a, w, am = fp8(g, T, K), fp8(g, E, N, K), fp8(g, E, cap, K)
        offs = torch.tensor([0, 2, 5, T], dtype=torch.int32)
        counts = torch.tensor([1, 4, 0], dtype=torch.int32)
        sa, sw = scales(g, "row", E, N, K, T)
        sam, _ = scales(g, "row", E, N, K, E * cap)
        mm, masked = tt.grouped_scaled_mm, tt.grouped_scaled_mm_masked
        with self.assertRaisesRegex(tunert.DTypeMismatch, "a is torch.float32, want torch.float8_e4m3fn"):
            mm(a.float(), w, offs, sa, sw)
        with self.assertRaisesRegex(tunert.DTypeMismatch, "w is torch.bfloat16"):
            mm(a, w.bfloat16(), offs, sa, sw)
        with self.assertRaisesRegex(tunert.DTypeMismatch, "offsets is torch.int64"):
            mm(a, w, offs.long(), sa, sw)
        with self.assertRaisesRegex(tunert.DTypeMismatch, "counts is torch.int64"):
            masked(am, w, counts.long(), sam, sw)
        with self.assertRaisesRegex(tunert.InvalidArgument, r"offsets \(3,\): want \[4\]"):
            mm(a, w, offs[:3], sa, sw)
        with self.assertRaisesRegex(tunert.InvalidArgument, r"counts \(4,\): want \[3\]"):
            masked(am, w, torch.zeros(4, dtype=torch.int32), sam, sw)
        with self.assertRaisesRegex(tunert.DTypeMismatch, "scale_a is torch.float64, want torch.float32"):
            mm(a, w, offs, sa.double(), sw)
        with self.assertRaisesRegex(tunert.DTypeMismatch, "scale_w is torch.bfloat16"):
            mm(a, w, offs, sa, sw.bfloat16())
        with self.assertRaisesRegex(tunert.ShapeMismatch, r"want a \[T, K\], w \[E, N, K\]"):
            mm(a, fp8(g, E, N, 128), offs, sa, sw)                      # K differs
        with self.assertRaisesRegex(tunert.ShapeMismatch, r"want a \[E, cap, K\]"):
            masked(fp8(g, 2, cap, K), w, counts, sam, sw)               # E differs
        with self.assertRaisesRegex(tunert.ShapeMismatch, r"want a \[E, cap, K\]"):
            masked(a, w, counts, sa, sw)                                 # a 2-D
        # the kernel's limits hold on every device
        for shape, what in (((257, 16, 128), "E 257 not in 1 .. 256"), ((2, 24, 128), "N 24 not"),
                            ((2, 0, 128), "N 0 not"), ((2, 16, 64), "K 64 not"), ((2, 16, 136), "K 136 not")):
            with self.subTest(w=shape):
                e, n, k = shape
                with self.assertRaisesRegex(tunert.InvalidArgument, what):
                    mm(fp8(g, 4, k), fp8(g, *shape), torch.tensor([0] * e + [4], dtype=torch.int32),
                       torch.ones(1), torch.ones(e))
        # scale shapes
        with self.assertRaisesRegex(tunert.ShapeMismatch, "no scaling mode has these shapes"):
            mm(a, w, offs, sa, sw[0])                                    # per-token a, one weight vector
        with self.assertRaisesRegex(tunert.ShapeMismatch, r"tensor: scale_a \(\) or \(1,\), scale_w \(3,\)"):
            mm(a, w, offs, torch.ones(1), torch.ones(1))                 # one weight scale for all experts
        with self.assertRaisesRegex(tunert.ShapeMismatch, "mode 'block'"):
            mm(a, w, offs, sa, sw, mode="block")
        with self.assertRaisesRegex(tunert.ShapeMismatch, "no scaling mode"):
            mm(a, w, offs, torch.ones(T, 2), torch.ones(E, 0, 2))        # N blocks rounded down
        with self.assertRaisesRegex(tunert.ShapeMismatch, "no scaling mode"):
            mm(a, w, offs, torch.ones(T, 2), torch.ones(E * 1 * 2))      # flat block scales
        with self.assertRaisesRegex(tunert.ShapeMismatch, "no scaling mode"):
            masked(am, w, counts, sa, sw)                                # T rows, not E * cap
        with self.assertRaisesRegex(tunert.InvalidArgument, "mode 'rows'"):
            mm(a, w, offs, sa, sw, mode="rows")
        # devices: a call with a meta tensor dispatches to the fake implementation, so the check is read
        # through explain, which runs the same checks as a CUDA call
        with self.assertRaisesRegex(tunert.DeviceMismatch, "scale_w on meta"):
            tt.explain("grouped_scaled_mm", a, w, offs, sa, sw.to("meta"))
        with self.assertRaisesRegex(tunert.DeviceMismatch, "w on meta"):
            tt.explain("grouped_scaled_mm", a, w.to("meta"), offs, sa, sw)
        with self.assertRaisesRegex(tunert.DeviceMismatch, "counts on meta"):
            tt.explain("grouped_scaled_mm_masked", am, w, counts.to("meta"), sam, sw)
        # every one of them is the package's argument error and a ValueError
        with self.assertRaises(ValueError):
            mm(a, w, offs, sa, sw, mode="rows")
        self.assertNotIn("grouped_scaled_mm", tt.stats())               # nothing ran


@needs_torch
class FakeAndOpcheckTest(unittest.TestCase):
    def test_opcheck_on_cpu(self):
        # opcheck's test_schema compares the inputs before and after with allclose, which CPU torch does
        # not have for float8: the same check (no input changed, as mutates_args=() declares) on the bits
        for op, args, kwargs in op_samples():
            with self.subTest(op=str(op), shapes=[tuple(x.shape) for x in args[3:5]], kwargs=sorted(kwargs)):
                torch.library.opcheck(op, args, kwargs, test_utils=OPCHECK_UTILS)
                before = [x.clone() for x in args]
                op(*args, **kwargs)
                for x, y in zip(args, before):
                    self.assertTrue(torch.equal(x.view(torch.uint8) if x.element_size() == 1 else x,
                                                y.view(torch.uint8) if y.element_size() == 1 else y))

    def test_fake_shapes(self):
        assert_fake_shapes(self, op_samples())

    def test_compile_traces_the_ops(self):
        def experts(a, w, offs, sa, sw, am, counts, sam):
            return (tt.grouped_scaled_mm(a, w, offs, sa, sw).float().sum()
                    + tt.grouped_scaled_mm_masked(am, w, counts, sam, sw).float().sum())
        g = torch.Generator().manual_seed(60)
        E, N, K, T, cap = 3, 32, 256, 10, 4
        sa, sw = scales(g, "block", E, N, K, T)
        sam, _ = scales(g, "block", E, N, K, E * cap, masked_cap=cap)
        args = (fp8(g, T, K), fp8(g, E, N, K), torch.tensor([0, 4, 4, T], dtype=torch.int32), sa, sw,
                fp8(g, E, cap, K), torch.tensor([2, 0, 4], dtype=torch.int32), sam)
        compiled = torch.compile(experts, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(*args), experts(*args))


# compiled with the recipe's fallback config (one warpgroup of 64 x 128 tiles), synthetic results
FALLBACK = "BLOCK_M=64,BLOCK_N=128,CONSUMERS=1,STAGES=4,FAST_ACCUM=0,PART_BUFFERS=1,PERSISTENT=0,RASTER=1,RING_POS=0"
PROBLEMS = ("e8n4096k14336t32m1_row", "e8n1040k1072t1000m0_block",         # Mixtral down at decode; the tail
            "e256n4096k7168cap16m1_block", "e8n1040k1072cap300m0_tensor")    # DeepSeek-V3 masked decode; the tail


@functools.lru_cache(maxsize=None)
def fp8_moe_bundle():
    """moe.grouped_fp8 and moe.grouped_fp8_masked for PROBLEMS, for selection tests only: FALLBACK
    compiled (--compile-only) and given a synthetic result on a device named "FAKE GPU" (a made-up
    time: never launch this bundle). The scaling is a define: only the scalings of PROBLEMS have
    entries (contiguous: row and block; masked: block and tensor)."""
    return fake_bundle("moe_fp8_fake", "recipes/moe/grouped_fp8.lua", "moe.grouped_fp8,moe.grouped_fp8_masked",
                       FALLBACK, PROBLEMS, 50000.0)


def check_launch(tc, plan, tensors):
    """The op's tensors (CPU, re-labelled as CUDA at their addresses and strides by fake_dlpack) pass
    every launch check of the plan's selection, up to the missing driver."""
    from fake_dlpack import FakeTensor
    names = {torch.bfloat16: "bf16", torch.int32: "i32", torch.float32: "f32", torch.float8_e4m3fn: "e4m3"}
    args = {n: FakeTensor(tuple(tensors[n].shape), names[tensors[n].dtype], address=tensors[n].data_ptr(),
                          strides=tensors[n].stride()) for n in plan.tensor_names}
    args.update(plan.scalars)
    with tc.assertRaises(tunert.NoDriver):
        plan.selection.launch(args, strided=plan.strided, stream=0)


@needs_torch
class PlanTest(unittest.TestCase):
    """The plans a CUDA call would take, read with meta tensors (no GPU, no driver)."""
    e4, f32, i32 = (torch.float8_e4m3fn, torch.float32, torch.int32) if HAVE_TORCH else (None,) * 3

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def meta(self, *shape, dtype=None):
        return torch.empty(shape, dtype=dtype or self.f32, device="meta")

    def contiguous(self, E, N, K, T, mode):
        kb, nb = cdiv(K, 128), cdiv(N, 128)
        sa, sw = {"tensor": ((1,), (E,)), "row": ((T,), (E, N)), "block": ((T, kb), (E, nb, kb))}[mode]
        return (self.meta(T, K, dtype=self.e4), self.meta(E, N, K, dtype=self.e4), self.meta(E + 1, dtype=self.i32),
                self.meta(*sa), self.meta(*sw))

    def masked(self, E, N, K, cap, mode):
        kb, nb = cdiv(K, 128), cdiv(N, 128)
        sa, sw = {"tensor": ((), (E,)), "row": ((E, cap), (E, N)), "block": ((E, cap, kb), (E, nb, kb))}[mode]
        return (self.meta(E, cap, K, dtype=self.e4), self.meta(E, N, K, dtype=self.e4), self.meta(E, dtype=self.i32),
                self.meta(*sa), self.meta(*sw))

    def test_needs_the_families(self):
        args = self.contiguous(8, 4096, 14336, 32, "row")
        p = tt.explain("grouped_scaled_mm", *args)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("no bundle", p.reason)
        tt.use_bundle(bundle("moe"), no_device=True, arch="sm_90a", strict=False)   # the bf16 grouped GEMM only
        p = tt.explain("grouped_scaled_mm", *args)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("no family moe.grouped_fp8 in the bundle", p.reason)
        p = tt.explain("grouped_scaled_mm_masked", *self.masked(8, 4096, 14336, 16, "row"))
        self.assertIn("no family moe.grouped_fp8_masked in the bundle", p.reason)

    def test_contiguous(self):
        tt.use_bundle(fp8_moe_bundle(), no_device=True, arch="sm_90a", strict=False)
        p = tt.explain("grouped_scaled_mm", *self.contiguous(8, 4096, 14336, 32, "row"))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", PROBLEMS[0]))
        self.assertEqual(sorted(p.tensor_names), ["a", "c", "offsets", "scale_a", "scale_w", "w"])
        self.assertEqual(p.slices, {})                # the scales flattened to the recipe's element counts
        self.assertEqual(p.selection.dims["scale"], "row")
        # the tail was tuned with min_tokens 0: the op's second candidate, the exact entry
        p = tt.explain("grouped_scaled_mm", *self.contiguous(8, 1040, 1072, 1000, "block"))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", PROBLEMS[1]))
        self.assertEqual(p.selection.dims["min_tokens"], 0)
        # untuned: a portable entry of the same scaling (DeepSeek-V3's gate+up at 64 tokens)
        p = tt.explain("grouped_scaled_mm", *self.contiguous(256, 4096, 7168, 512, "block"))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual(p.selection_kind, "nearest")
        self.assertEqual((p.selection.dims["E"], p.selection.dims["scale"]), (256, "block"))
        # no entry compiled for per-tensor scales (a define), and another output dtype: PyTorch
        p = tt.explain("grouped_scaled_mm", *self.contiguous(8, 4096, 14336, 32, "tensor"))
        self.assertEqual(p.kind, "fallback")
        self.assertIn("moe.grouped_fp8", p.reason)
        p = tt.explain("grouped_scaled_mm", *self.contiguous(8, 4096, 14336, 32, "row"), out_dtype=torch.float32)
        self.assertEqual(p.kind, "fallback")
        self.assertIn("'c' is bf16 in the bundle, f32 here", p.reason)

    def test_launch_covers_every_routing_and_no_more(self):
        # the contiguous grid is fixed by the dims (one CUDA graph serves every routing): (T // 64 +
        # min(E, T)) row tiles of the fallback's 64 x 128 times the column tiles, at least the most
        # tiles any routing of T rows over E experts makes (every routing, for 2 and 3 experts), and at
        # a decode step's 8 rows over 256 experts the 8 row tiles those rows can need, not 256
        tt.use_bundle(fp8_moe_bundle(), no_device=True, arch="sm_90a", strict=False)
        N = 256   # two column tiles

        def grid(E, T):
            p = tt.explain("grouped_scaled_mm", *self.contiguous(E, N, 1024, T, "row"))
            self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
            (launch,) = p.selection.info.launches
            return launch.grid[0]

        def routings(T, E):
            if E == 1:
                yield (T,)
                return
            for r in range(T + 1):
                for rest in routings(T - r, E - 1):
                    yield (r,) + rest
        for E in (2, 3):
            for T in (1, 2, 63, 64, 65, 129, 200):
                most = max(sum(cdiv(r, 64) for r in parts) for parts in routings(T, E))
                self.assertGreaterEqual(grid(E, T), most * 2, (E, T))
        self.assertEqual(grid(256, 8), 8 * 2)
        self.assertEqual(grid(8, 4096), (64 + 8) * 2)

    def test_masked(self):
        tt.use_bundle(fp8_moe_bundle(), no_device=True, arch="sm_90a", strict=False)
        p = tt.explain("grouped_scaled_mm_masked", *self.masked(256, 4096, 7168, 16, "block"))
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", PROBLEMS[2]))
        self.assertEqual(sorted(p.tensor_names), ["a", "c", "counts", "scale_a", "scale_w", "w"])
        p = tt.explain("grouped_scaled_mm_masked", *self.masked(8, 1040, 1072, 300, "tensor"), mode="tensor")
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection_kind, p.selection.info.tuned_problem), ("tuned", PROBLEMS[3]))
        self.assertEqual(p.selection.dims["min_count"], 0)
        p = tt.explain("grouped_scaled_mm_masked", *self.masked(8, 1040, 1072, 300, "row"))
        self.assertEqual(p.kind, "fallback")

    def test_call_binds_every_argument(self):
        # what a CUDA call passes, from the op's own tensors_fn on CPU tensors re-labelled as CUDA: every
        # launch check passes, only the driver is missing
        tt.use_bundle(fp8_moe_bundle(), no_device=True, arch="sm_90a", strict=False)
        g = torch.Generator().manual_seed(70)
        E, N, K, T, cap = 8, 1040, 1072, 1000, 300
        w = fp8(g, E, N, K)
        sa, sw = scales(g, "block", E, N, K, T)
        offs = torch.tensor([0, 100, 100, 400, 401, 700, 800, 900, T], dtype=torch.int32)
        key, candidates, tensors_fn, _ = _ops_moe_fp8._contiguous_problem(0, fp8(g, T, K), w, offs, sa, sw)
        p = _state.plan("grouped_scaled_mm", key, 0, candidates)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        t, c = tensors_fn()
        self.assertIs(t["c"], c)
        self.assertEqual(t["scale_w"].shape, (E * 9 * 9,))
        check_launch(self, p, t)
        key, candidates, tensors_fn, _ = _ops_moe_fp8._masked_problem(
            0, fp8(g, E, cap, K), w, torch.zeros(E, dtype=torch.int32), torch.tensor(0.5), torch.ones(E))
        p = _state.plan("grouped_scaled_mm_masked", key, 0, candidates)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        t, _ = tensors_fn()
        self.assertEqual(t["scale_a"].shape, (1,))   # the 0-d scale as the recipe's [1]
        check_launch(self, p, t)

    def test_fallback_runs_the_reference_and_strict_raises(self):
        tt.use_bundle(fp8_moe_bundle(), no_device=True, arch="sm_90a", strict=False)
        tt.reset_stats()
        g = torch.Generator().manual_seed(80)
        E, N, K, T = 3, 32, 256, 10
        a, w = fp8(g, T, K), fp8(g, E, N, K)
        offs = [0, 3, 3, T]
        sa, sw = scales(g, "tensor", E, N, K, T)      # no tensor-scaled contiguous entry in the bundle
        args = (a, w, torch.tensor(offs, dtype=torch.int32), sa, sw)
        c = _ops._run("grouped_scaled_mm", 0, _ops_moe_fp8._contiguous_problem(0, *args))
        assert_one_rounding(self, c, contiguous_plain(a, w, offs, sa, sw, "tensor"))
        s = tt.stats()["grouped_scaled_mm"]
        self.assertEqual((s["tuned"], s["fallback"]), (0, 1))
        tt.set_strict(True)
        try:
            with self.assertRaises(tunert.NoVariant):
                _ops._run("grouped_scaled_mm", 0, _ops_moe_fp8._contiguous_problem(0, *args))
        finally:
            tt.set_strict(False)


if __name__ == "__main__":
    unittest.main()
