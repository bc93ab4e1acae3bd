"""peer_family_fp8.py: the peers of recipes/gemm/fp8.lua (gemm.fp8, gemm.fp8_fast) and
recipes/gemm/fp8_skinny.lua (gemm.fp8_skinny: gemm.fp8's arguments at decode sizes), loaded by
peer_server.py (docs/peers.md; CONTRACT: peers(recipe, dims, api) and BUILDERS).

The peer is torch's scaled matmul on the same e4m3 operands and f32 scales, bf16 out:
  tensor  torch._scaled_mm(a, b.t(), scale_a [], scale_b [], out_dtype=bf16)       cuBLASLt
  row     the same with scale_a [M, 1], scale_b [1, N] (rowwise; torch's own CUTLASS kernel on sm_90)
  block   DeepSeek's 1 x 128 (a) x 128 x 128 (b) scales, cuBLASLt (CUDA >= 12.9, sm_90 only) through
          torch.nn.functional.scaled_mm with explicit ScalingType where this torch has it, else
          torch._scaled_mm (which infers the scaling from the scales' shapes). cuBLASLt wants scale_a
          outer-dim-major ([M, K/128] with strides [1, M]) and scale_b as [L4, N/128] with strides
          [1, L4], L4 = K/128 rounded up to 4, M a multiple of 4 (a is padded with rows, the output
          sliced back) and K, N multiples of 128 (other problems are skipped, with that reason).
b is [N, K] row-major, so b.t() is the column-major [K, N] operand _scaled_mm requires. gemm.fp8 is
timed with use_fast_accum=False (cuBLAS promotes partial sums, as gemm.fp8 and gemm.fp8_skinny do), gemm.fp8_fast with
use_fast_accum=True (one tensor-core accumulator, as gemm.fp8_fast). The output's first M rows are
checked on their first and last 128 against fp8_gemm_reference (float64, K block by K block, the
scales read back from the layout the call was given: block_scales). torch is imported by the caller
(peer_server) only: nothing here imports it at module import time.
"""
import math

FAMILY = "fp8"
RECIPES = {"gemm.fp8": False, "gemm.fp8_fast": True, "gemm.fp8_skinny": False}  # recipe -> use_fast_accum
DIMS = ("M", "N", "K", "scale")
SCALES = ("tensor", "row", "block")


