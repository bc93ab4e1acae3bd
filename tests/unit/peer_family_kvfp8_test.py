#!/usr/bin/env python3
"""peer_family_kvfp8_test.py: tools/peers/peer_family_kvfp8.py without torch or a GPU.

The peers of attention.decode_fp8 (and none for other recipes, attention.decode keeping
peer_server's own), the bytes of one set (bf16 peers twice the K/V bytes of the fp8 ones), refused
dims, the server finding the module, and the lengths: worker_inputs.randint (checked against the C
code by peer_family_moe_test) at the arg index of seq_lens in recipes/attention/decode_fp8.lua, and
the one length the SDPA peers get.
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "peers"))
import peer_family_kvfp8 as kv  # noqa: E402
import peer_server as ps  # noqa: E402
import worker_inputs  # noqa: E402
from recipe_args import arg_names  # noqa: E402 (tests/unit)

# 32 sequences of 1 .. 8192 (16 rows a page), Llama-3-8B heads
MIXED = {"B": 32, "HQ": 32, "HKV": 8, "D": 128, "page_size": 16, "max_pages": 512, "min_len": 1}
LONG = {"B": 1, "HQ": 64, "HKV": 8, "D": 128, "page_size": 32, "max_pages": 4096, "min_len": 131072}


class PeersTest(unittest.TestCase):
    def test_other_recipes_are_not_its_own(self):
        for r in ("attention.decode", "attention.prefill", "attention.varlen", "gemm.fp8", "attention.decode_fp88"):
            self.assertIsNone(kv.peers(r, MIXED, ps))

    def test_peers_of_a_problem(self):
        p = kv.peers("attention.decode_fp8", MIXED, ps)
        self.assertEqual([(x.name, x.family, x.opts["kind"], x.opts["backend"]) for x in p],
                         [("flash-sdpa-bf16", "decode_fp8", "sdpa_bf16", "flash"),
                          ("cudnn-sdpa-bf16", "decode_fp8", "sdpa_bf16", "cudnn"),
                          ("flash-varlen-bf16", "decode_fp8", "varlen_bf16", None),
                          ("dequant-sdpa", "decode_fp8", "dequant_sdpa", None),
                          ("dequant-flash-varlen", "decode_fp8", "dequant_varlen", None)])
        self.assertTrue(all(x.api is ps for x in p))
        # the TMA-fed family is timed against the same peers
        self.assertEqual([x.name for x in kv.peers("attention.decode_fp8_tma", MIXED, ps)], [x.name for x in p])
        # q and o: 2 x 32 x 32 x 128 bf16; K + V at the mean length (1 + 8192) / 2 of 8 heads of 128
        qo = 2 * 32 * 32 * 128 * 2
        kv_elems = 32 * (1 + 8192) * 8 * 128
        self.assertEqual([x.set_bytes for x in p], [qo + 2 * kv_elems] * 3 + [qo + kv_elems] * 2)

    def test_a_single_sequence_counts_its_full_length(self):
        p = kv.peers("attention.decode_fp8", LONG, ps)
        self.assertEqual(p[-1].set_bytes, 2 * 64 * 128 * 2 + 2 * 131072 * 8 * 128)

    def test_refused_dims(self):
        with self.assertRaisesRegex(ps.PeerError, "lack page_size, min_len"):
            kv.peers("attention.decode_fp8", {"B": 2, "HQ": 8, "HKV": 8, "D": 64, "max_pages": 4}, ps)
        with self.assertRaisesRegex(ps.PeerError, "HQ 12 is not a multiple of HKV 8"):
            kv.peers("attention.decode_fp8", dict(MIXED, HQ=12), ps)

    def test_the_server_asks_the_module(self):
        self.assertEqual([x.name for x in ps.peers_for("attention.decode_fp8", MIXED)],
                         ["flash-sdpa-bf16", "cudnn-sdpa-bf16", "flash-varlen-bf16", "dequant-sdpa",
                          "dequant-flash-varlen"])
        build = ps.BUILDERS["decode_fp8"]  # from peer_server's own import of the module file
        self.assertEqual((build.__name__, os.path.realpath(build.__code__.co_filename)),
                         ("build", os.path.realpath(kv.build.__code__.co_filename)))
        # attention.decode keeps its own peers, which the bf16 SDPA peers reuse
        self.assertEqual([x.name for x in ps.peers_for("attention.decode",
                                                        {"B": 32, "HQ": 32, "HKV": 8, "D": 128, "page_size": 16,
                                                         "max_pages": 256})],
                         ["cudnn-sdpa", "flash-sdpa"])
        self.assertTrue(callable(ps.build_attention))


class LengthsTest(unittest.TestCase):
    def test_the_workers_draw(self):
        for seed in (1, 7, 123456789012345):
            self.assertEqual(kv.lengths(MIXED, seed), worker_inputs.randint(seed, 6, 32, 1, 8192))
        lens = kv.lengths(MIXED, 3)
        self.assertTrue(all(1 <= n <= 8192 for n in lens))
        self.assertGreater(len(set(lens)), 16, "mixed lengths")
        self.assertEqual(kv.lengths(LONG, 5), [131072])
        fixed = dict(MIXED, min_len=8192)
        self.assertEqual(kv.lengths(fixed, 9), [8192] * 32)

    def test_seq_lens_arg_index_is_the_recipes(self):
        args = arg_names("attention/decode_fp8.lua", "attention/shared/decode.lua")
        self.assertEqual(args.index("seq_lens"), kv.SEQ_LENS_ARG)
        self.assertEqual(args[:7], ["q", "k_cache", "v_cache", "k_scale", "v_scale", "block_table", "seq_lens"])
        # attention.decode_fp8_tma's args are these, then its two maps: its bundle says so
        # (tests/integration/decode_tma_compile_test.sh)

    def test_sdpa_gets_the_mean_rounded_up(self):
        self.assertEqual(kv.sdpa_len([1, 2]), 2)
        self.assertEqual(kv.sdpa_len([4096] * 8), 4096)
        self.assertEqual(kv.sdpa_len([1, 8192, 100]), 2765)  # 8293 / 3 = 2764.3


if __name__ == "__main__":
    unittest.main()
