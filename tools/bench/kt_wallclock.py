#!/usr/bin/env python3
"""kt_wallclock.py: wall time to 98 % of the optimum, compiles included, of Kernel Tuner and of
`tune run` tuning the same kernel spaces on the same GPU (issue 29, "Wall clock on the GPU").

Kernels (one table each below, KERNELS): copy (recipes/copy.lua), rmsnorm (recipes/rmsnorm.lua, recipe
rmsnorm: memory-bound with a row reduction) and gemm (recipes/gemm.lua, recipe gemm, restricted to
PATH 0: mma.sync + ldmatrix + cp.async, no tensor map read). Kernel Tuner gets each recipe's space as
it is: the same parameters and values, the recipe's constraints, `requires` and `applies` (mirrored
in Python) as one restriction, the template file itself compiled by the cupy backend (-I templates)
with the parameters and the recipe's `defines` as #defines, the recipe's launch geometry (grid as
problem_size with no grid divisors, block and dynamic shared memory as functions of the config) and
its arguments (same sizes and dtypes; bf16 tensors as uint16 arrays, rounded to nearest even). A
table's `only` pins parameters for both tools (tune run --only K=V,...; single-value lists for
Kernel Tuner): gemm pins PATH 0 and the parameters the recipe's constraints pin for PATH 0. Where
Kernel Tuner 1.5.0 lacks what a recipe needs, it is added around it, not changed:
  - a block size that is no single parameter (gemm: 32 * WARPS_M * WARPS_N): its thread-block
    function (kernel_tuner.util.get_thread_block_dimensions) is wrapped to return the table's;
  - dynamic shared memory over 48 KiB (gemm): the cupy backend's shared-memory hook also sets the
    kernel's max_dynamic_shared_size_bytes, the opt-in every CUDA program makes;
  - verification: a function that compares the outputs on the GPU (cupy) with a float32 reference
    computed once, at the recipe's tolerance (rel_l2, max_abs), as tune verifies each variant;
  - gemm is compiled with TMA_ARGS 0: the same PATH 0 code without the three tensor-map parameters
    PATH 0 never reads (tune passes them; the cupy backend cannot pass 128-byte structs).
tune runs a wrapper recipe for gemm (`return (require "gemm")[1]`), so that gemm.splitk, whose
problems overlap gemm's decode problems, is not tuned too.

Per kernel, runs each in its own process with cold compile caches (NVRTC's on-disk cache off for
both, CUDA_CACHE_DISABLE=1 and a fresh CUDA_CACHE_PATH; a fresh CUPY_CACHE_DIR for Kernel Tuner; for
tune a fresh database, which holds tune's compile cache), the timed runs first:
  1. Kernel Tuner, STRATEGY (default adaptive_tabu_greywolf: the best single Kernel Tuner strategy of
     docs/search.md's criteria), max_fevals BUDGET, seed SEED;
  2. tune run RECIPE --problem P --device cuda:0 --budget BUDGET --seed SEED --no-warm-start
     (tune's default strategy, cold as Kernel Tuner);
  3. Kernel Tuner's optimum: brute_force, or where the table (or --kt-cap) caps it, random_sample over
     the whole space with a time_limit (brute_force takes no time limit): the optimum of the configs it
     reached; 4. tune --strategy exhaustive: tune's optimum. Each tool is judged against its own
     optimum (the timers differ: Kernel Tuner times back-to-back launches with CUDA events, tune one
     launch per sample with CUPTI after an L2 flush).
Per tool: evaluations and wall seconds (from the process start) to the first config within 2 % of its
optimum (time <= optimum / 0.98), the whole run's wall time, compile seconds per variant on one core
(Kernel Tuner compiles in its one process; tune's compile_ms per variant, compiled on every core);
tune's "GPU busy" line is copied, and for Kernel Tuner the share of its wall spent in benchmark and
verification (an upper bound of its GPU-busy fraction). The last lines are one table over the kernels.

  kt_wallclock.py --out DIR [--kernels copy,rmsnorm,gemm] [--problem P] [--budget 40] [--seed 1]
                  [--strategy S] [--kt-cap SECONDS] [--tune build/tune]
  kt_wallclock.py --check [--kernels ...]   (no GPU: per kernel, the space against `tune run
      --compile-only`'s enumeration (and the dynamic shared memory against the compiled variants'),
      and, where kernel_tuner and numpy are importable, Kernel Tuner's own enumeration, the
      verification on a small problem, and one Kernel Tuner run in simulation mode on a cache
      exported from data/recorded/h100/; cupy is not needed)
"""
import argparse
import itertools
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEAR = 0.98
SM_COUNT = 132  # H100 SXM / H200 (--check; a GPU run asks the device)
SMEM_LIMIT = 227 * 1024  # sm_90 opt-in maximum per block (recipes/gemm.lua's SMEM_LIMIT)


def cdiv(a, b):
    return (a + b - 1) // b


# ---------------------------------------------------------------------------------------------
# The kernels. Per table: recipe (file, recipe name, template, kernel), problems (dims), params
# (the recipe's order and value order; bools as 0/1, as tune's -D defines), only (pins for both
# tools), constraints (Python expressions over the params), applies(p, d) (requires and applies),
# defines(p, d) (the recipe's defines), grid/threads/smem(p, d) (launch), args (the recipe's args),
# reference(values, d, xp) -> {output index: float32 reference}, tolerance (rel_l2, max_abs),
# kt_cap (seconds for Kernel Tuner's optimum run; None: brute_force), recording (data/recorded/h100/).

