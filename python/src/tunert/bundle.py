"""Bundles, families and selections over libtunert; launches with torch tensors or DLPack objects.

Owns: turning Python values into libtunert calls and back (dims by name, arguments by name, info
structs into plain objects) and checking tensors against a selection's argument layout before a
launch. Must not: choose variants or launch kernels itself: tunert_select and tunert_launch do.
Lifetime: a Bundle owns its tunert_ctx; Family, Selection and SelectionInfo objects keep their
Bundle alive, and every string they hold is a Python copy.
"""
import ctypes
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Optional

from . import _capi as C
from ._tensors import DTYPE_BYTES, view
from .errors import (DeviceMismatch, DTypeMismatch, InvalidArgument, LayoutError, MissingArgument,
                     ShapeMismatch, TunertError, from_status)


def _s(b):
    return None if b is None else b.decode("utf-8", "replace")


def _raise(rc, err):
    raise from_status(rc, _s(err.msg) or C.lib().tunert_status_name(rc).decode())


@dataclass(frozen=True)
class FamilyArg:
    name: str
    role: str            # "input", "output", "scratch", "scalar", "tensormap"
    dtype: str           # "bf16", "f32", "i32", ...


@dataclass(frozen=True)
class Family:
    """A kernel family of a bundle: its problem dims (in tunert_select order), its arguments (in
    tunert_launch order) and the problems it was tuned for (dims decoded: bools, enum strings)."""
    name: str
    dims: tuple
    dim_types: tuple     # "int", "bool" or "enum(a|b)"
    args: tuple          # FamilyArg
    problems: tuple      # (name, {dim: value})
    n_variants: int
    source_hash: str
    recipe_file: str

    def arg_names(self):
        return tuple(a.name for a in self.args)


@dataclass(frozen=True)
class ArgSpec:
    """One argument of a selection: for tensors the shape, elements and bytes this problem needs;
    for scalars the value the bundle computes (None: the caller must pass one)."""
    name: str
    role: str
    dtype: str
    shape: tuple = ()
    numel: int = 0
    bytes: int = 0
    value: Optional[float] = None
    maps: Optional[str] = None   # tensormap args: the tensor arg it maps
    # tensormap args: the scalar arg its strides follow (the mapped tensor's row stride in elements,
    # bundle format 1.6): pass another value and the map reads a strided view; None: dense rows
    row_stride: Optional[str] = None


@dataclass(frozen=True)
class LaunchSpec:
    kernel: str
    grid: tuple
    block: tuple
    shared: int          # dynamic shared memory [bytes]
    cluster: tuple = (1, 1, 1)


@dataclass(frozen=True)
class SelectionInfo:
    """tunert_selection_info as Python values (variant and tuned_dims parsed from their JSON)."""
    family: str
    variant: dict
    tuned_problem: str
    tuned_dims: dict
    exact: bool
    distance: float
    reason: str
    measured_ns: float
    measured_on: str
    binary: str
    kind: str            # how libtunert chose it: "tuned" (this problem's tuned kernel), "nearest" (a
                         # portable kernel tuned for another problem), "fallback" (the family's generic
                         # kernel), "vendor" (a vendor entry: no kernel of ours, call the vendor)
    vendor: Optional[str]
    launches: tuple      # LaunchSpec
    args: tuple          # ArgSpec, in launch order
    param_bytes: int

    def arg(self, name):
        for a in self.args:
            if a.name == name:
                return a
        raise MissingArgument(f"{self.family} has no argument '{name}' (it has {', '.join(x.name for x in self.args)})")


def _decode_dim(typ, v):
    if typ == "bool":
        return bool(v)
    if typ.startswith("enum(") and typ.endswith(")"):
        vals = typ[5:-1].split("|")
        return vals[v] if 0 <= v < len(vals) else int(v)
    return int(v)


def _encode_dim(family, name, typ, v):
    if typ == "bool":
        if isinstance(v, (bool, int)) and int(v) in (0, 1):
            return int(v)
        raise InvalidArgument(f"{family}: dim {name} is a bool: pass True/False, not {v!r}")
    if typ.startswith("enum(") and typ.endswith(")"):
        vals = typ[5:-1].split("|")
        if isinstance(v, str):
            if v in vals:
                return vals.index(v)
            raise InvalidArgument(f"{family}: dim {name} is one of {vals}, not {v!r}")
        if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(vals):
            return v
        raise InvalidArgument(f"{family}: dim {name} is one of {vals} (or its index), not {v!r}")
    if isinstance(v, bool) or not isinstance(v, int):
        try:
            import operator
            return operator.index(v)
        except TypeError:
            raise InvalidArgument(f"{family}: dim {name} is an integer, not {v!r}") from None
    return v


