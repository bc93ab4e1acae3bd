#!/usr/bin/env python3
"""peer_family_moe_fp8_test.py: tools/peers/peer_family_moe_fp8.py on CPU tensors (needs torch, no GPU).

The recipe -> peer mapping of moe.grouped_fp8 and moe.grouped_fp8_masked per scale mode (names,
family, options, bytes of a set), its errors and peer_server's routing; then each peer built on the
CPU (peer_family_values_test's CpuTorch and on_cpu): the loop's _scaled_mm calls run there in tensor and
row mode, torch._scaled_grouped_mm is validated by torch's own meta checks and emulated, block mode's
cuBLASLt layouts are checked by shape and stride. The peer's output, and an output computed here from
the set's scales in the recipe's layout (not from the call's), must pass the builder's expected()
through peer_server.check_values; wrong ones must fail: another expert's weights, expert e + 1's
weight scales, a transposed scale block, rows shifted by one, a bad last counted row.
Exits 77 (ctest: skipped) without torch.
"""
import math
import os
import re
import sys
import unittest

try:
    import torch
except ImportError:
    print("SKIP: torch is not importable")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "tools", "peers")))
sys.path.insert(0, HERE)
import peer_server as ps  # noqa: E402
import peer_family_moe_fp8 as mf  # noqa: E402
import worker_inputs  # noqa: E402
from peer_family_values_test import CT, CpuTorch, Case, build, on_cpu  # noqa: E402

BF = torch.bfloat16
SEED = 5  # CONTIGUOUS's routing then has an empty expert (min_tokens 0)
CONTIGUOUS = {"E": 6, "N": 48, "K": 400, "T": 300, "min_tokens": 0}  # a K % 128 tail
MASKED = {"E": 4, "N": 48, "K": 160, "cap": 150, "min_count": 0}
BLOCK = {"N": 384, "K": 384}  # 3 x 3 scale blocks per expert (L4 4): a transposed block reads other values


def dims(base, scale, **kw):
    return dict(base, scale=scale, **kw)


