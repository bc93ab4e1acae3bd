"""tunert.torch.attention_varlen with cu_seqlens_k (keys longer than queries: chunked prefill, a
cached prefix; family attention.varlen_kv) on any CPU: the PyTorch path against the formula with
the causal mask aligned at the end, the argument errors, fake implementation, opcheck and
torch.compile tracing, and the plans read through explain() with meta tensors against a bundle of
one compile-only variant with a made-up result (never launched)."""
import math
import unittest

from common import HAVE_TORCH, fake_bundle, needs_torch

if HAVE_TORCH:
    import torch
    import tunert
    import tunert.torch as tt

PROBLEM = "b4q4096k69632hq32kv8d128c"
FALLBACK = ("BLOCK_N=128,CONSUMERS=2,STAGES=2,OVERLAP=1,SCHED=0,PINGPONG=1,USE_TMA=0,MIN_BLOCKS=1,"
            "LEAN_PRODUCER=0,GQA_PACK=0")


def plain(q, k, v, lq, lk, causal, scale=None):
    """Each sequence on its own, fp32, from the formula: query j of a sequence sees keys
    0 .. j + Lk - Lq (causal) or all Lk."""
    TQ, HQ, D = q.shape
    G = HQ // k.shape[1]
    o = torch.zeros(TQ, HQ, D)
    q0 = k0 = 0
    for nq, nk in zip(lq, lk):
        for h in range(HQ):
            s = q[q0:q0 + nq, h].float() @ k[k0:k0 + nk, h // G].float().T * (scale or 1 / math.sqrt(D))
            if causal:
                s = s.masked_fill(torch.ones(nq, nk, dtype=torch.bool).triu(nk - nq + 1), float("-inf"))
            if nq:
                o[q0:q0 + nq, h] = torch.softmax(s, -1) @ v[k0:k0 + nk, h // G].float()
        q0, k0 = q0 + nq, k0 + nk
    return o


def cu_of(lens):
    return torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32)


@needs_torch
class ReferenceTest(unittest.TestCase):
    def setUp(self):
        tt.use_bundle(None)
        tt.reset_stats()

    def test_matches_each_sequence_alone(self):
        torch.manual_seed(1)
        # a chunk over a prefix, a sequence without one (Lq = Lk), one query over many keys, a chunk of
        # no queries beside a prefix, a long chunk over a short prefix
        lq, lk = [5, 3, 1, 0, 9], [12, 3, 20, 4, 11]
        for HQ, HKV in ((4, 2), (3, 3)):
            q = torch.randn(sum(lq), HQ, 16)
            k, v = torch.randn(sum(lk), HKV, 16), torch.randn(sum(lk), HKV, 16)
            for causal in (True, False):
                for scale in (None, 0.2):
                    o = tt.attention_varlen(q, k, v, cu_of(lq), causal=causal, scale=scale, cu_seqlens_k=cu_of(lk))
                    self.assertEqual(o.shape, (sum(lq), HQ, 16))
                    torch.testing.assert_close(o, plain(q, k, v, lq, lk, causal, scale), atol=1e-5, rtol=1e-4)
        self.assertEqual(tt.stats()["attention_varlen"]["cpu"], 8)

    def test_the_shift_matters(self):
        # aligned at the end, not at the start: the first query of a 2-query chunk over 6 keys sees 5
        torch.manual_seed(2)
        q, k, v = torch.randn(2, 2, 8), torch.randn(6, 2, 8), torch.randn(6, 2, 8)
        o = tt.attention_varlen(q, k, v, cu_of([2]), cu_seqlens_k=cu_of([6]))
        top_left = plain(q, k[:2], v[:2], [2], [2], True)
        self.assertFalse(torch.allclose(o, top_left, atol=1e-3))
        torch.testing.assert_close(o, plain(q, k, v, [2], [6], True), atol=1e-5, rtol=1e-4)
        # the last query sees every key: plain attention over all 6
        torch.testing.assert_close(o[1], plain(q[1:], k, v, [1], [6], False)[0], atol=1e-5, rtol=1e-4)

    def test_equal_lengths_are_attention_varlen(self):
        torch.manual_seed(3)
        lens = [4, 7, 1]
        q, k, v = torch.randn(12, 4, 8), torch.randn(12, 2, 8), torch.randn(12, 2, 8)
        cu = cu_of(lens)
        torch.testing.assert_close(tt.attention_varlen(q, k, v, cu, cu_seqlens_k=cu.clone()),
                                   tt.attention_varlen(q, k, v, cu))

    def test_bf16(self):
        torch.manual_seed(4)
        lq, lk = [3, 6], [10, 6]
        q = torch.randn(9, 4, 8).bfloat16()
        k, v = torch.randn(16, 2, 8).bfloat16(), torch.randn(16, 2, 8).bfloat16()
        o = tt.attention_varlen(q, k, v, cu_of(lq), cu_seqlens_k=cu_of(lk), max_seqlen=6, max_seqlen_k=10)
        self.assertEqual(o.dtype, torch.bfloat16)
        torch.testing.assert_close(o.float(), plain(q, k, v, lq, lk, True), atol=2e-2, rtol=2e-2)

    def test_argument_errors(self):
        q, k = torch.randn(5, 4, 8), torch.randn(9, 2, 8)
        with self.assertRaisesRegex(tunert.InvalidArgument, "sequence 1 has 1 keys for 3 queries"):
            tt.attention_varlen(q, k, k, cu_of([2, 3]), cu_seqlens_k=cu_of([8, 1]))
        with self.assertRaisesRegex(tunert.DTypeMismatch, "cu_seqlens_k is torch.int64"):
            tt.attention_varlen(q, k, k, cu_of([2, 3]), cu_seqlens_k=cu_of([4, 5]).long())
        with self.assertRaisesRegex(tunert.InvalidArgument, r"cu_seqlens_k \(4,\)"):
            tt.attention_varlen(q, k, k, cu_of([2, 3]), cu_seqlens_k=cu_of([4, 4, 1]))
        with self.assertRaisesRegex(tunert.InvalidArgument, "HQ a multiple of HKV"):
            tt.attention_varlen(q, torch.randn(9, 3, 8), torch.randn(9, 3, 8), cu_of([2, 3]),
                                cu_seqlens_k=cu_of([4, 5]))


@needs_torch
class FakeAndOpcheckTest(unittest.TestCase):
    def samples(self):
        torch.manual_seed(0)
        q, k, v = torch.randn(9, 4, 8), torch.randn(20, 2, 8), torch.randn(20, 2, 8)
        cu_q, cu_k = cu_of([3, 1, 5]), cu_of([8, 1, 11])
        return [(q, k, v, cu_q), {"cu_seqlens_k": cu_k}], [(q, k, v, cu_q), {"cu_seqlens_k": cu_k, "causal": False,
                                                                              "max_seqlen": 5, "max_seqlen_k": 11,
                                                                              "scale": 0.3}]

    def test_opcheck_and_fake_shapes(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        op = torch.ops.tunert.attention_varlen.default
        for args, kwargs in self.samples():
            torch.library.opcheck(op, args, kwargs, test_utils=("test_schema", "test_autograd_registration",
                                                                 "test_faketensor", "test_aot_dispatch_dynamic"))
            real = op(*args, **kwargs)
            with FakeTensorMode() as mode:
                fargs = [mode.from_tensor(a) for a in args]
                fkw = {n: mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for n, x in kwargs.items()}
                fake = op(*fargs, **fkw)
            self.assertEqual((tuple(real.shape), real.dtype), (tuple(fake.shape), fake.dtype))

    def test_compile_traces_the_op(self):
        def layer(q, k, v, cu_q, cu_k):
            return tt.attention_varlen(q, k, v, cu_q, max_seqlen=5, cu_seqlens_k=cu_k, max_seqlen_k=11).sum()
        (args, kwargs), _ = self.samples()
        args = args + (kwargs["cu_seqlens_k"],)
        compiled = torch.compile(layer, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(*args), layer(*args))


@needs_torch
class PlanTest(unittest.TestCase):
    """The plans a CUDA call would take, read with meta tensors (no GPU, no driver), from a bundle
    of the recipe's fallback config compiled for PROBLEM with a made-up result."""

    @classmethod
    def setUpClass(cls):
        cls.path = fake_bundle("varlen_kv_fake", "recipes/attention/varlen_kv.lua", "attention.varlen_kv", FALLBACK,
                               (PROBLEM,), 200000.0)

    def setUp(self):
        tt.use_bundle(self.path, no_device=True, arch="sm_90a", strict=False)

    def tearDown(self):
        tt.use_bundle(None, strict=False)

    def meta(self, *shape, dtype=None):
        return torch.empty(shape, dtype=dtype or torch.bfloat16, device="meta")

    def explain(self, TQ, TK, HQ=32, HKV=8, D=128, B=4, **kw):
        cu = self.meta(B + 1, dtype=torch.int32)
        k = self.meta(TK, HKV, D)
        return tt.explain("attention_varlen", self.meta(TQ, HQ, D), k, k, cu, cu_seqlens_k=cu, **kw)

    def test_tuned_nearest_and_binding(self):
        p = self.explain(4096, 69632)
        self.assertIsInstance(p, tt.Plan, getattr(p, "reason", ""))
        self.assertEqual((p.selection.info.family, p.selection_kind, p.selection.info.tuned_problem),
                         ("attention.varlen_kv", "tuned", PROBLEM))
        self.assertEqual(p.tensor_names, ("q", "k", "v", "o", "cu_seqlens_q", "cu_prefix"))
        self.assertEqual(p.scalars, {"q_ld": 4096, "k_ld": 1024, "v_ld": 1024, "o_ld": 4096})
        p = self.explain(3000, 20000, B=7, scale=0.1)
        self.assertEqual(p.selection_kind, "nearest")
        self.assertAlmostEqual(p.scalars["scale_log2"], 0.1 * 1.4426950408889634, places=6)

    def test_refusals(self):
        p = self.explain(4096, 4000)   # fewer key tokens than query tokens: outside the domain
        self.assertEqual(p.kind, "fallback")
        self.assertIn("TK >= TQ", p.reason)
        p = self.explain(4096, 69632, D=64, HQ=16, HKV=16)   # D 64: no entry compiled for it
        self.assertEqual(p.kind, "fallback")
        self.assertIn("attention.varlen_kv", p.reason)
        cu = self.meta(5, dtype=torch.int32)   # without cu_seqlens_k: attention.varlen, not in this bundle
        p = tt.explain("attention_varlen", self.meta(4096, 32, 128), self.meta(4096, 8, 128),
                       self.meta(4096, 8, 128), cu)
        self.assertIn("no family attention.varlen in the bundle", p.reason)


if __name__ == "__main__":
    unittest.main()