class Bundle:
    """An open bundle (tunert_open). `device`: the CUDA ordinal launches go to; `arch`: the
    architecture to check binaries against instead of the device's ("sm_90a"; for selection on a
    machine without a GPU); `exact_only`: select only tuned problems; `no_device`: do not open
    libcuda (open and select only); `any_arch`: open even when no binary runs on the device;
    `device_name`: the GPU model to select for in a bundle of several models ("NVIDIA H200", or a
    part of the name) instead of the device's (docs/runtime.md, "Bundles of several GPU models")."""

    def __init__(self, path, device=0, arch=None, exact_only=False, no_device=False, any_arch=False,
                 max_selections=0, device_name=None):
        lib = C.lib()
        self.path = os.fspath(path)
        self.device = int(device)
        self._ctx = ctypes.c_void_p()
        opt = C.Options()
        lib.tunert_options_init(ctypes.byref(opt))
        opt.flags = ((C.OPEN_EXACT_ONLY if exact_only else 0) | (C.OPEN_NO_DEVICE if no_device else 0)
                     | (C.OPEN_ANY_ARCH if any_arch else 0))
        opt.device = self.device
        self._arch = arch.encode() if arch else None
        opt.arch = self._arch
        self._device_name = device_name.encode() if device_name else None
        opt.device_name = self._device_name
        if max_selections:
            opt.max_selections = int(max_selections)
        err = C.Err()
        rc = lib.tunert_open(self.path.encode(), ctypes.byref(opt), ctypes.byref(self._ctx), ctypes.byref(err))
        if rc:
            self._ctx = None
            _raise(rc, err)
        self._lib = lib
        self._families = {}
        self._selections = {}
        self._lock = threading.Lock()

    # ---- lifetime ----
    def close(self):
        """Free the context. Selections of this bundle must not be launched afterwards."""
        ctx, self._ctx = getattr(self, "_ctx", None), None
        if ctx:
            self._lib.tunert_close(ctx)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _handle(self):
        if not self._ctx:
            raise InvalidArgument(f"bundle {self.path} is closed")
        return self._ctx

    def __repr__(self):
        return f"tunert.Bundle({self.path!r}, device={self.device}, families={self.families})"

    # ---- facts ----
    @property
    def families(self):
        """The names of the bundle's kernel families."""
        ctx = self._handle()
        return [_s(self._lib.tunert_family_name(ctx, i)) for i in range(self._lib.tunert_family_count(ctx))]

    def __contains__(self, family):
        return family in self.families

    @property
    def info(self):
        """tunert_bundle_info as a dict (format, tool, device measured on, archs, open time)."""
        bi = C.BundleInfo()
        bi.struct_size = ctypes.sizeof(bi)
        self._lib.tunert_bundle_info_get(self._handle(), ctypes.byref(bi))
        return {"format": f"{bi.format_major}.{bi.format_minor}", "created_at": _s(bi.created_at),
                "tool_version": _s(bi.tool_version), "nvrtc_version": _s(bi.nvrtc_version),
                "device_name": _s(bi.device_name), "device_arch": _s(bi.device_arch), "archs": _s(bi.archs),
                "device_arch_here": _s(bi.device_arch_here), "open_ms": bi.open_ms,
                "device_name_here": _s(bi.device_name_here), "model_here": bi.model_here if bi.n_models else None}

    @property
    def models(self):
        """The GPU models the bundle has entries of, as dicts (name, arch, sm_count, n_problems, and
        tier: how selection ranks them for the device, "this GPU", "same arch" or "other arch")."""
        ctx, lib = self._handle(), self._lib
        if not hasattr(lib, "tunert_model_count"):   # a libtunert before 0.5: one model, meta device_*
            info = self.info
            return [{"name": info["device_name"], "arch": info["device_arch"], "sm_count": 0, "n_problems": None,
                     "tier": None}]
        out = []
        for i in range(lib.tunert_model_count(ctx)):
            mi = C.ModelInfo()
            mi.struct_size = ctypes.sizeof(mi)
            if lib.tunert_model_info_get(ctx, i, ctypes.byref(mi)) == C.TUNERT_OK:
                out.append({"name": _s(mi.name), "arch": _s(mi.arch), "sm_count": mi.sm_count,
                            "n_problems": mi.n_problems, "tier": C.MODEL_TIERS.get(mi.tier, str(mi.tier))})
        return out

    def family(self, name):
        """The Family `name` (NoFamily, listing those there are, when absent)."""
        f = self._families.get(name)
        if f is not None:
            return f
        fi = C.FamilyInfo()
        fi.struct_size = ctypes.sizeof(fi)
        err = C.Err()
        ctx = self._handle()
        rc = self._lib.tunert_family_info_get(ctx, name.encode(), ctypes.byref(fi), ctypes.byref(err))
        if rc:
            _raise(rc, err)
        dims = tuple(_s(fi.dims[i]) for i in range(fi.n_dims))
        types = tuple(_s(fi.dim_types[i]) for i in range(fi.n_dims))
        args = tuple(FamilyArg(_s(fi.arg_names[i]), C.ROLE_NAMES.get(fi.arg_roles[i], str(fi.arg_roles[i])),
                               _s(fi.arg_dtypes[i])) for i in range(fi.n_args))
        problems = []
        for i in range(fi.n_problems):
            pname, pdims = ctypes.c_char_p(), ctypes.POINTER(ctypes.c_int64)()
            rc = self._lib.tunert_family_problem(ctx, name.encode(), i, ctypes.byref(pname), ctypes.byref(pdims),
                                                 ctypes.byref(err))
            if rc:
                _raise(rc, err)
            problems.append((_s(pname.value), {d: _decode_dim(t, pdims[j]) for j, (d, t) in enumerate(zip(dims, types))}))
        f = Family(name, dims, types, args, tuple(problems), fi.n_variants, _s(fi.source_hash), _s(fi.recipe_file))
        self._families[name] = f
        return f

    # ---- selection ----
    def select(self, family, dims=None, **kw):
        """The Selection of `family` for a problem given by dim name (a dict and/or keywords):
        ints, bools, and enum dims as their string value ("col") or index. Cached per problem."""
        allv = dict(dims or {}, **kw)
        f = self.family(family)
        unknown = sorted(set(allv) - set(f.dims))
        missing = [d for d in f.dims if d not in allv]
        if unknown or missing:
            raise InvalidArgument(f"{family} takes dims {', '.join(f'{d}:{t}' for d, t in zip(f.dims, f.dim_types))}"
                                  + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                                  + (f"; missing: {', '.join(missing)}" if missing else ""))
        key = (family,) + tuple(_encode_dim(family, d, t, allv[d]) for d, t in zip(f.dims, f.dim_types))
        sel = self._selections.get(key)
        if sel is not None:
            return sel
        arr = (ctypes.c_int64 * len(f.dims))(*key[1:])
        out, err = ctypes.c_void_p(), C.Err()
        rc = self._lib.tunert_select(self._handle(), family.encode(), arr, len(f.dims), ctypes.byref(out),
                                     ctypes.byref(err))
        if rc:
            _raise(rc, err)
        sel = Selection(self, f, {d: _decode_dim(t, v) for d, t, v in zip(f.dims, f.dim_types, key[1:])}, out)
        with self._lock:
            sel = self._selections.setdefault(key, sel)
        return sel


