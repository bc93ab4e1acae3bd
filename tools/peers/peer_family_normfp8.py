"""peer_family_normfp8.py: the peers of recipes/rmsnorm/fp8.lua (rmsnorm.fp8: dynamic per-token
scales, rmsnorm.fp8_static: one static scale), loaded by peer_server.py (docs/peers.md).

Both peers run the same PyTorch function on the recipe's inputs (x, r [T, H] bf16, w [H] bf16; the
static scale [1] f32):
    torch.add(x, r, out=h)                               the residual stream, bf16
    n = F.rms_norm(h, (H,), w, 1e-6).float()
    dynamic: scale = (n.abs().amax(-1, keepdim=True) / 448).clamp(min=1 / (448 * 512))
    y = (n / scale).clamp(-448, 448).to(torch.float8_e4m3fn)
  torch          eager: what a model written in PyTorch runs (several kernels: the add, the norm,
                 the amax, the quantization)
  torch-compile  the function under torch.compile (inductor, mode default, static shapes): its fused
                 Triton kernels. Compiled by the first call, which peer_server makes before timing
                 (its output check), so compile time is never timed; dynamo's caches are reset per
                 problem so that every problem gets kernels specialized to its shape, as the tuned
                 variants are.
The values differ from tune's (F.rms_norm rounds n to bf16 before the quantization; tune keeps fp32):
the work and the bytes are the same. Each peer's outputs are checked on the first and last 128 rows
against norm_fp8_reference (float64, from x, r, w and the static scale): h and the dynamic scale by
peer_server's rule, y by E4M3_ALLOWANCE (e4m3_mismatch). torch is imported by the caller
(peer_server) only.
"""
FAMILY = "rmsnorm_fp8"
RECIPES = {"rmsnorm.fp8": "dynamic", "rmsnorm.fp8_static": "static"}  # recipe -> its quant
DIMS = ("T", "H", "quant")
EPS = 1e-6               # recipes/rmsnorm/fp8.lua
E4M3_MAX = 448.0
MIN_SCALE = 1.0 / (448.0 * 512.0)
STATIC_SCALE = (6.0 / 448.0, 10.0 / 448.0)  # the recipe's uniform range of the static scale
# y against its unrounded reference v / scale: one e4m3 rounding moves a value by at most 2^-4 of it
# (3 mantissa bits; 2^-10 below the normal range), the peer's bf16 n adds 2^-9 and may cross one
# midpoint: within 2^-3 |want| + 2^-9 always, while a wrong row, scale or clamp is off by far more
E4M3_ALLOWANCE = (2.0 ** -3, 2.0 ** -9)  # (relative, absolute)


def set_bytes(T, H, quant):
    """Bytes of one call: x, r read and h written (bf16), y written (e4m3), w, the scale(s)."""
    return 7 * T * H + 2 * H + 4 * (T if quant == "dynamic" else 1)


def peers(recipe, dims, api):
    quant = RECIPES.get(recipe)
    if quant is None:
        return None
    api.require_dims(recipe, dims, DIMS)
    if dims["quant"] != quant:
        raise api.PeerError(f"{recipe} has quant {quant!r}, not {dims['quant']!r}")
    nbytes = set_bytes(dims["T"], dims["H"], quant)
    return [api.Peer("torch", FAMILY, dims, nbytes, quant=quant, compiled=False),
            api.Peer("torch-compile", FAMILY, dims, nbytes, quant=quant, compiled=True)]


def norm_fp8(torch, api, H, dynamic):
    """The PyTorch function both peers time: fn(set) -> (y, scale) or y."""
    import torch.nn.functional as F
    if not hasattr(F, "rms_norm"):
        raise api.PeerError(f"torch {torch.__version__} has no F.rms_norm")
    fp8 = torch.float8_e4m3fn

    def fn(x, r, w, h, scale):
        torch.add(x, r, out=h)
        n = F.rms_norm(h, (H,), w, EPS).float()
        if dynamic:
            scale = (n.abs().amax(-1, keepdim=True) / E4M3_MAX).clamp(min=MIN_SCALE)
            return (n / scale).clamp(-E4M3_MAX, E4M3_MAX).to(fp8), scale
        return (n / scale).clamp(-E4M3_MAX, E4M3_MAX).to(fp8)
    return fn


