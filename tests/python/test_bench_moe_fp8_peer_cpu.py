"""tools/bench/moe_fp8_peer.py on any CPU: the FP8 layer as a PyTorch model runs it (the peer of
tunert.torch.moe_layer_fp8 in tools/bench/moe_layer.py --fp8) against moe_layer_fp8_torch, with the
peer's library GEMMs (CUDA only) replaced by grouped_scaled_mm's PyTorch path, so that what is
checked is the peer's own part: its quantizations, its SwiGLU (gate columns first) and the weight
scales it draws. The library calls themselves run on the GPU (data/serve/*-moe-layer-fp8)."""
import sys
import unittest

from common import HAVE_TORCH, SRC, needs_torch

if HAVE_TORCH:
    import torch
    import tunert.torch as tt
    from tunert.torch import _ops_moe_layer_fp8 as lf
    from test_ops_moe_layer_fp8_cpu import layer_args, rel_l2
    sys.path.insert(0, str(SRC / "tools" / "bench"))
    import moe_fp8_peer as peer


@needs_torch
class PeerLayerTest(unittest.TestCase):
    def run_peer(self, mode, *args):
        saved = peer._grouped_gemm
        peer._grouped_gemm = lf._gemm_torch   # the dequantized path in place of the library calls
        try:
            return peer.layer_fp8(*args, mode)
        finally:
            peer._grouped_gemm = saved

    def test_peer_is_the_layer_up_to_the_rounding_of_h(self):
        # the peer rounds silu(gate) * up to bf16 before quantizing it (tune keeps it in fp32): within
        # a few e4m3 roundings of the reference, and far from it with gate and up swapped
        for mode in ("block", "row", "tensor"):
            x, router_w, w13, s13, w2, s2 = layer_args(mode)
            ref = tt.moe_layer_fp8_torch(x, router_w, w13, s13, w2, s2, 2)
            got = self.run_peer(mode, x, router_w, w13, s13, w2, s2, 2, True, "softmax")
            self.assertEqual(got.dtype, torch.bfloat16)
            self.assertLess(rel_l2(got, ref), 3e-2, mode)
            inter = w13.shape[1] // 2
            swapped = torch.cat([w13[:, inter:], w13[:, :inter]], 1)
            s13_swapped = s13 if mode == "tensor" else torch.cat([s13[:, s13.shape[1] // 2:], s13[:, :s13.shape[1] // 2]], 1)
            if mode == "block" and inter % 128:
                continue   # a block of scales straddles gate and up: no clean swap
            wrong = self.run_peer(mode, x, router_w, swapped, s13_swapped, w2, s2, 2, True, "softmax")
            self.assertGreater(rel_l2(wrong, ref), 0.2, mode)

    def test_tensor_scales_reach_the_grouped_call_as_row_scales(self):
        # torch._scaled_grouped_mm (CUDA only) takes row scales: the peer's gemm expands a tensor scale
        # to them; the grouped call replaced by the row-scaled PyTorch path must give the tensor one's
        from tunert.torch import _ops_moe_fp8 as mf
        x, _, w13, s13, _, _ = layer_args("tensor")
        a8, sa = lf.quantize(x, "tensor")
        offsets = torch.tensor([0, 5, 5, 20, x.shape[0]], dtype=torch.int32)
        saved = mf._grouped_rowwise
        mf._grouped_rowwise = lambda a, w, o, sa_, sw_: mf._contiguous_ref(a, w, o, sa_, sw_, "row", torch.bfloat16)
        try:
            got = peer._grouped_gemm("tensor")(a8, w13, offsets, sa, s13)
        finally:
            mf._grouped_rowwise = saved
        want = mf._contiguous_ref(a8, w13, offsets, sa, s13, "tensor", torch.bfloat16)
        self.assertLess(rel_l2(got, want), 1e-2)

    def test_weight_scales_shapes_and_size(self):
        g = torch.Generator().manual_seed(0)
        E, N, K, std = 3, 300, 260, 0.02
        for mode, shape in (("tensor", (3,)), ("row", (3, 300)), ("block", (3, 3, 3))):
            s = peer.weight_scales(E, N, K, mode, std, g, device="cpu")
            self.assertEqual(tuple(s.shape), shape, mode)
            lo, hi = 0.5 * std / peer.CHECKPOINT_RANGE, 1.5 * std / peer.CHECKPOINT_RANGE
            self.assertTrue(bool(((s >= lo) & (s <= hi)).all()), mode)


if __name__ == "__main__":
    unittest.main()
