#!/usr/bin/env python3
"""nvrtc_compile_time.py: where a variant's NVRTC compile time goes, and what options change it.

Compiles real variants the way tuner/compile.c does (same template, same options in the same
order, the CUDA include folder and templates/ on the include path) through libnvrtc with ctypes,
no GPU needed. The variants come from a `tune run --compile-only` database: its binaries table
keeps each variant's options (the -D defines) and kernel names; the template is given per family,
and @KERNEL keeps the binaries whose kernel names start with KERNEL (a database also holds the
reference kernel's binaries, and gemm's those of gemv_rows.cuh).

Needs pyelftools (`pip install pyelftools`) to read the cubins' sections.

  tools/bench/nvrtc_compile_time.py FAMILY=TEMPLATE:DB[@KERNEL] [...] [--variants 4] [--reps 3]
      [--modes base,ptx,syntax,pch,...] [--procs 1,2] [--json out.json]

Modes (each a change of tune's options; `same_code` says whether the SASS of every kernel must
stay byte-identical, checked against `base`):
  base        tune's options (cubin, -lineinfo, --ptxas-options=-v)
  phases      base + --time: NVRTC's own split (CUDA C++ front end, NVVM optimizer, PTX
              translation = ptxas) in the note
  ptx         -arch=compute_XX: front end + NVVM to PTX, no ptxas (base - ptx = ptxas)
  syntax      -fdevice-syntax-only: parsing and semantic analysis only
  empty       an empty source to PTX: NVRTC's fixed cost per program
  headers     the template's #include lines alone, compiled to PTX: parsing the shared headers
  no_lineinfo base without -lineinfo
  xptxas_O3   base + -Xptxas -O3 (ptxas's default level, said explicitly)
  dopt        base + --dopt=on
  split2      base + --split-compile=2
  minimal     base + --minimal
  no_cache    base + --no-cache (NVRTC 12.9+ caches ptx/cubin generation)
  pch         base + automatic PCH (-pch, --pch-dir=a fresh folder per process)
  pch_defs    like pch, but the variant's -D defines are moved into the source after its
              leading #include block behind a `#pragma hdrstop`, so that every variant shares
              one header prefix (EDG rejects a PCH made under other -D options)
The time of each compile is nvrtcCompileProgram alone (program creation and result copies are
microseconds). With --procs N, N processes compile the variants at once (each process its own
NVRTC, as tune's compile servers); the figure is then the wall time per variant over the batch.
"""
import argparse
import ctypes
import io
import json
import multiprocessing as mp
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time

from elftools.elf.elffile import ELFFile  # pip install pyelftools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUDA_INC = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")
SAME_CODE = {"no_lineinfo": False, "xptxas_O3": True, "dopt": True, "split2": True, "minimal": True,
             "no_cache": True, "pch": True, "pch_defs": True}

_lib = None


def nvrtc():
    global _lib
    if _lib is None:
        for name in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"):
            try:
                _lib = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if _lib is None:
            _lib = ctypes.CDLL(os.path.join(os.path.dirname(CUDA_INC), "lib64", "libnvrtc.so"))
        _lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return _lib


def nvrtc_version():
    a, b = ctypes.c_int(), ctypes.c_int()
    nvrtc().nvrtcVersion(ctypes.byref(a), ctypes.byref(b))
    return "%d.%d" % (a.value, b.value)


