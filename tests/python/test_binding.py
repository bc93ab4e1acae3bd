"""The ctypes binding on any CPU: the library search, the error hierarchy, bundles opened without
a driver, families, selection and its info, and every argument check of a launch."""
import os
import pathlib
import subprocess
import sys
import unittest

from common import HAVE_TORCH, SRC, bundle, decode_bundle, needs_torch, tmpdir
from fake_dlpack import FakeTensor

import tunert
from tunert import errors


def open_norm(**kw):
    return tunert.Bundle(bundle("norm"), no_device=True, arch="sm_90a", **kw)


class LibraryTest(unittest.TestCase):
    def test_found(self):
        self.assertTrue(os.path.exists(tunert.library_path()), tunert.library_path())

    def test_env_that_does_not_load_is_an_error(self):
        code = "import tunert\ntry:\n tunert.Bundle('x')\nexcept tunert.LibraryNotFound as e:\n print('LNF', e)"
        env = dict(os.environ, TUNERT_LIBRARY="/nonexistent/libtunert.so", PYTHONPATH=str(SRC / "python" / "src"))
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertIn("LNF TUNERT_LIBRARY=/nonexistent/libtunert.so: cannot load it", r.stdout, r.stderr)

    def test_import_without_torch_or_library_works(self):
        r = subprocess.run([sys.executable, "-c", "import tunert; print(tunert.__version__)"],
                           env=dict(os.environ, TUNERT_LIBRARY="/nonexistent", PYTHONPATH=str(SRC / "python" / "src")),
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


class ErrorsTest(unittest.TestCase):
    def test_every_status_has_its_class(self):
        expect = {1: tunert.InvalidArgument, 2: tunert.OutOfMemory, 3: tunert.BundleIOError,
                  4: tunert.BundleFormatError, 5: tunert.BundleVersionError, 6: tunert.NoFamily,
                  7: tunert.NoVariant, 8: tunert.ArchMismatch, 9: tunert.NoDriver, 10: tunert.CudaError,
                  11: tunert.ExpressionError, 12: tunert.ContextMismatch, 13: tunert.VendorEntry}
        for code, cls in expect.items():
            e = errors.from_status(code, "where: what")
            self.assertIs(type(e), cls)
            self.assertEqual((e.code, str(e)), (code, "where: what"))
            self.assertIsInstance(e, tunert.TunertError)
        self.assertIs(type(errors.from_status(99, "x")), tunert.TunertError)
        self.assertEqual(errors.from_status(99, "x").code, 99)

    def test_builtin_bases(self):
        self.assertIsInstance(errors.from_status(1, "x"), ValueError)
        self.assertIsInstance(errors.from_status(3, "x"), OSError)
        self.assertIsInstance(errors.from_status(6, "x"), KeyError)
        self.assertEqual(str(errors.from_status(6, "no family 'x'")), "no family 'x'")  # not KeyError's repr

    def test_the_status_names_agree_with_the_library(self):
        lib = tunert._capi.lib()
        for code in range(13):
            self.assertTrue(lib.tunert_status_name(code))


class OpenTest(unittest.TestCase):
    def test_missing_file(self):
        with self.assertRaises(tunert.BundleIOError) as cm:
            tunert.Bundle(tmpdir() / "absent.bundle", no_device=True)
        self.assertEqual(cm.exception.code, 3)
        self.assertIn("absent.bundle", str(cm.exception))

    def test_not_a_bundle(self):
        p = tmpdir() / "junk.bundle"
        p.write_bytes(b"not a bundle at all" * 100)
        with self.assertRaises(tunert.BundleFormatError):
            tunert.Bundle(p, no_device=True)

    def test_truncated(self):
        data = pathlib.Path(bundle("norm")).read_bytes()
        p = tmpdir() / "truncated.bundle"
        p.write_bytes(data[: len(data) // 2])
        with self.assertRaises(tunert.BundleFormatError):
            tunert.Bundle(p, no_device=True)

    def test_other_arch(self):
        with self.assertRaises(tunert.ArchMismatch) as cm:
            tunert.Bundle(bundle("norm"), no_device=True, arch="sm_80")
        self.assertIn("sm_80", str(cm.exception))
        tunert.Bundle(bundle("norm"), no_device=True, arch="sm_80", any_arch=True).close()

    def test_info_and_families(self):
        with open_norm() as b:
            self.assertEqual(b.families, ["rmsnorm", "rmsnorm.add", "softmax.split"])
            self.assertIn("softmax.split", b)
            i = b.info
            self.assertTrue(i["format"].startswith("1."))
            self.assertIn("sm_90a", i["archs"])
            f = b.family("rmsnorm.add")
            self.assertEqual(f.dims, ("H", "T", "residual"))
            self.assertEqual(f.dim_types, ("int", "int", "bool"))
            self.assertEqual(f.arg_names(), ("x", "r", "w", "y", "h", "T", "H", "eps"))
            self.assertEqual([a.role for a in f.args],
                             ["input", "input", "input", "output", "output", "scalar", "scalar", "scalar"])
            self.assertEqual(f.args[0].dtype, "bf16")
            self.assertIn(("t16384h4096add", {"H": 4096, "T": 16384, "residual": True}), f.problems)

    def test_no_family(self):
        with open_norm() as b:
            with self.assertRaises(tunert.NoFamily) as cm:
                b.family("gemm")
            self.assertIn("rmsnorm", str(cm.exception))  # lists the families there are
            with self.assertRaises(KeyError):
                b.select("gemm", M=1)

    def test_closed(self):
        b = open_norm()
        b.close()
        b.close()
        with self.assertRaises(tunert.InvalidArgument):
            b.families


class SelectTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.b = open_norm()

    @classmethod
    def tearDownClass(cls):
        cls.b.close()

    def test_exact(self):
        s = self.b.select("rmsnorm", T=16384, H=4096, residual=False)
        i = s.info
        self.assertEqual((i.family, i.tuned_problem, i.exact, i.distance, i.kind), ("rmsnorm", "t16384h4096", True, 0.0, "tuned"))
        self.assertIn("exact", i.reason)
        self.assertGreater(i.measured_ns, 0)
        self.assertIn("cubin sm_90a", i.binary)
        self.assertIsInstance(i.variant, dict)
        self.assertIn("BLOCK", i.variant)
        self.assertEqual(i.tuned_dims, {"H": 4096, "T": 16384, "residual": False})
        self.assertEqual(len(i.launches), 1)
        self.assertEqual(i.launches[0].grid[0] * i.launches[0].block[0] > 0, True)
        x = i.arg("x")
        self.assertEqual((x.role, x.dtype, x.shape, x.numel, x.bytes), ("input", "bf16", (16384, 4096), 16384 * 4096, 16384 * 4096 * 2))
        self.assertEqual(i.arg("T").value, 16384)
        self.assertEqual(i.arg("H").value, 4096)
        self.assertAlmostEqual(i.arg("eps").value, 1e-6)
        self.assertFalse(s.is_vendor)
        self.assertIs(self.b.select("rmsnorm", {"T": 16384}, H=4096, residual=False), s)  # cached

    def test_dims_checked(self):
        with self.assertRaises(tunert.InvalidArgument) as cm:
            self.b.select("rmsnorm", T=16384, H=4096)
        self.assertIn("missing: residual", str(cm.exception))
        with self.assertRaises(tunert.InvalidArgument) as cm:
            self.b.select("rmsnorm", T=16384, H=4096, residual=False, rows=3)
        self.assertIn("unknown: rows", str(cm.exception))
        with self.assertRaises(tunert.InvalidArgument):
            self.b.select("rmsnorm", T="many", H=4096, residual=False)
        with self.assertRaises(tunert.InvalidArgument):
            self.b.select("rmsnorm", T=16384, H=4096, residual=2)

    def test_no_variant_says_why(self):
        with self.assertRaises(tunert.NoVariant) as cm:
            self.b.select("softmax.split", rows=1000, cols=1 << 22)  # past the family's domain
        self.assertEqual(cm.exception.code, 7)
        self.assertIn("outside the domain of softmax.split", str(cm.exception))

    def test_nearest(self):
        # an untuned problem: a portable entry tuned for another problem, its scalars evaluated here
        s = self.b.select("rmsnorm", T=7, H=4096, residual=False)
        i = s.info
        self.assertEqual((i.kind, i.exact, i.vendor), ("nearest", False, None))
        self.assertIn(i.tuned_problem, [p for p, _ in self.b.family("rmsnorm").problems])
        self.assertGreater(i.distance, 0)
        self.assertGreater(i.measured_ns, 0)
        self.assertEqual((i.arg("T").value, i.arg("H").value), (7, 4096))
        self.assertEqual(i.arg("x").shape, (7, 4096))
        self.assertFalse(s.is_vendor)
        self.assertIn("nearest", repr(s))

    def test_fallback_entry(self):
        # H = 40000: no tuned rmsnorm.add entry's compiled row capacity holds it: the generic entry
        s = self.b.select("rmsnorm.add", T=7, H=40000, residual=True)
        i = s.info
        self.assertEqual((i.kind, i.exact, i.measured_ns), ("fallback", False, 0.0))
        self.assertIn("generic variant", i.reason)
        self.assertEqual(i.arg("H").value, 40000)
        self.assertFalse(s.is_vendor)

    def test_exact_only(self):
        with open_norm(exact_only=True) as b:
            self.assertEqual(b.select("softmax.split", rows=1024, cols=32768).info.kind, "tuned")
            with self.assertRaises(tunert.NoVariant) as cm:
                b.select("softmax.split", rows=100, cols=1000)
            self.assertIn("exact", str(cm.exception))

    def test_scratch_bytes(self):
        s = self.b.select("softmax.split", rows=1024, cols=32768)
        self.assertGreater(s.scratch_bytes()["partial"], 0)


class LaunchChecksTest(unittest.TestCase):
    """Every check before tunert_launch, with DLPack objects (and torch CPU tensors)."""

    @classmethod
    def setUpClass(cls):
        cls.b = open_norm()
        cls.s = cls.b.select("rmsnorm", T=16384, H=4096, residual=False)

    @classmethod
    def tearDownClass(cls):
        cls.b.close()

    def args(self, **over):
        a = {"x": FakeTensor((16384, 4096)), "w": FakeTensor((4096,), address=0x7F0010000000),
             "y": FakeTensor((16384, 4096), address=0x7F0020000000)}
        a.update(over)
        return a

    def test_missing_and_unknown(self):
        a = self.args()
        del a["y"]
        with self.assertRaises(tunert.MissingArgument) as cm:
            self.s.launch(a)
        self.assertIn("'y'", str(cm.exception))
        with self.assertRaises(tunert.MissingArgument) as cm:
            self.s.launch(self.args(z=FakeTensor((1,))))
        self.assertIn("'z'", str(cm.exception))
        self.assertIn("x, w, y, T, H, eps", str(cm.exception))

    def test_dtype(self):
        with self.assertRaises(tunert.DTypeMismatch) as cm:
            self.s.launch(self.args(x=FakeTensor((16384, 4096), "f32")))
        self.assertIn("dtype f32, the kernel takes bf16", str(cm.exception))
        self.assertIsInstance(cm.exception, TypeError)

    def test_shape(self):
        with self.assertRaises(tunert.ShapeMismatch) as cm:
            self.s.launch(self.args(x=FakeTensor((16384, 4095))))
        self.assertIn("(16384, 4095)", str(cm.exception))
        self.assertIn("(16384, 4096)", str(cm.exception))

    def test_contiguity_and_alignment(self):
        with self.assertRaises(tunert.LayoutError) as cm:
            self.s.launch(self.args(x=FakeTensor((16384, 4096), strides=(1, 16384))))
        self.assertIn("not contiguous", str(cm.exception))
        with self.assertRaises(tunert.LayoutError) as cm:
            self.s.launch(self.args(x=FakeTensor((16384, 4096), address=0x7F0000000001)))
        self.assertIn("aligned", str(cm.exception))

    def test_device(self):
        with self.assertRaises(tunert.DeviceMismatch) as cm:
            self.s.launch(self.args(x=FakeTensor((16384, 4096), device_type=1)))
        self.assertIn("on cpu:0", str(cm.exception))
        with self.assertRaises(tunert.DeviceMismatch):
            self.s.launch(self.args(x=FakeTensor((16384, 4096), device_id=1)))

    def test_scalars(self):
        with self.assertRaises(tunert.InvalidArgument):
            self.s.launch(self.args(T=1.5))
        with self.assertRaises(tunert.InvalidArgument):
            self.s.launch(self.args(x=3))   # a number is no tensor

    def test_stream_kinds(self):
        with self.assertRaises(tunert.InvalidArgument) as cm:
            self.s.launch(self.args(), stream="default")
        self.assertIn("not a CUDA stream", str(cm.exception))

    def test_launch_without_a_device_is_no_driver(self):
        # no_device=True: libtunert never opens libcuda, so this is safe on a GPU machine too
        a = self.args()
        with self.assertRaises(tunert.NoDriver) as cm:
            self.s.launch(a, stream=0)
        self.assertEqual(cm.exception.code, 9)
        self.assertIn(1, a["x"].streams)  # DLPack: the legacy default stream was handed over

    def test_scratch_without_torch_buffer(self):
        s = self.b.select("softmax.split", rows=1024, cols=32768)
        a = {"x": FakeTensor((1024, 32768)), "y": FakeTensor((1024, 32768)),
             "partial": FakeTensor((1,), "f32")}
        with self.assertRaises(tunert.ShapeMismatch) as cm:
            s.launch(a)
        self.assertIn("scratch of 4 bytes", str(cm.exception))

    @needs_torch
    def test_torch_cpu_tensors(self):
        import torch
        x = torch.zeros(16384, 4096, dtype=torch.bfloat16)
        a = {"x": x, "w": torch.zeros(4096, dtype=torch.bfloat16), "y": torch.empty_like(x)}
        with self.assertRaises(tunert.DeviceMismatch) as cm:
            self.s.launch(a)
        self.assertIn("on cpu", str(cm.exception))
        with self.assertRaises(tunert.DTypeMismatch):
            self.s.launch(dict(a, x=x.float()))
        with self.assertRaises(tunert.LayoutError):
            self.s.launch(dict(a, x=torch.zeros(4096, 16384, dtype=torch.bfloat16).t()))

    @needs_torch
    def test_dlpack_of_torch(self):
        import torch
        from tunert._tensors import view
        t = torch.zeros(4, 6, dtype=torch.bfloat16)[:, ::2]
        v = view(_DLPackOnly(t), "t")
        self.assertEqual((v.dtype, v.shape, v.strides, v.device, v.contiguous), ("bf16", (4, 3), (6, 2), "cpu", False))
        self.assertEqual(v.ptr, t.data_ptr())


@needs_torch
class LaunchCacheTest(unittest.TestCase):
    """The fast path of a launch with torch tensors: layouts checked once per (arg, dtype, shape,
    strides, device), yet every call still refuses what does not fit and packs its own addresses
    and scalars. CPU tensors pass for CUDA here (LAUNCH_DEVICE_TYPES) and tunert_launch is a
    recorder: nothing is launched."""

    @classmethod
    def setUpClass(cls):
        cls.b = tunert.Bundle(bundle("gemm"), no_device=True, arch="sm_90a")

    @classmethod
    def tearDownClass(cls):
        cls.b.close()

    def setUp(self):
        import torch
        from tunert import bundle as tb
        self.torch, self.tb = torch, tb
        self.saved = tb.LAUNCH_DEVICE_TYPES
        tb.LAUNCH_DEVICE_TYPES = frozenset(self.saved | {"cpu"})
        self.s = self.b.select("gemm", M=16, N=256, K=128, b_layout="col")
        self.calls = []
        self.s._launch_c = lambda ctx, sel, stream, args, n, err: self.calls.append(list(args)) or 0

    def tearDown(self):
        self.tb.LAUNCH_DEVICE_TYPES = self.saved
        del self.s._launch_c

    def args(self, **over):
        bf = self.torch.bfloat16
        a = {"a": self.torch.zeros(16, 128, dtype=bf), "b": self.torch.zeros(256, 128, dtype=bf),
             "c": self.torch.zeros(16, 256, dtype=bf), "ws": self.torch.zeros(self.s.scratch_bytes()["ws"] + 1,
                                                                               dtype=self.torch.uint8)}
        a.update(over)
        return a

    def words(self, name):
        i = self.s._index[name]
        return self.calls[-1][2 * i] & 0xFFFFFFFF, self.calls[-1][2 * i + 1]

    def test_each_call_packs_its_own_addresses_and_scalars(self):
        from tunert import _capi as C
        for _ in range(2):
            a = self.args()
            self.s.launch(dict(a, K=128))
            for n in ("a", "b", "c", "ws"):
                self.assertEqual(self.words(n), (C.ARG_PTR, a[n].data_ptr()), n)
            self.assertEqual(self.words("K"), (C.ARG_INT, 128))
            self.assertEqual(self.words("tmA")[0], C.ARG_AUTO)
        self.s.launch(dict(self.args(), K=64))
        self.assertEqual(self.words("K"), (C.ARG_INT, 64))
        self.s.launch(self.args())   # K left out: the bundle computes it
        self.assertEqual(self.words("K")[0], C.ARG_AUTO)
        self.assertEqual(len(self.calls), 4)

    def test_checks_hold_after_a_layout_was_seen(self):
        torch = self.torch
        self.s.launch(self.args())
        with self.assertRaises(tunert.ShapeMismatch):
            self.s.launch(self.args(a=torch.zeros(16, 127, dtype=torch.bfloat16)))
        with self.assertRaises(tunert.DTypeMismatch):
            self.s.launch(self.args(b=torch.zeros(256, 128, dtype=torch.float16)))
        with self.assertRaises(tunert.LayoutError):
            self.s.launch(self.args(c=torch.zeros(256, 16, dtype=torch.bfloat16).t()))
        # the same dtype, shape and strides as the launch above, at an address the tensor map refuses
        off = torch.zeros(16 * 128 + 1, dtype=torch.bfloat16)[1:].view(16, 128)
        with self.assertRaises(tunert.LayoutError) as cm:
            self.s.launch(self.args(a=off))
        self.assertIn("16-byte aligned", str(cm.exception))
        self.assertEqual(len(self.calls), 1)

    def test_missing_and_unknown_names_are_refused_every_time(self):
        a = self.args()
        del a["c"]
        for _ in range(2):
            with self.assertRaises(tunert.MissingArgument):
                self.s.launch(a)
            with self.assertRaises(tunert.MissingArgument):
                self.s.launch(self.args(z=1))
        self.assertEqual(self.calls, [])


class StridedLaunchTest(unittest.TestCase):
    """Strided arguments (Selection.launch(strided=...)): decode's q and KV caches with their own
    layout, checked for everything but contiguity and the leading extent."""

    B, HQ, HKV, D, PAGE, MAXP = 32, 32, 8, 128, 16, 256

    @classmethod
    def setUpClass(cls):
        cls.b = tunert.Bundle(decode_bundle(), no_device=True, arch="sm_90a")
        cls.s = cls.b.select("attention.decode", B=32, HQ=32, HKV=8, D=128, page_size=16, max_pages=256)

    @classmethod
    def tearDownClass(cls):
        cls.b.close()

    def args(self, **over):
        B, HQ, HKV, D, P = self.B, self.HQ, self.HKV, self.D, self.B * self.MAXP
        a = {"q": FakeTensor((B, HQ, D), strides=((HQ + 2 * HKV) * D, D, 1)),   # a view of a fused QKV
             "k_cache": FakeTensor((P + 7, self.PAGE, HKV, D), address=0x7F0010000000),  # a larger pool
             "v_cache": FakeTensor((P + 7, self.PAGE, HKV, D), address=0x7F0020000000),
             "block_table": FakeTensor((B, self.MAXP), "i32", address=0x7F0030000000),
             "seq_lens": FakeTensor((B,), "i32", address=0x7F0040000000),
             "o": FakeTensor((B, HQ, D), address=0x7F0050000000),
             "partial": FakeTensor((self.s.scratch_bytes()["partial"] // 4,), "f32", address=0x7F0060000000),
             "q_stride_b": (HQ + 2 * HKV) * D}
        a.update(over)
        return a

    def test_strided_args_pass_the_checks(self):
        with self.assertRaises(tunert.NoDriver):   # every check passed: only the launch itself fails
            self.s.launch(self.args(), strided=("q", "k_cache", "v_cache"), stream=0)

    def test_without_strided_they_are_refused(self):
        with self.assertRaises(tunert.LayoutError) as cm:
            self.s.launch(self.args(), strided=("k_cache", "v_cache"), stream=0)
        self.assertIn("'q': not contiguous", str(cm.exception))
        with self.assertRaises(tunert.ShapeMismatch) as cm:
            self.s.launch(self.args(), strided=("q",), stream=0)
        self.assertIn("k_cache", str(cm.exception))

    def test_strided_checks(self):
        st = ("q", "k_cache", "v_cache")
        with self.assertRaises(tunert.LayoutError) as cm:
            self.s.launch(self.args(q=FakeTensor((32, 32, 128), strides=(1, 32 * 32, 32))), strided=st, stream=0)
        self.assertIn("innermost stride 32", str(cm.exception))
        with self.assertRaises(tunert.ShapeMismatch) as cm:
            self.s.launch(self.args(k_cache=FakeTensor((100, 8, 16, 128))), strided=st, stream=0)
        self.assertIn("any leading extent", str(cm.exception))
        with self.assertRaises(tunert.DTypeMismatch):
            self.s.launch(self.args(v_cache=FakeTensor((100, 16, 8, 128), "f16")), strided=st, stream=0)
        with self.assertRaises(tunert.LayoutError):
            self.s.launch(self.args(q=FakeTensor((32, 32, 128), address=0x7F0000000001)), strided=st, stream=0)


class RowStrideMapsTest(unittest.TestCase):
    """attention.varlen's tensor maps follow the row strides q_ld, k_ld, v_ld (bundle format 1.6):
    the selection says so per map, and a TMA variant takes views of a fused QKV buffer with those
    strides through every check (only the launch itself needs a driver)."""

    T, B, HQ, HKV, D = 16384, 64, 32, 8, 128

    @classmethod
    def setUpClass(cls):
        cls.b = tunert.Bundle(bundle("varlen"), no_device=True, arch="sm_90a")
        cls.s = cls.b.select("attention.varlen", B=cls.B, T=cls.T, HQ=cls.HQ, HKV=cls.HKV, D=cls.D, causal=True)

    @classmethod
    def tearDownClass(cls):
        cls.b.close()

    def test_maps_follow_the_row_strides(self):
        maps = {a.maps: a.row_stride for a in self.s.info.args if a.role == "tensormap"}
        self.assertEqual(maps, {"q": "q_ld", "k": "k_ld", "v": "v_ld"})
        self.assertEqual(self.s.info.variant["USE_TMA"], 1)   # the recorded winner: a TMA variant

    def test_format_and_reader(self):
        import sqlite3
        con = sqlite3.connect(bundle("varlen"))
        meta = dict(con.execute("select key, value from meta where key in ('format_minor', 'min_reader_minor')"))
        con.close()
        self.assertEqual(meta, {"format_minor": "6", "min_reader_minor": "6"})

    def test_other_maps_stay_dense(self):
        with tunert.Bundle(bundle("gemm"), no_device=True, arch="sm_90a") as g:
            s = g.select("gemm", M=4096, N=4096, K=4096, b_layout="col")
            self.assertEqual([a.row_stride for a in s.info.args if a.role == "tensormap"],
                             [None] * sum(a.role == "tensormap" for a in s.info.args))

    def test_fused_qkv_views_pass_the_checks(self):
        T, HQ, HKV, D = self.T, self.HQ, self.HKV, self.D
        ld = (HQ + 2 * HKV) * D
        base = 0x7F0010000000
        views = {"q": FakeTensor((T, HQ, D), strides=(ld, D, 1), address=base),
                 "k": FakeTensor((T, HKV, D), strides=(ld, D, 1), address=base + HQ * D * 2),
                 "v": FakeTensor((T, HKV, D), strides=(ld, D, 1), address=base + (HQ + HKV) * D * 2),
                 "o": FakeTensor((T, HQ, D), address=0x7F0080000000),
                 "cu_seqlens": FakeTensor((self.B + 1,), "i32", address=0x7F00F0000000),
                 "q_ld": ld, "k_ld": ld, "v_ld": ld}
        with self.assertRaises(tunert.NoDriver):
            self.s.launch(views, strided=("q", "k", "v"), stream=0)


class _DLPackOnly:
    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


if __name__ == "__main__":
    unittest.main()
