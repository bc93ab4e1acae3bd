#!/usr/bin/env python3
"""peer_family_fp8_test.py: tools/peers/peer_family_fp8.py without torch or a GPU.

The recipe -> peer mapping of gemm.fp8 and gemm.fp8_fast (name, family, options, bytes of a set), its
errors, cuBLASLt's blockwise layout rules, and that peer_server routes these recipes to the module
(not to its bf16 cuBLAS rule for names starting with "gemm.").
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "peers")))
import peer_server as ps  # noqa: E402
import peer_family_fp8 as fp8  # noqa: E402


def dims(M, N, K, scale):
    return {"M": M, "N": N, "K": K, "scale": scale}


class PeersTest(unittest.TestCase):
    def test_other_recipes_are_not_its_own(self):
        for r in ("gemm", "gemm.splitk", "gemm.f16", "attention.decode"):
            self.assertIsNone(fp8.peers(r, dims(16, 4096, 4096, "tensor"), ps))

    def test_tensor_and_row_are_scaled_mm(self):
        for scale, scales_bytes in (("tensor", 4 * 2), ("row", 4 * (64 + 4096))):
            (p,) = fp8.peers("gemm.fp8", dims(64, 4096, 14336, scale), ps)
            self.assertEqual((p.name, p.family), ("scaled_mm", "fp8"))
            self.assertEqual(p.opts, {"scale": scale, "fast": False})
            self.assertIs(p.api, ps)
            self.assertEqual(p.set_bytes, 64 * 14336 + 4096 * 14336 + 2 * 64 * 4096 + scales_bytes)

    def test_block_scales_count_their_blocks(self):
        (p,) = fp8.peers("gemm.fp8", dims(37, 4112, 4160, "block"), ps)
        self.assertEqual(p.name, "scaled_mm-blockwise")
        kb, nb = 33, 33  # ceil(4160 / 128), ceil(4112 / 128)
        self.assertEqual(fp8.scale_numels(37, 4112, 4160, "block"), (37 * kb, nb * kb))
        self.assertEqual(p.set_bytes, 37 * 4160 + 4112 * 4160 + 2 * 37 * 4112 + 4 * (37 * kb + nb * kb))

    def test_skinny_recipe_is_timed_as_gemm_fp8(self):
        for scale, name in (("tensor", "scaled_mm"), ("block", "scaled_mm-blockwise")):
            (p,) = fp8.peers("gemm.fp8_skinny", dims(1, 4096, 14336, scale), ps)
            (q,) = fp8.peers("gemm.fp8", dims(1, 4096, 14336, scale), ps)
            self.assertEqual((p.name, p.family, p.opts, p.set_bytes), (name, "fp8", q.opts, q.set_bytes))
            self.assertFalse(p.opts["fast"])

    def test_fast_recipe_asks_for_fast_accumulation(self):
        (p,) = fp8.peers("gemm.fp8_fast", dims(4096, 4096, 7168, "row"), ps)
        self.assertTrue(p.opts["fast"])

    def test_bad_dims_are_errors(self):
        with self.assertRaisesRegex(ps.PeerError, "lack scale"):
            fp8.peers("gemm.fp8", {"M": 1, "N": 16, "K": 128}, ps)
        with self.assertRaisesRegex(ps.PeerError, "tensor, row or block"):
            fp8.peers("gemm.fp8", dims(1, 16, 128, "channel"), ps)

    def test_block_layout_of_cublaslt(self):
        self.assertEqual(fp8.block_layout(1, 7168, 18432), ((4, 144, 144), None))
        self.assertEqual(fp8.block_layout(37, 4096, 640), ((40, 5, 8), None))  # L4: 5 -> 8
        layout, why = fp8.block_layout(1000, 1040, 1072)
        self.assertIsNone(layout)
        self.assertIn("multiples of 128", why)


class RoutingTest(unittest.TestCase):
    def test_peer_server_asks_the_module_first(self):
        (p,) = ps.peers_for("gemm.fp8", dims(16, 14336, 4096, "tensor"))
        self.assertEqual((p.name, p.family), ("scaled_mm", "fp8"))
        build = ps.BUILDERS["fp8"]  # from peer_server's own import of the module file
        self.assertEqual((build.__name__, build.__code__.co_filename), ("build_fp8", fp8.build_fp8.__code__.co_filename))
        (g,) = ps.peers_for("gemm", {"M": 16, "N": 4096, "K": 4096, "b_layout": "col"})
        self.assertEqual(g.name, "cublas")


if __name__ == "__main__":
    unittest.main()
