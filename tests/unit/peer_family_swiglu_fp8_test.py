#!/usr/bin/env python3
"""peer_family_swiglu_fp8_test.py: tools/peers/peer_family_swiglu_fp8.py without torch or a GPU.

The recipe -> peer mapping of moe.swiglu_fp8 (group, token) and moe.swiglu_fp8_static (names, family,
options, bytes of a set with each mode's scales), its errors, the recipe's constants it copies, and
that peer_server routes these recipes to the module with the module's builder.
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "tools", "peers")))
import peer_server as ps  # noqa: E402
import peer_family_swiglu_fp8 as sf  # noqa: E402


def dims(T, N, quant):
    return {"T": T, "N": N, "quant": quant}


class PeersTest(unittest.TestCase):
    def test_other_recipes_are_not_its_own(self):
        for r in ("moe.grouped_swiglu", "moe.grouped_fp8", "rmsnorm.fp8", "moe.combine"):
            self.assertIsNone(sf.peers(r, dims(8, 2048, "group"), ps))

    def test_group_has_eager_and_compiled(self):
        found = sf.peers("moe.swiglu_fp8", dims(8192, 2048, "group"), ps)
        self.assertIs(found[0].api, ps)
        self.assertEqual([(p.name, p.family) for p in found],
                         [("torch", "moe_swiglu_fp8"), ("torch-compile", "moe_swiglu_fp8")])
        self.assertEqual([p.opts for p in found], [{"quant": "group", "compiled": False},
                                                   {"quant": "group", "compiled": True}])
        # x [T, 2N] bf16 read, y [T, N] e4m3 written, a scale per 128 columns of a row
        self.assertEqual({p.set_bytes for p in found}, {4 * 8192 * 2048 + 8192 * 2048 + 4 * 8192 * 16})

    def test_scales_of_each_mode(self):
        (group, _) = sf.peers("moe.swiglu_fp8", dims(37, 1096, "group"), ps)
        self.assertEqual(group.set_bytes, 5 * 37 * 1096 + 4 * 37 * 9)   # the last group partial
        (token, _) = sf.peers("moe.swiglu_fp8", dims(2, 14336, "token"), ps)
        self.assertEqual((token.opts["quant"], token.set_bytes), ("token", 5 * 2 * 14336 + 4 * 2))
        (eager, comp) = sf.peers("moe.swiglu_fp8_static", dims(1001, 1000, "static"), ps)
        self.assertEqual((eager.opts["quant"], comp.opts["compiled"]), ("static", True))
        self.assertEqual(eager.set_bytes, 5 * 1001 * 1000 + 4)

    def test_bad_dims_are_errors(self):
        with self.assertRaisesRegex(ps.PeerError, "lack quant"):
            sf.peers("moe.swiglu_fp8", {"T": 1, "N": 2048}, ps)
        with self.assertRaisesRegex(ps.PeerError, "has quant 'static', not 'group'"):
            sf.peers("moe.swiglu_fp8_static", dims(1, 2048, "group"), ps)
        with self.assertRaisesRegex(ps.PeerError, "has quant 'group' or 'token', not 'static'"):
            sf.peers("moe.swiglu_fp8", dims(1, 2048, "static"), ps)

    def test_the_recipe_constants(self):
        with open(os.path.join(HERE, "..", "..", "recipes", "moe", "swiglu_fp8.lua")) as f:
            src = f.read()
        self.assertIn('init = { "uniform", 16 / E4M3_MAX, 24 / E4M3_MAX }', src)
        self.assertIn('init = { "normal", 0, 2 }', src)
        self.assertEqual(sf.STATIC_SCALE, (16 / 448, 24 / 448))
        self.assertEqual(sf.X_STD, 2.0)
        # the bytes metric the recipe reports is the peers' set_bytes
        self.assertIn('bytes = "4 * T * N + T * N + 4 * (quant == \'group\' and T * "', src)


class RoutingTest(unittest.TestCase):
    def test_peer_server_asks_the_module(self):
        found = ps.peers_for("moe.swiglu_fp8", dims(512, 2048, "token"))
        self.assertEqual([p.name for p in found], ["torch", "torch-compile"])
        build = ps.BUILDERS["moe_swiglu_fp8"]  # from peer_server's own import of the module file
        self.assertEqual((build.__name__, build.__code__.co_filename),
                         ("build_swiglu_fp8", sf.build_swiglu_fp8.__code__.co_filename))
        self.assertEqual([p.family for p in ps.peers_for("moe.swiglu_fp8_static", dims(2, 14336, "static"))],
                         ["moe_swiglu_fp8"] * 2)


if __name__ == "__main__":
    unittest.main()
