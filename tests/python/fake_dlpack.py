"""A DLPack producer made of ctypes structs: a tensor that claims any device and address, so the
binding's checks and a launch's no-driver error can be tested without a GPU. Never launch one
on a machine with a driver unless the bundle was opened with no_device=True."""
import ctypes


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


_new = ctypes.pythonapi.PyCapsule_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# name -> DLPack (code, bits); e4m3: kDLFloat8_e4m3fn
DTYPES = {"bf16": (4, 16), "f16": (2, 16), "f32": (2, 32), "i32": (0, 32), "i64": (0, 64), "e4m3": (10, 8)}


class FakeTensor:
    """shape, dtype ("bf16", ...), device_type (2: CUDA, 1: CPU), address, strides (None: dense)."""

    def __init__(self, shape, dtype="bf16", device_type=2, device_id=0, address=0x7F0000000000, strides=None):
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        code, bits = DTYPES[dtype]
        t = _DLTensor(address, _DLDevice(device_type, device_id), len(shape), _DLDataType(code, bits, 1),
                      self.shape, self.strides, 0)
        self.managed = _DLManagedTensor(t, None, None)
        self.device = (device_type, device_id)
        self.streams = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return _new(ctypes.addressof(self.managed), b"dltensor", None)
