"""What a launch needs to know of a tensor (device pointer, dtype, shape, device, layout), read from
a torch.Tensor directly or from any object with the DLPack protocol (__dlpack__/__dlpack_device__).

Must not copy or move data: a tensor that does not fit is an error for the caller to fix.
"""
import ctypes
import sys

from .errors import InvalidArgument

# tunert dtype names (tunert_family_info.arg_dtypes) and their sizes in bytes
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "f64": 8, "u8": 1, "i8": 1, "e4m3": 1}

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_DEVICE_NAMES = {_DL_CPU: "cpu", _DL_CUDA: "cuda", _DL_CUDA_HOST: "cuda_host", _DL_CUDA_MANAGED: "cuda_managed"}
# (DLDataTypeCode, bits) -> tunert dtype: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4,
# kDLFloat8_e4m3fn 10
_DL_DTYPES = {(2, 32): "f32", (2, 16): "f16", (4, 16): "bf16", (0, 32): "i32", (0, 64): "i64",
              (2, 64): "f64", (1, 8): "u8", (0, 8): "i8", (10, 8): "e4m3"}


class TensorView:
    """ptr (int), dtype (tunert name or the foreign name when there is none), shape (tuple),
    strides (tuple, in elements), device ("cuda", "cpu", ...), device_index, contiguous (row-major
    dense), keepalive."""
    __slots__ = ("ptr", "dtype", "shape", "strides", "device", "device_index", "contiguous", "keepalive", "torch")

    def __init__(self, ptr, dtype, shape, strides, device, device_index, contiguous, keepalive=None, torch=None):
        self.ptr, self.dtype, self.shape, self.strides = ptr, dtype, shape, strides
        self.device, self.device_index, self.contiguous = device, device_index, contiguous
        self.keepalive, self.torch = keepalive, torch


_torch_dtypes = None


def _torch_dtype_name(torch, dt):
    global _torch_dtypes
    if _torch_dtypes is None:
        _torch_dtypes = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
                         torch.int32: "i32", torch.int64: "i64", torch.float64: "f64",
                         torch.uint8: "u8", torch.int8: "i8"}
        if hasattr(torch, "float8_e4m3fn"):
            _torch_dtypes[torch.float8_e4m3fn] = "e4m3"
    return _torch_dtypes.get(dt, str(dt).replace("torch.", ""))


def is_torch_tensor(obj):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def view(obj, name, stream=None):
    """The TensorView of obj (a torch.Tensor or a DLPack object). `name` is for messages; `stream`
    (an int handle) is handed to __dlpack__ so the producer orders its pending work before it."""
    if is_torch_tensor(obj):
        torch = sys.modules["torch"]
        dev = obj.device
        return TensorView(obj.data_ptr(), _torch_dtype_name(torch, obj.dtype), tuple(obj.shape), tuple(obj.stride()),
                          dev.type, dev.index if dev.index is not None else 0, obj.is_contiguous(), obj, obj)
    if hasattr(obj, "__dlpack__"):
        return _dlpack_view(obj, name, stream)
    raise InvalidArgument(f"arg '{name}': a {type(obj).__name__} is not a tensor: pass a torch.Tensor or an "
                          f"object with __dlpack__ (or a number for a scalar arg)")


# ---- DLPack ----------------------------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]

def _dlpack_capsule(obj, stream):
    # The capsule is left unconsumed: its destructor releases the producer's reference, and the
    # caller keeps `obj` (the owner of the memory) alive across the asynchronous launch.
    dev = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else None
    if stream is None or dev not in (_DL_CUDA, _DL_CUDA_MANAGED):
        return obj.__dlpack__()
    try:
        return obj.__dlpack__(stream=stream)
    except TypeError:  # a producer that takes no stream (e.g. a CPU-only one)
        return obj.__dlpack__()


def _dlpack_view(obj, name, stream=None):
    capsule = _dlpack_capsule(obj, stream)
    cname = _capsule_name(capsule)
    if cname == b"dltensor":
        t = ctypes.cast(_capsule_get(capsule, cname), ctypes.POINTER(_DLManagedTensor)).contents.dl_tensor
    elif cname == b"dltensor_versioned":
        t = ctypes.cast(_capsule_get(capsule, cname), ctypes.POINTER(_DLManagedTensorVersioned)).contents.dl_tensor
    else:
        raise InvalidArgument(f"arg '{name}': __dlpack__ gave a capsule named {cname!r}, not a DLPack tensor")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.dtype.lanes != 1:
        dtype = f"dlpack(code={t.dtype.code}, bits={t.dtype.bits}, lanes={t.dtype.lanes})"
    else:
        dtype = _DL_DTYPES.get((t.dtype.code, t.dtype.bits), f"dlpack(code={t.dtype.code}, bits={t.dtype.bits})")
    dense = _row_major_strides(shape)
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else dense   # NULL: row-major dense
    contiguous = all(n == 1 or s == d for n, s, d in zip(shape, strides, dense))
    ptr = (t.data or 0) + t.byte_offset
    device = _DL_DEVICE_NAMES.get(t.device.device_type, f"dlpack-device-{t.device.device_type}")
    return TensorView(ptr, dtype, shape, strides, device, t.device.device_id, contiguous, (obj, capsule))


def _row_major_strides(shape):
    out, expect = [], 1
    for n in reversed(shape):
        out.append(expect)
        expect *= n
    return tuple(reversed(out))
