#!/usr/bin/env python3
"""peer_values_test.py: the value check of tools/peers/peer_server.py on CPU tensors (needs torch,
no GPU): check_values' rule, and the float64 references of the GEMM, attention and memory-bound
peers against torch's own CPU results, correct ones passing and wrong ones (a transposed operand,
a missing mask, a wrong head grouping, a bad last row) refused. Exits 77 (ctest: skipped) without torch.
"""
import os
import sys
import unittest
from unittest import mock

try:
    import torch
except ImportError:
    print("SKIP: torch is not importable")
    sys.exit(77)
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "peers")))
import peer_server as ps  # noqa: E402

BF = torch.bfloat16


def normal(*shape, std=1.0, dtype=BF, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * std).to(dtype)


class CheckValuesTest(unittest.TestCase):
    def test_rounding_to_bf16_passes(self):
        want = normal(64, 64, std=30.0, dtype=torch.float64)
        ps.check_values(torch, [("y", want.to(BF), want)])

    def test_one_value_off_by_the_order_of_the_values_fails(self):
        want = normal(64, 64, dtype=torch.float64)
        got = want.clone()
        got[63, 63] += 2.0
        with self.assertRaisesRegex(ps.PeerError, r"wrong values: y .* 1 past 2\^-2"):
            ps.check_values(torch, [("y", got, want)])

    def test_a_few_values_off_by_a_few_percent_pass(self):
        # a cancelling sum's honest precision: 4 of 4096 values (0.1 %) 10 % of rms off
        want = normal(64, 64, dtype=torch.float64)
        got = want.clone()
        got[0, :4] += 0.1 * float(want.square().mean().sqrt())
        ps.check_values(torch, [("y", got, want)])

    def test_one_percent_of_values_off_fails(self):
        want = normal(64, 64, dtype=torch.float64)
        got = want.clone()
        got[0, :41] += 0.1 * float(want.square().mean().sqrt())
        with self.assertRaisesRegex(ps.PeerError, "41 of 4096 values past 2\\^-5"):
            ps.check_values(torch, [("y", got, want)])

    def test_a_small_error_everywhere_fails(self):
        want = normal(64, 64, dtype=torch.float64)
        with self.assertRaisesRegex(ps.PeerError, "relative L2 0.04 "):
            ps.check_values(torch, [("y", want * 1.04, want)])

    def test_not_finite_fails(self):
        want = normal(8, 8, dtype=torch.float64)
        got = want.clone()
        got[0, 0] = float("inf")
        with self.assertRaisesRegex(ps.PeerError, "not finite"):
            ps.check_values(torch, [("y", got, want)])

    def test_shape_mismatch_fails(self):
        with self.assertRaisesRegex(ps.PeerError, "shape"):
            ps.check_values(torch, [("y", torch.zeros(4, 8), torch.zeros(8, 4, dtype=torch.float64))])

    def test_edge_rows(self):
        self.assertEqual(ps.edge_rows(torch, 10, "cpu").tolist(), list(range(10)))
        rows = ps.edge_rows(torch, 1000, "cpu").tolist()
        self.assertEqual(rows[:2] + rows[-2:], [0, 1, 998, 999])
        self.assertEqual(len(rows), 2 * ps.VALUE_ROWS)


class GemmTest(unittest.TestCase):
    M, N, K = 300, 96, 200  # more rows than the check reads: the edge rows are exercised

    def test_matmul_passes_in_both_layouts(self):
        a = normal(self.M, self.K, seed=1)
        for b in (normal(self.K, self.N, seed=2), normal(self.N, self.K, seed=2).t()):
            ps.check_values(torch, ps.gemm_expected(torch, a, b, a @ b))

    def test_a_transposed_operand_fails(self):
        a, b = normal(self.M, self.K, seed=1), normal(self.N, self.K, seed=2)
        wrong = a @ b.reshape(self.K, self.N)  # [N, K] memory read as [K, N]
        with self.assertRaises(ps.PeerError):
            ps.check_values(torch, ps.gemm_expected(torch, a, b.t(), wrong))

    def test_a_bad_last_row_fails(self):
        a, b = normal(self.M, self.K, seed=1), normal(self.K, self.N, seed=2)
        c = a @ b
        c[-1] = 0
        with self.assertRaisesRegex(ps.PeerError, "wrong values: c"):
            ps.check_values(torch, ps.gemm_expected(torch, a, b, c))


