#!/usr/bin/env python3
"""peer_family_varlen_test.py: tools/peers/peer_family_varlen.py without torch or a GPU.

Its peers for attention.varlen (and none for other recipes), the bytes of one set, refused dims, the
server finding the module, and the lengths it draws: the same prefix sums as tuner/inputs.c's
offsets init for the same seed and arg index.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "peers"))
import peer_family_varlen as pv  # noqa: E402
import peer_server as ps  # noqa: E402

DIMS = {"B": 64, "T": 16384, "HQ": 32, "HKV": 8, "D": 128, "causal": True}


class PeersTest(unittest.TestCase):
    def test_other_recipes_are_not_its_own(self):
        for r in ("attention.prefill", "attention.prefill_sm90", "attention.decode", "gemm", "attention.varlen2"):
            self.assertIsNone(pv.peers(r, DIMS, ps))

    def test_peers_of_a_problem(self):
        p = pv.peers("attention.varlen", DIMS, ps)
        self.assertEqual([(x.name, x.family, x.opts["backend"]) for x in p],
                         [("flash-varlen", "varlen", "flash"), ("torch-varlen-attn", "varlen", "varlen_attn"),
                          ("flex-document", "varlen", "flex"), ("cudnn-sdpa-padded", "varlen", "cudnn_padded")])
        # q and o at 32 heads, k and v at 8, 16384 tokens of 128 bf16; cu_seqlens 65 i32
        self.assertEqual(p[0].set_bytes, 2 * 16384 * 128 * (2 * 32 + 2 * 8) + 4 * 65)
        self.assertIs(p[0].api, ps)

    def test_refused_dims(self):
        with self.assertRaisesRegex(ps.PeerError, "lack T, causal"):
            pv.peers("attention.varlen", {"B": 2, "HQ": 8, "HKV": 8, "D": 64}, ps)
        with self.assertRaisesRegex(ps.PeerError, "T 3 < B 4"):
            pv.peers("attention.varlen", dict(DIMS, B=4, T=3), ps)

    def test_the_server_asks_the_module(self):
        self.assertEqual([x.name for x in ps.peers_for("attention.varlen", DIMS)],
                         ["flash-varlen", "torch-varlen-attn", "flex-document", "cudnn-sdpa-padded"])
        self.assertIn("varlen", ps.BUILDERS)
        self.assertEqual([x.name for x in ps.peers_for("attention.prefill_sm90",
                                                        {"B": 4, "HQ": 32, "HKV": 8, "S": 4096, "D": 128,
                                                         "causal": True})],
                         ["cudnn-sdpa", "flash-sdpa"])


class OffsetsTest(unittest.TestCase):
    def test_same_as_tuner_inputs(self):
        # tune_inputs_fill of an i32 {"offsets", 100, 1} arg of 9 elements, seed 1, arg index 4
        self.assertEqual(pv.offsets(8, 100, 1, 1), [0, 12, 45, 82, 83, 84, 97, 98, 100])
        self.assertEqual(pv.offsets(5, 5, 1, 42), [0, 1, 2, 3, 4, 5])  # no spare: every part 1

    def test_prefix_sums_of_parts_at_least_min(self):
        for parts, total, seed in ((64, 16384, 7), (256, 8192, 123456789012345), (1, 10, 0)):
            o = pv.offsets(parts, total, 1, seed)
            self.assertEqual((len(o), o[0], o[-1]), (parts + 1, 0, total))
            self.assertGreaterEqual(min(o[i + 1] - o[i] for i in range(parts)), 1)
        self.assertNotEqual(pv.offsets(64, 16384, 1, 7), pv.offsets(64, 16384, 1, 8))
        self.assertNotEqual(pv.offsets(64, 16384, 1, 7), pv.offsets(64, 16384, 1, 7, arg_index=3))

    def test_skewed(self):
        o = pv.offsets(256, 8192, 1, 99)
        lens = sorted(o[i + 1] - o[i] for i in range(256))
        self.assertLess(lens[128], 8192 / 256)   # the median below the mean: most are short
        self.assertGreater(lens[-1], 3 * 8192 / 256)  # a few long (u^3 weights: up to 4x the mean)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=1)