def compile_once(src, name, opts, want_cubin):
    """(ms of nvrtcCompileProgram, ok, log, binary bytes)."""
    lib = nvrtc()
    prog = ctypes.c_void_p()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None)
    if r:
        raise RuntimeError("nvrtcCreateProgram: %s" % lib.nvrtcGetErrorString(r))
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    t0 = time.perf_counter()
    r = lib.nvrtcCompileProgram(prog, len(opts), arr)
    ms = (time.perf_counter() - t0) * 1e3
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    binary = b""
    if r == 0:
        get_size, get = (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if want_cubin else (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
        get_size(prog, ctypes.byref(n))
        out = ctypes.create_string_buffer(n.value)
        if get_size is lib.nvrtcGetCUBINSize or n.value:
            get(prog, out)
        binary = out.raw
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return ms, r == 0, log, binary


def elf_sections(blob):
    """{name: bytes} of a cubin's ELF sections (pyelftools; SHT_NOBITS sections have no bytes)."""
    if blob[:4] != b"\x7fELF":
        return {}
    elf = ELFFile(io.BytesIO(blob))
    return {s.name: b"" if s["sh_type"] == "SHT_NOBITS" else s.data() for s in elf.iter_sections()}


def code_of(cubin):
    """The parts of a cubin that decide what runs: each kernel's SASS and its constant and
    shared memory sections. .nv.info is left out: it names the parameter bank by symbol index,
    which the debug symbols of -lineinfo shift; registers are compared from the ptxas report."""
    secs = elf_sections(cubin)
    return {k: v for k, v in secs.items()
            if k.startswith((".text.", ".nv.constant0.", ".nv.shared."))}


def ptxas_regs(log):
    return sorted(int(m) for m in re.findall(r"Used (\d+) registers", log))


class Variant:
    def __init__(self, family, template, defines, names, arch):
        self.family, self.template, self.defines, self.names, self.arch = family, template, defines, names, arch

    def source(self):
        with open(self.template) as f:
            return f.read()


def load_variants(spec, n, arch):
    family, rest = spec.split("=", 1)
    rest, _, kernel = rest.partition("@")
    template, db = rest.rsplit(":", 1)
    template = os.path.join(ROOT, template) if not os.path.isabs(template) else template
    con = sqlite3.connect(db)
    rows = con.execute("SELECT options, lowered_name FROM binaries WHERE ok = 1 AND options LIKE ? AND lowered_name LIKE ?"
                       " ORDER BY key", ("%-arch=" + arch + " %", kernel + "%")).fetchall()
    con.close()
    if not rows:
        sys.exit("%s: no compiled binary for %s" % (db, arch))
    step = max(1, len(rows) // n)
    out = []
    for opts, names in rows[::step][:n]:
        defines = [o for o in opts.split() if o.startswith("-D")]
        out.append(Variant(family, template, defines, names.split(), arch))
    return out


def base_options(v):
    return ["-arch=%s" % v.arch, "-std=c++17", "-I%s" % os.path.join(ROOT, "templates"), "-I%s" % CUDA_INC,
            "--ptxas-options=-v", "-lineinfo"] + v.defines


def include_prefix(src):
    """The leading lines of src up to its last top-level #include before any code: comments,
    blank lines, #include and #pragma once (what a PCH can cover)."""
    lines, keep = src.split("\n"), 0
    for i, ln in enumerate(lines):
        s = ln.strip()
        if s.startswith("#include"):
            keep = i + 1
        elif s == "" or s.startswith("//") or s.startswith("#pragma once"):
            continue
        else:
            break
    return "\n".join(lines[:keep]) + "\n"


def job(v, mode, pch_dir):
    """(source, options, want_cubin) for one variant in one mode."""
    src, opts = v.source(), base_options(v)
    cubin = True
    if mode == "ptx":
        opts[0] = "-arch=compute_" + v.arch[3:]
        opts.remove("--ptxas-options=-v")
        cubin = False
    elif mode == "syntax":
        opts += ["-fdevice-syntax-only"]
        cubin = False
    elif mode == "empty":
        src, opts, cubin = "", ["-arch=compute_" + v.arch[3:], "-std=c++17"], False
    elif mode == "headers":
        src = include_prefix(src)
        opts[0] = "-arch=compute_" + v.arch[3:]
        opts.remove("--ptxas-options=-v")
        cubin = False
    elif mode == "no_lineinfo":
        opts.remove("-lineinfo")
    elif mode == "xptxas_O3":
        opts += ["-Xptxas", "-O3"]
    elif mode == "dopt":
        opts += ["--dopt=on"]
    elif mode == "split2":
        opts += ["--split-compile=2"]
    elif mode == "minimal":
        opts += ["--minimal"]
    elif mode == "no_cache":
        opts += ["--no-cache"]
    elif mode in ("pch", "pch_defs"):
        opts += ["-pch", "--pch-dir=%s" % pch_dir]
        if mode == "pch_defs":
            prefix = include_prefix(src)
            defs = "".join("#define %s\n" % d[2:].replace("=", " ", 1) for d in v.defines)
            src = prefix + "struct tune_header_stop;\n" + defs + src[len(prefix):]
            opts = [o for o in opts if not o.startswith("-D")]
    return src, opts, cubin


def run_list(args):
    """Compile [(variant, mode)] in order in this process; [(ms, ok, log, binary)]."""
    items, pch_dir = args
    out = []
    for v, m in items:
        src, opts, cubin = job(v, m, pch_dir)
        csv = os.path.join(pch_dir, "time.csv")
        if m == "phases":
            opts.append("--time=" + csv)
        r = compile_once(src, os.path.basename(v.template), opts, cubin)
        phases = {}
        if m == "phases" and os.path.exists(csv):
            with open(csv) as f:  # File name, phase name, metric, unit
                for line in f.read().splitlines()[1:]:
                    cols = [c.strip() for c in line.split(",")]
                    phases[cols[1]] = phases.get(cols[1], 0.0) + float(cols[2])
            os.remove(csv)
        out.append(r + (phases,))
    return out


def timed_batch(variants, mode, procs):
    """Wall ms per variant when `procs` processes compile the variants at once, plus each
    compile's own ms and result."""
    chunks = [[(v, mode) for v in variants[i::procs]] for i in range(procs)]
    dirs = [tempfile.mkdtemp(prefix="nvrtc_pch_") for _ in range(procs)]
    t0 = time.perf_counter()
    if procs == 1:
        res = [run_list((chunks[0], dirs[0]))]
    else:
        with mp.get_context("fork").Pool(procs) as pool:
            res = pool.map(run_list, list(zip(chunks, dirs)))
    wall = (time.perf_counter() - t0) * 1e3
    flat = [r for rs in res for r in rs]
    return wall / len(variants), flat


def pch_split(runs):
    """Median ms of the compiles that created a PCH and of those that used one."""
    made, used = [], []
    for flat in runs:
        for f in flat:
            (made if "creating precompiled header" in f[2] else used if "using precompiled header" in f[2] else []).append(f[0])
    med = lambda xs: "%.0f ms (%d)" % (statistics.median(xs), len(xs)) if xs else "none"
    return "pch created: %s, used: %s" % (med(made), med(used))


def compare(flat, ref):
    """Whether every kernel's SASS and register count match the base compile of its variant."""
    same = all(code_of(f[3]) == ref[i][0] for i, f in enumerate(flat))
    regs = all(ptxas_regs(f[2]) == ref[i][1] for i, f in enumerate(flat))
    return "sass %s, regs %s" % ("same" if same else "DIFFERS", "same" if regs else "DIFFER")


def measure_family(variants, modes, p, reps):
    """Rows of one family with p processes. Repetitions are the outer loop, so that a change in
    the machine's load falls on every mode alike."""
    runs = {m: [] for m in modes}
    walls = {m: [] for m in modes}
    for _ in range(reps):
        for mode in modes:
            wall, flat = timed_batch(variants, mode, p)
            walls[mode].append(wall)
            runs[mode].append(flat)
    ref = {}
    if "base" in runs:
        ref = {i: (code_of(f[3]), ptxas_regs(f[2])) for i, f in enumerate(runs["base"][0])}
    rows = []
    for mode in modes:
        flat = runs[mode][-1]
        ok = all(f[1] for rs in runs[mode] for f in rs)
        per = [statistics.median(r[i][0] for r in runs[mode]) for i in range(len(variants))]
        notes = []
        if SAME_CODE.get(mode) is not None and ref and ok:
            notes.append(compare(flat, ref))
        if mode == "phases":
            names = sorted({k for rs in runs[mode] for f in rs for k in f[4]})
            notes.append(", ".join("%s %.0f ms" % (k, statistics.median(f[4].get(k, 0.0) for rs in runs[mode] for f in rs))
                                   for k in names))
        if mode.startswith("pch"):
            notes.append(pch_split(runs[mode]))
        row = {"family": variants[0].family, "mode": mode, "procs": p, "variants": len(variants), "reps": reps, "ok": ok,
               "median_ms_compile": statistics.median(per), "median_wall_ms_per_variant": statistics.median(walls[mode]),
               "note": "; ".join(notes)}
        rows.append(row)
        print("%-16s %-12s procs %d  compile %6.0f ms  wall/variant %6.0f ms  %s%s" % (
            row["family"], mode, p, row["median_ms_compile"], row["median_wall_ms_per_variant"],
            "" if ok else "FAILED ", row["note"]), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", nargs="+", help="FAMILY=TEMPLATE:DB (template relative to the repository)")
    ap.add_argument("--variants", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--modes", default="base,phases,ptx,syntax,empty,headers,no_lineinfo,xptxas_O3,dopt,split2,minimal,pch,pch_defs")
    ap.add_argument("--procs", default="1")
    ap.add_argument("--json")
    a = ap.parse_args()
    modes, procs = a.modes.split(","), [int(p) for p in a.procs.split(",")]
    print("nvrtc %s, %d cores, %s" % (nvrtc_version(), os.cpu_count(), a.arch))
    report = []
    for spec in a.family:
        variants = load_variants(spec, a.variants, a.arch)
        for p in procs:
            report += measure_family(variants, modes, p, a.reps)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"nvrtc": nvrtc_version(), "cores": os.cpu_count(), "rows": report}, f, indent=1)


if __name__ == "__main__":
    main()
