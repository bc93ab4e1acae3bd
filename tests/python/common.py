"""Shared by the python tests: paths from the ctest environment (TUNE, SRC, TUNERT_LIBRARY), bundles
made once per process with `tune bundle` from the recorded databases, and the skip conditions."""
import ctypes
import functools
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

SRC = pathlib.Path(os.environ.get("SRC") or pathlib.Path(__file__).resolve().parents[2])
TUNE = os.environ.get("TUNE") or str(SRC / "build" / "tune")
sys.path.insert(0, str(SRC / "python" / "src"))   # the package from the tree unless installed

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except Exception:  # a broken install is as good as none here
    HAVE_TORCH = False

needs_torch = unittest.skipUnless(HAVE_TORCH, "torch is not importable (pip install torch to run these)")
_TMP = tempfile.TemporaryDirectory(prefix="tunert-py-")

# The recorded databases may predate a template edit: these tests are about the binding, not
# provenance (tests/integration/bundle_test.sh checks the refusal), hence --allow-source-change.
# "norm" leaves out softmax and softmax.cluster: the recorded softmax.cluster configs are no longer in
# its space, and the prefix "softmax" takes all three. "attention" is prefill only: attention.db
# holds no results for the decode problems of the current recipe (see decode_bundle).
BUNDLES = {
    "norm": (("rmsnorm.db", "softmax.db"), "rmsnorm,softmax.split"),
    "attention": (("attention.db", "attention.prefill_sm90.db"), "attention.prefill,attention.prefill_sm90"),
    "gemm": (("gemm.db",), "gemm"),
    "skinny": (("h200/gemm.skinny.db",), "gemm.skinny"),
    "varlen": (("attention.varlen.db",), "attention.varlen"),
    "moe": (("moe.grouped.db",), "moe.grouped,moe.grouped_masked"),
    "fp8": (("gemm.fp8.db", "gemm.fp8_skinny.db"), "gemm.fp8,gemm.fp8_fast,gemm.fp8_skinny"),
    "decode_fp8": (("attention.decode_fp8.db",), "attention.decode_fp8"),
    "moe_fp8": (("moe.grouped_fp8.db",), "moe.grouped_fp8,moe.grouped_fp8_masked"),
    "decode_fp8_tma": (("attention.decode_fp8_tma.db",), "attention.decode_fp8_tma"),
    # H200, both fp8 decode families (the TMA-fed one per-head only), kernels only as decode_h200
    "decode_fp8_h200": (("h200/attention.decode_fp8.db", "attention.decode_fp8_tma.db"),
                        "attention.decode_fp8,attention.decode_fp8_tma",
                        ("--no-vendor-for", "attention.decode_fp8,attention.decode_fp8_tma")),
    # H200, both decode families; their comparison with cuDNN SDPA over a contiguous cache is no
    # verdict on a paged cache, hence kernels only (docs/runtime.md, "Vendor entries")
    "decode_h200": (("h200/attention.decode.db", "attention.decode_tma.db"), "attention.decode,attention.decode_tma",
                    ("--no-vendor-for", "attention.decode,attention.decode_tma")),
    # the same with the vendor entries of the comparison (cuDNN won every problem but B1 L32768)
    "decode_h200_vendor": (("h200/attention.decode.db", "attention.decode_tma.db"), "attention.decode,attention.decode_tma"),
}
DECODE_PROBLEM = "b32hq32hkv8d128p16x256"
# the recipe's fallback config (one split and a combine); GPU: also the graph test's ring config
DECODE_CONFIGS = ("SPLITS=4,BLOCK_N=32,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=1,KV_RING=0",
                  "SPLITS=8,BLOCK_N=32,WARPS=4,VEC_BYTES=16,GQA_PACK=1,STAGES=1,KV_RING=3")
# attention.decode_tma's recorded best tile for the problem (a combine, a 3-slot ring)
DECODE_TMA_CONFIGS = ("SPLITS=4,BLOCK_N=64,WARPS=4,KV_RING=3",)