def scale_numels(M, N, K, scale):
    """(scale_a, scale_b) element counts of the recipe's scale tensors."""
    kb = -(-K // 128)
    if scale == "block":
        return M * kb, -(-N // 128) * kb
    if scale == "row":
        return M, N
    return 1, 1


def set_bytes(M, N, K, scale):
    """Bytes of one input/output set: a and b (1 byte each), c (bf16), the f32 scales."""
    sa, sb = scale_numels(M, N, K, scale)
    return M * K + N * K + 2 * M * N + 4 * (sa + sb)


def block_layout(M, N, K):
    """cuBLASLt's DeepSeek layout for this problem: (M padded to 4, K/128, L4), or a reason why it
    cannot run it."""
    if K % 128 or N % 128:
        return None, f"cuBLASLt blockwise scaling needs K and N multiples of 128 (K {K}, N {N})"
    kb = K // 128
    return (-(-M // 4) * 4, kb, -(-kb // 4) * 4), None


def scale_ranges(scale, K):
    """((lo, hi) of scale_a, (lo, hi) of scale_b) as the fp8 recipes draw them (recipes/gemm/shared/fp8.lua):
    U(1/64, 4) in block mode, else U(0.5, 2); scale_b's again / sqrt(K)."""
    lo, hi = (1 / 64, 4.0) if scale == "block" else (0.5, 2.0)
    rk = 1 / math.sqrt(K)
    return (lo, hi), (lo * rk, hi * rk)


def blas_version(api):
    """The loaded cuBLASLt's version (cuBLAS's where cuBLASLt is not loaded), or "?"."""
    return (api._loaded_version("libcublasLt.so", "cublasLtGetProperty")
            or api._loaded_version("libcublas.so", "cublasGetProperty") or "?")


def fp8_gemm_reference(torch, a, b, scale_a, scale_b):
    """float64 c = sum over 128-wide K blocks kb of (a_kb @ b_kb^T) * scale_a[:, kb] * scale_b[:, kb]:
    a [R, K] and b [N, K] e4m3 (exact in float64), scale_a [R, KB] and scale_b [N, KB] the factors of
    each row of a and of b per K block (a K % 128 tail is the last block). -> [R, N]"""
    R, K = a.shape
    c = torch.zeros(R, b.shape[0], dtype=torch.float64, device=a.device)
    for kb in range(-(-K // 128)):
        blk = slice(kb * 128, (kb + 1) * 128)
        c += (a[:, blk].double() @ b[:, blk].double().t()) * scale_a[:, kb:kb + 1].double() * scale_b[:, kb].double()
    return c


def e4m3_rows(torch, x, rows):
    """x[rows] of an e4m3 tensor, gathered as bytes (every torch indexes uint8; not every one float8)."""
    return x.view(torch.uint8)[rows].view(x.dtype)


def block_scales(torch, sa, sb, scale, rows, N, K):
    """(scale_a [R, KB], scale_b [N, KB]) for fp8_gemm_reference, of a's rows `rows`, read from the
    scales in the layout the peer's call takes: tensor [] and []; row [M, 1] and [1, N]; block [M', KB]
    (1 x 128 blocks) and [L4, N / 128] (128 x 128 blocks, entry [kb, nb]; rows past KB unused)."""
    kb = -(-K // 128)
    if scale == "tensor":
        return sa.reshape(1, 1).expand(len(rows), kb), sb.reshape(1, 1).expand(N, kb)
    if scale == "row":
        return sa[rows].expand(-1, kb), sb.reshape(N, 1).expand(N, kb)
    return sa[rows], sb[:kb].t().repeat_interleave(128, dim=0)[:N]


def peers(recipe, dims, api):
    if recipe not in RECIPES:
        return None
    api.require_dims(recipe, dims, DIMS)
    if dims["scale"] not in SCALES:
        raise api.PeerError(f"scale {dims['scale']!r}: tensor, row or block")
    M, N, K, scale = dims["M"], dims["N"], dims["K"], dims["scale"]
    name = "scaled_mm-blockwise" if scale == "block" else "scaled_mm"
    return [api.Peer(name, FAMILY, dims, set_bytes(M, N, K, scale), scale=scale, fast=RECIPES[recipe])]


def _operands(torch, api, g, M, N, K, scale, m_rows):
    """a [m_rows, K] (rows past M zero), b [N, K] e4m3, scales drawn as the recipe draws them
    (scale_b / sqrt(K)); shapes and strides as _scaled_mm wants them for `scale`."""
    f32 = torch.float32
    a = torch.zeros(m_rows, K, dtype=torch.float8_e4m3fn, device="cuda")
    a[:M] = api._normal(torch, g, (M, K), f32).to(torch.float8_e4m3fn)
    b = api._normal(torch, g, (N, K), f32).to(torch.float8_e4m3fn)
    ra, rb = scale_ranges(scale, K)
    if scale == "tensor":
        sa = api._uniform(torch, g, (), f32, *ra)
        sb = api._uniform(torch, g, (), f32, *rb)
    elif scale == "row":
        sa = api._uniform(torch, g, (M, 1), f32, *ra)
        sb = api._uniform(torch, g, (1, N), f32, *rb)
    else:
        _, kb, l4 = block_layout(m_rows, N, K)[0]
        sa = api._uniform(torch, g, (m_rows, kb), f32, *ra).t().contiguous().t()
        sb = torch.ones(N // 128, l4, dtype=f32, device="cuda")
        sb[:, :kb] = api._uniform(torch, g, (N // 128, kb), f32, *rb)
        sb = sb.t()
    return {"a": a, "b": b, "sa": sa, "sb": sb}


def _block_call(torch, fast):
    """The blockwise call of this torch: F.scaled_mm with explicit recipes, else _scaled_mm."""
    import torch.nn.functional as F
    if hasattr(F, "scaled_mm") and hasattr(F, "ScalingType"):
        st = F.ScalingType

        def fn(s):
            return F.scaled_mm(s["a"], s["b"].t(), s["sa"], st.BlockWise1x128, s["sb"], st.BlockWise128x128,
                               output_dtype=torch.bfloat16, use_fast_accum=fast)
        fn.expr = "torch.nn.functional.scaled_mm(a, b.t(), sa, BlockWise1x128, sb, BlockWise128x128)"
        return fn

    def fn(s):
        return torch._scaled_mm(s["a"], s["b"].t(), s["sa"], s["sb"], out_dtype=torch.bfloat16, use_fast_accum=fast)
    fn.expr = "torch._scaled_mm(a, b.t(), sa [M,K/128], sb [L4,N/128]) (scaling inferred from shapes)"
    return fn


def build_fp8(torch, peer, n_sets, seed):
    api = peer.api
    d, scale, fast = peer.dims, peer.opts["scale"], peer.opts["fast"]
    M, N, K = d["M"], d["N"], d["K"]
    m_rows = M
    if scale == "block":
        layout, why = block_layout(M, N, K)
        if layout is None:
            raise api.PeerError(why)
        m_rows = layout[0]
    sets = [_operands(torch, api, api._gen(torch, seed + i), M, N, K, scale, m_rows) for i in range(n_sets)]
    if scale == "block":
        fn = _block_call(torch, fast)
    else:
        def fn(s):
            return torch._scaled_mm(s["a"], s["b"].t(), s["sa"], s["sb"], out_dtype=torch.bfloat16,
                                    use_fast_accum=fast)
        fn.expr = (f"torch._scaled_mm(a, b.t(), scale_a {'[]' if scale == 'tensor' else '[M,1]'}, "
                   f"scale_b {'[]' if scale == 'tensor' else '[1,N]'})")

    def library():
        pad = f", a padded to {m_rows} rows" if m_rows != M else ""
        return (f"torch {torch.__version__}, cuBLAS {blas_version(api)} (CUDA {torch.version.cuda}) via {fn.expr}, "
                f"e4m3 in, bf16 out, use_fast_accum={fast}{pad}")

    def expected(s, c):  # the rows of a past M (zeros, block mode's padding) are not the problem's
        rows = api.edge_rows(torch, M, c.device)
        sa, sb = block_scales(torch, s["sa"], s["sb"], scale, rows, N, K)
        want = fp8_gemm_reference(torch, e4m3_rows(torch, s["a"], rows), s["b"], sa, sb)
        return [("c [M,N] at its first and last rows", c[:M][rows], want)]
    return api.TorchOp(sets, fn, lambda s: [], lambda s, r: [r[:M]], [(M, N)], library, expected=expected)


BUILDERS = {FAMILY: build_fp8}
