#!/usr/bin/env python3
"""peer_family_varlen_kv_test.py: tools/peers/peer_family_varlen_kv.py without torch or a GPU.

Its peers for attention.varlen_kv (and none for other recipes, attention.varlen included), the bytes
of one set, refused dims, the server finding the module, and the lengths it draws: the recipe's two
offsets inits (the arg positions and QMIN read from recipes/attention/varlen_kv.lua itself), with
every sequence holding at least as many keys as queries.
"""
import os
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "peers"))
import peer_family_varlen_kv as pk  # noqa: E402
import peer_server as ps  # noqa: E402
import worker_inputs  # noqa: E402
from recipe_args import arg_names  # noqa: E402 (tests/unit)

DIMS = {"B": 4, "TQ": 4096, "TK": 69632, "HQ": 32, "HKV": 8, "D": 128, "causal": True}
NAMES = ["flash-varlen", "torch-varlen-attn", "flex-document", "sdpa-lower-right"]


class PeersTest(unittest.TestCase):
    def test_other_recipes_are_not_its_own(self):
        for r in ("attention.varlen", "attention.prefill_sm90", "attention.decode", "attention.varlen_kv2"):
            self.assertIsNone(pk.peers(r, DIMS, ps))

    def test_peers_of_a_problem(self):
        p = pk.peers("attention.varlen_kv", DIMS, ps)
        self.assertEqual([(x.name, x.family, x.opts["backend"]) for x in p],
                         [("flash-varlen", "varlen_kv", "flash"), ("torch-varlen-attn", "varlen_kv", "varlen_attn"),
                          ("flex-document", "varlen_kv", "flex"),
                          ("sdpa-lower-right", "varlen_kv", "sdpa_lower_right")])
        # q and o: 4096 tokens x 32 heads; k and v: 69632 tokens x 8 heads; 128 bf16 each; two 5-entry i32 arrays
        self.assertEqual(p[0].set_bytes, 2 * 128 * (2 * 4096 * 32 + 2 * 69632 * 8) + 2 * 4 * 5)
        self.assertIs(p[0].api, ps)

    def test_refused_dims(self):
        with self.assertRaisesRegex(ps.PeerError, "lack TK, causal"):
            pk.peers("attention.varlen_kv", {"B": 2, "TQ": 8, "HQ": 8, "HKV": 8, "D": 64}, ps)
        with self.assertRaisesRegex(ps.PeerError, "TQ 3 < B 4"):
            pk.peers("attention.varlen_kv", dict(DIMS, B=4, TQ=3, TK=10), ps)
        with self.assertRaisesRegex(ps.PeerError, "TK 100 < TQ 200"):
            pk.peers("attention.varlen_kv", dict(DIMS, B=4, TQ=200, TK=100), ps)

    def test_the_server_asks_the_module(self):
        self.assertEqual([x.name for x in ps.peers_for("attention.varlen_kv", DIMS)], NAMES)
        self.assertIn("varlen_kv", ps.BUILDERS)
        self.assertIn("varlen", ps.BUILDERS)  # attention.varlen's module is still found beside it


class LengthsTest(unittest.TestCase):
    def recipe_args(self):
        with open(os.path.join(ROOT, "recipes", "attention", "varlen_kv.lua")) as f:
            text = f.read()
        return text, arg_names("attention/varlen_kv.lua", "attention/shared/varlen.lua")

    def test_arg_positions_and_qmin_match_the_recipe(self):
        text, names = self.recipe_args()
        self.assertEqual(names.index("cu_seqlens_q"), pk.CU_SEQLENS_Q_ARG)
        self.assertEqual(names.index("cu_prefix"), pk.CU_PREFIX_ARG)
        self.assertIn('local QMIN = "max(1, TQ // (2 * B))"', text)
        self.assertIn('init = { "offsets", "TQ", QMIN }', text)
        self.assertIn('init = { "offsets", "TK - TQ", 0 }', text)
        self.assertEqual(pk.q_min(DIMS), 512)
        self.assertEqual(pk.q_min({"B": 32, "TQ": 32}), 1)

    def test_draws_of_the_worker(self):
        cu_q, cu_k = pk.lengths(DIMS, 7)
        self.assertEqual(cu_q, worker_inputs.offsets(7, 4, 4, 4096, 512))
        p = worker_inputs.offsets(7, 5, 4, 69632 - 4096, 0)
        self.assertEqual(cu_k, [a + b for a, b in zip(cu_q, p)])

    def test_keys_at_least_queries(self):
        for dims in (DIMS, dict(DIMS, B=16, TQ=200, TK=520), dict(DIMS, B=32, TQ=32, TK=16416),
                     dict(DIMS, B=8, TQ=600, TK=2600, causal=False)):
            for seed in (1, 2, 12345678901):
                cu_q, cu_k = pk.lengths(dims, seed)
                B = dims["B"]
                self.assertEqual((cu_q[0], cu_q[-1], cu_k[0], cu_k[-1]), (0, dims["TQ"], 0, dims["TK"]))
                lq = [cu_q[i + 1] - cu_q[i] for i in range(B)]
                lk = [cu_k[i + 1] - cu_k[i] for i in range(B)]
                self.assertGreaterEqual(min(lq), pk.q_min(dims))
                self.assertTrue(all(k >= q for q, k in zip(lq, lk)), (dims, seed, lq, lk))

    def test_lq_one_and_equal_lengths_occur(self):
        cu_q, _ = pk.lengths(dict(DIMS, B=32, TQ=32, TK=16416), 3)
        self.assertEqual(cu_q, list(range(33)))  # every sequence one query
        # the tail problem: some sequences with no prefix (Lq = Lk) for most seeds
        hits = 0
        for seed in range(1, 21):
            cu_q, cu_k = pk.lengths(dict(DIMS, B=16, TQ=200, TK=520), seed)
            hits += any(cu_k[i + 1] - cu_k[i] == cu_q[i + 1] - cu_q[i] for i in range(16))
        self.assertGreater(hits, 10)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=1)
