"""tunert.torch.moe_layer_fp8 on any CPU: the activation quantization against its definition, the
layer against a float64 computation written here from the formula (routing, every routed row's
quantization, the two expert GEMMs per 128-wide K block, SwiGLU, the weighted sum), the op against
moe_layer_fp8_torch, SwiGLU's quantization through tunert.torch.swiglu_quant_fp8, the argument errors
and the fake implementation. No GPU, no bundle: the expert GEMMs take grouped_scaled_mm's PyTorch path
here (tests/python/test_ops_gpu.py runs the tuned ones)."""
import unittest

from common import HAVE_TORCH, needs_torch

if HAVE_TORCH:
    import torch
    import tunert.torch as tt
    from tunert.errors import DTypeMismatch, InvalidArgument
    from tunert.torch import _ops_moe_layer_fp8 as lf

MODES = ("block", "row", "tensor")


def cdiv(x, y):
    return -(-x // y)


def e4m3(g, *shape):
    return (torch.randn(*shape, generator=g) * 2).to(torch.float8_e4m3fn)


def weight_scales(g, mode, E, N, K):
    """f32 weight scales of `mode`, drawn in 0.5 .. 2, / sqrt(K) so that the outputs stay O(1)."""
    shape = {"block": (E, cdiv(N, 128), cdiv(K, 128)), "row": (E, N), "tensor": (E,)}[mode]
    return (torch.rand(*shape, generator=g) * 1.5 + 0.5) / K ** 0.5


def layer_args(mode, T=24, H=272, I=144, E=4, seed=0):
    """x [T, H] bf16 and e4m3 experts with their scales; H, I past a 128 multiple (partial scale blocks)."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(T, H, generator=g) * 3).to(torch.bfloat16)
    x[3] = 0   # a token of zeros: its groups take the floor scale
    router_w = torch.randn(E, H, generator=g).to(torch.bfloat16)
    w13, w2 = e4m3(g, E, 2 * I, H), e4m3(g, E, H, I)
    return x, router_w, w13, weight_scales(g, mode, E, 2 * I, H), w2, weight_scales(g, mode, E, H, I)


def quantize_plain(v, mode):
    """float64 (dequantized values, scales) of rows v [R, K] by the definition, group by group."""
    R, K = v.shape
    v = v.double()
    if mode == "tensor":
        groups = [(slice(None), slice(None))]
    elif mode == "row":
        groups = [(slice(r, r + 1), slice(None)) for r in range(R)]
    else:
        groups = [(slice(r, r + 1), slice(k, min(k + 128, K))) for r in range(R) for k in range(0, K, 128)]
    out = torch.empty_like(v)
    for rs, ks in groups:
        amax = v[rs, ks].abs().max().item()
        s = max(amax / 448, 1 / (448 * 512))   # floored: a zero group's scale stays finite
        s = float(torch.tensor(s, dtype=torch.float32))   # the scale is stored in f32
        q = (v[rs, ks] / s).clamp(-448, 448).float().to(torch.float8_e4m3fn).double()
        out[rs, ks] = q * s
    return out


def dequant_weights(w8, s, mode):
    """float64 [E, N, K] of e4m3 weights with their scales (block: one per 128 x 128 block)."""
    w = w8.double()
    if mode == "tensor":
        return w * s.double()[:, None, None]
    if mode == "row":
        return w * s.double()[:, :, None]
    E, N, K = w.shape
    full = s.double().repeat_interleave(128, 1).repeat_interleave(128, 2)[:, :N, :K]
    return w * full


def layer_plain(x, router_w, w13, s13, w2, s2, top_k, mode):
    """The layer in float64 from the formula, the bf16 roundings where the op rounds (the expert
    GEMMs' outputs, the final sum); SwiGLU's output is quantized as it is, as swiglu_quant_fp8 does."""
    weights, ids = tt._ops_moe_layer.route(x, router_w, top_k)   # moe_layer's routing (tested there)
    T, H = x.shape
    I = w13.shape[1] // 2
    order = torch.argsort(ids.reshape(-1), stable=True)
    rows = order // top_k
    e_of = ids.reshape(-1)[order]
    W13, W2 = dequant_weights(w13, s13, mode), dequant_weights(w2, s2, mode)
    xq = quantize_plain(x[rows].float(), mode)
    g = torch.stack([xq[i] @ W13[e].t() for i, e in enumerate(e_of.tolist())]).to(torch.bfloat16).double()
    h = g[:, :I] / (1 + torch.exp(-g[:, :I])) * g[:, I:]
    hq = quantize_plain(h, mode)
    y = torch.stack([hq[i] @ W2[e].t() for i, e in enumerate(e_of.tolist())]).to(torch.bfloat16).double()
    out = torch.zeros(T, H, dtype=torch.float64)
    w_flat = weights.reshape(-1).double()
    for i, flat in enumerate(order.tolist()):
        out[flat // top_k] += w_flat[flat] * y[i]
    return out


def rel_l2(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm()).item()


@needs_torch
class QuantizeTest(unittest.TestCase):
    def test_each_mode_by_its_definition(self):
        g = torch.Generator().manual_seed(1)
        v = torch.randn(5, 300, generator=g) * torch.logspace(-3, 3, 300)   # a wide range across K
        v[2] = 0
        for mode in MODES:
            q, s = lf.quantize(v, mode)
            self.assertEqual(q.dtype, torch.float8_e4m3fn)
            self.assertEqual(tuple(s.shape), {"block": (5, 3), "row": (5,), "tensor": (1,)}[mode], mode)
            per_value = s.repeat_interleave(128, 1)[:, :300] if mode == "block" else s[:, None] if mode == "row" else s
            deq = q.double() * per_value.double()
            torch.testing.assert_close(deq, quantize_plain(v, mode), rtol=0, atol=0, msg=mode)
            self.assertEqual(deq[2].abs().max().item(), 0.0, mode)

    def test_group_maxima_reach_448(self):
        v = torch.tensor([[1.0, -3.0] + [0.5] * 126 + [7.0, 2.0]])
        q, s = lf.quantize(v, "block")
        self.assertEqual(q.float()[0, 1].item(), -448.0)
        self.assertEqual(q.float()[0, 128].item(), 448.0)
        torch.testing.assert_close(s, torch.tensor([[3.0 / 448, 7.0 / 448]]))


@needs_torch
class LayerTest(unittest.TestCase):
    def test_layer_against_the_formula(self):
        for mode in MODES:
            args = layer_args(mode)
            y = tt.moe_layer_fp8(*args, top_k=2)
            self.assertEqual((y.shape, y.dtype), (args[0].shape, torch.bfloat16))
            self.assertLess(rel_l2(y, layer_plain(*args, 2, mode)), 1e-2, mode)

    def test_op_and_torch_layer_agree(self):
        for mode in MODES:
            args = layer_args(mode, seed=3)
            torch.testing.assert_close(tt.moe_layer_fp8(*args, top_k=3, scoring="sigmoid"),
                                       tt.moe_layer_fp8_torch(*args, top_k=3, scoring="sigmoid"), msg=mode)

    def test_swiglu_quant_fp8_between_the_gemms(self):
        # block and row: one call in the down GEMM's scaling; tensor: token scales, then one static pass
        want = {"block": (1, 0), "row": (1, 0), "tensor": (1, 1)}
        for mode in MODES:
            tt.reset_stats()
            tt.moe_layer_fp8(*layer_args(mode), top_k=2)
            st = tt.stats()
            got = tuple(st.get(op, {}).get("cpu", 0) for op in ("swiglu_quant_fp8", "swiglu_quant_fp8_static"))
            self.assertEqual(got, want[mode], mode)

    def test_a_wrong_scale_block_shows(self):
        # the test can fail: one weight block scaled twice over moves the tokens routed to it
        x, rw, w13, s13, w2, s2 = layer_args("block")
        bad = s13.clone()
        bad[:, 0, 0] *= 2
        self.assertGreater(rel_l2(tt.moe_layer_fp8(x, rw, w13, bad, w2, s2, 2), layer_plain(x, rw, w13, s13, w2, s2, 2,
                                                                                                  "block")), 2e-2)

    def test_no_tokens(self):
        x, rw, w13, s13, w2, s2 = layer_args("row")
        self.assertEqual(tuple(tt.moe_layer_fp8(x[:0], rw, w13, s13, w2, s2, 2).shape), (0, x.shape[1]))

    def test_argument_errors(self):
        x, rw, w13, s13, w2, s2 = layer_args("block")
        with self.assertRaises(InvalidArgument):   # block weights with row scales for w2
            tt.moe_layer_fp8(x, rw, w13, s13, w2, torch.ones(w2.shape[0], w2.shape[1]), 2)
        with self.assertRaises(DTypeMismatch):
            tt.moe_layer_fp8(x.float(), rw, w13, s13, w2, s2, 2)
        with self.assertRaises(InvalidArgument):
            tt.moe_layer_fp8(x, rw, w13, s13, w2, s2, 5)   # top_k past the 4 experts
        with self.assertRaises(InvalidArgument):
            tt.moe_layer_fp8(x, rw, w13[:, :-1], s13, w2, s2, 2)   # 2I odd

    def test_fake_shape(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        args = layer_args("tensor")
        with FakeTensorMode() as mode:
            fake = tt.moe_layer_fp8(*[mode.from_tensor(a) for a in args], top_k=2)
        self.assertEqual((tuple(fake.shape), fake.dtype), (tuple(args[0].shape), torch.bfloat16))


if __name__ == "__main__":
    unittest.main()
