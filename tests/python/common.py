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
BUNDLES = {
    "norm": (("rmsnorm.db", "softmax.db"), "rmsnorm,softmax.split"),
    "attention": (("attention.db", "attention.prefill_sm90.db"), "attention"),
    "gemm": (("gemm.db",), "gemm"),
}


@functools.lru_cache(maxsize=None)
def bundle(name):
    """Path of the bundle `name` (see BUNDLES), made on first use; sm_90a binaries."""
    dbs, recipes = BUNDLES[name]
    out = pathlib.Path(_TMP.name) / f"{name}.bundle"
    cmd = [TUNE, "bundle", "--recipe", recipes, "--arch", "sm_90a", "--allow-source-change", "--quiet", "-o", str(out)]
    for d in dbs:
        cmd[2:2] = ["--db", str(SRC / "data" / "recorded" / d)]
    r = subprocess.run(cmd, cwd=SRC, capture_output=True, text=True)
    if r.returncode != 0 or not out.exists():
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return str(out)


def have_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def tmpdir():
    return pathlib.Path(_TMP.name)