def norm_fp8_reference(torch, x, r, w, scale=None):
    """float64 (h, v / scale, scale) of the recipe on rows x, r [R, H]: h = x + r, v = bf16(h) * w /
    sqrt(mean(bf16(h)^2) + eps) (h as the recipe rounds it before the norm), scale = max(amax |v| /
    448, 1 / (448 * 512)) per row when none is given (dynamic), and v / scale clamped to +-448: y
    before its e4m3 rounding."""
    h = x.double() + r.double()
    hb = h.to(torch.bfloat16).double()
    v = hb * w.double() / torch.sqrt(hb.square().mean(-1, keepdim=True) + EPS)
    if scale is None:
        scale = (v.abs().amax(-1, keepdim=True) / E4M3_MAX).clamp(min=MIN_SCALE)
    scale = scale.double()
    return h, (v / scale).clamp(-E4M3_MAX, E4M3_MAX), scale


def e4m3_mismatch(torch, got, want):
    """Where an e4m3 output (as float) is farther from its unrounded float64 reference than
    E4M3_ALLOWANCE: a bool tensor of got's shape."""
    rel, tiny = E4M3_ALLOWANCE
    return (got.double() - want).abs() > rel * want.abs() + tiny


def _set(torch, api, g, T, H, dynamic):
    bf = torch.bfloat16
    s = {"x": api._normal(torch, g, (T, H), bf), "r": api._normal(torch, g, (T, H), bf, 2.0),
         "w": api._normal(torch, g, (H,), bf), "h": torch.empty(T, H, dtype=bf, device="cuda"), "scale": None}
    if not dynamic:
        s["scale"] = api._uniform(torch, g, (1,), torch.float32, *STATIC_SCALE)
    return s


def build_normfp8(torch, peer, n_sets, seed):
    api = peer.api
    T, H = peer.dims["T"], peer.dims["H"]
    dynamic, compiled = peer.opts["quant"] == "dynamic", peer.opts["compiled"]
    sets = [_set(torch, api, api._gen(torch, seed + i), T, H, dynamic) for i in range(n_sets)]
    body = norm_fp8(torch, api, H, dynamic)
    if compiled:
        torch._dynamo.reset()  # kernels for this problem's shape, no automatic dynamic shapes
        body = torch.compile(body, dynamic=False)

    def fn(s):
        return body(s["x"], s["r"], s["w"], s["h"], s["scale"])

    def results(s, out):
        if dynamic:
            return [out[0].float(), s["h"], out[1]]  # e4m3 read as float: isnan has no fp8 kernel
        return [out.float(), s["h"]]
    shapes = [(T, H), (T, H)] + ([(T, 1)] if dynamic else [])

    def library():
        how = "torch.compile (inductor, mode default, dynamic=False; compiled before timing)" if compiled else "eager"
        tail = ""
        if compiled:
            try:
                import triton
                tail = f", Triton {triton.__version__}"
            except ImportError:
                pass
        q = "per-token amax scale" if dynamic else "static scale [1]"
        return (f"torch {torch.__version__} {how}{tail}: torch.add(x, r, out=h); F.rms_norm(h, (H,), w, 1e-6); "
                f"{q}; (n / scale).clamp(-448, 448).to(float8_e4m3fn)")

    def expected(s, out):
        rows = api.edge_rows(torch, T, s["x"].device)
        h, y, scale = norm_fp8_reference(torch, s["x"][rows], s["r"][rows], s["w"], None if dynamic else s["scale"])
        y8 = out[0] if dynamic else out
        got_y = y8.view(torch.uint8)[rows].view(y8.dtype).float()  # gathered as bytes: not every torch indexes e4m3
        bad = e4m3_mismatch(torch, got_y, y)
        if bool(bad.any()):  # peer_server's rule is too tight for 3 mantissa bits: this one is y's
            i = int(bad.flatten().nonzero()[0])
            raise api.WrongValues(f"wrong values: y (e4m3) differs from its float64 reference at {int(bad.sum())} of "
                                f"{bad.numel()} values by more than 2^-3 |want| + 2^-9 (flat index {i}: "
                                f"{float(got_y.flatten()[i]):.6g} against {float(y.flatten()[i]):.6g})")
        pairs = [("h [T,H] at its first and last rows", s["h"][rows], h)]
        if dynamic:
            pairs.append(("scale [T,1] at its first and last rows", out[1][rows], scale))
        return pairs
    return api.TorchOp(sets, fn, lambda s: [s["h"]], results, shapes, library, expected=expected)


BUILDERS = {FAMILY: build_normfp8}
