#!/usr/bin/env python3
"""peer_family_values_test.py: the float64 references of the peer_family_*.py peers on CPU tensors
(needs torch, no GPU). Each family's builder runs on the CPU (its "cuda" allocations taken to the
CPU), its peer's output is computed there (the peer's own call where it runs on the CPU, else the
same computation through other torch functions: float32 SDPA, dequantize-then-matmul), and the
builder's expected() must pass peer_server.check_values on it and fail on a wrong one (a transposed
operand, swapped scales, a wrong mask, a wrong expert or routing weight, a dropped last row or
sequence). Exits 77 (ctest: skipped) without torch.
"""
import os
import sys
import types
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
import peer_family_fp8 as fp8  # noqa: E402
import peer_family_kvfp8 as kvfp8  # noqa: E402
import peer_family_moe as moe  # noqa: E402
import peer_family_moe_combine as combine  # noqa: E402
import peer_family_normfp8 as normfp8  # noqa: E402
import peer_family_varlen as varlen  # noqa: E402
import peer_family_varlen_kv as varlen_kv  # noqa: E402
import peer_reference  # noqa: E402

BF, E4M3 = torch.bfloat16, torch.float8_e4m3fn


class CpuTorch:
    """torch whose factories put device="cuda" tensors on the CPU: the builders allocate on "cuda"."""
    FACTORIES = ("zeros", "ones", "empty", "tensor", "arange", "full")

    def __getattr__(self, name):
        attr = getattr(torch, name)
        if name not in self.FACTORIES:
            return attr

        def on_cpu(*a, **kw):
            if kw.get("device") == "cuda":
                kw["device"] = "cpu"
            return attr(*a, **kw)
        return on_cpu


CT = CpuTorch()


def cpu_gen(torch_, seed):
    return torch.Generator().manual_seed(seed)


def cpu_normal(torch_, g, shape, dtype, std=1.0):
    return torch.empty(shape, dtype=dtype).normal_(0.0, std, generator=g)


def cpu_uniform(torch_, g, shape, dtype, lo, hi):
    return torch.empty(shape, dtype=dtype).uniform_(lo, hi, generator=g)


# peer_server as the family builders see it (peer.api), with its generators on the CPU
API = types.SimpleNamespace(**{k: getattr(ps, k) for k in dir(ps) if not k.startswith("__")})
API._gen, API._normal, API._uniform = cpu_gen, cpu_normal, cpu_uniform


def on_cpu(peer):
    """peer with API for its server: its builder draws the inputs on the CPU."""
    peer.api = API
    return peer


def build(mod, recipe, dims, name, seed=11):
    """The op of the peer `name` of this problem, built on the CPU."""
    (peer,) = [on_cpu(p) for p in mod.peers(recipe, dims, ps) if p.name == name]
    return mod.BUILDERS[peer.family](CT, peer, 1, seed)


def normal(*shape, std=1.0, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * std).to(dtype)


class Case(unittest.TestCase):
    def passes(self, op, out):
        ps.check_values(torch, op.expected(op.sets[0], out))

    def fails(self, op, out, regex="wrong values"):
        with self.assertRaisesRegex(ps.PeerError, regex):
            ps.check_values(torch, op.expected(op.sets[0], out))


def sdpa(q, k, v, causal=False, mask=None):
    """float32 SDPA of [H, S, D] tensors (GQA by repeat_interleave, as enable_gqa), out in q's dtype."""
    g = q.shape[0] // k.shape[0]
    k, v = (x.float().repeat_interleave(g, 0) for x in (k, v))
    return F.scaled_dot_product_attention(q.float(), k, v, is_causal=causal, attn_mask=mask).to(q.dtype)


# ---------------------------------------------------------------- gemm.fp8