@functools.lru_cache(maxsize=None)
def bundle(name):
    """Path of the bundle `name` (see BUNDLES), made on first use; sm_90a binaries."""
    dbs, recipes, *extra = BUNDLES[name]
    out = pathlib.Path(_TMP.name) / f"{name}.bundle"
    cmd = [TUNE, "bundle", "--recipe", recipes, "--arch", "sm_90a", "--allow-source-change", "--quiet", "-o", str(out)]
    cmd += list(extra[0]) if extra else []
    for d in dbs:
        cmd[2:2] = ["--db", str(SRC / "data" / "recorded" / d)]
    r = subprocess.run(cmd, cwd=SRC, capture_output=True, text=True)
    if r.returncode != 0 or not out.exists():
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return str(out)


def _run(cmd):
    r = subprocess.run(cmd, cwd=SRC, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


@functools.lru_cache(maxsize=None)
def decode_bundle(on_gpu=False, recipe="decode"):
    """A bundle of attention.decode (recipe "decode_tma": attention.decode_tma) for DECODE_PROBLEM.
    on_gpu: tuned here (`tune run` of DECODE_CONFIGS or DECODE_TMA_CONFIGS on cuda:0, verified and
    measured), as tests/gpu/decode_graph_gpu_test.sh does. Otherwise for selection tests only: the
    first config compiled (--compile-only) and given a synthetic result on a device named "FAKE
    GPU" (made-up time: never launch this bundle)."""
    configs = DECODE_TMA_CONFIGS if recipe == "decode_tma" else DECODE_CONFIGS
    db = pathlib.Path(_TMP.name) / (f"{recipe}_gpu.db" if on_gpu else f"{recipe}_fake.db")
    out = db.with_suffix(".bundle")
    run = [TUNE, "run", f"recipes/attention/{recipe}.lua", "--db", str(db), "--strategy", "exhaustive",
           "--problem", DECODE_PROBLEM]
    if on_gpu:
        for c in configs:
            _run(run + ["--device", "cuda:0", "--only", c])
    else:
        _run(run + ["--compile-only", "--arch", "sm_90a", "--only", configs[0]])
        fake_gpu_results(db, 50000.0)
    _run([TUNE, "bundle", "--db", str(db), "--recipe", f"attention.{recipe}", "--arch", "sm_90a", "--quiet",
          "-o", str(out)])
    return str(out)


@functools.lru_cache(maxsize=None)
def decode_families_bundle(decode_ns, tma_ns):
    """A bundle of attention.decode and attention.decode_tma for DECODE_PROBLEM, each family's first
    config compiled (--compile-only) and given a synthetic time on "FAKE GPU" (decode_ns,
    tma_ns): which family tt.decode takes, for selection tests only (never launched)."""
    import sqlite3
    db = pathlib.Path(_TMP.name) / f"decode_families_{decode_ns:g}_{tma_ns:g}.db"
    out = db.with_suffix(".bundle")
    for recipe, only in (("decode", DECODE_CONFIGS[0]), ("decode_tma", DECODE_TMA_CONFIGS[0])):
        _run([TUNE, "run", f"recipes/attention/{recipe}.lua", "--db", str(db), "--strategy", "exhaustive",
              "--problem", DECODE_PROBLEM, "--compile-only", "--arch", "sm_90a", "--only", only])
    fake_gpu_results(db, decode_ns)
    con = sqlite3.connect(db)
    con.execute("update results set median_ns = ? where status = 'ok' and recipe_id in "
                "(select id from recipes where name = 'attention.decode_tma')", (tma_ns,))
    con.commit()
    con.close()
    _run([TUNE, "bundle", "--db", str(db), "--recipe", "attention.decode", "--recipe", "attention.decode_tma",
          "--arch", "sm_90a", "--quiet", "-o", str(out)])
    return str(out)


def have_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def fake_bundle(name, recipe_file, recipes, config, problems, median_ns):
    """Path of a bundle of `recipes` (comma-separated) for selection tests only: config compiled
    (--compile-only) for each of problems from recipe_file (relative to SRC) and given a made-up
    median on a device named "FAKE GPU" (fake_gpu_results): never launch it."""
    db = pathlib.Path(_TMP.name) / f"{name}.db"
    out = db.with_suffix(".bundle")
    cmd = [TUNE, "run", str(SRC / recipe_file), "--db", str(db), "--strategy", "exhaustive", "--compile-only",
           "--arch", "sm_90a", "--only", config]
    for p in problems:
        cmd += ["--problem", p]
    _run(cmd)
    fake_gpu_results(db, median_ns)
    _run([TUNE, "bundle", "--db", str(db), "--recipe", recipes, "--arch", "sm_90a", "--quiet", "-o", str(out)])
    return str(out)


def fake_gpu_results(db, median_ns):
    """Give every compile-only result of db an ok twin with a made-up median on a device named
    "FAKE GPU" (sm_90a), so that `tune bundle` takes it: bundles for selection tests, never launched."""
    import sqlite3
    con = sqlite3.connect(db)
    dev = con.execute("insert into devices (kind, name, arch, cc_major, cc_minor, sm_count) values "
                      "('gpu', 'FAKE GPU', 'sm_90a', 9, 0, 132) returning id").fetchone()[0]
    con.execute("insert into results (recipe_id, device_id, config_id, problem_id, status, median_ns, samples, "
                "binary_key) select recipe_id, ?, config_id, problem_id, 'ok', ?, 1, binary_key "
                "from results", (dev, median_ns))
    con.commit()
    con.close()


def tmpdir():
    return pathlib.Path(_TMP.name)


def check_plan_launch(tc, plan, tensors, refused=None):
    """A plan's tensors (torch, any of tunert's dtypes) as FakeTensors at their addresses and strides,
    its scratch and scalars: the launch passes every check up to the driver (NoDriver here), and the
    same without the plan's strided names is refused (refused: the error, default LayoutError)."""
    import torch
    import tunert
    from fake_dlpack import FakeTensor
    names = {torch.bfloat16: "bf16", torch.int32: "i32", torch.float32: "f32", torch.float8_e4m3fn: "e4m3"}
    args = {n: FakeTensor(tuple(v.shape), names[v.dtype], address=v.data_ptr(), strides=v.stride())
            for n, v in tensors.items()}
    args["partial"] = FakeTensor((plan.selection.scratch_bytes()["partial"] // 4,), "f32", address=0x7F0000000000)
    args.update(plan.scalars)
    with tc.assertRaises(tunert.NoDriver):
        plan.selection.launch(args, strided=plan.strided, stream=0)
    with tc.assertRaises(refused or tunert.LayoutError):
        plan.selection.launch(args, stream=0)


# torch.library.opcheck's checks of an op: its schema (no input changed that mutates_args does not
# name), autograd registration, fake tensor and AOT dispatch
OPCHECK_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def opcheck_all(tc, samples, utils=OPCHECK_UTILS):
    """torch.library.opcheck of each (op, args, kwargs) of samples, a subtest each."""
    import torch
    for op, args, kwargs in samples:
        with tc.subTest(op=str(op), kwargs=sorted(kwargs)):
            torch.library.opcheck(op, args, kwargs, test_utils=utils)


def _shapes(out):
    return [(tuple(t.shape), t.dtype) for t in (out if isinstance(out, tuple) else (out,))]


def assert_fake_shapes(tc, samples):
    """Each (op, args, kwargs) of samples gives under FakeTensorMode outputs of the shapes and dtypes
    its real call gives (the op's registered fake implementation)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    for op, args, kwargs in samples:
        real = op(*args, **kwargs)
        with FakeTensorMode() as mode:
            def fake(v):
                return mode.from_tensor(v) if isinstance(v, torch.Tensor) else v
            out = op(*[fake(a) for a in args], **{k: fake(v) for k, v in kwargs.items()})
        tc.assertEqual(_shapes(real), _shapes(out), str(op))


E4M3_STEP = 2.0 ** -3   # one e4m3 rounding step relative to the value (3 mantissa bits), at most


def assert_dequantized(tc, y, s, want):
    """y (e4m3) * scale s is want to half an e4m3 step: relative 2^-4 below the saturation at 448 * s,
    or the subnormal step's half, 2^-10 * s (y, s and want broadcast together)."""
    import torch
    err = (y.double() * s - want).abs()
    bound = torch.maximum(want.abs().clamp(max=448 * s) * E4M3_STEP / 2 * 1.0001, 2.0 ** -10 * s * 1.0001)
    tc.assertTrue(bool((err <= bound).all()), f"worst {float((err / bound).max())} of the bound")