def copy_grid(p, d):
    """copy.lua's launch.grid: blocks of the one-dimensional grid."""
    blocks = cdiv(d["N"], p["BLOCK"] * p["ILP"] * (p["VEC_BYTES"] // 4))
    if p["GRID_STRIDE"]:
        blocks = min(blocks, d["sm_count"] * (2048 // p["BLOCK"]))
    return (blocks, 1, 1)


COPY = dict(
    recipe="recipes/copy.lua", name="copy", template="templates/copy/copy.cuh", kernel="copy_kernel",
    problems={"64MiB": dict(N=16 * 1024 * 1024), "256MiB": dict(N=64 * 1024 * 1024)}, problem="256MiB",
    check_dims=dict(N=1000),
    params={"VEC_BYTES": [4, 8, 16], "ILP": [1, 2, 4, 8], "BLOCK": [128, 256, 512, 1024],
            "GRID_STRIDE": [0, 1], "MIN_BLOCKS": [1, 2]},
    only={},
    constraints=["BLOCK * MIN_BLOCKS <= 2048", "BLOCK * ILP * VEC_BYTES <= 64 * 1024"],
    applies=None,
    defines=lambda p, d: {},
    grid=copy_grid, threads=lambda p, d: p["BLOCK"], smem=None, block_param="BLOCK",
    args=[("src", "f32", lambda d: d["N"], ("uniform", -1, 1)), ("dst", "f32", lambda d: d["N"], "output"),
          ("n", "i64", lambda d: d["N"], "scalar")],
    reference=lambda v, d, xp: {1: v[0]},
    tolerance=(0.0, 0.0), kt_cap=45, recording="copy.db",
)


def rmsnorm_iters(p, d):
    """rmsnorm.lua's ITERS: vectors per thread of a row."""
    return cdiv(cdiv(d["H"], p["VEC_BYTES"] // 2), 32 if p["ROW_MODE"] == 0 else p["BLOCK"])


def rmsnorm_applies(p, d):
    """rmsnorm.lua's requires (a cached slice of at most 512 B) and applies (it fits the register cap)."""
    if p["CACHE_ROW"] == 0:
        return True
    it = rmsnorm_iters(p, d)
    cap = min(255, 65536 // (p["BLOCK"] * p["MIN_BLOCKS"]))
    return it * p["VEC_BYTES"] <= 512 and 2 * it * p["VEC_BYTES"] // 4 + 24 <= cap


def rmsnorm_reference(v, d, xp):
    x = v[0].reshape(d["T"], d["H"])
    ms = (x * x).mean(axis=1, keepdims=True)
    return {2: (x / xp.sqrt(ms + xp.float32(1e-6)) * v[1]).reshape(-1)}


RMSNORM = dict(
    recipe="recipes/rmsnorm.lua", name="rmsnorm", template="templates/rmsnorm/rmsnorm.cuh", kernel="rmsnorm_kernel",
    problems={"t16384h4096": dict(T=16384, H=4096), "t4096h8192": dict(T=4096, H=8192)}, problem="t16384h4096",
    check_dims=dict(T=5, H=520),
    params={"ROW_MODE": [0, 1], "BLOCK": [128, 256, 512, 1024], "VEC_BYTES": [4, 8, 16], "CACHE_ROW": [1, 0],
            "CACHE_HINT": [0, 1], "MIN_BLOCKS": [1, 2]},
    only={},
    constraints=["ROW_MODE == 1 or BLOCK <= 512",
                 "MIN_BLOCKS == 1 or (CACHE_ROW == 1 and (BLOCK == 256 or BLOCK == 512))"],
    applies=rmsnorm_applies,
    defines=lambda p, d: {"ITERS": rmsnorm_iters(p, d) if p["CACHE_ROW"] == 1 else 0, "RESIDUAL": 0},
    grid=lambda p, d: (cdiv(d["T"], p["BLOCK"] // 32) if p["ROW_MODE"] == 0 else d["T"], 1, 1),
    threads=lambda p, d: p["BLOCK"], smem=None, block_param="BLOCK",
    args=[("x", "bf16", lambda d: d["T"] * d["H"], ("normal", 0, 1)), ("w", "bf16", lambda d: d["H"], ("uniform", 0.5, 1.5)),
          ("y", "bf16", lambda d: d["T"] * d["H"], "output"), ("T", "i32", lambda d: d["T"], "scalar"),
          ("H", "i32", lambda d: d["H"], "scalar"), ("eps", "f32", lambda d: 1e-6, "scalar")],
    reference=rmsnorm_reference,
    tolerance=(1e-2, 0.1), kt_cap=None, recording="rmsnorm.db",
)

# gemm.lua's PATH 0 shapes { BLOCK_M, BLOCK_N, WARPS_M, WARPS_N }
SHAPES_SM80 = {(256, 128, 4, 2), (128, 256, 2, 4), (128, 128, 2, 2), (64, 128, 2, 2), (64, 64, 2, 2),
               (32, 128, 1, 4), (16, 128, 1, 4), (16, 64, 1, 4)}


def gemm_smem(p, d, b_col=None):
    """gemm.lua's smem_sm80 without split-K: the cp.async ring or the bf16 epilogue tile."""
    b_col = d["b_layout"] == "col" if b_col is None else b_col
    pad = 0 if p["SWIZZLE"] == 1 else 8
    a = p["BLOCK_M"] * (p["BLOCK_K"] + pad)
    b = p["BLOCK_N"] * (p["BLOCK_K"] + pad) if b_col else p["BLOCK_K"] * (p["BLOCK_N"] + pad)
    return max(p["STAGES"] * (a + b) * 2, p["BLOCK_M"] * (p["BLOCK_N"] + 8) * 2)


def gemm_constraints(p):
    """gemm.lua's constraints where PATH is 0 (the pins keep Kernel Tuner and tune on PATH 0)."""
    if p["PATH"] != 0:
        return False
    shape = (p["BLOCK_M"], p["BLOCK_N"], p["WARPS_M"], p["WARPS_N"])
    stages_ok = p["STAGES"] >= 3 if p["BLOCK_K"] == 32 else (p["STAGES"] <= 4 or p["BLOCK_M"] <= 64)
    return (p["CONSUMERS"] == 1 and shape in SHAPES_SM80 and stages_ok
            and gemm_smem(p, None, False) <= SMEM_LIMIT and gemm_smem(p, None, True) <= SMEM_LIMIT
            and p["WS"] == 0 and p["PRODUCER_WARPS"] == 1 and p["SETMAXNREG"] == 0 and p["PERSISTENT"] == 0
            and p["USE_TMA"] == 0 and p["GEMV_WARPS"] == 4 and p["GEMV_COLS"] == 1 and p["GEMV_UNROLL"] == 2)


def gemm_applies(p, d):
    """gemm.lua's applies_common (and large_short_list) for PATH 0 without split-K."""
    if gemm_smem(p, d) > SMEM_LIMIT:
        return False
    if d["M"] >= 256:  # large problems: a short list
        return (p["BLOCK_M"] >= 128 and p["RASTER"] == 8 and p["BLOCK_M"] * p["BLOCK_N"] >= 128 * 256
                and p["SWIZZLE"] == 1 and (p["STAGES"] == 3 if p["BLOCK_K"] == 64 else p["STAGES"] == 4))
    mp = 16
    while mp < d["M"]:
        mp *= 2
    return mp // 4 <= p["BLOCK_M"] <= mp and p["RASTER"] == 1 and p["SWIZZLE"] == 1 and p["BLOCK_K"] == 64


def gemm_reference(v, d, xp):
    a = v[0].reshape(d["M"], d["K"])
    b = v[1].reshape(d["N"], d["K"]).T if d["b_layout"] == "col" else v[1].reshape(d["K"], d["N"])
    return {2: (a @ b).reshape(-1)}


def gemm_problem(name):
    m, rest = name[1:].split("n", 1)
    n, rest = rest.split("k", 1)
    k, lay = rest.split("_")
    return dict(M=int(m), N=int(n), K=int(k), b_layout=lay)


GEMM = dict(
    recipe="recipes/gemm.lua", name="gemm", template="templates/gemm/gemm.cuh", kernel="gemm_bf16",
    tune_recipe='return (require "gemm")[1]\n',
    problems={n: gemm_problem(n) for n in ("m128n8192k8192_col", "m64n8192k8192_col", "m4096n4096k4096_col",
                                           "m4096n4096k4096_row")},
    problem="m128n8192k8192_col",
    check_dims=dict(M=20, N=72, K=136, b_layout="col"),
    params={"PATH": [0, 1, 2], "BLOCK_M": [16, 32, 64, 128, 256], "BLOCK_N": [64, 128, 256], "WARPS_M": [1, 2, 4],
            "WARPS_N": [1, 2, 4], "CONSUMERS": [1, 2], "BLOCK_K": [64, 32], "STAGES": [2, 3, 4, 5], "SWIZZLE": [1, 0],
            "WS": [0, 1, 2], "PRODUCER_WARPS": [1, 4], "SETMAXNREG": [0, 1], "USE_TMA": [0, 1], "PERSISTENT": [0, 1],
            "RASTER": [1, 8], "GEMV_WARPS": [4, 8], "GEMV_COLS": [1, 2, 4], "GEMV_UNROLL": [2, 4]},
    only={"PATH": 0, "CONSUMERS": 1, "WS": 0, "PRODUCER_WARPS": 1, "SETMAXNREG": 0, "USE_TMA": 0, "PERSISTENT": 0,
          "GEMV_WARPS": 4, "GEMV_COLS": 1, "GEMV_UNROLL": 2},
    constraints=[gemm_constraints],
    applies=gemm_applies,
    defines=lambda p, d: {"B_COL": 1 if d["b_layout"] == "col" else 0, "TMA_ARGS": 0, "GEMV_M": 0},
    grid=lambda p, d: (cdiv(d["M"], p["BLOCK_M"]) * cdiv(d["N"], p["BLOCK_N"]), 1, 1),
    threads=lambda p, d: 32 * p["WARPS_M"] * p["WARPS_N"], smem=gemm_smem, block_param=None,
    args=[("a", "bf16", lambda d: d["M"] * d["K"], ("normal", 0, 1)), ("b", "bf16", lambda d: d["N"] * d["K"], ("normal", 0, 1)),
          ("c", "bf16", lambda d: d["M"] * d["N"], "output"), ("ws", "f32", lambda d: 1, "scratch"),
          ("M", "i32", lambda d: d["M"], "scalar"), ("N", "i32", lambda d: d["N"], "scalar"),
          ("K", "i32", lambda d: d["K"], "scalar")],
    reference=gemm_reference,
    tolerance=(1e-2, 8.0), kt_cap=150, recording="gemm.db",
)

KERNELS = {"copy": COPY, "rmsnorm": RMSNORM, "gemm": GEMM}


# ---------------------------------------------------------------------------------------------
# The space

def kt_params(k):
    """Kernel Tuner's tune_params: the recipe's, pinned parameters as single values."""
    return {n: ([k["only"][n]] if n in k["only"] else list(v)) for n, v in k["params"].items()}


def allowed(k, p, d):
    for c in k["constraints"]:
        if not (c(p) if callable(c) else eval(c, {}, dict(p))):
            return False
    return k["applies"] is None or bool(k["applies"](p, d))


def kt_restriction(k, d):
    """The restriction Kernel Tuner gets: one function of the config (a def: Kernel Tuner rewrites
    lambdas from their source text)."""
    def restriction(p):
        return allowed(k, p, d)
    return restriction


def enumerate_space(k, d):
    params = kt_params(k)
    pts = [dict(zip(params, v)) for v in itertools.product(*params.values())]
    return [tuple(p.values()) for p in pts if allowed(k, p, d)]


def only_arg(k):
    return ",".join(f"{n}={v}" for n, v in k["only"].items())


def tune_recipe_path(k, workdir):
    """The recipe file tune runs: the recipe itself, or a wrapper that returns one recipe of its file."""
    if not k.get("tune_recipe"):
        return os.path.join(ROOT, k["recipe"])
    path = os.path.join(workdir, f"{k['name']}_only.lua")
    with open(path, "w") as f:
        f.write(k["tune_recipe"])
    return path


def tune_cmd(k, a, recipe_path, *rest):
    cmd = [a.tune, "run", recipe_path, "--root", ROOT, *rest]
    return cmd + (["--only", only_arg(k)] if k["only"] else [])


def config_key(k, params_json):
    c = json.loads(params_json)
    return tuple(int(c[n]) for n in k["params"])


# ---------------------------------------------------------------------------------------------
# Arguments, reference and verification

def bf16_bits(np, f):
    """float32 -> bf16 bits (round to nearest even), as tuner/inputs.c rounds."""
    u = np.ascontiguousarray(f, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_values(xp, bits):
    return (xp.asarray(bits).astype(xp.uint32) << 16).view(xp.float32)


DTYPES = {"f32": "float32", "bf16": "uint16", "i32": "int32", "i64": "int64"}


def build_args(k, d, rng):
    """The kernel's arguments as numpy objects; rng None: one-element arrays (simulation: only types count)."""
    import numpy as np
    out = []
    for _name, dt, size, init in k["args"]:
        n = size(d)
        if init == "scalar":
            out.append(np.dtype(DTYPES[dt]).type(n))
        elif rng is None or init in ("output", "scratch"):
            out.append(np.zeros(1 if rng is None else n, dtype=DTYPES[dt]))
        else:
            kind, lo, hi = init
            f = rng.normal(lo, hi, n) if kind == "normal" else rng.uniform(lo, hi, n)
            out.append(bf16_bits(np, f) if dt == "bf16" else f.astype(np.float32))
    return out


def array_module():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # no cupy or no GPU (--check): numpy
        import numpy
        return numpy


def float_values(xp, k, args):
    """The inputs as the kernel sees them, as float32 arrays of xp (bf16 decoded); scalars as they are."""
    vals = []
    for (_n, dt, _s, init), v in zip(k["args"], args):
        if init == "scalar" or init in ("output", "scratch"):
            vals.append(v)
        else:
            vals.append(bf16_values(xp, v) if dt == "bf16" else xp.asarray(v, dtype=xp.float32))
    return vals


def make_verify(k, refs, xp, report=True):
    """Kernel Tuner's verify: each output against its float32 reference on xp (the GPU in a measured
    run), rel_l2 and max_abs within the recipe's tolerance; NaN or Inf fails."""
    rel_tol, abs_tol = k["tolerance"]
    dts = [dt for _n, dt, _s, _i in k["args"]]

    def verify(answer, result_host, atol=None):
        for i, ref in refs.items():
            got = bf16_values(xp, result_host[i]) if dts[i] == "bf16" else xp.asarray(result_host[i])
            diff = got.astype(xp.float32) - ref
            max_abs = float(xp.abs(diff).max())
            rel = float(xp.sqrt((diff * diff).sum()) / max(float(xp.sqrt((ref * ref).sum())), 1e-30))
            if not (max_abs <= abs_tol and rel <= rel_tol):  # NaN compares False
                if report:
                    print(f"kt_wallclock: output {i} off: rel_l2 {rel:.3g}, max_abs {max_abs:.3g} "
                          f"(tolerance {rel_tol}, {abs_tol})", file=sys.stderr)
                return False
        return True
    return verify


# ---------------------------------------------------------------------------------------------
# Kernel Tuner

def patch_kernel_tuner(k, d):
    """What Kernel Tuner 1.5.0 lacks for these recipes (module docstring): the table's block size and
    the opt-in to more than 48 KiB of dynamic shared memory."""
    import kernel_tuner.util as ku
    names = list(k["params"])
    orig_threads = ku.get_thread_block_dimensions

    def threads(params, block_size_names=None):
        if all(n in params for n in names):
            return (int(k["threads"](params, d)), 1, 1)
        return orig_threads(params, block_size_names)
    ku.get_thread_block_dimensions = threads
    if k["smem"]:
        from kernel_tuner.backends import cupy as kcupy
        orig_smem = kcupy.CupyFunctions.copy_shared_memory_args

        def smem(self, smem_args):
            orig_smem(self, smem_args)
            if smem_args["size"] > 48 * 1024:
                self.func.max_dynamic_shared_size_bytes = smem_args["size"]
        kcupy.CupyFunctions.copy_shared_memory_args = smem


def kt_tune(k, d, strategy, budget, seed, cap=None, cache=None, simulation=False):
    """One Kernel Tuner run; returns its results (list of dicts with 'time' in ms, 'timestamp')."""
    import random
    import warnings
    import numpy as np
    import kernel_tuner
    warnings.filterwarnings("ignore", module="kernel_tuner")  # argument-type notes: bf16 passed as uint16
    random.seed(seed)
    np.random.seed(seed)
    patch_kernel_tuner(k, d)
    params = kt_params(k)
    args = build_args(k, d, None if simulation else np.random.default_rng(seed))
    opts = {}
    if strategy == "optimum":  # Kernel Tuner's optimum: the whole space, capped or not
        strategy, opts = ("random_sample", {"fraction": 1.0, "time_limit": cap}) if cap else ("brute_force", {})
    elif strategy != "brute_force":
        opts = {"max_fevals": budget}
    all_defines = lambda p: {**p, **k["defines"](p, d)}  # noqa: E731
    names = list(params) + list(k["defines"](dict((n, v[0]) for n, v in params.items()), d))
    kw = dict(lang="cupy", block_size_names=[k["block_param"] or "block_size_x", "block_size_y", "block_size_z"],
              grid_div_x=[], grid_div_y=[], grid_div_z=[],
              restrictions=kt_restriction(k, d),
              defines={n: (lambda p, n=n: all_defines(p)[n]) for n in names},
              compiler_options=["-I" + os.path.join(ROOT, "templates"), "-std=c++17"],
              strategy=strategy, strategy_options=opts, iterations=7, verbose=False, quiet=True)
    if k["smem"]:
        kw["smem_args"] = {"size": lambda p: k["smem"](p, d)}
    if simulation:
        kw.update(simulation_mode=True, cache=cache)
    else:
        xp = array_module()
        refs = k["reference"](float_values(xp, k, args), d, xp)
        # the outputs to copy back are those with an answer; verify compares them with refs
        kw.update(answer=[np.zeros(1, a.dtype) if i in refs else None for i, a in enumerate(args)],
                  verify=make_verify(k, refs, xp))
    results, _env = kernel_tuner.tune_kernel(
        k["kernel"], os.path.join(ROOT, k["template"]), lambda p: k["grid"](p, d), args, params, **kw)
    return results


def unique_results(k, res):
    """Kernel Tuner's results, each config once (its first evaluation): a strategy's revisits are
    answered from its cache and are no evaluations."""
    seen, out = set(), []
    for r in res:
        if r is None:  # a config past the time limit
            continue
        key = tuple(r[n] for n in k["params"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def problem_dims(k, problem, sm_count=SM_COUNT):
    return dict(k["problems"][problem], sm_count=sm_count)


def kt_child(a):
    """--kt-child: one Kernel Tuner run in this process; writes its results as JSON to --kt-out."""
    t0 = time.time()
    import cupy
    k = KERNELS[a.kernels]
    d = problem_dims(k, a.problem, cupy.cuda.Device().attributes["MultiProcessorCount"])
    res = kt_tune(k, d, a.strategy, a.budget, a.seed, cap=a.kt_cap)
    out = []
    for r in unique_results(k, res):
        ok = isinstance(r.get("time"), (int, float)) and "__error__" not in r
        out.append(dict(ms=float(r["time"]) if ok else None, timestamp=r.get("timestamp"),
                        compile_ms=r.get("compile_time", 0), verify_ms=r.get("verification_time", 0),
                        bench_ms=r.get("benchmark_time", 0), config={n: r[n] for n in k["params"]}))
    with open(a.kt_out, "w") as f:
        json.dump(dict(start=t0, end=time.time(), sm_count=d["sm_count"], results=out), f)


# ---------------------------------------------------------------------------------------------
# Measured runs

def iso_to_epoch(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def cold_caches(outdir, **more):
    """The environment of one measured run with empty compile caches: NVRTC keeps compiled programs
    on disk across processes (a recompile takes a fraction of the time), so every run, Kernel Tuner's
    and tune's alike, gets CUDA_CACHE_DISABLE=1 and a fresh CUDA_CACHE_PATH (the pair that turned
    it off in data/runs/compile-throughput-h100-2026-11-28/), and the caller's other cache folders."""
    return dict(os.environ, CUDA_CACHE_DISABLE="1",
                CUDA_CACHE_PATH=tempfile.mkdtemp(prefix="nvrtc_cache_", dir=outdir), **more)


def run_kt(name, problem, a, strategy, outdir, cap=None):
    env = cold_caches(outdir, CUPY_CACHE_DIR=tempfile.mkdtemp(prefix="kt_cupy_", dir=outdir))
    out = os.path.join(outdir, f"kt_{strategy}.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--kt-child", "--kernels", name, "--problem", problem,
           "--strategy", strategy, "--budget", str(a.budget), "--seed", str(a.seed), "--kt-out", out]
    if cap:
        cmd += ["--kt-cap", str(cap)]
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    t1 = time.time()
    if p.returncode:
        sys.exit(f"kt_wallclock: Kernel Tuner {strategy} on {name} failed:\n{p.stderr[-4000:]}")
    with open(out) as f:
        res = json.load(f)["results"]
    rows = [(r["ms"] * 1e6 if r["ms"] is not None else None, iso_to_epoch(r["timestamp"])) for r in res]
    compile_ms = [r["compile_ms"] for r in res if r["compile_ms"]]
    busy_s = sum(r["verify_ms"] + r["bench_ms"] for r in res) / 1e3
    return dict(rows=rows, t0=t0, t1=t1, compile_ms=compile_ms, busy=f"{100 * busy_s / (t1 - t0):.1f} %")


def run_tune(k, problem, a, strategy, outdir):
    tag = strategy or "default"
    db = os.path.join(outdir, f"tune_{tag}.db")
    cmd = tune_cmd(k, a, tune_recipe_path(k, outdir), "--problem", problem, "--device", "cuda:0", "--db", db,
                   "--seed", str(a.seed), "--no-warm-start")
    cmd += ["--strategy", strategy] if strategy else ["--budget", str(a.budget)]
    t0 = time.time()
    p = subprocess.run(cmd, env=cold_caches(outdir), capture_output=True, text=True, cwd=ROOT)
    t1 = time.time()
    with open(os.path.join(outdir, f"tune_{tag}.log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    if p.returncode:
        sys.exit(f"kt_wallclock: {' '.join(cmd)} failed:\n{(p.stdout + p.stderr)[-4000:]}")
    con = sqlite3.connect(db)
    rows = con.execute("select case when r.status = 'ok' then r.median_ns end, r.created_at, r.compile_ms "
                       "from results r join configs c on c.id = r.config_id where c.recipe_name = ? "
                       "order by r.id", (k["name"],)).fetchall()
    out_lines = p.stdout.splitlines() + p.stderr.splitlines()
    busy = [ln.strip() for ln in out_lines if "GPU busy" in ln]
    # start-up: the worker's start and, on a fresh database, the device limits' measurement
    startup = [m.group(0) for ln in out_lines for m in [re.search(r"(worker up in|measured now,) [0-9.]+ s", ln)] if m]
    return dict(rows=[(ns, iso_to_epoch(ts)) for ns, ts, _ in rows], t0=t0, t1=t1,
                compile_ms=[c for _, _, c in rows if c], busy=busy[0].split(":", 1)[1].split("%")[0].strip() + " %"
                if busy else "-", busy_line=busy, startup=startup)


def to_98(rows, t0, opt_ns):
    """(evaluations, seconds from t0) to the first result within 2 % of opt_ns, or (None, None)."""
    for i, (ns, ts) in enumerate(rows):
        if ns is not None and ns <= opt_ns / NEAR:
            return i + 1, ts - t0
    return None, None


def best(rows):
    v = [ns for ns, _ in rows if ns is not None]
    return min(v) if v else float("inf")


def fmt(x, f="{:.2f}"):
    return "-" if x is None else f.format(x)


def measure_kernel(name, problem, a):
    k = KERNELS[name]
    outdir = os.path.join(a.out, name)
    os.makedirs(outdir, exist_ok=True)
    cap = k["kt_cap"] if a.kt_cap is None else (a.kt_cap or None)
    kt = run_kt(name, problem, a, a.strategy, outdir)
    tu = run_tune(k, problem, a, None, outdir)
    ko = run_kt(name, problem, a, "optimum", outdir, cap)
    te = run_tune(k, problem, a, "exhaustive", outdir)
    kt_opt, tu_opt = min(best(kt["rows"]), best(ko["rows"])), min(best(tu["rows"]), best(te["rows"]))
    how = f"random_sample over the space capped at {cap} s" if cap else "brute_force"
    lines = [f"{name} {problem} {k['problems'][problem]}{' only ' + only_arg(k) if k['only'] else ''}, budget "
             f"{a.budget}, seed {a.seed}; optimum per tool on its own timer: Kernel Tuner {kt_opt / 1e3:.2f} us "
             f"({how}: {len(ko['rows'])} configs, {ko['t1'] - ko['t0']:.1f} s), tune {tu_opt / 1e3:.2f} us "
             f"(exhaustive, {len(te['rows'])} configs, {te['t1'] - te['t0']:.1f} s)",
             f"{'tool':34s} {'evals to 98 %':>13s} {'wall to 98 % [s]':>16s} {'evals':>5s} {'wall [s]':>8s} "
             f"{'compile [s/variant/core]':>24s}"]
    out = {}
    for tool, r, opt in ((f"kernel_tuner {a.strategy}", kt, kt_opt), ("tune run (default strategy, cold)", tu, tu_opt)):
        e, s = to_98(r["rows"], r["t0"], opt)
        comp = r["compile_ms"] + (ko if r is kt else te)["compile_ms"]
        per = sum(comp) / len(comp) / 1e3 if comp else None
        out[tool] = dict(evals_to_98=e, wall_to_98_s=s, evals=len(r["rows"]), wall_s=r["t1"] - r["t0"],
                         optimum_ns=opt, compile_s_per_variant=per, busy=r["busy"])
        lines.append(f"{tool:34s} {e if e else '-':>13} {fmt(s):>16s} {len(r['rows']):5d} {r['t1'] - r['t0']:8.2f} "
                     f"{fmt(per):>24s}")
    ks, ts = out[f"kernel_tuner {a.strategy}"]["wall_to_98_s"], out["tune run (default strategy, cold)"]["wall_to_98_s"]
    speed = ks / ts if ks and ts else None
    if speed:
        lines.append(f"tune is {speed:.1f}x faster to 98 % (goal: 5x)")
    lines += ["tune: " + b for b in tu["busy_line"]] + ["tune exhaustive: " + b for b in te["busy_line"]]
    lines.append("tune start-up: " + ("; ".join(tu["startup"]) or "-"))
    lines.append(f"Kernel Tuner benchmark + verification share of its wall: {kt['busy']} ({a.strategy}), "
                 f"{ko['busy']} (optimum run)")
    print("\n".join(lines), flush=True)
    summary = dict(kernel=name, problem=problem, only=k["only"], budget=a.budget, seed=a.seed, strategy=a.strategy,
                   kt_optimum=how, tools=out, speedup=speed, gpu_busy=tu["busy_line"], gpu_busy_exhaustive=te["busy_line"],
                   tune_startup=tu["startup"])
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def table(summaries):
    kt_name = lambda s: f"kernel_tuner {s['strategy']}"  # noqa: E731
    tu_name = "tune run (default strategy, cold)"
    lines = ["", f"{'kernel':8s} {'problem':20s} {'KT evals/s to 98 %':>19s} {'tune evals/s to 98 %':>21s} "
             f"{'speedup':>7s} {'tune GPU busy':>13s} {'compile s/variant/core KT | tune':>33s}"]
    for s in summaries:
        k, t = s["tools"][kt_name(s)], s["tools"][tu_name]
        cell = lambda r: f"{r['evals_to_98'] or '-'} / {fmt(r['wall_to_98_s'], '{:.1f}')}"  # noqa: E731
        lines.append(f"{s['kernel']:8s} {s['problem']:20s} {cell(k):>19s} {cell(t):>21s} "
                     f"{fmt(s['speedup'], '{:.1f}x'):>7s} {t['busy']:>13s} "
                     f"{fmt(k['compile_s_per_variant']) + ' | ' + fmt(t['compile_s_per_variant']):>33s}")
    return "\n".join(lines)


def measure(a, names):
    os.makedirs(a.out, exist_ok=True)
    summaries = []
    for name in names:
        summaries.append(measure_kernel(name, a.problem or KERNELS[name]["problem"], a))
        print()
    print(table(summaries))
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summaries, f, indent=1)


# ---------------------------------------------------------------------------------------------
# --check (no GPU)

def tune_enumeration(k, problem, a, workdir):
    """tune's configs of the problem (compile-only): {config tuple: dynamic shared bytes}."""
    db = os.path.join(workdir, f"{k['name']}.db")
    cmd = tune_cmd(k, a, tune_recipe_path(k, workdir), "--problem", problem, "--compile-only", "--db", db, "--jobs", "2")
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        sys.exit(f"kt_wallclock --check: {' '.join(cmd)} failed:\n{(p.stdout + p.stderr)[-3000:]}")
    rows = sqlite3.connect(db).execute("select c.params_json, r.dyn_shared_bytes from results r join configs c on "
                                       "c.id = r.config_id where c.recipe_name = ?", (k["name"],)).fetchall()
    return {config_key(k, pj): smem for pj, smem in rows}


def simulation_cache(k, problem, a, space, workdir):
    """Kernel Tuner's cache for the problem from the H100 recording: the table's parameters and order;
    configs of the space the recording lacks enter as failed."""
    path = os.path.join(workdir, f"{k['name']}_kt_cache.json")
    rec = os.path.join(ROOT, "data/recorded/h100", k["recording"])
    p = subprocess.run([a.tune, "db", "export", "--db", rec, "--format", "kernel_tuner", "--recipe", k["name"],
                        "--problem", problem, "-o", path], capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        sys.exit(f"kt_wallclock --check: export failed: {p.stderr}")
    with open(path) as f:
        sim = json.load(f)
    params = kt_params(k)
    entries = {}
    for v in sim["cache"].values():
        key = tuple(int(v[n]) for n in params)
        if key in space:  # the export writes bools as Python's False/True; the defines are 0/1
            entries[",".join(map(str, key))] = {**v, **dict(zip(params, key))}
    recorded = len(entries)
    for key in space:
        s = ",".join(map(str, key))
        if s not in entries:
            entries[s] = {**dict(zip(params, key)), "time": "RuntimeFailedConfig", "compile_time": 0,
                          "verification_time": 0, "benchmark_time": 0}
    sim.update(kernel_name=k["kernel"], tune_params=params, tune_params_keys=list(params), cache=entries)
    with open(path, "w") as f:
        json.dump(sim, f)
    return path, recorded


def check_verify(k):
    """The verification on a small problem (numpy): the reference rounded as the kernel stores it passes,
    a wrong element fails."""
    import numpy as np
    d = dict(k["check_dims"], sm_count=SM_COUNT)
    args = build_args(k, d, np.random.default_rng(1))
    refs = k["reference"](float_values(np, k, args), d, np)
    dts = [dt for _n, dt, _s, _i in k["args"]]
    got = [None] * len(args)
    for i, r in refs.items():
        got[i] = bf16_bits(np, r) if dts[i] == "bf16" else r.astype(np.float32)
    verify = make_verify(k, refs, np, report=False)
    if not verify(None, got):
        sys.exit(f"kt_wallclock --check: {k['name']}: the verification rejects the rounded reference")
    i = next(iter(refs))
    got[i] = got[i].copy()
    got[i][0] = bf16_bits(np, np.float32([1e3]))[0] if dts[i] == "bf16" else np.float32(1e3)
    if verify(None, got):
        sys.exit(f"kt_wallclock --check: {k['name']}: the verification accepts a wrong output")


def check_kernel(name, problem, a):
    k = KERNELS[name]
    d = problem_dims(k, problem)
    space = enumerate_space(k, d)
    with tempfile.TemporaryDirectory() as wd:
        tune_space = tune_enumeration(k, problem, a, wd)
        print(f"{name} {problem}: space: Kernel Tuner's restrictions {len(space)} configs, "
              f"tune --compile-only {len(tune_space)}")
        if set(space) != set(tune_space):
            sys.exit(f"kt_wallclock --check: {name}: the spaces differ: only Kernel Tuner's "
                     f"{sorted(set(space) - set(tune_space))[:3]}, only tune's {sorted(set(tune_space) - set(space))[:3]}")
        if k["smem"]:
            params = kt_params(k)
            bad = [c for c in space if k["smem"](dict(zip(params, c)), d) != tune_space[c]]
            if bad:
                sys.exit(f"kt_wallclock --check: {name}: dynamic shared memory differs from tune's on {len(bad)} configs")
            print(f"{name}: dynamic shared memory of all {len(space)} configs equals tune's launch")
        try:
            import numpy  # noqa: F401
            from kernel_tuner.searchspace import Searchspace
        except ImportError:
            print(f"{name}: kernel_tuner or numpy not importable: Kernel Tuner's enumeration, the verification "
                  "and the simulation are not checked")
            return
        bs = [k["block_param"] or "block_size_x", "block_size_y", "block_size_z"]
        ss = Searchspace(kt_params(k), kt_restriction(k, d), 1024, block_size_names=bs)
        if set(map(tuple, ss.list)) != set(space):
            sys.exit(f"kt_wallclock --check: {name}: Kernel Tuner enumerates {ss.size} configs, not {len(space)}")
        check_verify(k)
        cache, recorded = simulation_cache(k, problem, a, set(space), wd)
        with open(cache) as f:
            sim = json.load(f)["cache"]
        times = [v["time"] for v in sim.values() if isinstance(v.get("time"), (int, float))]
        print(f"{name}: Kernel Tuner enumerates the same {ss.size}; verification passes the rounded reference and "
              f"rejects a wrong output; simulated on the H100 recording ({recorded} of {len(space)} configs "
              f"recorded, optimum {min(times) * 1e3:.2f} us):")
        for strategy, cap in ((a.strategy, None), ("optimum", k["kt_cap"])):
            res = unique_results(k, kt_tune(k, d, strategy, a.budget, a.seed, cap=cap, cache=cache, simulation=True))
            rows = [(r["time"] if isinstance(r.get("time"), (int, float)) else None, 0) for r in res]
            if strategy == "optimum" and not cap and len(res) != len(space):
                sys.exit(f"kt_wallclock --check: {name}: brute_force visited {len(res)} of {len(space)} configs")
            how = strategy if strategy != "optimum" else (f"random_sample capped at {cap} s" if cap else "brute_force")
            print(f"  {how}: {len(res)} evaluations, best {best(rows) * 1e3:.2f} us, within 2 % at evaluation "
                  f"{to_98(rows, 0, min(times))[0] or '-'}")
        first = dict(zip(kt_params(k), space[0]))
        print(f"{name}: first config {first}: grid {k['grid'](first, d)}, block {k['threads'](first, d)}, "
              f"defines {k['defines'](first, d)}")


# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    ap.add_argument("--kernels", default="copy,rmsnorm,gemm", help="comma-separated: " + ", ".join(KERNELS))
    ap.add_argument("--problem", help="the problem (one kernel only; default: the table's)")
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--strategy", default="adaptive_tabu_greywolf")
    ap.add_argument("--kt-cap", type=float, help="seconds for Kernel Tuner's optimum run (0: brute_force; "
                    "default: the table's)")
    ap.add_argument("--tune", default=os.path.join(ROOT, "build/tune"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--kt-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kt-out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.kt_child:
        return kt_child(a)
    names = a.kernels.split(",")
    for n in names:
        if n not in KERNELS:
            ap.error(f"--kernels: no kernel {n} (kernels: {', '.join(KERNELS)})")
    if a.problem and len(names) != 1:
        ap.error("--problem needs one kernel in --kernels")
    if a.problem and a.problem not in KERNELS[names[0]]["problems"]:
        ap.error(f"--problem: {names[0]} has {', '.join(KERNELS[names[0]]['problems'])}")
    if a.check:
        for n in names:
            check_kernel(n, a.problem or KERNELS[n]["problem"], a)
        return
    if not a.out:
        ap.error("--out DIR (or --check)")
    measure(a, names)


if __name__ == "__main__":
    main()
