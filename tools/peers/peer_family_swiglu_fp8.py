"""peer_family_swiglu_fp8.py: the peers of recipes/moe/swiglu_fp8.lua (moe.swiglu_fp8: 1 x 128 group
or per-token scales written, moe.swiglu_fp8_static: one static scale read), loaded by peer_server.py
(docs/peers.md).

Both peers run the same PyTorch function on the recipe's inputs (x [T, 2N] bf16: gate = x[:, :N],
up = x[:, N:]; the static scale [1] f32):
    h = (F.silu(gate) * up).float()                      two bf16 ops, as a PyTorch model runs them
    group:  the columns padded to a multiple of 128 and viewed [T, N/128, 128];
            scale = (amax(|h|, -1) / 448).clamp(min=1 / (448 * 512)) per group, [T, ceil(N/128)]
    token:  the same per row, [T, 1]
    y = (h / scale).clamp(-448, 448).to(torch.float8_e4m3fn)   (group: the padding cut off)
  torch          eager: what a model written in PyTorch runs (several kernels: silu, the product,
                 the amax, the quantization)
  torch-compile  the function under torch.compile (inductor, mode default, static shapes): its fused
                 Triton kernels. Compiled by the first call, which peer_server makes before timing
                 (its output check), so compile time is never timed; dynamo's caches are reset per
                 problem so that every problem gets kernels specialized to its shape, as the tuned
                 variants are.
The values differ from tune's (h is rounded to bf16 twice before the quantization; tune keeps it in
fp32): the work and the bytes are the same. Each peer's outputs are checked on the first and last 128
rows against swiglu_fp8_reference (float64, from x and the static scale): the dynamic scales by
peer_server's rule, y by normfp8's E4M3_ALLOWANCE (e4m3_mismatch). torch is imported by the caller
(peer_server) only.
"""
import peer_family_normfp8 as nf

FAMILY = "moe_swiglu_fp8"
RECIPES = {"moe.swiglu_fp8": ("group", "token"), "moe.swiglu_fp8_static": ("static",)}  # recipe -> its quants
DIMS = ("T", "N", "quant")
GROUP = 128              # columns of a group's scale
E4M3_MAX = nf.E4M3_MAX
MIN_SCALE = nf.MIN_SCALE
X_STD = 2.0              # recipes/moe/swiglu_fp8.lua: x ~ N(0, 2)
STATIC_SCALE = (16.0 / 448.0, 24.0 / 448.0)  # the recipe's uniform range of the static scale