class Fp8Test(Case):
    def dequant_mm(self, s, M, N, K, scale, b=None, sa_of=None, sb_of=None):
        """The peer's c: both operands dequantized in float32 (their scales expanded to every element), one
        matmul, bf16 out. sa_of and sb_of override how a block scaling's scales are read from the layout
        the call takes (sa [M', KB], sb [L4, N/128]) into [M, KB] and [N/128, KB]."""
        a, b = s["a"][:M].float(), (s["b"] if b is None else b).float()
        if scale == "tensor":
            sa, sb = s["sa"].float(), s["sb"].float()
        elif scale == "row":
            sa, sb = s["sa"][:M], s["sb"].reshape(N, 1)
        else:
            kb = K // 128
            sa = (sa_of or (lambda x: x[:M]))(s["sa"]).repeat_interleave(128, 1)
            sb = (sb_of or (lambda x: x[:kb].t()))(s["sb"]).repeat_interleave(128, 0).repeat_interleave(128, 1)
        return ((a * sa) @ (b * sb).t()).to(BF)

    def test_tensor_and_row_scalings(self):
        M, N, K = 300, 48, 400  # more rows than the check reads; a K % 128 tail
        for scale in ("tensor", "row"):
            op = build(fp8, "gemm.fp8", {"M": M, "N": N, "K": K, "scale": scale}, "scaled_mm")
            s = op.sets[0]
            self.passes(op, self.dequant_mm(s, M, N, K, scale))
            c = self.dequant_mm(s, M, N, K, scale)
            c[-1] = c[-2]  # the last row wrong
            self.fails(op, c)
            tail = dict(s, a=s["a"].clone())
            tail["a"][:, 384:] = 0  # the K tail lost
            self.fails(op, self.dequant_mm(tail, M, N, K, scale))
        flipped = dict(s, sa=s["sa"].flip(0))  # row scales of other rows
        self.fails(op, self.dequant_mm(flipped, M, N, K, "row"))

    def test_block_scaling_in_cublaslt_layout(self):
        M, N, K = 301, 256, 384  # a padded to 304 rows; 3 K blocks (L4 4), 2 N blocks
        op = build(fp8, "gemm.fp8", {"M": M, "N": N, "K": K, "scale": "block"}, "scaled_mm-blockwise")
        s = op.sets[0]
        self.assertEqual((tuple(s["a"].shape), tuple(s["sb"].shape)), ((304, K), (4, 2)))
        pad = torch.zeros(3, N, dtype=BF)  # the peer's rows past M (results() drops them)
        self.passes(op, torch.cat([self.dequant_mm(s, M, N, K, "block"), pad]))
        # sb's memory ([N/128, L4] row-major) read as a row-major [L4, N/128]
        wrong_b = (lambda x: x.t().contiguous().view(4, 2)[:3].t())
        self.fails(op, torch.cat([self.dequant_mm(s, M, N, K, "block", sb_of=wrong_b), pad]))
        # sa's memory ([KB, M'] row-major) read as a row-major [M', KB]
        wrong_a = (lambda x: x.t().contiguous().view(304, 3)[:M])
        self.fails(op, torch.cat([self.dequant_mm(s, M, N, K, "block", sa_of=wrong_a), pad]))

    def test_transposed_b_fails(self):
        M, N, K = 40, 128, 128
        op = build(fp8, "gemm.fp8_fast", {"M": M, "N": N, "K": K, "scale": "tensor"}, "scaled_mm")
        s = op.sets[0]
        self.passes(op, self.dequant_mm(s, M, N, K, "tensor"))
        self.fails(op, self.dequant_mm(s, M, N, K, "tensor", b=s["b"].t()))

    def test_reference_per_k_block(self):
        a, b = normal(5, 300, std=3.0).to(E4M3), normal(7, 300, std=3.0, seed=1).to(E4M3)
        sa, sb = normal(5, 3, seed=2).abs() + 0.1, normal(7, 3, seed=3).abs() + 0.1
        want = sum((a[:, i:i + 128].double() @ b[:, i:i + 128].double().t()) * sa[:, j:j + 1].double() * sb[:, j].double()
                   for j, i in enumerate(range(0, 300, 128)))
        got = fp8.fp8_gemm_reference(torch, a, b, sa, sb)
        self.assertEqual(got.dtype, torch.float64)
        self.assertTrue(torch.allclose(got, want, rtol=1e-12, atol=1e-12))