def _selection_info(handle, lib):
    si = C.SelectionInfo()
    si.struct_size = ctypes.sizeof(si)
    rc = lib.tunert_selection_info_get(handle, ctypes.byref(si))
    if rc:
        raise from_status(rc, "tunert_selection_info_get failed")
    launches = []
    for i in range(si.n_launches):
        li = si.launches[i]
        cl = tuple(si.clusters[i]) if si.clusters else (1, 1, 1)
        launches.append(LaunchSpec(_s(li.kernel), tuple(li.grid), tuple(li.block), li.shared, cl))
    names = [_s(si.args[i].name) for i in range(si.n_args)]
    args = []
    for i in range(si.n_args):
        a = si.args[i]
        role = C.ROLE_NAMES.get(a.role, str(a.role))
        maps = row_stride = None
        if a.role == C.ROLE_TENSORMAP and si.tensormaps and si.tensormaps[i].tensor >= 0:
            maps = names[si.tensormaps[i].tensor]
            # a libtunert before format 1.6 leaves the field NULL: its maps are of dense rows
            if si.tensormap_row_strides and si.tensormap_row_strides[i] >= 0:
                row_stride = names[si.tensormap_row_strides[i]]
        if a.role == C.ROLE_SCALAR:
            args.append(ArgSpec(names[i], role, _s(a.dtype), value=a.value if a.has_value else None))
        else:
            args.append(ArgSpec(names[i], role, _s(a.dtype), tuple(a.shape[j] for j in range(a.rank)), a.numel,
                                a.bytes, maps=maps, row_stride=row_stride))
    # a libtunert older than the kinds leaves the field NULL: only exact or nearest kernels existed
    kind = _s(si.kind) or ("tuned" if si.exact else "nearest")
    return SelectionInfo(_s(si.family), json.loads(_s(si.variant) or "{}"), _s(si.tuned_problem),
                         json.loads(_s(si.tuned_dims) or "{}"), bool(si.exact), si.distance, _s(si.reason),
                         si.measured_ns, _s(si.measured_on), _s(si.binary), kind, _s(si.vendor),
                         tuple(launches), tuple(args), si.param_bytes)


