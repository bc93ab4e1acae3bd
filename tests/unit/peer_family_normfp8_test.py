#!/usr/bin/env python3
"""peer_family_normfp8_test.py: tools/peers/peer_family_normfp8.py without torch or a GPU.

The recipe -> peer mapping of rmsnorm.fp8 and rmsnorm.fp8_static (names, family, options, bytes of a
set), its errors, and that peer_server routes these recipes to the module (its own rmsnorm rule
takes rmsnorm and rmsnorm.add only) with the module's builder.
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "tools", "peers")))
import peer_server as ps  # noqa: E402
import peer_family_normfp8 as nf  # noqa: E402


def dims(T, H, quant):
    return {"T": T, "H": H, "quant": quant}


class PeersTest(unittest.TestCase):
    def test_other_recipes_are_not_its_own(self):
        for r in ("rmsnorm", "rmsnorm.add", "gemm.fp8", "softmax"):
            self.assertIsNone(nf.peers(r, dims(16, 4096, "dynamic"), ps))

    def test_dynamic_has_eager_and_compiled(self):
        found = nf.peers("rmsnorm.fp8", dims(4096, 8192, "dynamic"), ps)
        self.assertIs(found[0].api, ps)
        self.assertEqual([(p.name, p.family) for p in found],
                         [("torch", "rmsnorm_fp8"), ("torch-compile", "rmsnorm_fp8")])
        self.assertEqual([p.opts for p in found], [{"quant": "dynamic", "compiled": False},
                                                   {"quant": "dynamic", "compiled": True}])
        # x, r read, h written: 2 bytes each; y 1 byte; w 2 bytes; a scale per token
        self.assertEqual({p.set_bytes for p in found}, {7 * 4096 * 8192 + 2 * 8192 + 4 * 4096})

    def test_static_reads_one_scale(self):
        (eager, comp) = nf.peers("rmsnorm.fp8_static", dims(1000, 2049, "static"), ps)
        self.assertEqual((eager.opts["quant"], comp.opts["compiled"]), ("static", True))
        self.assertEqual(eager.set_bytes, 7 * 1000 * 2049 + 2 * 2049 + 4)

    def test_bad_dims_are_errors(self):
        with self.assertRaisesRegex(ps.PeerError, "lack quant"):
            nf.peers("rmsnorm.fp8", {"T": 1, "H": 4096}, ps)
        with self.assertRaisesRegex(ps.PeerError, "has quant 'static', not 'dynamic'"):
            nf.peers("rmsnorm.fp8_static", dims(1, 4096, "dynamic"), ps)

    def test_the_recipe_constants(self):
        with open(os.path.join(HERE, "..", "..", "recipes", "rmsnorm", "fp8.lua")) as f:
            src = f.read()
        self.assertIn("local EPS = 1e-6", src)
        self.assertIn('init = { "uniform", 6 / E4M3_MAX, 10 / E4M3_MAX }', src)
        self.assertEqual(nf.STATIC_SCALE, (6 / 448, 10 / 448))


class RoutingTest(unittest.TestCase):
    def test_peer_server_asks_the_module(self):
        found = ps.peers_for("rmsnorm.fp8", dims(16, 7168, "dynamic"))
        self.assertEqual([p.name for p in found], ["torch", "torch-compile"])
        build = ps.BUILDERS["rmsnorm_fp8"]  # from peer_server's own import of the module file
        self.assertEqual((build.__name__, build.__code__.co_filename),
                         ("build_normfp8", nf.build_normfp8.__code__.co_filename))
        (plain,) = ps.peers_for("rmsnorm.add", {"T": 16, "H": 4096})
        self.assertEqual(plain.family, "rmsnorm")


if __name__ == "__main__":
    unittest.main()
