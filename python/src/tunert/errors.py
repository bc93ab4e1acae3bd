"""The TunertError hierarchy: one class per tunert_status code, and the argument errors that the
Python layer finds before calling libtunert.

Every error carries `code` (the tunert_status number, EINVAL for argument errors found here) and
`status` (its short name). Classes also derive from the closest builtin (ValueError, OSError,
KeyError, ...), so `except ValueError` keeps working for code that does not know tunert.
"""


class TunertError(Exception):
    """A libtunert failure: `code` is a tunert_status, `status` its name, str() the message."""
    code = -1
    status = "error"

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self):  # KeyError would quote the message otherwise
        return self.message


class InvalidArgument(TunertError, ValueError):
    """TUNERT_EINVAL: a bad argument (and every argument check of this package)."""
    code, status = 1, "invalid argument"


class OutOfMemory(TunertError, MemoryError):
    code, status = 2, "out of memory"


class BundleIOError(TunertError, OSError):
    """TUNERT_EIO: the bundle file cannot be opened or read."""
    code, status = 3, "io"

    def __init__(self, message, code=None):
        TunertError.__init__(self, message, code)


class BundleFormatError(TunertError):
    """TUNERT_EFORMAT: not a tune bundle, corrupt or truncated."""
    code, status = 4, "format"


class BundleVersionError(TunertError):
    """TUNERT_EVERSION: a bundle format this libtunert does not read."""
    code, status = 5, "version"


class NoFamily(TunertError, KeyError):
    """TUNERT_ENOFAMILY: no such kernel family in the bundle."""
    code, status = 6, "no family"


class NoVariant(TunertError, LookupError):
    """TUNERT_ENOVARIANT: no variant of the family may run this problem (the message says why)."""
    code, status = 7, "no variant"


class ArchMismatch(TunertError):
    """TUNERT_EARCH: no binary in the bundle runs on this device's architecture."""
    code, status = 8, "arch"


class NoDriver(TunertError, RuntimeError):
    """TUNERT_ENODRIVER: libcuda cannot be opened or reports no device."""
    code, status = 9, "no driver"


class CudaError(TunertError, RuntimeError):
    """TUNERT_ECUDA: a CUDA driver call failed."""
    code, status = 10, "cuda"


class ExpressionError(TunertError, ArithmeticError):
    """TUNERT_EEXPR: a bundle expression failed for this problem."""
    code, status = 11, "expression"


class ContextMismatch(TunertError, RuntimeError):
    """TUNERT_ECONTEXT: the thread's current CUDA context is not the bundle's device's."""
    code, status = 12, "context"


class VendorEntry(TunertError):
    """TUNERT_EVENDOR: the selection is a vendor entry (the bundle chose a vendor library, e.g.
    cuBLAS, for this problem); libtunert has no kernel to launch, call the vendor instead."""
    code, status = 13, "vendor"


class LibraryNotFound(TunertError, ImportError):
    """libtunert.so could not be found or loaded (no tunert_status: code -1)."""
    code, status = -1, "no library"


# Argument checks of this package (all TUNERT_EINVAL, more precise classes).
class DTypeMismatch(InvalidArgument, TypeError):
    pass


class ShapeMismatch(InvalidArgument):
    pass


class DeviceMismatch(InvalidArgument):
    pass


class LayoutError(InvalidArgument):
    """Not contiguous, or not aligned as the kernel needs."""


class MissingArgument(InvalidArgument, KeyError):
    pass


_BY_CODE = {c.code: c for c in (InvalidArgument, OutOfMemory, BundleIOError, BundleFormatError,
                                BundleVersionError, NoFamily, NoVariant, ArchMismatch, NoDriver,
                                CudaError, ExpressionError, ContextMismatch, VendorEntry)}


def error_class(code):
    """The TunertError subclass for a tunert_status code (TunertError for an unknown one)."""
    return _BY_CODE.get(code, TunertError)


def from_status(code, message):
    return error_class(code)(message, code)
