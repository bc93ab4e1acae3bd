"""tunert: Python binding of libtunert, the runtime of tune's kernel bundles (ctypes, no compiler).

    import tunert
    b = tunert.Bundle("model.bundle")
    sel = b.select("rmsnorm", T=4096, H=4096, residual=False)
    print(sel.info.reason)
    sel.launch({"x": x, "w": w, "y": y})          # torch tensors (current stream) or DLPack objects

PyTorch ops over a bundle: `tunert.torch` (import it explicitly; it needs torch).
"""
from ._capi import library_path
from .bundle import ArgSpec, Bundle, Family, FamilyArg, LaunchSpec, Selection, SelectionInfo
from .errors import (ArchMismatch, BundleFormatError, BundleIOError, BundleVersionError, ContextMismatch,
                     CudaError, DeviceMismatch, DTypeMismatch, ExpressionError, InvalidArgument, LayoutError,
                     LibraryNotFound, MissingArgument, NoDriver, NoFamily, NoVariant, OutOfMemory,
                     ShapeMismatch, TunertError, VendorEntry, error_class)

__version__ = "0.5.0"

__all__ = ["Bundle", "Family", "FamilyArg", "Selection", "SelectionInfo", "ArgSpec", "LaunchSpec", "library_path",
           "TunertError", "InvalidArgument", "OutOfMemory", "BundleIOError", "BundleFormatError", "BundleVersionError",
           "NoFamily", "NoVariant", "ArchMismatch", "NoDriver", "CudaError", "ExpressionError", "ContextMismatch",
           "VendorEntry", "LibraryNotFound", "DTypeMismatch", "ShapeMismatch", "DeviceMismatch", "LayoutError",
           "MissingArgument", "error_class"]