def _stream_handle(stream):
    """An int CUstream from None (0), an int, a torch.cuda.Stream (.cuda_stream), an object with
    __cuda_stream__ (the CUDA stream protocol) or a CuPy stream (.ptr)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise InvalidArgument(f"stream: a {type(stream).__name__} is not a CUDA stream (pass an int handle, "
                          f"a torch.cuda.Stream or an object with __cuda_stream__)")


class Selection:
    """The variant libtunert chose for one problem of a family. `info` describes it; `launch` runs it."""

    def __init__(self, bundle, family, dims, handle):
        self.bundle, self.family, self.dims, self._handle = bundle, family, dims, handle
        self.info = _selection_info(handle, bundle._lib)
        self._index = {a.name: i for i, a in enumerate(self.info.args)}
        self._align = {a.maps: 16 for a in self.info.args if a.maps}
        self._bindings = {}   # (names passed, strided names) -> _Binding
        self._launch_c = bundle._lib.tunert_launch

    def __repr__(self):
        i = self.info
        how = "exact" if i.exact else f"nearest {i.tuned_problem} (distance {i.distance:.3g})"
        return f"<tunert.Selection {i.family} {self.dims}: {i.kind} {i.variant} [{how}]>"

    @property
    def is_vendor(self):
        """A vendor entry: the bundle measured the vendor library faster for this problem."""
        return self.info.kind == "vendor"

    def scratch_bytes(self):
        """{scratch arg name: bytes to provide}."""
        return {a.name: a.bytes for a in self.info.args if a.role == "scratch"}

    def _check_tensor(self, a, tv, strided):
        where = f"{self.info.family} arg '{a.name}'"
        if strided:
            self._check_strided(a, tv, where)
        elif a.role == "scratch":
            have = DTYPE_BYTES.get(tv.dtype, 0) * _prod(tv.shape)
            if have < a.bytes:
                raise ShapeMismatch(f"{where}: scratch of {have} bytes, this problem needs {a.bytes}")
        else:
            if tv.dtype != a.dtype:
                raise DTypeMismatch(f"{where}: dtype {tv.dtype}, the kernel takes {a.dtype}")
            # a 1-D shape is a count of elements (the bundle keeps only that of a shape the recipe
            # computes in Lua): any layout with that many elements fits
            flat_ok = len(a.shape) == 1 and _prod(tv.shape) == a.shape[0]
            if tuple(tv.shape) != a.shape and not flat_ok:
                raise ShapeMismatch(f"{where}: shape {tuple(tv.shape)}, the selection for {self.dims} wants "
                                    f"{a.shape}")
        if not strided and not tv.contiguous:
            raise LayoutError(f"{where}: not contiguous (row-major dense); pass .contiguous()")
        align = self._alignment(a, tv)
        if tv.ptr % align:
            raise LayoutError(f"{where}: address {tv.ptr:#x} is not {align}-byte aligned")
        if tv.device not in LAUNCH_DEVICE_TYPES or tv.device_index != self.bundle.device:
            raise DeviceMismatch(f"{where}: on {tv.device}:{tv.device_index}, but the bundle launches on "
                                 f"cuda:{self.bundle.device}")

    def _check_strided(self, a, tv, where):
        if tv.dtype != a.dtype:
            raise DTypeMismatch(f"{where}: dtype {tv.dtype}, the kernel takes {a.dtype}")
        if len(tv.shape) != len(a.shape) or tuple(tv.shape[1:]) != a.shape[1:]:
            raise ShapeMismatch(f"{where}: shape {tuple(tv.shape)}, the selection for {self.dims} wants "
                                f"{a.shape} (any leading extent: a strided argument)")
        if tv.strides and tv.shape[-1] != 1 and tv.strides[-1] != 1:
            raise LayoutError(f"{where}: innermost stride {tv.strides[-1]}: a strided argument needs its last "
                              f"dim contiguous")

    def launch(self, tensors, stream=None, strided=()):
        """Launch on `stream` with `tensors`: {arg name: torch.Tensor or DLPack object} for tensor
        args, and optionally {scalar name: number} to override a scalar the bundle computes.
        `strided`: names of tensor args the caller passes with its own layout, described to the
        kernel by the family's stride scalars (which the caller passes too): checked for dtype,
        device, alignment, a contiguous last dim and the shape but its leading extent (a pool the
        kernel indexes, e.g. KV-cache pages), not for contiguity.
        Scratch args left out are allocated with torch (the caching allocator) when torch is
        loaded. stream None: torch's current stream when a torch CUDA tensor is given, else the
        default stream. Asynchronous; the caller keeps the tensors alive until the work is done
        (torch's stream semantics do that for torch tensors).
        Every call is checked; for a torch tensor the checks of its dtype, shape, strides and device
        are remembered per distinct combination, its address is checked on every call."""
        if strided.__class__ is not frozenset:
            strided = frozenset(strided)
        key = (tuple(tensors), strided)
        b = self._bindings.get(key)
        if b is None:
            b = self._binding(key[0], strided)
        self._launch(b, tensors, stream)

    def _binding(self, names, strided, constants=None):
        """The _Binding of a call that passes `names` (checked here: unknown or missing names
        raise), cached when `constants` is None; `constants`: {scalar name: value} the same on
        every call (a plan's), packed once instead of per call."""
        info = self.info
        unknown = [k for k in names if k not in self._index]
        if unknown:
            raise MissingArgument(f"{info.family}: no argument named {', '.join(map(repr, unknown))} (arguments: "
                                  f"{', '.join(a.name for a in info.args)})")
        b = _Binding(self, names, strided, constants or {})
        if constants is None:
            if len(self._bindings) >= _MAX_CACHED:
                self._bindings.clear()
            self._bindings[(tuple(names), strided)] = b
        return b

    def _launch(self, b, values, stream):
        """Fill a copy of b's argument array from `values` ({name: tensor or number}) and launch."""
        args = b.array_type.from_buffer_copy(b.template)   # as 64-bit words: slot i's value is word 2i+1
        seen, torch_type = b.seen, _torch_tensor_type()
        torch_dev = None
        deferred = None
        for i, a, is_strided in b.tensors:
            t = values.get(a.name)
            if t.__class__ is torch_type or (torch_type is not None and isinstance(t, torch_type)):
                meta = (i, t.dtype, t.shape, t.stride(), t.device)
                align = seen.get(meta)
                if align is None:
                    tv = view(t, a.name)
                    self._check_tensor(a, tv, is_strided)
                    if len(seen) >= _MAX_CACHED:
                        seen.clear()
                    align = seen[meta] = self._alignment(a, tv)
                ptr = t.data_ptr()
                if ptr % align:
                    self._check_tensor(a, view(t, a.name), is_strided)
                args[2 * i + 1] = ptr
                if torch_dev is None:
                    torch_dev = meta[4]
            else:
                if deferred is None:
                    deferred = []
                deferred.append((i, a, is_strided, t))
        explicit = stream is not None
        if explicit:
            handle = _stream_handle(stream)
        elif torch_dev is not None and torch_dev.type == "cuda":
            handle = _current_stream(torch_dev.index)
        else:
            handle = 0
        keep = None
        if deferred is not None:
            keep = self._pack_other(args, deferred, explicit, handle, torch_dev)
        if b.scalars:
            slots = (C.Arg * b.n).from_buffer(args)
            for i, a in b.scalars:
                self._pack_scalar(slots[i], a, values.get(a.name))
        err = C.Err()
        rc = self._launch_c(self.bundle._handle(), self._handle, handle or None, args, b.n, ctypes.byref(err))
        del keep
        if rc:
            _raise(rc, err)

    def _pack_other(self, args, deferred, explicit, handle, torch_dev):
        """Pack what the fast path leaves: DLPack objects, missing tensors (scratch is allocated,
        anything else raises) and anything that is no tensor. Returns what must live until the
        launch is issued."""
        keep = []
        dl_stream = handle if handle else 1  # DLPack: 1 is the legacy default stream
        for i, a, is_strided, t in deferred:
            if t is None:
                if a.role != "scratch":
                    raise MissingArgument(f"{self.info.family}: tensor '{a.name}' ({a.role}, {a.dtype} "
                                          f"{list(a.shape)}) is missing")
                # made here to this arg's size on the checked device: nothing to check
                t = self._scratch(a, sys.modules.get("torch"), explicit, handle, torch_dev)
                keep.append(t)
                args[2 * i + 1] = t.data_ptr()
                continue
            tv = view(t, a.name, dl_stream)
            self._check_tensor(a, tv, is_strided)
            keep.append(tv)
            args[2 * i + 1] = tv.ptr
        return keep

    def _pack_scalar(self, slot, a, v):
        if v is None:
            if a.value is None:
                raise MissingArgument(f"{self.info.family}: scalar '{a.name}' has no value in the bundle for "
                                      f"{self.dims}: pass it")
            slot.kind = C.ARG_AUTO
        elif a.dtype.startswith("f"):
            slot.kind, slot.v.f = C.ARG_FLOAT, float(v)
        else:
            if isinstance(v, float) and not v.is_integer():
                raise InvalidArgument(f"{self.info.family}: scalar '{a.name}' is {a.dtype}, not {v!r}")
            slot.kind, slot.v.i = C.ARG_INT, int(v)

    def _alignment(self, a, tv):
        return self._align.get(a.name, DTYPE_BYTES.get(tv.dtype, 1))

    def _scratch(self, a, torch, explicit, handle, device=None):
        if torch is None:
            raise MissingArgument(f"{self.info.family}: scratch '{a.name}' ({a.bytes} bytes) is missing: pass a "
                                  f"device buffer of at least that many bytes")
        # `device`: that of the torch tensors given, which the checks above found to be the bundle's
        buf = torch.empty(max(a.bytes, 1), dtype=torch.uint8, device=device or f"cuda:{self.bundle.device}")
        if explicit and handle:
            # freed after this call: tell the caching allocator which stream still uses it
            buf.record_stream(torch.cuda.ExternalStream(handle, device=buf.device))
        return buf


class _Binding:
    """How a call that passes the same argument names fills tunert_arg[]: a packed template
    (tensor maps, scalars the bundle computes, constants), the tensor slots to fill with
    addresses and the scalar slots to fill with the values passed; and the torch tensor layouts
    already checked for each slot ({(slot, dtype, shape, strides, device): alignment})."""
    __slots__ = ("n", "array_type", "template", "tensors", "scalars", "seen")

    def __init__(self, sel, names, strided, constants):
        info, given = sel.info, set(names)
        self.n = len(info.args)
        arr = (C.Arg * self.n)()
        # filled per call as 64-bit words (an address is one store, not three attribute lookups)
        self.array_type = ctypes.c_uint64 * (2 * self.n)
        self.tensors, self.scalars, self.seen = [], [], {}
        for i, a in enumerate(info.args):
            if a.role == "tensormap":
                arr[i].kind = C.ARG_AUTO
            elif a.role == "scalar":
                if a.name in constants:
                    sel._pack_scalar(arr[i], a, constants[a.name])
                elif a.name in given:
                    self.scalars.append((i, a))
                else:
                    sel._pack_scalar(arr[i], a, None)
            else:
                if a.name not in given and a.role != "scratch":
                    raise MissingArgument(f"{info.family}: tensor '{a.name}' ({a.role}, {a.dtype} {list(a.shape)}) "
                                          f"is missing")
                arr[i].kind = C.ARG_PTR
                self.tensors.append((i, a, a.name in strided))
        self.template = bytes(arr)


# torch tensor layouts and call shapes kept per selection before the cache starts over
_MAX_CACHED = 4096
# device types (tunert TensorView.device) a launch takes
LAUNCH_DEVICE_TYPES = frozenset({"cuda", "cuda_managed"})


def _torch_tensor_type():
    torch = sys.modules.get("torch")
    return None if torch is None else torch.Tensor


def _current_stream(device_index):
    """torch's current CUDA stream on `device_index` as an int handle, without the Stream object
    torch.cuda.current_stream builds."""
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n
