#!/usr/bin/env python3
"""peer_family_moe_test.py: tools/peers/peer_family_moe.py without torch or a GPU.

The recipe -> peer mapping of the MoE grouped GEMM recipes, through the module and through
peer_server.peers_for; the routing it regenerates against tuner/inputs.c's own values (offsets and
randint for given seeds and arg index, computed by the C code), and the arg index it assumes against
recipes/moe/grouped.lua and recipes/moe/swiglu.lua.

usage: peer_family_moe_test.py [TestClass ...]
"""
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "peers"))
import peer_server as ps  # noqa: E402
import peer_family_moe as moe  # noqa: E402

CONTIGUOUS = {"E": 8, "N": 28672, "K": 4096, "T": 32, "min_tokens": 1}
MASKED = {"E": 64, "N": 2816, "K": 2048, "cap": 16, "min_count": 1}


class PeersTest(unittest.TestCase):
    def test_other_recipes_are_not_this_modules(self):
        for r in ("gemm", "gemm.fp8", "moe", "moe.fused", "attention.decode"):
            self.assertIsNone(moe.peers(r, CONTIGUOUS, ps))

    def test_contiguous(self):
        found = moe.peers("moe.grouped", CONTIGUOUS, ps)
        self.assertEqual([p.name for p in found], ["torch-grouped-mm", "cublas-loop"])
        self.assertEqual({p.family for p in found}, {"moe_grouped"})
        self.assertEqual([p.opts["impl"] for p in found], ["grouped_mm", "loop"])
        want = 2 * (32 * 4096 + 8 * 28672 * 4096 + 32 * 28672) + 4 * 9
        self.assertEqual([p.set_bytes for p in found], [want, want])
        self.assertIs(found[0].api, ps)

    def test_masked(self):
        found = moe.peers("moe.grouped_masked", MASKED, ps)
        self.assertEqual([(p.name, p.family, p.opts["impl"]) for p in found],
                         [("cublas-bmm-padded", "moe_grouped_masked", "bmm")])
        self.assertEqual(found[0].set_bytes, 2 * (64 * 16 * 2048 + 64 * 2816 * 2048 + 64 * 16 * 2816) + 4 * 64)

    def test_swiglu(self):
        d = {"E": 8, "N": 14336, "K": 4096, "T": 32, "min_tokens": 1}
        found = moe.peers("moe.grouped_swiglu", d, ps)
        self.assertEqual([(p.name, p.family, p.opts["impl"]) for p in found],
                         [("torch-grouped-mm-silu", "moe_grouped_swiglu", "eager"),
                          ("torch-compile", "moe_grouped_swiglu", "compile")])
        want = 2 * (32 * 4096 + 8 * 2 * 14336 * 4096 + 32 * 14336) + 4 * 9   # 2N weight rows, N outputs
        self.assertEqual({p.set_bytes for p in found}, {want})
        found = moe.peers("moe.grouped_swiglu_masked", MASKED, ps)
        self.assertEqual([(p.name, p.family) for p in found], [("cublas-bmm-padded-silu", "moe_grouped_swiglu_masked")])
        self.assertEqual(found[0].set_bytes, 2 * (64 * 16 * 2048 + 64 * 2 * 2816 * 2048 + 64 * 16 * 2816) + 4 * 64)
        with self.assertRaisesRegex(ps.PeerError, "lack T, min_tokens"):
            moe.peers("moe.grouped_swiglu", MASKED, ps)
        self.assertEqual([p.name for p in ps.peers_for("moe.grouped_swiglu", d)], ["torch-grouped-mm-silu", "torch-compile"])
        self.assertIn("moe_grouped_swiglu", ps.BUILDERS)
        self.assertIn("moe_grouped_swiglu_masked", ps.BUILDERS)

    def test_missing_dims(self):
        d = dict(CONTIGUOUS)
        del d["T"]
        with self.assertRaisesRegex(ps.PeerError, "lack T"):
            moe.peers("moe.grouped", d, ps)
        with self.assertRaisesRegex(ps.PeerError, "lack cap, min_count"):
            moe.peers("moe.grouped_masked", CONTIGUOUS, ps)

    def test_peer_server_asks_the_module(self):
        self.assertEqual([p.name for p in ps.peers_for("moe.grouped", CONTIGUOUS)], ["torch-grouped-mm", "cublas-loop"])
        self.assertEqual([p.name for p in ps.peers_for("moe.grouped_masked", MASKED)], ["cublas-bmm-padded"])
        self.assertIn("moe_grouped", ps.BUILDERS)
        self.assertIn("moe_grouped_masked", ps.BUILDERS)
        self.assertEqual([p.name for p in ps.peers_for("gemm", {"M": 8, "N": 8, "K": 8, "b_layout": "col"})], ["cublas"])


class RoutingTest(unittest.TestCase):
    # tune_inputs_fill (tuner/inputs.c) for these seeds, at arg index 3
    def test_offsets_are_the_workers(self):
        self.assertEqual(moe.fill_offsets(1, 3, 8, 32, 1), [0, 1, 10, 11, 12, 13, 15, 23, 32])
        got = moe.fill_offsets(12345, 3, 64, 16384, 1)
        self.assertEqual(got[:8], [0, 42, 94, 127, 131, 162, 743, 932])
        self.assertEqual(got[-4:], [15956, 15957, 16381, 16384])
        got = moe.fill_offsets(7, 3, 128, 512, 0)
        self.assertEqual(got[:6], [0, 0, 0, 11, 15, 21])
        self.assertEqual(got[-3:], [502, 503, 512])

    def test_offsets_shape(self):
        for seed, parts, total, mn in ((3, 128, 512, 0), (4, 64, 16384, 1), (5, 8, 8, 1)):
            o = moe.fill_offsets(seed, 3, parts, total, mn)
            self.assertEqual((len(o), o[0], o[-1]), (parts + 1, 0, total))
            self.assertTrue(all(b - a >= mn for a, b in zip(o, o[1:])))
        o = moe.fill_offsets(7, 3, 128, 512, 0)
        self.assertGreater(sum(1 for a, b in zip(o, o[1:]) if a == b), 0, "min_part 0 gives empty experts")

    def test_randint_is_the_workers(self):
        self.assertEqual(moe.fill_randint(1, 3, 8, 1, 16), [12, 7, 6, 9, 3, 3, 1, 14])
        self.assertEqual(moe.fill_randint(99, 3, 8, 0, 4096), [1453, 2196, 1581, 682, 4078, 906, 475, 2900])

    def test_arg_index_is_the_recipes(self):
        with open(os.path.join(ROOT, "recipes", "moe", "grouped.lua")) as f:
            tensors = re.findall(r'\{ "(\w+)", tensor = ', f.read())
        self.assertEqual(tensors[:4], ["a", "w", "c", "offsets"])
        self.assertEqual(tensors[4:8], ["a", "w", "c", "counts"])
        self.assertEqual(moe.GROUPS_ARG_INDEX, 3)
        with open(os.path.join(ROOT, "recipes", "moe", "swiglu.lua")) as f:
            text = f.read()
        tensors = re.findall(r'\{ "(\w+)", tensor = ', text)
        self.assertEqual(tensors, ["a", "w", "h", "offsets", "a", "w", "h", "counts"])
        self.assertIn(f'W_INIT = {{ "normal", 0, {moe.W13_STD} }}', text)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=1)