class PeersTest(unittest.TestCase):
    def test_other_recipes_are_not_its_own(self):
        for r in ("moe.grouped", "moe.grouped_masked", "gemm.fp8", "moe.grouped_fp8_fast", "moe.combine"):
            self.assertIsNone(mf.peers(r, dims(CONTIGUOUS, "row"), ps))

    def test_contiguous_per_scale(self):
        want = {"tensor": ["cublas-loop"], "row": ["torch-scaled-grouped-mm", "cublas-loop"], "block": ["cublas-loop"]}
        for scale, names in want.items():
            found = mf.peers("moe.grouped_fp8", dims(CONTIGUOUS, scale), ps)
            self.assertEqual([p.name for p in found], names)
            self.assertEqual({p.family for p in found}, {"moe_grouped_fp8"})
            self.assertTrue(all(p.api is ps for p in found))
        impls = [p.opts["impl"] for p in mf.peers("moe.grouped_fp8", dims(CONTIGUOUS, "row"), ps)]
        self.assertEqual(impls, ["grouped", "loop"])

    def test_masked_per_scale(self):
        for scale in ("tensor", "row", "block"):
            found = mf.peers("moe.grouped_fp8_masked", dims(MASKED, scale), ps)
            self.assertEqual([(p.name, p.family, p.opts["impl"]) for p in found],
                             [("cublas-loop", "moe_grouped_fp8_masked", "loop")])

    def test_set_bytes(self):
        E, N, K, T = 8, 4100, 7168, 37  # N: 33 blocks of 128 (a tail); K: 56
        d = {"E": E, "N": N, "K": K, "T": T, "min_tokens": 1}
        ops = T * K + E * N * K + 2 * T * N  # a, w, c (the offsets are not in the recipe's bytes either)
        for scale, scales in (("tensor", 1 + E), ("row", T + E * N), ("block", T * 56 + E * 33 * 56)):
            (p, *_) = mf.peers("moe.grouped_fp8", dict(d, scale=scale), ps)
            self.assertEqual(p.set_bytes, ops + 4 * scales)
        m = {"E": E, "N": N, "K": K, "cap": 16, "min_count": 0}
        rows = E * 16
        ops = rows * K + E * N * K + 2 * rows * N
        for scale, scales in (("tensor", 1 + E), ("row", rows + E * N), ("block", rows * 56 + E * 33 * 56)):
            (p,) = mf.peers("moe.grouped_fp8_masked", dict(m, scale=scale), ps)
            self.assertEqual(p.set_bytes, ops + 4 * scales)

    def test_dims_are_required(self):
        with self.assertRaisesRegex(ps.PeerError, "lack scale"):
            mf.peers("moe.grouped_fp8", CONTIGUOUS, ps)
        with self.assertRaisesRegex(ps.PeerError, "lack cap, min_count"):
            mf.peers("moe.grouped_fp8_masked", dims(CONTIGUOUS, "row"), ps)
        with self.assertRaisesRegex(ps.PeerError, "tensor, row or block"):
            mf.peers("moe.grouped_fp8", dims(CONTIGUOUS, "channel"), ps)

    def test_peer_server_routes_to_the_module(self):
        self.assertEqual([p.name for p in ps.peers_for("moe.grouped_fp8", dims(CONTIGUOUS, "row"))],
                         ["torch-scaled-grouped-mm", "cublas-loop"])
        masked = ps.peers_for("moe.grouped_fp8_masked", dims(MASKED, "block"))
        self.assertEqual([p.name for p in masked], ["cublas-loop"])
        for family in ("moe_grouped_fp8", "moe_grouped_fp8_masked"):
            self.assertEqual(ps.BUILDERS[family].__code__.co_filename, mf.build.__code__.co_filename)
        self.assertEqual([p.name for p in ps.peers_for("moe.grouped", CONTIGUOUS)], ["torch-grouped-mm", "cublas-loop"])

    def test_segments_are_the_workers_routing(self):
        segs = mf.segments("moe_grouped_fp8", CONTIGUOUS, SEED)
        offs = worker_inputs.offsets(SEED, 3, 6, 300, 0)
        self.assertEqual(segs, [(e, offs[e], offs[e + 1]) for e in range(6)])
        self.assertIn(0, [hi - lo for _, lo, hi in segs], "an empty expert is exercised")
        counts = worker_inputs.randint(11, 3, 4, 0, 150)
        self.assertEqual(mf.segments("moe_grouped_fp8_masked", MASKED, 11),
                         [(e, 150 * e, 150 * e + n) for e, n in enumerate(counts)])


    def test_arg_index_and_draws_are_the_recipes(self):
        path = os.path.join(HERE, "..", "..", "recipes", "moe", "grouped_fp8.lua")
        if not os.path.exists(path):
            self.skipTest("recipes/moe/grouped_fp8.lua is not in this tree")
        with open(path) as f:
            text = f.read()
        names = re.findall(r'\{ "(\w+)", tensor = ', text)  # the layouts' lists, after scale_args'
        for group in ("offsets", "counts"):
            at = names.index(group)
            self.assertEqual(names[at - 3:at + 1], ["a", "w", "c", group])
        self.assertEqual(mf.GROUPS_ARG_INDEX, 3)
        self.assertIn('init = { "uniform", space.SCALE_LO, space.SCALE_HI }', text)  # sa; sw / sqrt(K)
        self.assertIn('space.SCALE_LO .. " / sqrt(K)", space.SCALE_HI .. " / sqrt(K)"', text)


# ---------------------------------------------------------------- the peer's output, computed here