class AttentionTest(unittest.TestCase):
    B, HQ, HKV, S, D = 2, 8, 2, 40, 32

    def qkv(self, S=None):
        S = S or self.S
        return (normal(self.B, self.HQ, S, self.D, std=2.0, seed=3), normal(self.B, self.HKV, S, self.D, std=2.0, seed=4),
                normal(self.B, self.HKV, S, self.D, seed=5))

    def sdpa(self, q, k, v, causal):
        g = self.HQ // self.HKV
        return F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(g, 1),
                                              v.float().repeat_interleave(g, 1), is_causal=causal).to(BF)

    def test_sdpa_passes_causal_and_not(self):
        q, k, v = self.qkv()
        for causal in (True, False):
            ps.check_values(torch, ps.sdpa_expected(torch, q, k, v, self.sdpa(q, k, v, causal), causal))

    def test_decode_shape_passes(self):
        q, k, v = self.qkv()
        q1 = q[:, :, :1]
        ps.check_values(torch, ps.sdpa_expected(torch, q1, k, v, self.sdpa(q1, k, v, False), False))

    def test_long_sequences_are_checked_on_their_edge_rows(self):
        q, k, v = self.qkv(S=300)
        o = self.sdpa(q, k, v, True)
        ps.check_values(torch, ps.sdpa_expected(torch, q, k, v, o, True))
        o[-1, 0, -1] = -o[-1, 0, -1]
        with self.assertRaisesRegex(ps.PeerError, r"o\[batch 1\]"):
            ps.check_values(torch, ps.sdpa_expected(torch, q, k, v, o, True))

    def test_a_missing_mask_fails(self):
        q, k, v = self.qkv()
        with self.assertRaises(ps.PeerError):
            ps.check_values(torch, ps.sdpa_expected(torch, q, k, v, self.sdpa(q, k, v, False), True))

    def test_a_wrong_head_grouping_fails(self):
        q, k, v = self.qkv()
        g = self.HQ // self.HKV
        wrong = F.scaled_dot_product_attention(q.float(), k.float().repeat(1, g, 1, 1), v.float().repeat(1, g, 1, 1),
                                               is_causal=True).to(BF)
        with self.assertRaises(ps.PeerError):
            ps.check_values(torch, ps.sdpa_expected(torch, q, k, v, wrong, True))


class MemoryTest(unittest.TestCase):
    R, C = 300, 64

    def test_each_family_passes_and_a_wrong_output_fails(self):
        x = normal(self.R, self.C, std=3.0, seed=6)
        w = normal(self.C, seed=7).abs() + 0.5
        r = normal(self.R, self.C, seed=8)
        scale, bias = normal(self.C, seed=9), normal(self.C, seed=10)
        h = x + r
        cases = [
            ("copy", {"x": x.float().flatten()}, [x.float().flatten()], [x.float().flatten().flip(0)]),
            ("transpose", {"x": x}, [x.t().contiguous()], [x.reshape(self.C, self.R)]),
            ("elementwise", {"x": x, "scale": scale, "bias": bias}, [F.silu(torch.addcmul(bias, x, scale))],
             [F.silu(torch.addcmul(bias, x, scale.flip(0)))]),
            ("softmax", {"x": x}, [torch.softmax(x.float(), -1).to(BF)], [torch.softmax(x.float(), 0).to(BF)]),
            ("rmsnorm", {"x": x, "w": w}, [F.rms_norm(x.float(), (self.C,), w.float(), 1e-6).to(BF)],
             [F.rms_norm(x.float(), (self.C,), None, 1e-6).to(BF)]),
            ("rmsnorm", {"x": x, "r": r, "w": w}, [F.rms_norm(h.float(), (self.C,), w.float(), 1e-6).to(BF), h],
             [F.rms_norm(x.float(), (self.C,), w.float(), 1e-6).to(BF), h]),
        ]
        for fam, s, good, bad in cases:
            with self.subTest(fam=fam, residual="r" in s):
                ps.check_values(torch, ps.memory_expected(torch, fam, s, good))
                with self.assertRaises(ps.PeerError):
                    ps.check_values(torch, ps.memory_expected(torch, fam, s, bad))


class RefusalTest(unittest.TestCase):
    def test_a_peer_without_a_reference_is_not_timed(self):
        a = normal(4, 4)
        op = ps.TorchOp([{"a": a}], lambda s: s["a"] * 2, lambda s: [], lambda s, r: [r], [(4, 4)], lambda: "x")
        with self.assertRaisesRegex(ps.PeerError, "no reference"):
            ps.TorchBackend(None)._check(torch, op)

    def test_a_wrong_peer_is_not_timed(self):
        a = normal(4, 4)
        op = ps.TorchOp([{"a": a}], lambda s: s["a"] * 2, lambda s: [], lambda s, r: [r], [(4, 4)], lambda: "x",
                        expected=lambda s, r: [("y", r, s["a"].double() * 3)])
        with self.assertRaisesRegex(ps.PeerError, "wrong values"):
            ps.TorchBackend(None)._check(torch, op)