# ---------------------------------------------------------------- attention.decode_fp8

KV_DIMS = {"B": 5, "HQ": 8, "HKV": 2, "D": 32, "page_size": 4, "max_pages": 8, "min_len": 1}


class KvFp8Test(Case):
    def dims(self, per_page):
        return dict(KV_DIMS, kv_scale="page" if per_page else "head")

    def varlen_out(self, op, d, swap_scales=False, drop_last_key=False):
        """The varlen peer's o [B, HQ, D]: SDPA per sequence over K, V dequantized in float32."""
        s = op.sets[0]
        lens = kvfp8.lengths(d, 11)
        cu = varlen.starts(lens)
        out = []
        for b in range(d["B"]):
            lo, hi = cu[b], cu[b + 1] - (drop_last_key and b == d["B"] - 1)
            if "k8" in s:
                ks, vs = ((x[lo:hi] if x.shape[0] > 1 else x).float() for x in (s["ks"], s["vs"]))
                if swap_scales:
                    ks, vs = vs, ks
                k, v = s["k8"][lo:hi].float() * ks, s["v8"][lo:hi].float() * vs
            else:
                k, v = s["k"][lo:hi], s["v"][lo:hi]
            out.append(sdpa(s["q"][b][:, None], k.transpose(0, 1), v.transpose(0, 1))[:, 0])
        return torch.stack(out).to(BF)

    def test_dequant_varlen(self):
        for per_page in (False, True):
            d = self.dims(per_page)
            op = build(kvfp8, "attention.decode_fp8", d, "dequant-flash-varlen")
            self.passes(op, self.varlen_out(op, d))
            self.fails(op, self.varlen_out(op, d, swap_scales=True))
            self.fails(op, self.varlen_out(op, d, drop_last_key=True))

    def test_bf16_varlen(self):
        d = self.dims(False)
        op = build(kvfp8, "attention.decode_fp8", d, "flash-varlen-bf16")
        self.passes(op, self.varlen_out(op, d))
        self.fails(op, self.varlen_out(op, d, drop_last_key=True))

    def batched_out(self, s, heads_of=None):
        """The SDPA peer's o [B, HQ, 1, D] (dequantized in float32 where the set holds e4m3)."""
        if "k8" in s:
            k, v = s["k8"].float() * s["ks"].float(), s["v8"].float() * s["vs"].float()
        else:
            k, v = s["k"], s["v"]
        if heads_of:
            k, v = heads_of(k), heads_of(v)
        return torch.stack([sdpa(s["q"][b], k[b], v[b]) for b in range(s["q"].shape[0])]).to(BF)

    def test_dequant_sdpa(self):
        for per_page in (False, True):
            op = build(kvfp8, "attention.decode_fp8", self.dims(per_page), "dequant-sdpa")
            s = op.sets[0]
            self.passes(op, self.batched_out(s))
            self.fails(op, self.batched_out(s, heads_of=lambda x: x.flip(1)))  # KV heads swapped
            o = self.batched_out(s)
            o[-1] = o[0]  # the last sequence wrong
            self.fails(op, o)

    def test_bf16_sdpa_uses_its_own_reference(self):
        with mock.patch.object(ps, "_gen", cpu_gen), mock.patch.object(ps, "_normal", cpu_normal):
            op = build(kvfp8, "attention.decode_fp8", self.dims(False), "flash-sdpa-bf16")
        s = op.sets[0]
        self.assertEqual(op.expected.__qualname__, "batched_expected.<locals>.expected")
        self.passes(op, self.batched_out(s))
        # GQA grouping interleaved (query head h reading KV head h % HKV): wrong
        self.fails(op, torch.stack([sdpa(s["q"][b], s["k"][b].repeat(4, 1, 1), s["v"][b].repeat(4, 1, 1))
                                    for b in range(5)]).to(BF))