def scales_of(s, e, lo, hi, scale, N, K, sw_of=None):
    """Expert e's dequantization factors from the set's scales in the recipe's meaning (not the call's
    copies): a's [hi - lo, K] (or a scalar) and w[e]'s [N, K]; sw_of(e) overrides which expert's sw."""
    kb, e_w = -(-K // 128), (sw_of or (lambda x: x))(e)
    if scale == "tensor":
        return s["sa"], s["sw"][e_w]
    if scale == "row":
        return s["sa"][lo:hi, None], s["sw"][e_w][:, None]
    blocks = s["sw"][e_w][:, :kb]  # [N/128, K/128]
    sa = s["sa"][lo:hi].repeat_interleave(128, 1)[:, :K]
    return sa, blocks.repeat_interleave(128, 0).repeat_interleave(128, 1)[:N, :K]


def grouped_out(op, segs, shape, scale, expert_of=None, sw_of=None, sw_blocks=None):
    """The peer's c: per expert, a and w dequantized in float32, one matmul, bf16; shape the results'.
    expert_of(e): the weight it uses; sw_blocks(x): how a block scaling's [N/128, K/128] are read."""
    s, N, K = op.sets[0], shape[-1], op.sets[0]["a"].shape[1]
    c = torch.zeros(math.prod(shape[:-1]), N)
    for e, lo, hi in segs:
        if hi == lo:
            continue
        sa, sw = scales_of(s, e, lo, hi, scale, N, K, sw_of)
        if sw_blocks:
            kb = -(-K // 128)
            sw = sw_blocks(s["sw"][e][:, :kb]).repeat_interleave(128, 0).repeat_interleave(128, 1)[:N, :K]
        w = s["w"][(expert_of or (lambda x: x))(e)].float()
        c[lo:hi] = (s["a"][lo:hi].float() * sa) @ (w * sw).t()
    return c.to(BF).view(shape)


def emulated_scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False,
                       out=None):
    """torch._scaled_mm with DeepSeek's block scales, which torch runs on CUDA only: the layouts its CUDA
    checks demand (scale_a [M, K/128] strides [1, M]; scale_b [L4, N/128] strides [1, L4]) and cuBLASLt's
    M % 4, else RuntimeError; then a and b dequantized in float32, one matmul, written to out. Tensor and
    row scales go to torch's own CPU kernel."""
    if scale_a.dim() < 2 or scale_a.shape[1] == 1:
        return torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=out_dtype, use_fast_accum=use_fast_accum, out=out)
    (M, K), N = a.shape, b.shape[1]
    kb = -(-K // 128)
    l4 = -(-kb // 4) * 4
    if (tuple(scale_a.shape), scale_a.stride(), tuple(scale_b.shape), scale_b.stride()) != (
            (M, kb), (1, M), (l4, -(-N // 128)), (1, l4)) or M % 4 or b.stride(0) != 1 or use_fast_accum:
        raise RuntimeError(f"block scales: a {tuple(a.shape)}, sa {tuple(scale_a.shape)} {scale_a.stride()}, "
                           f"sb {tuple(scale_b.shape)} {scale_b.stride()}")
    sa = scale_a.repeat_interleave(128, 1)[:, :K]
    sb = scale_b[:kb].t().repeat_interleave(128, 0).repeat_interleave(128, 1)[:N, :K]
    c = ((a.float() * sa) @ (b.t().float() * sb).t()).to(out_dtype)
    return c if out is None else out.copy_(c)


class BlockTorch(CpuTorch):
    def __getattr__(self, name):
        return emulated_scaled_mm if name == "_scaled_mm" else super().__getattr__(name)


class LoopTest(Case):
    def check_mutations(self, op, segs, shape, scale):
        """The output computed here passes; wrong experts, scales and rows fail."""
        E = len(segs)
        self.passes(op, grouped_out(op, segs, shape, scale))
        self.fails(op, grouped_out(op, segs, shape, scale, expert_of=lambda e: (e + 1) % E))
        self.fails(op, grouped_out(op, segs, shape, scale, sw_of=lambda e: (e + 1) % E))
        self.fails(op, grouped_out(op, segs, shape, scale).roll(1, len(shape) - 2))  # rows shifted by one

    def test_tensor_and_row_run_on_the_cpu(self):
        for recipe, base in (("moe.grouped_fp8", CONTIGUOUS), ("moe.grouped_fp8_masked", MASKED)):
            for scale in ("tensor", "row"):
                with self.subTest(recipe=recipe, scale=scale):
                    d = dims(base, scale)
                    op = build(mf, recipe, d, "cublas-loop", SEED)
                    segs = mf.segments(mf.FAMILIES[recipe], d, SEED)
                    shape = op.shapes[0]
                    out = op.call(0)
                    self.assertEqual(tuple(out.shape), shape)
                    self.passes(op, out)
                    self.check_mutations(op, segs, shape, scale)

    def test_calls_take_the_experts_with_rows(self):
        d = dims(CONTIGUOUS, "row")
        op = build(mf, "moe.grouped_fp8", d, "cublas-loop", SEED)
        segs = mf.segments("moe_grouped_fp8", d, SEED)
        s = op.sets[0]
        self.assertEqual(len(s["calls"]), sum(1 for _, lo, hi in segs if hi > lo))
        for (a_e, wt_e, sa_e, sw_e, c_e), (e, lo, hi) in zip(s["calls"], [g for g in segs if g[2] > g[1]]):
            self.assertEqual((a_e.data_ptr(), c_e.data_ptr()), (s["a"][lo].data_ptr(), s["c"][lo].data_ptr()))
            self.assertEqual((tuple(sa_e.shape), tuple(sw_e.shape), wt_e.stride()), ((hi - lo, 1), (1, 48), (1, 400)))
            self.assertTrue(torch.equal(sa_e[:, 0], s["sa"][lo:hi]))
        self.assertIn("out=c[lo:lo+m]", op.library())

    def test_block_layouts_and_values(self):
        for recipe, base in (("moe.grouped_fp8", CONTIGUOUS), ("moe.grouped_fp8_masked", MASKED)):
            with self.subTest(recipe=recipe):
                d = dims(base, "block", **BLOCK)
                (peer,) = mf.peers(recipe, d, ps)
                op = mf.BUILDERS[peer.family](BlockTorch(), on_cpu(peer), 1, SEED)
                segs, s = mf.segments(mf.FAMILIES[recipe], d, SEED), op.sets[0]
                rows = d.get("T") or d["E"] * d["cap"]
                live = [g for g in segs if g[2] > g[1]]
                ends = [lo + -(-(hi - lo) // 4) * 4 for _, lo, hi in live]
                self.assertEqual((s["a"].shape[0], s["c"].shape[0]), (max(ends + [rows]),) * 2)
                if recipe == "moe.grouped_fp8":  # rows rounded up into the next expert's, and past T
                    self.assertTrue(any(end > nxt for end, (_, nxt, _) in zip(ends, live[1:])))
                    self.assertGreater(ends[-1], rows)
                self.passes(op, op.call(0))  # each expert's rows written by its own call, last
                for (a_e, _, sa_e, sw_e, c_e), (e, lo, hi) in zip(s["calls"], live):
                    m = -(-(hi - lo) // 4) * 4
                    self.assertEqual((a_e.shape[0], c_e.shape[0]), (m, m))
                    self.assertEqual((tuple(sa_e.shape), sa_e.stride()), ((m, 3), (1, m)))  # outer-dim-major
                    self.assertEqual((tuple(sw_e.shape), sw_e.stride()), ((4, 3), (1, 4)))  # [L4, N/128]
                    self.assertTrue(torch.equal(sa_e, s["sa"][lo:lo + m]))
                    self.assertTrue(torch.equal(sw_e[:3].t(), s["sw"][e][:, :3]))
                shape = op.shapes[0]
                self.check_mutations(op, segs, shape, "block")
                self.fails(op, grouped_out(op, segs, shape, "block", sw_blocks=lambda b: b.t()))  # a block transposed

    def test_block_scale_a_layout_is_read_as_the_call_takes_it(self):
        d = dims(CONTIGUOUS, "block", **BLOCK)
        op = build(mf, "moe.grouped_fp8", d, "cublas-loop", SEED)
        segs, s = mf.segments("moe_grouped_fp8", d, SEED), op.sets[0]
        out = grouped_out(op, segs, op.shapes[0], "block")
        self.passes(op, out)
        e = next(e for e, lo, hi in segs if lo <= 299 < hi)  # owns the last row: the check reads it
        self.assertGreater(segs[e][2] - segs[e][1], 1)
        sa_e, sw_e = s["scales"][e]
        s["scales"][e] = (sa_e.t().contiguous().view(sa_e.shape), sw_e)  # [KB, m] memory read as [m, KB]
        self.fails(op, out)

    def test_masked_padding_is_not_compared(self):
        d = dims(MASKED, "row")
        op = build(mf, "moe.grouped_fp8_masked", d, "cublas-loop", 11)
        counts = [hi - lo for _, lo, hi in mf.segments("moe_grouped_fp8_masked", d, 11)]
        self.assertGreater(sum(counts), 256, "more counted rows than the check reads")
        c = op.call(0).clone()
        for e, n in enumerate(counts):
            self.assertEqual(float(c[e, n:].abs().sum()), 0.0, "the padding holds zeros, as tune's")
            c[e, n:] = 7.0
        self.passes(op, c)
        last = max(e for e, n in enumerate(counts) if n)
        c[last, counts[last] - 1] = 0  # the last counted row
        self.fails(op, c)

    def test_scales_are_drawn_as_the_recipe_draws_them(self):
        for scale, (lo, hi) in (("tensor", (0.5, 2.0)), ("row", (0.5, 2.0)), ("block", (1 / 64, 4.0))):
            d = dims(CONTIGUOUS, scale, **(BLOCK if scale == "block" else {}))
            s = build(mf, "moe.grouped_fp8", d, "cublas-loop", SEED).sets[0]
            sa = s["sa"] if scale == "tensor" else s["sa"][:300]  # block: the pad rows past T hold 1
            sw = s["sw"][..., :3] if scale == "block" else s["sw"]  # block: K blocks past K/128 hold 1
            rk = d["K"] ** -0.5
            self.assertTrue(lo <= float(sa.min()) and float(sa.max()) <= hi)
            self.assertTrue(lo * rk <= float(sw.min()) and float(sw.max()) <= hi * rk)
            if scale != "tensor":  # the whole range is used
                self.assertLess(float(sa.min()), lo + (hi - lo) / 8)
                self.assertGreater(float(sa.max()), hi - (hi - lo) / 8)

    def test_unaligned_problems_are_skipped(self):
        with self.assertRaisesRegex(ps.PeerError, "multiples of 16"):
            build(mf, "moe.grouped_fp8", dims(CONTIGUOUS, "row", K=200), "cublas-loop")
        with self.assertRaisesRegex(ps.PeerError, "multiples of 128"):
            build(mf, "moe.grouped_fp8_masked", dims(MASKED, "block", N=256, K=400), "cublas-loop")


# ---------------------------------------------------------------- torch._scaled_grouped_mm

def emulated_scaled_grouped_mm(a, b, scale_a, scale_b, offs=None, bias=None, scale_result=None, out_dtype=None,
                               use_fast_accum=False):
    """torch._scaled_grouped_mm's 2d x 3d rowwise case: the arguments through torch's meta checks (its
    signature, layouts, scale shapes, int32 ends), then per group a float32 matmul of the dequantized
    operands."""
    meta = (lambda x: None if x is None else x.to("meta"))
    torch._scaled_grouped_mm(meta(a), meta(b), meta(scale_a), meta(scale_b), offs=meta(offs), bias=meta(bias),
                             scale_result=meta(scale_result), out_dtype=out_dtype, use_fast_accum=use_fast_accum)
    out, lo = torch.empty(a.shape[0], b.shape[2], dtype=out_dtype), 0
    for g, hi in enumerate(offs.tolist()):
        out[lo:hi] = (a[lo:hi].float() * scale_a[lo:hi, None]) @ (b[g].float() * scale_b[g][None, :])
        lo = hi
    return out


class GroupedTorch(CpuTorch):
    def __getattr__(self, name):
        return emulated_scaled_grouped_mm if name == "_scaled_grouped_mm" else super().__getattr__(name)


class OlderTorch(CpuTorch):
    def __getattr__(self, name):
        if name == "_scaled_grouped_mm":
            raise AttributeError(name)
        return super().__getattr__(name)


def build_grouped(tt, d, seed=SEED):
    (peer,) = [p for p in mf.peers("moe.grouped_fp8", d, ps) if p.name == "torch-scaled-grouped-mm"]
    return mf.BUILDERS[peer.family](tt, on_cpu(peer), 1, seed)


class GroupedTest(Case):
    def test_call_passes_torch_checks_and_values(self):
        d = dims(CONTIGUOUS, "row")
        op = build_grouped(GroupedTorch(), d)
        segs, shape = mf.segments("moe_grouped_fp8", d, SEED), op.shapes[0]
        out = op.call(0)
        self.assertEqual(tuple(out.shape), shape)
        self.passes(op, out)
        self.passes(op, grouped_out(op, segs, shape, "row"))
        self.fails(op, grouped_out(op, segs, shape, "row", expert_of=lambda e: (e + 1) % 6))
        self.fails(op, grouped_out(op, segs, shape, "row", sw_of=lambda e: (e + 1) % 6))
        self.fails(op, out.roll(1, 0))
        self.assertIn("torch._scaled_grouped_mm(", op.library())

    def test_a_refusal_is_a_peer_error(self):
        op = build_grouped(CT, dims(CONTIGUOUS, "row"))  # CPU torch has no kernel for it
        with self.assertRaisesRegex(ps.PeerError, "_scaled_grouped_mm"):
            ps.TorchBackend(None)._check(torch, op)
        with self.assertRaisesRegex(ps.PeerError, "has no torch._scaled_grouped_mm"):
            build_grouped(OlderTorch(), dims(CONTIGUOUS, "row"))
        with self.assertRaisesRegex(ps.PeerError, "multiples of 16"):
            build_grouped(GroupedTorch(), dims(CONTIGUOUS, "row", N=40))


if __name__ == "__main__":
    unittest.main()
