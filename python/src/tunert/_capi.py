"""ctypes declarations of libtunert's C API (runtime/tunert.h) and the search for the library.

Owns: the struct layouts, the function prototypes and finding libtunert.so. Must not: hold
policy (what to select, how to check tensors): that is bundle.py's and the C library's.
The structs mirror tunert.h field for field; the ones that begin with `struct_size` may have
fields appended by later libtunert versions, and the library fills only the bytes we declare,
so a field declared here that an older library does not know stays zero (NULL).
"""
import ctypes
import ctypes.util
import os
import pathlib

from .errors import LibraryNotFound

# ---- status codes and constants (tunert.h; the numbers never change) ----
TUNERT_OK = 0
OPEN_EXACT_ONLY = 0x1
OPEN_NO_DEVICE = 0x2
OPEN_ANY_ARCH = 0x4

ROLE_INPUT, ROLE_OUTPUT, ROLE_SCRATCH, ROLE_SCALAR, ROLE_TENSORMAP = 0, 1, 2, 3, 4
ROLE_NAMES = {ROLE_INPUT: "input", ROLE_OUTPUT: "output", ROLE_SCRATCH: "scratch",
              ROLE_SCALAR: "scalar", ROLE_TENSORMAP: "tensormap"}

ARG_PTR, ARG_INT, ARG_FLOAT, ARG_AUTO = 1, 2, 3, 4


class Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 1024)]


class Allocator(ctypes.Structure):
    _fields_ = [("alloc", ctypes.c_void_p), ("free", ctypes.c_void_p), ("ud", ctypes.c_void_p)]


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("device", ctypes.c_int),
                ("arch", ctypes.c_char_p), ("allocator", ctypes.POINTER(Allocator)),
                ("max_selections", ctypes.c_int),
                # since 0.5 (bundle format 1.5): the GPU model to select for (NULL: the device's)
                ("device_name", ctypes.c_char_p)]


class FamilyInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("n_dims", ctypes.c_int), ("dims", ctypes.POINTER(ctypes.c_char_p)),
                ("dim_types", ctypes.POINTER(ctypes.c_char_p)),
                ("n_args", ctypes.c_int), ("arg_names", ctypes.POINTER(ctypes.c_char_p)),
                ("arg_roles", ctypes.POINTER(ctypes.c_int)),
                ("arg_dtypes", ctypes.POINTER(ctypes.c_char_p)),
                ("n_problems", ctypes.c_int), ("n_variants", ctypes.c_int),
                ("source_hash", ctypes.c_char_p), ("recipe_file", ctypes.c_char_p)]


class LaunchInfo(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_char_p), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint)]


class ArgInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("role", ctypes.c_int), ("dtype", ctypes.c_char_p),
                ("rank", ctypes.c_int), ("shape", ctypes.c_int64 * 8), ("numel", ctypes.c_int64),
                ("bytes", ctypes.c_int64), ("has_value", ctypes.c_int), ("value", ctypes.c_double)]


class TensormapInfo(ctypes.Structure):
    _fields_ = [("tensor", ctypes.c_int), ("rank", ctypes.c_int), ("dims", ctypes.c_uint64 * 5),
                ("strides", ctypes.c_uint64 * 4), ("box", ctypes.c_uint32 * 5),
                ("element_strides", ctypes.c_uint32 * 5), ("swizzle", ctypes.c_int),
                ("l2_promotion", ctypes.c_int), ("oob_nan", ctypes.c_int)]


class SelectionInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("family", ctypes.c_char_p), ("variant", ctypes.c_char_p),
                ("tuned_problem", ctypes.c_char_p), ("tuned_dims", ctypes.c_char_p),
                ("exact", ctypes.c_int), ("distance", ctypes.c_double), ("reason", ctypes.c_char_p),
                ("measured_ns", ctypes.c_double), ("measured_on", ctypes.c_char_p),
                ("binary", ctypes.c_char_p), ("n_launches", ctypes.c_int),
                ("launches", ctypes.POINTER(LaunchInfo)), ("n_args", ctypes.c_int),
                ("args", ctypes.POINTER(ArgInfo)),
                # since 0.2
                ("tensormaps", ctypes.POINTER(TensormapInfo)),
                ("param_offsets", ctypes.POINTER(ctypes.c_uint32)), ("param_bytes", ctypes.c_uint32),
                # since 0.3
                ("clusters", ctypes.POINTER(ctypes.c_uint * 3)),
                # since 0.4: how the entry was chosen ("tuned", "nearest", "fallback", "vendor") and
                # the vendor library. A libtunert before 0.4 copies only up to `clusters` and leaves
                # these NULL (bundle.py then derives the kind from `exact`).
                ("kind", ctypes.c_char_p), ("vendor", ctypes.c_char_p),
                # since bundle format 1.6: per arg, the scalar a tensor map's strides follow (-1 none);
                # NULL from a libtunert before it
                ("tensormap_row_strides", ctypes.POINTER(ctypes.c_int))]


class BundleInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("format_major", ctypes.c_int), ("format_minor", ctypes.c_int),
                ("created_at", ctypes.c_char_p), ("tool_version", ctypes.c_char_p),
                ("nvrtc_version", ctypes.c_char_p), ("device_name", ctypes.c_char_p),
                ("device_arch", ctypes.c_char_p), ("archs", ctypes.c_char_p),
                ("device_arch_here", ctypes.c_char_p), ("open_ms", ctypes.c_double),
                # since 0.5 (bundle format 1.5): the GPU models and which one selection is for
                ("n_models", ctypes.c_int), ("device_name_here", ctypes.c_char_p), ("model_here", ctypes.c_int)]


MODEL_TIERS = {0: "this GPU", 1: "same arch", 2: "other arch"}   # tunert_model_info.tier


class ModelInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("name", ctypes.c_char_p), ("arch", ctypes.c_char_p),
                ("sm_count", ctypes.c_int), ("n_problems", ctypes.c_int), ("tier", ctypes.c_int)]


class _ArgValue(ctypes.Union):
    _fields_ = [("ptr", ctypes.c_uint64), ("i", ctypes.c_int64), ("f", ctypes.c_double)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("v", _ArgValue)]


assert ctypes.sizeof(Arg) == 16 and Arg.v.offset == 8   # bundle.py writes addresses as word 2i+1


_P = ctypes.POINTER
_PROTOTYPES = {
    "tunert_status_name": (ctypes.c_char_p, [ctypes.c_int]),
    "tunert_options_init": (None, [_P(Options)]),
    "tunert_open": (ctypes.c_int, [ctypes.c_char_p, _P(Options), _P(ctypes.c_void_p), _P(Err)]),
    "tunert_close": (None, [ctypes.c_void_p]),
    "tunert_family_count": (ctypes.c_int, [ctypes.c_void_p]),
    "tunert_family_name": (ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int]),
    "tunert_family_info_get": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, _P(FamilyInfo), _P(Err)]),
    "tunert_family_problem": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                             _P(ctypes.c_char_p), _P(_P(ctypes.c_int64)), _P(Err)]),
    "tunert_select": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, _P(ctypes.c_int64), ctypes.c_int,
                                     _P(ctypes.c_void_p), _P(Err)]),
    "tunert_selection_info_get": (ctypes.c_int, [ctypes.c_void_p, _P(SelectionInfo)]),
    # args: an array of Arg, or of 2 * n_args c_uint64 laid out as Arg (bundle.py fills it so)
    "tunert_launch": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_int, _P(Err)]),
    "tunert_bundle_info_get": (ctypes.c_int, [ctypes.c_void_p, _P(BundleInfo)]),
    # since 0.5; absent from older libraries (bundle.py then reports the one model of meta device_*)
    "tunert_model_count?": (ctypes.c_int, [ctypes.c_void_p]),
    "tunert_model_info_get?": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _P(ModelInfo)]),
}

_lib = None
_lib_path = None


def _candidates():
    """Where libtunert.so may be, in the order tried (see docs/python.md)."""
    here = pathlib.Path(__file__).resolve().parent
    names = ("libtunert.so", "libtunert.so.0")
    for d in (here / "lib", here):                      # bundled into the package (a wheel)
        for n in names:
            yield d / n
    for root in (here.parents[2], pathlib.Path.cwd()):  # python/src/tunert -> the repository
        yield root / "build" / "lib" / "libtunert.so"
    found = ctypes.util.find_library("tunert")          # the usual library path
    if found:
        yield found
    yield "libtunert.so.0"                               # LD_LIBRARY_PATH, rpath, ld.so.cache


def library_path():
    """The path of the libtunert loaded (loads it on first call)."""
    lib()
    return _lib_path


def lib():
    """The loaded libtunert, with prototypes set. Raises LibraryNotFound with every place tried."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    env = os.environ.get("TUNERT_LIBRARY")
    if env:
        # an explicit choice is not second-guessed: failing to load it is an error, not a fallthrough
        try:
            handle = ctypes.CDLL(env)
        except OSError as e:
            raise LibraryNotFound(f"TUNERT_LIBRARY={env}: cannot load it: {e}") from None
        path = env
    else:
        tried, handle, path = [], None, None
        for c in _candidates():
            c = str(c)
            if os.sep in c and not os.path.exists(c):
                tried.append(c + " (absent)")
                continue
            try:
                handle, path = ctypes.CDLL(c), c
                break
            except OSError as e:
                tried.append(f"{c} ({e})")
        if handle is None:
            raise LibraryNotFound("libtunert.so not found; set TUNERT_LIBRARY to its path, or build it "
                                  "(cmake --build build) in the repository. Tried: " + "; ".join(tried))
    for name, (res, argtypes) in _PROTOTYPES.items():
        optional = name.endswith("?")
        name = name.rstrip("?")
        if optional and not hasattr(handle, name):
            continue
        fn = getattr(handle, name)
        fn.restype = res
        fn.argtypes = argtypes
    _lib, _lib_path = handle, path
    return _lib