def scale_count(T, N, quant):
    """f32 scales of one call: one per 128 columns of a row (group), per row (token), one (static)."""
    return {"group": T * -(-N // GROUP), "token": T, "static": 1}[quant]


def set_bytes(T, N, quant):
    """Bytes of one call: x read (bf16 gate and up), y written (e4m3), the scales."""
    return 4 * T * N + T * N + 4 * scale_count(T, N, quant)


def peers(recipe, dims, api):
    quants = RECIPES.get(recipe)
    if quants is None:
        return None
    api.require_dims(recipe, dims, DIMS)
    quant = dims["quant"]
    if quant not in quants:
        raise api.PeerError(f"{recipe} has quant {' or '.join(map(repr, quants))}, not {quant!r}")
    nbytes = set_bytes(dims["T"], dims["N"], quant)
    return [api.Peer("torch", FAMILY, dims, nbytes, quant=quant, compiled=False),
            api.Peer("torch-compile", FAMILY, dims, nbytes, quant=quant, compiled=True)]


def swiglu_fp8(torch, N, quant):
    """The PyTorch function both peers time: fn(x, scale) -> (y, scale) or y."""
    import torch.nn.functional as F
    fp8 = torch.float8_e4m3fn
    kb = -(-N // GROUP)

    def fn(x, scale):
        h = (F.silu(x[:, :N]) * x[:, N:]).float()
        if quant == "group":
            T = h.shape[0]
            grp = (F.pad(h, (0, kb * GROUP - N)) if kb * GROUP != N else h).view(T, kb, GROUP)
            s = (grp.abs().amax(-1, keepdim=True) / E4M3_MAX).clamp(min=MIN_SCALE)
            y = (grp / s).clamp(-E4M3_MAX, E4M3_MAX).to(fp8).view(T, kb * GROUP)[:, :N]
            return y, s.squeeze(-1)
        if quant == "token":
            s = (h.abs().amax(-1, keepdim=True) / E4M3_MAX).clamp(min=MIN_SCALE)
            return (h / s).clamp(-E4M3_MAX, E4M3_MAX).to(fp8), s
        return (h / scale).clamp(-E4M3_MAX, E4M3_MAX).to(fp8)
    return fn


def swiglu_fp8_reference(torch, x, N, quant, scale=None):
    """float64 (h / scale clamped to +-448, scale) of the recipe on rows x [R, 2N]: h = silu(g) * u
    from the bf16 inputs, scale = max(amax |h| / 448, 1 / (448 * 512)) per 128 columns of a row
    (group, [R, ceil(N/128)]), per row (token, [R, 1]), or the given one (static): y before its e4m3
    rounding, and the scale as the peer returns it."""
    g, u = x[:, :N].double(), x[:, N:].double()
    h = g * torch.sigmoid(g) * u
    if quant == "group":
        R, kb = h.shape[0], -(-N // GROUP)
        grp = torch.nn.functional.pad(h, (0, kb * GROUP - N)).view(R, kb, GROUP)
        s = (grp.abs().amax(-1) / E4M3_MAX).clamp(min=MIN_SCALE)
        per = s.repeat_interleave(GROUP, 1)[:, :N]
    elif quant == "token":
        s = per = (h.abs().amax(-1, keepdim=True) / E4M3_MAX).clamp(min=MIN_SCALE)
    else:
        s = per = scale.double()
    return (h / per).clamp(-E4M3_MAX, E4M3_MAX), s


def _set(torch, api, g, T, N, quant):
    s = {"x": api._normal(torch, g, (T, 2 * N), torch.bfloat16, X_STD), "scale": None}
    if quant == "static":
        s["scale"] = api._uniform(torch, g, (1,), torch.float32, *STATIC_SCALE)
    return s


def build_swiglu_fp8(torch, peer, n_sets, seed):
    api = peer.api
    T, N = peer.dims["T"], peer.dims["N"]
    quant, compiled = peer.opts["quant"], peer.opts["compiled"]
    dynamic = quant != "static"
    sets = [_set(torch, api, api._gen(torch, seed + i), T, N, quant) for i in range(n_sets)]
    body = swiglu_fp8(torch, N, quant)
    if compiled:
        torch._dynamo.reset()  # kernels for this problem's shape, no automatic dynamic shapes
        body = torch.compile(body, dynamic=False)

    def fn(s):
        return body(s["x"], s["scale"])

    def results(s, out):
        if dynamic:
            return [out[0].float(), out[1]]  # e4m3 read as float: isnan has no fp8 kernel
        return [out.float()]
    scale_shape = (T, -(-N // GROUP)) if quant == "group" else (T, 1)
    shapes = [(T, N)] + ([scale_shape] if dynamic else [])

    def library():
        how = "torch.compile (inductor, mode default, dynamic=False; compiled before timing)" if compiled else "eager"
        tail = ""
        if compiled:
            try:
                import triton
                tail = f", Triton {triton.__version__}"
            except ImportError:
                pass
        q = {"group": "1 x 128 group amax scales", "token": "per-token amax scale", "static": "static scale [1]"}[quant]
        return (f"torch {torch.__version__} {how}{tail}: (F.silu(x[:, :N]) * x[:, N:]).float(); {q}; "
                f"(h / scale).clamp(-448, 448).to(float8_e4m3fn)")

    def expected(s, out):
        rows = api.edge_rows(torch, T, s["x"].device)
        y, scale = swiglu_fp8_reference(torch, s["x"][rows], N, quant, s["scale"])
        y8 = out[0] if dynamic else out
        got_y = y8.view(torch.uint8)[rows].view(y8.dtype).float()  # gathered as bytes: not every torch indexes e4m3
        bad = nf.e4m3_mismatch(torch, got_y, y)
        if bool(bad.any()):  # peer_server's rule is too tight for 3 mantissa bits: this one is y's
            i = int(bad.flatten().nonzero()[0])
            raise api.WrongValues(f"wrong values: y (e4m3) differs from its float64 reference at {int(bad.sum())} of "
                                  f"{bad.numel()} values by more than 2^-3 |want| + 2^-9 (flat index {i}: "
                                  f"{float(got_y.flatten()[i]):.6g} against {float(y.flatten()[i]):.6g})")
        if dynamic:
            return [(f"scale {list(scale_shape)} at its first and last rows", out[1][rows], scale)]
        return []
    return api.TorchOp(sets, fn, lambda s: [], results, shapes, library, expected=expected)


BUILDERS = {FAMILY: build_swiglu_fp8}