# ---------------------------------------------------------------- moe.grouped, moe.grouped_swiglu

CONTIGUOUS = {"E": 6, "N": 40, "K": 24, "T": 300, "min_tokens": 0}
MASKED = {"E": 4, "N": 40, "K": 24, "cap": 160, "min_count": 0}
MOE_SEED = 5  # CONTIGUOUS's routing then has an empty expert


def grouped(s, offs, expert_of=lambda e: e, swiglu=False):
    """The contiguous peer's c [T, N]: a float32 matmul per expert (expert_of(e): the weight it uses)."""
    outs = []
    for e, (lo, hi) in enumerate(zip(offs[:-1], offs[1:])):
        g = s["a"][lo:hi].float() @ s["w"][expert_of(e)].float().t()
        outs.append(F.silu(g[:, :g.shape[1] // 2]) * g[:, g.shape[1] // 2:] if swiglu else g)
    return torch.cat(outs).to(BF)


class MoeTest(Case):
    def offs(self, d):
        return moe.fill_offsets(MOE_SEED, moe.GROUPS_ARG_INDEX, d["E"], d["T"], d["min_tokens"])

    def test_grouped_mm_and_the_loop(self):
        offs = self.offs(CONTIGUOUS)
        self.assertIn(0, [b - a for a, b in zip(offs[:-1], offs[1:])], "an empty expert is exercised")
        for name in ("torch-grouped-mm", "cublas-loop"):
            op = build(moe, "moe.grouped", CONTIGUOUS, name, MOE_SEED)
            s = op.sets[0]
            r = op.call(0)  # both run on the CPU
            self.passes(op, r)
            self.passes(op, grouped(s, offs) if r is None else r)
            wrong = grouped(s, offs, expert_of=lambda e: (e + 1) % 6)  # an expert's neighbour's weight
            if r is None:
                s["c"].copy_(wrong)
            self.fails(op, wrong)

    def test_a_dropped_last_row_fails(self):
        op = build(moe, "moe.grouped", CONTIGUOUS, "torch-grouped-mm", MOE_SEED)
        c = op.call(0).clone()
        c[-1] = 0
        self.fails(op, c)

    def test_swiglu(self):
        op = build(moe, "moe.grouped_swiglu", dict(CONTIGUOUS, N=20), "torch-grouped-mm-silu", MOE_SEED)
        s, offs = op.sets[0], self.offs(CONTIGUOUS)
        self.passes(op, op.call(0))
        self.passes(op, grouped(s, offs, swiglu=True))
        swapped = dict(s, w=torch.cat([s["w"][:, 20:], s["w"][:, :20]], 1))  # silu(up) * gate
        self.fails(op, grouped(swapped, offs, swiglu=True))

    def test_masked_compares_the_counted_rows_only(self):
        counts = moe.fill_randint(11, moe.GROUPS_ARG_INDEX, 4, 0, 160)
        self.assertGreater(sum(counts), 256, "more counted rows than the check reads")
        for recipe, name, n in (("moe.grouped_masked", "cublas-bmm-padded", 40),
                                ("moe.grouped_swiglu_masked", "cublas-bmm-padded-silu", 20)):
            op = build(moe, recipe, dict(MASKED, N=n), name)
            c = op.call(0).clone()
            self.passes(op, c)
            for e, n_e in enumerate(counts):
                c[e, n_e:] = 7.0  # the padding: tune's kernels zero it, the peer computes it
            self.passes(op, c)
            last = max(e for e, n_e in enumerate(counts) if n_e)
            c[last, counts[last] - 1] = 0  # the last counted row
            self.fails(op, c)
            c = op.call(0).clone()
            c[0, 0] = -c[0, 0]
            self.fails(op, c)

    def test_expert_reference_in_weight_chunks(self):
        a, w = normal(9, 33, std=4.0), normal(70, 33, seed=1)
        with mock.patch.object(moe, "WEIGHT_ELEMS", 33 * 16):  # 16 weight rows at a time: 5 chunks
            got = moe.expert_reference(torch, a, w)
        self.assertTrue(torch.allclose(got, a.double() @ w.double().t(), rtol=1e-12, atol=1e-9))


# ---------------------------------------------------------------- moe.combine

class CombineTest(Case):
    def test_eager_combine(self):
        T, H, k = 300, 64, 3
        op = build(combine, "moe.combine", {"T": T, "H": H, "top_k": k}, "torch")
        s = op.sets[0]
        out = op.call(0)
        self.passes(op, out)
        pos = combine.worker_inputs.permutation(11, combine.POS_ARG_INDEX, T * k)
        y = s["y"].float()[torch.tensor(pos)].view(T, k, H)  # the recipe's gather, in float32
        self.passes(op, (y * s["w"][..., None]).sum(1).to(BF))
        self.fails(op, (y * s["w"].flip(1)[..., None]).sum(1).to(BF))  # weights of the wrong slots
        y_wrong = s["y"].float().view(T, k, H)  # rows taken in expert order: no un-permutation
        self.fails(op, (y_wrong * s["w"][..., None]).sum(1).to(BF))
        o = out.clone()
        o[-1] = 0
        self.fails(op, o)


# ---------------------------------------------------------------- rmsnorm.fp8, rmsnorm.fp8_static

class NormFp8Test(Case):
    def test_eager_peer_passes_both_quantizations(self):
        for recipe, quant in (("rmsnorm.fp8", "dynamic"), ("rmsnorm.fp8_static", "static")):
            op = build(normfp8, recipe, {"T": 300, "H": 96, "quant": quant}, "torch")
            self.passes(op, op.call(0))

    def test_a_wrong_dynamic_scale_fails(self):
        op = build(normfp8, "rmsnorm.fp8", {"T": 300, "H": 96, "quant": "dynamic"}, "torch")
        y, scale = op.call(0)
        self.fails(op, (y, scale * 1.1), "scale")
        self.fails(op, (y.roll(1, 0), scale), r"y \(e4m3\)")  # rows shifted
        y_big = (y.float() * 1.25).clamp(-448, 448).to(E4M3)  # a scale 20 % small
        self.fails(op, (y_big, scale), r"y \(e4m3\)")

    def test_a_wrong_static_quantization_fails(self):
        op = build(normfp8, "rmsnorm.fp8_static", {"T": 300, "H": 96, "quant": "static"}, "torch")
        y = op.call(0)
        s = op.sets[0]
        self.fails(op, (y.float() * 1.25).clamp(-448, 448).to(E4M3), r"y \(e4m3\)")
        self.fails(op, y.roll(1, 1), r"y \(e4m3\)")  # columns shifted
        s["h"][-1] = 0  # h's last row lost
        self.fails(op, y, r"h \[T,H\]")

    def test_e4m3_allowance(self):
        want = normal(4096, std=100.0, dtype=torch.float64).clamp(-448, 448)
        want[:8] = torch.tensor([448, -448, 0, 2 ** -9, -2 ** -8, 1e-4, 2 ** -6, 17])
        rounded = want.to(E4M3).float()
        self.assertFalse(bool(normfp8.e4m3_mismatch(torch, rounded, want).any()))
        near = (want * (1 + 2 ** -9)).clamp(-448, 448).to(E4M3).float()  # a bf16 rounding before it
        self.assertFalse(bool(normfp8.e4m3_mismatch(torch, near, want).any()))
        self.assertTrue(bool(normfp8.e4m3_mismatch(torch, (want * 1.15).to(E4M3).float(), want).any()))

    def test_reference(self):
        x, r, w = normal(3, 64, dtype=BF), normal(3, 64, std=2.0, dtype=BF, seed=1), normal(64, dtype=BF, seed=2)
        h, y, scale = normfp8.norm_fp8_reference(torch, x, r, w)
        hb = (x.float() + r.float()).to(BF).double()
        v = hb * w.double() / (hb.square().mean(-1, keepdim=True) + 1e-6).sqrt()
        self.assertTrue(torch.allclose(scale[:, 0], v.abs().amax(-1) / 448))
        self.assertTrue(torch.allclose(y, v / scale))
        self.assertEqual(float(y.abs().amax()), 448.0)


# ---------------------------------------------------------------- attention.varlen

VARLEN = {"B": 9, "T": 300, "HQ": 4, "HKV": 2, "D": 16, "causal": True}


def packed_out(s, cu_q, cu_k, causal, mask_of=None, drop_last=False):
    """A varlen peer's o [TQ, HQ, D]: float32 SDPA per sequence (bottom-right causal where Lk > Lq)."""
    out = []
    for b in range(len(cu_q) - 1):
        q, k, v = (s[n][c[b]:c[b + 1]].transpose(0, 1) for n, c in (("q", cu_q), ("k", cu_k), ("v", cu_k)))
        mask = mask_of(q.shape[1], k.shape[1]) if mask_of else None
        if causal and mask is None:
            mask = torch.ones(q.shape[1], k.shape[1], dtype=torch.bool).tril(k.shape[1] - q.shape[1])
        o = sdpa(q, k, v, mask=mask).transpose(0, 1)
        out.append(torch.zeros_like(o) if drop_last and b == len(cu_q) - 2 else o)
    return torch.cat(out)


class VarlenTest(Case):
    def cu(self, d=VARLEN):
        return varlen.offsets(d["B"], d["T"], 1, 11)

    def test_flash_and_varlen_attn(self):
        cu = self.cu()
        for name in ("flash-varlen", "torch-varlen-attn"):
            op = build(varlen, "attention.varlen", VARLEN, name)
            s = op.sets[0]
            self.passes(op, packed_out(s, cu, cu, True))
            self.fails(op, packed_out(s, cu, cu, False))  # no causal mask
            self.fails(op, packed_out(s, cu, cu, True, drop_last=True))
            whole = sdpa(*(s[n].transpose(0, 1) for n in "qkv"), causal=True).transpose(0, 1)
            self.fails(op, whole)  # causal over the whole batch: sequences see each other

    def test_not_causal(self):
        d = dict(VARLEN, causal=False)
        cu = self.cu(d)
        op = build(varlen, "attention.varlen", d, "flash-varlen")
        self.passes(op, packed_out(op.sets[0], cu, cu, False))
        self.fails(op, packed_out(op.sets[0], cu, cu, True))

    def test_flex_layout(self):
        cu = self.cu()
        s = {n: normal(300, 4 if n == "q" else 2, 16, dtype=BF, seed=i) for i, n in enumerate("qkv")}
        flex = {n: x.transpose(0, 1).unsqueeze(0) for n, x in s.items()}  # [1, H, T, D]
        unpack = (lambda x: x[0].transpose(0, 1))
        expected = varlen.packed_expected(torch, ps, cu, True, unpack=unpack)
        o = packed_out(s, cu, cu, True).transpose(0, 1).unsqueeze(0)
        ps.check_values(torch, expected(flex, o))
        with self.assertRaises(ps.PeerError):
            ps.check_values(torch, expected(flex, o.transpose(-1, -2).reshape(o.shape)))  # [T, D] read as [D, T]

    def test_cudnn_padded_runs_on_the_cpu(self):
        for causal in (True, False):
            op = build(varlen, "attention.varlen", dict(VARLEN, causal=causal), "cudnn-sdpa-padded")
            o = op.call(0).clone()
            self.passes(op, o)
            lens = [b - a for a, b in zip(self.cu()[:-1], self.cu()[1:])]
            last = len(lens) - 1
            o[last, :, lens[last]:] = 9.0  # the padding is not compared
            self.passes(op, o)
            o[last, :, lens[last] - 1] += 1.0  # the last valid row
            self.fails(op, o)
        s = op.sets[0]  # not causal, keys past each length not masked: the zero keys dilute it
        self.fails(op, F.scaled_dot_product_attention(s["q"], s["k"], s["v"], enable_gqa=True))

    def test_reference_against_sdpa(self):
        q, k = normal(7, 6, 16, std=2.0, dtype=BF), normal(11, 2, 16, std=2.0, dtype=BF, seed=1)
        v = normal(11, 2, 16, dtype=BF, seed=2)
        rows = torch.tensor([0, 3, 6])
        mask = torch.ones(7, 11, dtype=torch.bool).tril(4)  # bottom right: query i sees keys <= i + 4
        want = sdpa(q.transpose(0, 1).float(), k.transpose(0, 1), v.transpose(0, 1), mask=mask).transpose(0, 1)
        got = varlen.attention_reference(torch, q, k, v, True, rows)
        self.assertEqual(tuple(got.shape), (3, 6, 16))
        self.assertTrue(torch.allclose(got.float(), want[rows], atol=1e-5))
        with mock.patch.object(peer_reference, "SCORES_ELEMS", 3 * 11):  # one row at a time
            self.assertTrue(torch.allclose(varlen.attention_reference(torch, q, k, v, True, rows), got))
        ks, vs = normal(11, 2, 1, dtype=torch.float32, seed=3).abs(), normal(1, 2, 1, seed=4).abs()
        scaled = varlen.attention_reference(torch, q, k, v, False, None, ks, vs)
        self.assertTrue(torch.allclose(scaled, varlen.attention_reference(torch, q, k.float() * ks, v.float() * vs, False)))

    def test_rows_by_sequence(self):
        self.assertEqual(varlen.worker_inputs.rows_by_segment([0, 2, 2, 5, 9], [0, 1, 2, 4, 8]),
                         [(0, [0, 1]), (2, [0, 2]), (3, [3])])
        self.assertEqual(varlen.starts([2, 0, 3]), [0, 2, 2, 5])


# ---------------------------------------------------------------- attention.varlen_kv

VARLEN_KV = {"B": 6, "TQ": 300, "TK": 700, "HQ": 4, "HKV": 2, "D": 16, "causal": True}


class VarlenKvTest(Case):
    def test_flash_is_causal_bottom_right(self):
        cu_q, cu_k = varlen_kv.lengths(VARLEN_KV, 11)
        for name in ("flash-varlen", "torch-varlen-attn"):
            op = build(varlen_kv, "attention.varlen_kv", VARLEN_KV, name)
            s = op.sets[0]
            self.passes(op, packed_out(s, cu_q, cu_k, True))
            top_left = (lambda lq, lk: torch.ones(lq, lk, dtype=torch.bool).tril())
            self.fails(op, packed_out(s, cu_q, cu_k, True, mask_of=top_left))
            self.fails(op, packed_out(s, cu_q, cu_k, True, drop_last=True))

    def test_sdpa_lower_right_runs_on_the_cpu(self):
        op = build(varlen_kv, "attention.varlen_kv", VARLEN_KV, "sdpa-lower-right")
        outs = [o.clone() for o in op.call(0)]
        self.passes(op, outs)
        outs[-1][0, :, -1] = 0  # the last query row of the last sequence
        self.fails(op, outs)
        parts = op.sets[0]
        top_left = [F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True) for q, k, v in parts]
        self.fails(op, top_left)


if __name__ == "__main__":
    unittest.main()
