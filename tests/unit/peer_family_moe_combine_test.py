#!/usr/bin/env python3
"""peer_family_moe_combine_test.py: tools/peers/peer_family_moe_combine.py without torch or a GPU.

The recipe -> peer mapping of moe.combine (names, family, options, bytes of a set), its errors, that
peer_server routes the recipe to the module with the module's builder, the routing it regenerates
(worker_inputs.permutation) against tuner/inputs.c's own values for given seeds and arg indices
(computed by the C code), and the arg index it assumes against recipes/moe/combine.lua.
"""
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "peers"))
import peer_server as ps  # noqa: E402
import peer_family_moe_combine as mc  # noqa: E402
import worker_inputs  # noqa: E402

QWEN3 = {"T": 4096, "H": 4096, "top_k": 8}


class PeersTest(unittest.TestCase):
    def test_other_recipes_are_not_its_own(self):
        for r in ("moe.grouped", "moe.grouped_swiglu", "moe", "rmsnorm", "copy"):
            self.assertIsNone(mc.peers(r, QWEN3, ps))

    def test_eager_and_compiled(self):
        found = mc.peers("moe.combine", QWEN3, ps)
        self.assertEqual([(p.name, p.family, p.opts["compiled"]) for p in found],
                         [("torch", "moe_combine", False), ("torch-compile", "moe_combine", True)])
        self.assertIs(found[0].api, ps)
        # y read and out written in bf16, pos and weights 4 bytes per routed row
        want = 2 * 4096 * 8 * 4096 + 2 * 4096 * 4096 + 8 * 4096 * 8
        self.assertEqual({p.set_bytes for p in found}, {want})
        self.assertEqual(mc.set_bytes(1, 7168, 2), 2 * 2 * 7168 + 2 * 7168 + 16)

    def test_missing_dims(self):
        with self.assertRaisesRegex(ps.PeerError, "lack top_k"):
            mc.peers("moe.combine", {"T": 1, "H": 4096}, ps)
        with self.assertRaisesRegex(ps.PeerError, "lack T, H"):
            mc.peers("moe.combine", {"top_k": 2}, ps)

    def test_peer_server_asks_the_module(self):
        self.assertEqual([p.name for p in ps.peers_for("moe.combine", QWEN3)], ["torch", "torch-compile"])
        # peer_server imports the module from its file on its own: the same function, another object
        self.assertEqual(ps.BUILDERS["moe_combine"].__code__.co_code, mc.build_combine.__code__.co_code)


class RoutingTest(unittest.TestCase):
    # tune_inputs_fill (tuner/inputs.c) of an i32 {"permutation"} for these seeds and arg indices
    def test_permutation_is_the_workers(self):
        self.assertEqual(worker_inputs.permutation(1, 1, 16), [3, 8, 13, 1, 12, 4, 7, 0, 6, 14, 11, 5, 10, 9, 2, 15])
        self.assertEqual(worker_inputs.permutation(12345, 1, 10), [1, 6, 7, 5, 3, 8, 9, 2, 4, 0])
        got = worker_inputs.permutation(7, 2, 64)
        self.assertEqual(got[:8], [35, 8, 29, 53, 36, 54, 57, 42])
        self.assertEqual(got[-4:], [20, 33, 24, 19])

    def test_permutation_is_one(self):
        for n in (1, 2, 8, 777):
            self.assertEqual(sorted(worker_inputs.permutation(3, 1, n)), list(range(n)))

    def test_arg_index_is_the_recipes(self):
        with open(os.path.join(ROOT, "recipes", "moe", "combine.lua")) as f:
            text = f.read()
        tensors = re.findall(r'\{ "(\w+)",\s+tensor = ', text)
        self.assertEqual(tensors, ["y", "pos", "weights", "out"])
        self.assertEqual(tensors.index("pos"), mc.POS_ARG_INDEX)
        self.assertRegex(text, r'"pos",\s+tensor = "i32",.*init = \{ "permutation" \}')


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=1)
