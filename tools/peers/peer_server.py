#!/usr/bin/env python3
"""peer_server.py: the vendor peers of tune's recipes, timed like tune's variants (docs/peers.md).

A persistent process speaking JSON lines: one request per line on stdin, one reply per line on
stdout, logs on stderr only.
  {"op":"hello"}  -> {"ok":true,"device":..,"uuid":..,"torch":..,"cuda":..,"cudnn":..,"timer":"cupti"}
  {"op":"measure","recipe":R,"problem":P,"dims":{..},"timing":"burst"|"sustained","seed":N}
                  -> {"ok":true,"problem":P,"results":[..],"skipped":[{"peer":..,"reason":..}]}
  {"op":"quit"}   -> {"ok":true}, then exit
Peers: cuBLAS (torch.matmul), cuDNN and FlashAttention (SDPA), eager PyTorch for the memory-bound
families. They are timed by tune's own CUPTI timer (tuner/cupti_timer.c, through
libtune_cupti_py.so) with the burst protocol of tuner/worker.c (do_measure) or the sustained one
below; never by CUDA events: without CUPTI the server refuses to time.

torch is imported only once the device is opened (CUPTI must be enabled before torch creates its
context), so this module imports, and its protocol logic runs, without torch or a GPU.

usage: peer_server.py [--lib PATH/libtune_cupti_py.so]
"""
import ctypes
import contextlib
import json
import math
import os
import signal
import sys
import time
import warnings

import peer_reference  # tools/peers: the float64 attention reference, no torch
import worker_inputs  # tools/peers: the worker's integer inputs (decode's lengths), no torch

# ---- the burst protocol: tuner/worker.c do_measure and tuner/protocol.h ----
BURST_WARMUP_MAX_CALLS = 50    # warm-up: up to 50 calls, at least 3, stop after 20 ms
BURST_WARMUP_MIN_CALLS = 3
BURST_WARMUP_MS = 20.0
BURST_MIN_SAMPLES = 10         # TUNE_MEASURE_MIN_SAMPLES
BURST_MAX_SAMPLES = 200        # TUNE_MEASURE_MAX_SAMPLES
BURST_SETS = 2                 # the worker's input sets (tuner/worker_sets.c), taken in turn
NVML_EVERY = 8                 # the worker samples the clocks before every 8th sample
# ---- the sustained protocol (the worker's sustained mode uses the same constants) ----
SUSTAINED_WARMUP_MS = 200.0    # back-to-back calls before the first sample, clocks settle
SUSTAINED_SAMPLE_MS = 20.0     # a sample lasts about this long
SUSTAINED_MAX_CALLS = 10000    # calls per sample at most
SUSTAINED_MIN_SAMPLES = 5
SUSTAINED_MAX_SAMPLES = 50
SUSTAINED_MAX_SETS_BYTES = 4 << 30  # the rotating input/output sets take at most this together
# ---- both ----
MAX_MS = 2000.0                # TUNE_MEASURE_MAX_MS: sampling stops after this long ...
CI_TARGET = 0.01               # ... or once the 95 % interval of the median is within 1 %
NO_L2_BYTES = 64 << 20         # the worker's L2 size when the device reports none
POISON_BYTE = 0xff             # NaN in f32, bf16 and f16: outputs are poisoned before each burst sample
RMSNORM_EPS = 1e-6             # recipes/rmsnorm.lua
# ---- the value check: once per problem, each peer's output against a float64 reference ----
# Wrong semantics (a layout, scale, mask, head grouping, tail) put errors of the order of the values
# on whole rows, columns or tiles; a peer's honest precision puts a few percent of rms on a few
# values where a sum cancels (bf16 probabilities against a wide V, e4m3 dequantized to bf16). So,
# with tol(x) = t * (rms(want) + |want|): the whole output within VALUE_L2 of the reference (relative
# L2), no value past tol at VALUE_TOL_MAX, and at most VALUE_OUTLIERS of them past tol at VALUE_TOL.
VALUE_TOL = 2.0 ** -5
VALUE_TOL_MAX = 2.0 ** -2
VALUE_OUTLIERS = 1e-3
VALUE_L2 = 2.0 ** -5
VALUE_ROWS = 128               # large outputs are checked on their first and last rows (tails included)

TIMINGS = ("burst", "sustained")


class PeerError(Exception):
    """A peer that cannot be timed on this problem: it goes to "skipped" with this text."""


class WrongValues(PeerError):
    """A peer whose output is not its reference's: it computes something else (or not well enough)."""


class DeviceError(Exception):
    """The device cannot be opened for timing (no driver, no CUPTI): nothing is timed."""