class CheckOnceTest(unittest.TestCase):
    def op(self, factor):
        calls = []

        def expected(s, r):
            calls.append(1)
            return [("y", r, s["a"].double() * 2)]
        return ps.TorchOp([{"a": normal(4, 4)}], lambda s: s["a"] * factor, lambda s: [], lambda s, r: [r], [(4, 4)],
                          lambda: "x", expected=expected), calls

    def test_values_are_skipped_when_asked(self):
        op, calls = self.op(3)  # wrong, but its values are not read
        ps.TorchBackend(None)._check(torch, op, values=False)
        self.assertEqual(calls, [])
        with self.assertRaisesRegex(ps.PeerError, "wrong values"):
            ps.TorchBackend(None)._check(torch, op)
        self.assertEqual(calls, [1])

    def test_the_key_tells_peers_problems_options_and_seeds_apart(self):
        p = ps.Peer("scaled_mm", "fp8", {"M": 16, "N": 64}, 1, scale="row", fast=False)
        same = ps.Peer("scaled_mm", "fp8", {"N": 64, "M": 16}, 1, scale="row", fast=False)
        self.assertEqual(ps.value_check_key(p, 1), ps.value_check_key(same, 1))
        others = [ps.Peer("scaled_mm", "fp8", {"M": 16, "N": 64}, 1, scale="row", fast=True),
                  ps.Peer("scaled_mm", "fp8", {"M": 32, "N": 64}, 1, scale="row", fast=False),
                  ps.Peer("cublas", "fp8", {"M": 16, "N": 64}, 1, scale="row", fast=False)]
        keys = {ps.value_check_key(p, 1), ps.value_check_key(p, 2)} | {ps.value_check_key(o, 1) for o in others}
        self.assertEqual(len(keys), 5)


class FakeDev:
    """The device as TorchBackend uses it, on the CPU: no timer, no driver."""
    l2_bytes = 1 << 20

    def __init__(self):
        self.torch = torch

    def open(self):
        pass

    def synchronize(self):
        pass

    def collect(self):
        return []


class BackendTest(unittest.TestCase):
    """TorchBackend.check and .measure on a CPU family whose output is a * factor (the reference: a * 2)."""

    def backend(self, factor=2, build_error=None):
        calls = {"expected": 0, "built": []}

        def build(torch_, peer, n_sets, seed):
            calls["built"].append(n_sets)
            if build_error is not None and len(calls["built"]) == 1:
                raise build_error

            def expected(s, r):
                calls["expected"] += 1
                return [("y", r, s["a"].double() * 2)]
            return ps.TorchOp([{"a": normal(4, 4, seed=seed + i)} for i in range(n_sets)], lambda s: s["a"] * factor,
                              lambda s: [], lambda s, r: [r], [(4, 4)], lambda: "fake", expected=expected)
        patch = mock.patch.dict(ps.BUILDERS, {"fake": build})
        patch.start()
        self.addCleanup(patch.stop)
        return ps.TorchBackend(FakeDev()), ps.Peer("fake-peer", "fake", {"N": 4}, 64), calls

    def test_check_passes_a_right_peer_and_refuses_a_wrong_one(self):
        backend, peer, _ = self.backend()
        self.assertIsNone(backend.check(peer, 1))
        backend, peer, _ = self.backend(factor=3)
        with self.assertRaises(ps.WrongValues):
            backend.check(peer, 1)

    def test_measure_checks_values_once_per_peer_and_seed(self):
        backend, peer, calls = self.backend()
        with mock.patch.object(ps, "measure_burst", lambda dev, op: {"median_ns": 1.0}), \
                mock.patch.object(ps, "measure_sustained", lambda dev, op: {"median_ns": 2.0}):
            for timing in ("burst", "sustained", "burst"):
                r = backend.measure(peer, timing, 1)
            self.assertEqual((r["library"], r["timer"], calls["expected"]), ("fake", "cupti", 1))
            backend.measure(peer, "burst", 2)
        self.assertEqual(calls["expected"], 2)

    def test_burst_falls_back_to_one_set_when_two_do_not_fit(self):
        backend, peer, calls = self.backend(build_error=torch.cuda.OutOfMemoryError("no room"))
        with mock.patch.object(ps, "measure_burst", lambda dev, op: {"median_ns": 1.0}):
            backend.measure(peer, "burst", 1)
        self.assertEqual(calls["built"], [ps.BURST_SETS, 1])
        backend, peer, _ = self.backend(build_error=torch.cuda.OutOfMemoryError("no room"))
        with self.assertRaisesRegex(ps.PeerError, r"out of memory \(1 set\(s\) of 64 bytes\): no room"):
            backend.check(peer, 1)


if __name__ == "__main__":
    unittest.main()