def log(*a):
    print("peer_server:", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- statistics (worker.c)

def median_rel_ci(samples):
    """Width of the 95 % interval of the median from order statistics, relative to the median:
    worker.c's rule, including its median s[n/2] (the upper middle for even n)."""
    s = sorted(samples)
    n = len(s)
    h = 0.98 * math.sqrt(n)
    lo = max(0, int(math.floor(n / 2.0 - h)))
    hi = min(n - 1, int(math.ceil(n / 2.0 + h)))
    med = s[n // 2]
    return (s[hi] - s[lo]) / med if med > 0 else 1.0


def sampling_done(samples, min_samples, max_samples, elapsed_ms):
    """(stop, rel_ci) after a sample: the worker's loop condition. rel_ci is None before the
    minimum count (the worker then keeps its initial 1)."""
    n = len(samples)
    if n < min_samples:
        return n >= max_samples, None
    rel_ci = median_rel_ci(samples)
    return rel_ci < CI_TARGET or elapsed_ms > MAX_MS or n >= max_samples, rel_ci


def summarize(samples):
    """median (mean of the middle two for even n, as the worker reports it), min, max [ns]."""
    s = sorted(samples)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"median_ns": med, "min_ns": s[0], "max_ns": s[-1], "samples": n}


class Clocks:
    """NVML samples folded as tune_clocks_fold does: the lowest SM and memory clocks, every
    reason, the highest power."""

    def __init__(self):
        self.sm_mhz, self.mem_mhz, self.reasons, self.power_w = -1, -1, 0, 0

    def fold(self, sample):
        sm, mem, reasons, power = sample
        if sm >= 0 and (self.sm_mhz < 0 or sm < self.sm_mhz):
            self.sm_mhz = sm
        if mem >= 0 and (self.mem_mhz < 0 or mem < self.mem_mhz):
            self.mem_mhz = mem
        self.reasons |= reasons
        self.power_w = max(self.power_w, power)

    def as_dict(self):
        return {"sm_mhz": self.sm_mhz, "mem_mhz": self.mem_mhz, "power_w": self.power_w,
                "clock_reasons": self.reasons}


def rotation_sets(set_bytes, l2_bytes):
    """Input/output sets the sustained mode cycles through: together more than twice the L2, so
    no call finds its inputs there; at least 2; at most what fits SUSTAINED_MAX_SETS_BYTES (1 when
    one set is already larger than that)."""
    l2 = l2_bytes if l2_bytes > 0 else NO_L2_BYTES
    r = max(2, int(math.ceil(2.0 * l2 / set_bytes)) + 1)
    return max(1, min(r, SUSTAINED_MAX_SETS_BYTES // set_bytes))


def calls_per_sample(per_call_ns):
    """N back-to-back calls per sustained sample: about SUSTAINED_SAMPLE_MS of work (rounded
    down), 1..SUSTAINED_MAX_CALLS."""
    if not per_call_ns > 0:
        return SUSTAINED_MAX_CALLS
    return max(1, min(SUSTAINED_MAX_CALLS, int(SUSTAINED_SAMPLE_MS * 1e6 / per_call_ns)))


class Names:
    """Distinct kernel names in first-seen order (the timer reports ';'-separated lists)."""

    def __init__(self):
        self.seen = []

    def add(self, names):
        for n in names.split(";") if names else ():
            if n not in self.seen:
                self.seen.append(n)

    def text(self):
        return ";".join(self.seen)


# ---------------------------------------------------------------- the two protocols
# dev: collect() -> (sum_ns, span_ns, n_kernels, names); clocks() -> (sm, mem, reasons, power_w);
#      flush_l2(value); memset(ptr, value, nbytes); synchronize(); l2_bytes.
# op:  call(i) runs the op on set i (no synchronization); outputs(i) -> [(ptr, nbytes)] of the
#      out= tensors of set i; n_sets.

def measure_burst(dev, op, now=time.monotonic):
    """worker.c do_measure step 2: warm up, then per sample poison the outputs, flush L2 (a 2x L2
    memset, value = sample index), one call, synchronize, sample = sum of its kernels' durations.
    The samples alternate between op's sets (the worker's two input sets: other data, the same
    structure, other addresses)."""
    w0 = now()
    i = 0
    while i < BURST_WARMUP_MAX_CALLS and (i < BURST_WARMUP_MIN_CALLS or (now() - w0) * 1e3 < BURST_WARMUP_MS):
        op.call(0)
        dev.synchronize()
        i += 1
    dev.collect()  # drop the warm-up's records (and the setup's)
    clk, names, samples, rel_ci = Clocks(), Names(), [], 1.0
    clk.fold(dev.clocks())
    t0 = now()
    kernels_per_call = 0
    while len(samples) < BURST_MAX_SAMPLES:
        if len(samples) % NVML_EVERY == NVML_EVERY - 1:
            clk.fold(dev.clocks())  # between samples, off the timed path
        k = len(samples) % op.n_sets
        for ptr, nbytes in op.outputs(k):
            dev.memset(ptr, POISON_BYTE, nbytes)
        dev.flush_l2(len(samples) & 0xff)
        op.call(k)
        dev.synchronize()
        sum_ns, _span, nk, kn = dev.collect()
        if nk == 0:
            raise PeerError("no kernel ran during a measured call")
        samples.append(sum_ns)
        names.add(kn)
        kernels_per_call = max(kernels_per_call, nk)
        stop, ci = sampling_done(samples, BURST_MIN_SAMPLES, BURST_MAX_SAMPLES, (now() - t0) * 1e3)
        rel_ci = rel_ci if ci is None else ci
        if stop:
            break
    clk.fold(dev.clocks())
    return dict(summarize(samples), rel_ci=rel_ci, kernels=names.text(), kernels_per_call=kernels_per_call,
                timing="burst", **clk.as_dict())


def measure_sustained(dev, op, now=time.monotonic):
    """Back-to-back calls cycling op's sets: a warm-up of at least SUSTAINED_WARMUP_MS (host time,
    no synchronization; every set at least once), then samples of N calls each, sample = (end of
    the last kernel - start of the first) / N from the CUPTI records: launch gaps and every extra
    kernel count. Clocks are sampled while each sample's calls run."""
    k = 0
    w0 = now()
    while k < op.n_sets or (now() - w0) * 1e3 < SUSTAINED_WARMUP_MS:
        op.call(k % op.n_sets)
        k += 1
    clk, names, samples, rel_ci = Clocks(), Names(), [], 1.0
    clk.fold(dev.clocks())
    dev.synchronize()
    _sum, span_ns, nk, _names = dev.collect()
    if nk < k:
        raise PeerError(f"{nk} kernel(s) ran for {k} calls in the warm-up: a call launched no kernel")
    n = calls_per_sample(span_ns / k)
    t0 = now()
    while len(samples) < SUSTAINED_MAX_SAMPLES:
        for _ in range(n):
            op.call(k % op.n_sets)
            k += 1
        clk.fold(dev.clocks())  # the GPU is still busy with this sample
        dev.synchronize()
        _sum, span_ns, nk, kn = dev.collect()
        if nk < n:
            raise PeerError(f"{nk} kernel(s) ran for {n} calls: a call launched no kernel")
        samples.append(span_ns / n)
        names.add(kn)
        stop, ci = sampling_done(samples, SUSTAINED_MIN_SAMPLES, SUSTAINED_MAX_SAMPLES, (now() - t0) * 1e3)
        rel_ci = rel_ci if ci is None else ci
        if stop:
            break
    return dict(summarize(samples), rel_ci=rel_ci, kernels=names.text(), kernels_per_call=nk / n,
                calls_per_sample=n, sets=op.n_sets, timing="sustained", **clk.as_dict())


# ---------------------------------------------------------------- which peers, on what

class Peer:
    """One peer of one problem: its name, the family's op, the dims it needs, and the bytes of
    one input/output set (sustained mode rotates sets). api is the server, the module that defines
    this class (its PeerError, TorchOp, helpers), under whatever name it runs (__main__ as a script,
    peer_server when imported): a family module's builder reaches the server through its peer."""

    def __init__(self, name, family, dims, set_bytes, **opts):
        self.name, self.family, self.dims, self.set_bytes, self.opts = name, family, dims, set_bytes, opts
        self.api = sys.modules[Peer.__module__]

    def __repr__(self):
        return f"Peer({self.name}, {self.family})"


FAMILY_DIMS = {
    "gemm": ("M", "N", "K", "b_layout"),
    "prefill": ("B", "HQ", "HKV", "S", "D", "causal"),
    "decode": ("B", "HQ", "HKV", "D", "page_size", "max_pages"),
    "copy": ("N",),
    "elementwise": ("rows", "cols"),
    "softmax": ("rows", "cols"),
    "rmsnorm": ("T", "H"),
    "transpose": ("R", "C"),
}


def family_of(recipe):
    """(family, options) of a recipe name, or (None, {}) when no peer stands for it."""
    if recipe == "gemm" or recipe.startswith("gemm."):
        return "gemm", {"dtype": "f16" if recipe.startswith("gemm.f16") else "bf16"}
    if recipe.startswith("attention.prefill"):
        return "prefill", {}
    if recipe in ("attention.decode", "attention.decode_tma"):  # decode_tma: decode.lua's args, then two maps
        return "decode", {}
    if recipe in ("copy", "elementwise"):
        return recipe, {}
    if recipe == "softmax" or recipe.startswith("softmax."):
        return "softmax", {}
    if recipe in ("rmsnorm", "rmsnorm.add"):
        return "rmsnorm", {"residual": recipe == "rmsnorm.add"}
    if recipe in ("transpose.f32", "transpose.bf16"):
        return "transpose", {"dtype": recipe.split(".")[1]}
    return None, {}


def _set_bytes(family, d, opts):
    """Bytes of every input and output of one call, each counted once."""
    if family == "gemm":
        return 2 * (d["M"] * d["K"] + d["K"] * d["N"] + d["M"] * d["N"])
    if family == "prefill":
        return 2 * d["B"] * d["S"] * d["D"] * (2 * d["HQ"] + 2 * d["HKV"])
    if family == "decode":  # the expected lengths, as the recipe's bytes metric
        return 2 * d["B"] * d["D"] * (2 * d["HQ"] + 2 * d["HKV"] * decode_mean_len(d))
    if family == "copy":
        return 2 * 4 * d["N"]
    if family == "elementwise":
        return 2 * (2 * d["rows"] * d["cols"] + 2 * d["cols"])
    if family == "softmax":
        return 2 * 2 * d["rows"] * d["cols"]
    if family == "rmsnorm":
        return 2 * ((4 if opts["residual"] else 2) * d["T"] * d["H"] + d["H"])
    if family == "transpose":
        return 2 * d["R"] * d["C"] * (4 if opts["dtype"] == "f32" else 2)
    raise AssertionError(family)


# attention.decode's problems fix what an engine's decode step keeps while it replays (B, heads, D,
# page_size, max_pages); the lengths are an input, seq_lens, drawn per seed by its init
# {"randint", "B == 1 and max_pages * page_size or 1", "max_pages * page_size"}.
DECODE_SEQ_LENS_ARG = 4  # index of seq_lens among recipes/attention/decode.lua's args (the init's stream)


def decode_lengths(d, seed):
    """The worker's seq_lens of an attention.decode problem for this seed: one sequence of the full
    length (B 1), else B lengths drawn from 1 .. max_pages * page_size."""
    full = d["max_pages"] * d["page_size"]
    return worker_inputs.randint(seed, DECODE_SEQ_LENS_ARG, d["B"], full if d["B"] == 1 else 1, full)


def decode_mean_len(d):
    """The expected length of a sequence of an attention.decode problem (the recipe's metrics), rounded up."""
    full = d["max_pages"] * d["page_size"]
    return full if d["B"] == 1 else (full + 2) // 2


def sdpa_len(lens):
    """The one length SDPA takes for a batch of these lengths: their mean rounded up (at least 1), so
    that it reads as many K/V bytes as the variants do."""
    return max(1, -(-sum(lens) // len(lens)))


def decode_kv_len(d, seed):
    """(L, lengths) of a decode peer: the one K/V length SDPA attends over and the lengths it stands
    for; a caller's own dims["L"] (peer_family_kvfp8's bf16 peers) as is, with no lengths."""
    if "L" in d:
        return d["L"], None
    lens = decode_lengths(d, seed)
    return sdpa_len(lens), lens


def _family_modules():
    """The peer_family_*.py modules next to this file, imported once: each family that is not one of
    the above keeps its peers in a module of its own, with
      peers(recipe, dims, api) -> None when the recipe is not its own, else a list of api.Peer
      BUILDERS = {family: build(torch, peer, n_sets, seed) -> peer.api.TorchOp}
    where api is this module (Peer, PeerError, WrongValues, require_dims, TorchOp, edge_rows,
    build_attention, _gen, _normal, _uniform, _loaded_version). A builder reaches it as peer.api
    only, and hands it to helpers that get no peer: a test gives a peer a stand-in server (inputs
    on the CPU) by setting its api.
    Modules must not import torch at import time (the unit tests run without it)."""
    global _FAMILY_MODULES
    if _FAMILY_MODULES is None:
        import glob
        import importlib.util
        _FAMILY_MODULES = []
        here = os.path.dirname(os.path.abspath(__file__))
        if here not in sys.path:  # the modules import their helpers (worker_inputs) from here
            sys.path.insert(0, here)
        for path in sorted(glob.glob(os.path.join(here, "peer_family_*.py"))):
            name = os.path.splitext(os.path.basename(path))[0]
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            _FAMILY_MODULES.append(mod)
            BUILDERS.update(mod.BUILDERS)
    return _FAMILY_MODULES


_FAMILY_MODULES = None


def require_dims(recipe, dims, names):
    """PeerError unless dims holds every one of names (what the recipe's family needs)."""
    missing = [k for k in names if k not in dims]
    if missing:
        raise PeerError(f"dims of {recipe} lack {', '.join(missing)}")


def peers_for(recipe, dims):
    """The peers of a problem of this recipe ([] when there is none). PeerError when the dims
    lack what the family needs."""
    for mod in _family_modules():  # first: a module may own a name the rules of family_of would take
        found = mod.peers(recipe, dims, sys.modules[__name__])
        if found is not None:
            return found
    family, opts = family_of(recipe)
    if family is None:
        return []
    require_dims(recipe, dims, FAMILY_DIMS[family])
    if family == "rmsnorm" and "residual" in dims:
        opts["residual"] = bool(dims["residual"])
    nbytes = _set_bytes(family, dims, opts)
    if family in ("prefill", "decode"):
        return [Peer("cudnn-sdpa", family, dims, nbytes, backend="cudnn", **opts),
                Peer("flash-sdpa", family, dims, nbytes, backend="flash", **opts)]
    return [Peer("cublas" if family == "gemm" else "torch", family, dims, nbytes, **opts)]


# ---------------------------------------------------------------- the JSON protocol

def handle(backend, req):
    """One request -> one reply (a dict). backend: hello() -> dict, measure(peer, timing, seed) ->
    result dict; either raises DeviceError when nothing can be timed."""
    op = req.get("op") if isinstance(req, dict) else None
    try:
        if op == "hello":
            return dict({"ok": True}, **backend.hello())
        if op == "measure":
            return handle_measure(backend, req)
        if op == "quit":
            return {"ok": True}
    except DeviceError as e:
        return {"ok": False, "error": str(e)}
    return {"ok": False, "error": f"unknown op {op!r} (hello, measure, quit)"}


def handle_measure(backend, req):
    recipe, problem, dims = req.get("recipe"), req.get("problem"), req.get("dims")
    timing, seed = req.get("timing", "burst"), req.get("seed", 0)
    if not isinstance(recipe, str) or not isinstance(problem, str) or not isinstance(dims, dict):
        return {"ok": False, "error": "measure needs recipe and problem (strings) and dims (an object)"}
    if timing not in TIMINGS:
        return {"ok": False, "error": f"timing {timing!r}: burst or sustained"}
    if not isinstance(seed, int) or isinstance(seed, bool):
        return {"ok": False, "error": "seed must be an integer"}
    try:
        peers = peers_for(recipe, dims)
    except PeerError as e:
        return {"ok": False, "error": str(e)}
    reply = {"ok": True, "problem": problem, "results": [], "skipped": []}
    if not peers:
        reply["skipped"].append({"peer": "*", "reason": f"no peer for recipe {recipe}"})
        return reply
    for p in peers:
        try:
            r = backend.measure(p, timing, seed)
        except PeerError as e:
            reply["skipped"].append({"peer": p.name, "reason": str(e)})
            log(f"{recipe}/{problem} {p.name} {timing}: skipped: {e}")
            continue
        reply["results"].append(dict({"peer": p.name}, **r))
        log(f"{recipe}/{problem} {p.name} {timing}: median {r['median_ns']:.0f} ns over {r['samples']} samples")
    return reply


def serve(backend, inp, out):
    """Answer requests from inp on out until quit or end of input."""
    for line in inp:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            req, reply = None, {"ok": False, "error": f"bad JSON: {e}"}
        else:
            try:
                reply = handle(backend, req)
            except Exception as e:  # a bug here must not end the session: say it, go on
                import traceback
                traceback.print_exc(file=sys.stderr)
                reply = {"ok": False, "error": f"peer_server: internal error: {type(e).__name__}: {e}"}
        quit_req = isinstance(req, dict) and req.get("op") == "quit"
        try:
            out.write(json.dumps(reply) + "\n")
            out.flush()
        except BrokenPipeError:  # the client left (after a quit, it need not read the reply)
            return
        if quit_req:
            return


# ---------------------------------------------------------------- the device: libcuda + tune's timer

class CudaDevice:
    """libcuda through ctypes and tune's CUPTI timer through libtune_cupti_py.so. open() enables
    CUPTI after cuInit and before torch creates its context, then lets torch create it."""

    def __init__(self, lib_path):
        self.lib_path = lib_path
        self.cu = self.lib = self.torch = None
        self.error = None  # a failed open is final: the reason is repeated to every request
        self.info = {}

    def _cu(self, name, *args):
        rc = getattr(self.cu, name)(*args)
        if rc != 0:
            s = ctypes.c_char_p()
            self.cu.cuGetErrorName(rc, ctypes.byref(s))
            raise DeviceError(f"{name}: {s.value.decode() if s.value else rc}")

    def open(self):
        if self.error:
            raise DeviceError(self.error)
        if self.torch is None:
            try:
                self._open()
            except DeviceError as e:
                self.error = str(e)
                raise

    def _open(self):
        try:
            self.cu = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise DeviceError(f"no CUDA driver (libcuda.so.1: {e})")
        self._cu("cuInit", 0)
        _preload_torch_cupti()
        try:
            self.lib = ctypes.CDLL(self.lib_path)
        except OSError as e:
            raise DeviceError(f"{e}: build it with `cmake --build build --target tune_cupti_py` or pass --lib")
        msg = ctypes.create_string_buffer(2048)
        if self.lib.tune_cupti_py_open(msg, len(msg)) != 0:
            raise DeviceError(f"CUPTI cannot be opened ({msg.value.decode(errors='replace')}): peers are timed "
                              "by CUPTI only, like tune's variants")
        import torch  # only now: CUPTI records every kernel of the context torch is about to create
        torch.empty(1, device="cuda")  # creates the primary context, current on this thread
        self.torch = torch
        self._describe()
        self.flush_buf = torch.empty(self.flush_bytes, dtype=torch.uint8, device="cuda")
        uuid = self.info["uuid"].encode()
        self.nvml = self.lib.tune_nvml_py_open(uuid) == 0
        if not self.nvml:
            log("NVML unavailable: clocks -1, power 0")

    def _describe(self):
        torch, dev, v = self.torch, ctypes.c_int(), ctypes.c_int()
        self._cu("cuCtxGetDevice", ctypes.byref(dev))
        u = (ctypes.c_ubyte * 16)()
        self._cu("cuDeviceGetUuid_v2" if hasattr(self.cu, "cuDeviceGetUuid_v2") else "cuDeviceGetUuid", u, dev)
        b = bytes(u)
        self._cu("cuDeviceGetAttribute", ctypes.byref(v), 38, dev)  # CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
        self.l2_bytes = v.value
        self.flush_bytes = 2 * (v.value if v.value > 0 else NO_L2_BYTES)  # the worker's flush size
        path = ctypes.create_string_buffer(2048)
        self.lib.tune_cupti_py_library(path, len(path))
        if b";" in path.value:
            log(f"more than one libcupti loaded ({path.value.decode()}): tune's timer uses the one it opened first, torch's serves its profiler")
        self.info = {"device": torch.cuda.get_device_name(), "uuid": "GPU-%s-%s-%s-%s-%s" % (
            b[0:4].hex(), b[4:6].hex(), b[6:8].hex(), b[8:10].hex(), b[10:16].hex()),
            "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "timer": "cupti", "cupti": path.value.decode(), "l2_bytes": self.l2_bytes}

    # -- the dev interface of measure_burst / measure_sustained
    def collect(self):
        s, sp, n = ctypes.c_double(), ctypes.c_double(), ctypes.c_int()
        names, msg = ctypes.create_string_buffer(4096), ctypes.create_string_buffer(2048)
        if self.lib.tune_cupti_py_collect(ctypes.byref(s), ctypes.byref(sp), ctypes.byref(n), names, len(names),
                                          msg, len(msg)) != 0:
            raise DeviceError(f"CUPTI: {msg.value.decode(errors='replace')}")
        return s.value, sp.value, n.value, names.value.decode(errors="replace")

    def clocks(self):
        sm, mem, pw, r = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_ulonglong()
        self.lib.tune_nvml_py_sample(ctypes.byref(sm), ctypes.byref(mem), ctypes.byref(r), ctypes.byref(pw))
        return sm.value, mem.value, r.value, pw.value

    def memset(self, ptr, value, nbytes):
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        self._cu("cuMemsetD8Async", ctypes.c_uint64(ptr), ctypes.c_ubyte(value), ctypes.c_size_t(nbytes), stream)

    def flush_l2(self, value):
        self.memset(self.flush_buf.data_ptr(), value, self.flush_bytes)

    def synchronize(self):
        self._cu("cuCtxSynchronize")  # every stream, as the worker


# ---------------------------------------------------------------- the peers' torch code

class TorchOp:
    """n_sets input/output sets and the call on one of them. fn(set) runs the op; outs(set) are its
    out= tensors (poisoned before burst samples); results(set, value) the outputs whose shapes are
    checked; expected(set, value) -> [(what, got, want)]: outputs (or rows of them) beside their
    float64 reference computed from the set's inputs (check_values). A peer without one is not timed."""

    def __init__(self, sets, fn, outs, results, shapes, library, context=None, expected=None):
        self.sets, self.fn, self.outs, self.results = sets, fn, outs, results
        self.shapes, self.library, self.expected = shapes, library, expected
        self.context = context or contextlib.nullcontext
        self.n_sets = len(sets)

    def call(self, i):
        return self.fn(self.sets[i % self.n_sets])

    def outputs(self, i):
        return [(t.data_ptr(), t.numel() * t.element_size()) for t in self.outs(self.sets[i % self.n_sets])]


def edge_rows(torch, n, device):
    """Row indices of an output with n rows that the value check reads: all of them up to
    2 VALUE_ROWS, else the first and the last VALUE_ROWS (a tail tile is where a peer goes wrong)."""
    if n <= 2 * VALUE_ROWS:
        return torch.arange(n, device=device)
    return torch.cat([torch.arange(VALUE_ROWS, device=device), torch.arange(n - VALUE_ROWS, n, device=device)])


def check_values(torch, pairs):
    """pairs: (what, got, want), want a float64 reference of got's shape. PeerError at the first that
    is not finite or breaks a rule of VALUE_TOL, VALUE_TOL_MAX, VALUE_OUTLIERS and VALUE_L2."""
    for what, got, want in pairs:
        if tuple(got.shape) != tuple(want.shape):
            raise PeerError(f"{what}: shape {tuple(got.shape)}, the reference's {tuple(want.shape)}")
        g, w = got.to(torch.float64), want.to(torch.float64)
        if not bool(torch.isfinite(g).all()):
            raise WrongValues(f"wrong values: {what} has {int((~torch.isfinite(g)).sum())} values that are not finite")
        if not w.numel():
            continue
        norm = float(w.norm())
        rms = norm / math.sqrt(w.numel())
        err = (g - w).abs()
        scale = rms + w.abs()
        worst = int(torch.argmax((err / scale).flatten()))
        past, far = int((err > VALUE_TOL * scale).sum()), int((err > VALUE_TOL_MAX * scale).sum())
        l2 = float(err.norm()) / norm if norm else float(err.norm())
        if far or past > VALUE_OUTLIERS * w.numel() or l2 > VALUE_L2:
            raise WrongValues(f"wrong values: {what} differs from its float64 reference: relative L2 {l2:.3g} "
                            f"(at most 2^-5), {past} of {w.numel()} values past 2^-5 of rms + |want| (at most "
                            f"0.1 %), {far} past 2^-2 (none); worst at flat index {worst}: "
                            f"{float(g.flatten()[worst]):.6g} against {float(w.flatten()[worst]):.6g}, "
                            f"reference rms {rms:.4g}")


def _gen(torch, seed):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return g


def _normal(torch, g, shape, dtype, std=1.0):
    return torch.empty(shape, dtype=dtype, device="cuda").normal_(0.0, std, generator=g)


def _uniform(torch, g, shape, dtype, lo, hi):
    return torch.empty(shape, dtype=dtype, device="cuda").uniform_(lo, hi, generator=g)


def _loaded_version(prefix, getter):
    """"a.b.c" of a library the process has loaded (found in /proc/self/maps), from its
    xxxGetProperty(MAJOR, MINOR, PATCH); None when not found."""
    try:
        with open("/proc/self/maps") as f:
            paths = {ln.split()[-1] for ln in f if ln.rstrip().split("/")[-1].startswith(prefix)}
        for p in sorted(paths):
            fn = getattr(ctypes.CDLL(p), getter)
            parts = []
            for prop in range(3):
                v = ctypes.c_int()
                if fn(prop, ctypes.byref(v)) != 0:
                    break
                parts.append(str(v.value))
            if len(parts) == 3:
                return ".".join(parts)
    except (OSError, AttributeError):
        pass
    return None


def build_gemm(torch, peer, n_sets, seed):
    d, f16 = peer.dims, peer.opts["dtype"] == "f16"
    dt = torch.float16 if f16 else torch.bfloat16
    M, N, K, col = d["M"], d["N"], d["K"], d["b_layout"] == "col"
    sets = []
    for i in range(n_sets):
        g = _gen(torch, seed + i)
        b = _normal(torch, g, (N, K) if col else (K, N), dt)
        sets.append({"a": _normal(torch, g, (M, K), dt), "b": b.t() if col else b,
                     "c": torch.empty(M, N, dtype=dt, device="cuda")})
    red = (torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction if f16
           else torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)

    def library():
        blas = _loaded_version("libcublas.so", "cublasGetProperty")
        return (f"torch {torch.__version__}, cuBLAS {blas or '?'} (CUDA {torch.version.cuda}) via "
                f"torch.matmul(a, {'b.t()' if col else 'b'}, out=c), {'fp16 in and out (tune: bf16 out, same bytes)' if f16 else 'bf16'}, "
                f"reduced-precision reduction {'allowed' if red else 'off'} (torch's setting)")
    return TorchOp(sets, lambda s: torch.matmul(s["a"], s["b"], out=s["c"]), lambda s: [s["c"]],
                   lambda s, r: [r], [(M, N)], library, expected=lambda s, r: gemm_expected(torch, s["a"], s["b"], r))


def gemm_expected(torch, a, b, c):
    """c = a @ b on a's edge rows, in float64."""
    rows = edge_rows(torch, a.shape[0], a.device)
    return [("c", c[rows], a[rows].double() @ b.double())]


def build_attention(torch, peer, n_sets, seed):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    d, decode = peer.dims, peer.family == "decode"
    B, HQ, HKV, D = d["B"], d["HQ"], d["HKV"], d["D"]
    if decode:  # one query token against the problem's lengths, as one length
        SQ, (SK, lens) = 1, decode_kv_len(d, seed)
    else:
        SQ, SK, lens = d["S"], d["S"], None
    causal = bool(d.get("causal", False)) and not decode
    gqa = HQ != HKV
    sets = []
    for i in range(n_sets):
        g = _gen(torch, seed + i)
        sets.append({"q": _normal(torch, g, (B, HQ, SQ, D), torch.bfloat16),
                     "k": _normal(torch, g, (B, HKV, SK, D), torch.bfloat16),
                     "v": _normal(torch, g, (B, HKV, SK, D), torch.bfloat16)})
    kw = {"is_causal": causal}
    if gqa:
        kw["enable_gqa"] = True
    be = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[peer.opts["backend"]]

    def library():
        which = (f"cuDNN {torch.backends.cudnn.version()} (CUDNN_ATTENTION)" if peer.opts["backend"] == "cudnn"
                 else "FlashAttention-2 built into torch (FLASH_ATTENTION)")
        drawn = "" if lens is None else (f"; L {SK} = the mean of the problem's lengths {min(lens)}..{max(lens)} "
                                         f"(SDPA takes one length for the batch)")
        where = (f"one query token against a contiguous KV cache [B,HKV,L,D] (SDPA has no paged cache; "
                 f"tune's problem has page {d.get('page_size', d.get('page', '?'))}){drawn}" if decode else "[B,H,S,D]")
        return f"torch {torch.__version__}, {which} via scaled_dot_product_attention, bf16, {where}"
    return TorchOp(sets, lambda s: F.scaled_dot_product_attention(s["q"], s["k"], s["v"], **kw),
                   lambda s: [], lambda s, r: [r], [(B, HQ, SQ, D)], library, lambda: sdpa_kernel([be]),
                   expected=lambda s, r: sdpa_expected(torch, s["q"], s["k"], s["v"], r, causal))


def sdpa_expected(torch, q, k, v, o, causal):
    """SDPA's [B, H, S, D] output of the first and the last batch entry, on their edge query rows,
    against peer_reference.attention_reference (which takes [S, H, D])."""
    B, rows = q.shape[0], edge_rows(torch, q.shape[2], q.device)

    def seq(x, b):
        return x[b].transpose(0, 1)
    return [(f"o[batch {b}]", seq(o, b)[rows],
             peer_reference.attention_reference(torch, seq(q, b), seq(k, b), seq(v, b), causal, rows))
            for b in sorted({0, B - 1})]


def build_memory(torch, peer, n_sets, seed):
    """copy, elementwise, softmax, rmsnorm(.add), transpose: eager torch on the recipes' inputs."""
    import torch.nn.functional as F
    d, fam = peer.dims, peer.family
    sets = [_memory_set(torch, fam, d, peer.opts, _gen(torch, seed + i)) for i in range(n_sets)]
    if fam == "copy":
        fn, expr, shapes = (lambda s: s["y"].copy_(s["x"])), "y.copy_(x), f32", [(d["N"],)]
    elif fam == "elementwise":
        def fn(s):
            torch.addcmul(s["bias"], s["x"], s["scale"], out=s["y"])
            return F.silu(s["y"], inplace=True)
        expr, shapes = "torch.addcmul(bias, x, scale, out=y); F.silu(y, inplace=True), bf16", [(d["rows"], d["cols"])]
    elif fam == "softmax":
        fn, expr, shapes = _softmax_fn(torch, sets[0]), None, [(d["rows"], d["cols"])]
    elif fam == "transpose":
        fn, shapes = (lambda s: s["y"].copy_(s["x"].t())), [(d["C"], d["R"])]
        expr = f"y.copy_(x.t()) (as x.t().contiguous()), {peer.opts['dtype']}"
    elif peer.opts["residual"]:
        def fn(s):
            torch.add(s["x"], s["r"], out=s["h"])
            return F.rms_norm(s["h"], (d["H"],), s["w"], RMSNORM_EPS)
        expr, shapes = "torch.add(x, r, out=h); y = F.rms_norm(h, (H,), w, 1e-6), bf16", [(d["T"], d["H"])] * 2
    else:
        fn, shapes = (lambda s: F.rms_norm(s["x"], (d["H"],), s["w"], RMSNORM_EPS)), [(d["T"], d["H"])]
        expr = "y = F.rms_norm(x, (H,), w, 1e-6), bf16"
    if fam == "rmsnorm" and not hasattr(F, "rms_norm"):
        raise PeerError(f"torch {torch.__version__} has no F.rms_norm")
    outs = (lambda s: [s[k] for k in ("y", "h") if k in s])
    results = (lambda s, r: [r, s["h"]]) if fam == "rmsnorm" and peer.opts["residual"] else (lambda s, r: [r])
    library = (lambda: f"torch {torch.__version__} eager: {expr or fn.expr}")
    return TorchOp(sets, fn, outs, results, shapes, library,
                   expected=lambda s, r: memory_expected(torch, fam, s, results(s, r)))


def memory_expected(torch, fam, s, outs):
    """The memory-bound families' outputs (edge rows of 2-D ones) beside float64 math on their inputs."""
    if fam == "copy":
        return [("y", outs[0], s["x"].double())]
    rows = edge_rows(torch, outs[0].shape[0], outs[0].device)
    if fam == "transpose":
        return [("y", outs[0][rows], s["x"].t()[rows].double())]
    x = s["x"][rows].double()
    if fam == "elementwise":
        y = torch.addcmul(s["bias"].double(), x, s["scale"].double())
        return [("y", outs[0][rows], y * torch.sigmoid(y))]
    if fam == "softmax":
        return [("y", outs[0][rows], torch.softmax(x, -1))]
    h = x + s["r"][rows].double() if "r" in s else x
    y = h * torch.rsqrt(h.square().mean(-1, keepdim=True) + RMSNORM_EPS) * s["w"].double()
    return [("y", outs[0][rows], y)] + ([("h", outs[1][rows], h)] if "r" in s else [])


def _memory_set(torch, fam, d, opts, g):
    bf = torch.bfloat16
    if fam == "copy":
        return {"x": _uniform(torch, g, (d["N"],), torch.float32, -1, 1),
                "y": torch.empty(d["N"], dtype=torch.float32, device="cuda")}
    if fam == "elementwise":
        R, C = d["rows"], d["cols"]
        return {"x": _normal(torch, g, (R, C), bf), "scale": _uniform(torch, g, (C,), bf, 0.5, 1.5),
                "bias": _uniform(torch, g, (C,), bf, -1, 1), "y": torch.empty(R, C, dtype=bf, device="cuda")}
    if fam == "softmax":
        R, C = d["rows"], d["cols"]
        return {"x": _normal(torch, g, (R, C), bf, 3.0), "y": torch.empty(R, C, dtype=bf, device="cuda")}
    if fam == "transpose":
        dt = torch.float32 if opts["dtype"] == "f32" else bf
        return {"x": _normal(torch, g, (d["R"], d["C"]), dt), "y": torch.empty(d["C"], d["R"], dtype=dt, device="cuda")}
    T, H = d["T"], d["H"]
    s = {"x": _normal(torch, g, (T, H), bf), "w": _uniform(torch, g, (H,), bf, 0.5, 1.5)}
    if opts["residual"]:
        s["r"] = _normal(torch, g, (T, H), bf)
        s["h"] = torch.empty(T, H, dtype=bf, device="cuda")
    return s


def _softmax_fn(torch, s0):
    """torch.softmax into y where this torch has the out= overload, else into a new tensor."""
    try:
        torch.softmax(s0["x"], -1, out=s0["y"])

        def fn(s):
            return torch.softmax(s["x"], -1, out=s["y"])
        fn.expr = "torch.softmax(x, -1, out=y), bf16 in and out (fp32 math inside)"
    except (TypeError, RuntimeError):
        def fn(s):
            return torch.softmax(s["x"], -1)
        fn.expr = "y = torch.softmax(x, -1), bf16 in and out (fp32 math inside; this torch has no out=)"
    return fn


BUILDERS = {"gemm": build_gemm, "prefill": build_attention, "decode": build_attention,
            "copy": build_memory, "elementwise": build_memory, "softmax": build_memory,
            "rmsnorm": build_memory, "transpose": build_memory}


def value_check_key(peer, seed):
    """What a peer's value check depends on: the peer, its problem's dims and options, the inputs'
    seed (the first input set is drawn from it in every round and timing)."""
    opts = sorted((k, v) for k, v in peer.opts.items() if isinstance(v, (bool, int, float, str)))
    return (peer.name, peer.family, json.dumps(peer.dims, sort_keys=True), tuple(opts), seed)


class TorchBackend:
    """The peers on the GPU: builds each op with torch, checks its output (its values once per
    problem, peer and seed: a comparison's rounds and timings draw the same inputs), times it."""

    def __init__(self, dev):
        self.dev = dev
        self.values_checked = set()  # value_check_key of the peers whose values passed

    def hello(self):
        self.dev.open()
        return dict(self.dev.info)

    def measure(self, peer, timing, seed):
        self.dev.open()  # l2_bytes below is the opened device's
        burst = timing == "burst"
        n_sets = BURST_SETS if burst else rotation_sets(peer.set_bytes, self.dev.l2_bytes)
        key = value_check_key(peer, seed)

        def timed(torch, op):
            self._check(torch, op, values=key not in self.values_checked)
            self.values_checked.add(key)
            r = (measure_burst if burst else measure_sustained)(self.dev, op)
            return dict(r, library=op.library(), timer="cupti")
        return self._with_op(peer, n_sets, seed, timed, one_set_if_oom=burst)

    def check(self, peer, seed):
        """The value check alone (no timing) on one input set: None, or PeerError with the reason."""
        self._with_op(peer, 1, seed, self._check)

    def _with_op(self, peer, n_sets, seed, body, one_set_if_oom=False):
        """body(torch, op) on the peer's op built on n_sets input sets (one_set_if_oom: on one where
        they do not fit, as the worker), in the op's context; torch's errors as PeerError; the op's
        memory back to the driver afterwards."""
        self.dev.open()
        torch = self.dev.torch
        op = None
        try:
            with torch.inference_mode():
                try:
                    op = BUILDERS[peer.family](torch, peer, n_sets, seed)
                except torch.cuda.OutOfMemoryError:
                    if not one_set_if_oom:
                        raise
                    n_sets = 1
                    self._drain()
                    op = BUILDERS[peer.family](torch, peer, n_sets, seed)
                with op.context():
                    return body(torch, op)
        except torch.cuda.OutOfMemoryError as e:
            raise PeerError(f"out of memory ({n_sets} set(s) of {peer.set_bytes} bytes): {_first_line(e)}")
        except (RuntimeError, TypeError, ValueError, AttributeError, ImportError) as e:  # e.g. an older torch
            raise PeerError(f"{type(e).__name__}: {_first_line(e)}")
        finally:
            del op
            self._drain()

    def _check(self, torch, op, values=True):
        """One call, with the reasons a backend gives when it refuses: the output has the
        problem's shape, no NaN, and (values) the values of its float64 reference (check_values)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                r = op.call(0)
            except RuntimeError as e:
                why = "; ".join(_first_line(w.message) for w in caught)
                raise PeerError(f"{_first_line(e)}{' (' + why + ')' if why else ''}")
        for t, shape in zip(op.results(op.sets[0], r), op.shapes):
            if tuple(t.shape) != tuple(shape):
                raise PeerError(f"output shape {tuple(t.shape)}, expected {tuple(shape)}")
            if bool(torch.isnan(t).any()):
                raise PeerError("output has NaN")
        if op.expected is None:
            raise PeerError("no reference to check its values against: not timed")
        if values:
            check_values(torch, op.expected(op.sets[0], r))

    def _drain(self):
        """After a peer: its work done, its records dropped, its memory back to the driver."""
        try:
            self.dev.synchronize()
            self.dev.collect()
            self.dev.torch.cuda.empty_cache()
        except DeviceError as e:
            log(f"after a peer: {e}")


def _first_line(e):
    s = str(e).strip()
    return (s.splitlines()[0] if s else type(e).__name__)[:400]


def _preload_torch_cupti():
    """Load the libcupti that torch's wheel brings before tune's timer opens "libcupti.so.13":
    the loader then hands the timer that same library (same soname), so the process has one
    CUPTI. With two copies loaded (the toolkit's and the wheel's) the timer's copy saw almost
    none of torch's kernels."""
    import glob
    for d in sys.path:
        for pat in ("nvidia/cu*/lib/libcupti.so*", "nvidia/cuda_cupti/lib/libcupti.so*"):
            for path in sorted(glob.glob(os.path.join(d or ".", pat))):
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                    log(f"CUPTI: {path} (torch's), loaded before tune's timer opens it")
                    return path
                except OSError:
                    continue
    return None


def default_lib():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("TUNE_CUPTI_PY") or os.path.join(here, "..", "..", "build", "libtune_cupti_py.so")


def main(argv):
    lib = default_lib()
    if argv[:1] == ["--lib"] and len(argv) == 2:
        lib = argv[1]
    elif argv:
        sys.exit(__doc__.strip().splitlines()[-1])
    # a stop signal to tune compare's process group (Ctrl-C, `timeout -s INT`) is tune compare's to
    # handle: it finishes the problem in flight with this server, as the worker ignores it too
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # replies go to the real stdout only; anything a library prints goes to stderr
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(TorchBackend(CudaDevice(lib)), sys.stdin, replies)


if __name__ == "__main__":
    main(sys.argv[1:])
