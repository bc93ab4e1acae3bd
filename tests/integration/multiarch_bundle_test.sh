#!/usr/bin/env bash
# Multi-arch bundles without a GPU (docs/runtime.md "Binaries and architectures"): the fixture
# tests/fixtures/recipes/multiarch.lua has variants of plain code (ISA 0), sm_90 code (ISA 1:
# %cluster_ctarank) and sm_90a-only code (ISA 2: wgmma.fence). Its database comes from
# --compile-only for sm_90a with SYNTHETIC times (synth_ok: nothing is a measurement). Bundled for
# sm_90a,sm_80, a variant that does not compile for sm_80 is skipped there (not the bundle), with
# the compiler's reason; PTX is portable only (compute_90 for ISA 1, none for ISA 2); libtunert
# passes over a variant with no binary for the device and says why, for sm_80, sm_90, sm_100.
# A family left with no variant for an arch fails the bundle unless --allow-missing-arch; a recipe
# fallback that compiles there serves it; the arch it was measured on must compile.
. "$(dirname "$0")/lib.sh"
INSPECT="${TUNERT_INSPECT:?set TUNERT_INSPECT}"
FX="$SRC/tests/fixtures/recipes/multiarch.lua"
V0='{"ISA":0,"BLOCK":256}'
V1='{"ISA":1,"BLOCK":256}'
V2='{"ISA":2,"BLOCK":128}'

prep() { # dir recipe-file winners... (problem config pairs for synth_ok)
  local d=$1 r=$2; shift 2
  mkdir -p "$d/recipes" && cp "$r" "$d/recipes/multiarch.lua" && cp -r "$SRC/tests/fixtures/templates" "$d/"
  (cd "$d" && "$TUNE" run recipes/multiarch.lua --compile-only --arch sm_90a --db f.db) >"$d.compile.txt" 2>&1
  synth_ok "$d/f.db" "$@"
}
bundle() { # dir out-file args...
  local d=$1 out=$2; shift 2
  (cd "$d" && "$TUNE" bundle --recipe multiarch --db f.db "$@") >"$out" 2>&1
}

# 1. each problem won by another kind of variant: sm_80 skips ISA 1 and ISA 2
prep t1 "$FX" n1k "$V2" n64k "$V1" n1m "$V0"
check "the fixture compiles for sm_90a (6 configs)" contains t1.compile.txt "compile: 6 compiled"
bundle t1 b1.txt --arch sm_90a,sm_80 -o m.bundle
check "bundle for sm_90a,sm_80 written (rc $?)" contains b1.txt "wrote m.bundle: 1 family, 3 problems, 3 variants, 7 binaries"
check "sm_80: two variants skipped" contains b1.txt "^sm_80: 2 of 3 variants skipped (they do not compile for it):"
check "ISA 2 with the compiler's reason" contains b1.txt "multiarch $V2: Instruction 'wgmma.fence' not supported on .target 'sm_80'"
check "ISA 1 with the compiler's reason" contains b1.txt "multiarch $V1: Feature '%cluster_ctarank' requires .target sm_90"
check "what serves n1k on sm_80" contains b1.txt "tuned problem multiarch / n1k there: nearest n1m $V0 \[cubin sm_80\]"
check "what serves n64k on sm_80" contains b1.txt "tuned problem multiarch / n64k there: nearest n1m $V0 \[cubin sm_80\]"
check "sm_90a skipped nothing" lacks b1.txt "^sm_90a:"
check "PTX summary" contains b1.txt "PTX (JIT on newer GPUs): compute_90 for 2 of 3 variants; compute_80 for 1 of 3 variants; none for 1"
check "ISA 2 has no PTX, and why" contains b1.txt "no PTX: multiarch $V2: sm_90a-only code (for sm_90: Instruction 'wgmma.fence' not supported on .target 'sm_90')"
sql t1/m.bundle "select v.params_json, b.kind, b.arch from binaries b join variants v on v.id = b.variant_id order by v.params_json, b.kind, b.arch" >bins.txt
cat >want.txt <<EOF
$V0|cubin|sm_80
$V0|cubin|sm_90a
$V0|ptx|compute_80
$V0|ptx|compute_90
$V1|cubin|sm_90a
$V1|ptx|compute_90
$V2|cubin|sm_90a
EOF
check "the bundle records which variant has which binary" cmp -s bins.txt want.txt
cmp -s bins.txt want.txt || diff want.txt bins.txt >&2
check "meta archs: the targets and the PTX there is" test "$(sql t1/m.bundle "select value from meta where key = 'archs'")" = "sm_90a,sm_80,compute_90,compute_80"
check "no compute_90a PTX (it would run on 9.0 only)" test "$(sql t1/m.bundle "select count(*) from binaries where arch like '%a' and kind = 'ptx'")" = 0
check "format 1.6" test "$(sql t1/m.bundle "select group_concat(value, '.') from meta where key in ('format_major', 'format_minor')")" = "1.6"

# libtunert on each architecture
"$INSPECT" t1/m.bundle --arch sm_90a --select multiarch N=1024 >s90.txt 2>&1
check "9.0: n1k exact, ISA 2, its cubin" contains s90.txt "variant:  $V2"
check "9.0: exact" contains s90.txt "reason:   exact"
check "9.0: cubin sm_90a" contains s90.txt "binary:   cubin sm_90a$"
"$INSPECT" t1/m.bundle --arch sm_80 --select multiarch N=1024 --candidates >s80.txt 2>&1
check "8.0: n1k served by ISA 0" contains s80.txt "variant:  $V0"
check "8.0: its sm_80 cubin" contains s80.txt "binary:   cubin sm_80$"
check "8.0: kind nearest" contains s80.txt "kind:     nearest"
check "8.0: the reason says n1k is tuned but passed over" contains s80.txt "is tuned problem n1k, but its entry cannot serve it here"
check "8.0: candidates: ISA 0 first" contains s80.txt "  1. ok     nearest  n1m $V0$"
check "8.0: ISA 2 passed over: arch-specific, skipped by tune bundle" \
  contains s80.txt "passed tuned    n1k $V2: no binary runs on sm_80 (this variant has cubin sm_90a (arch-specific: 9.0 only), no PTX); tune bundle skipped sm_80 for this variant"
check "8.0: ISA 1 passed over" contains s80.txt "passed nearest  n64k $V1: no binary runs on sm_80 (this variant has cubin sm_90a (arch-specific: 9.0 only), ptx compute_90)"
"$INSPECT" t1/m.bundle --arch sm_100 --select multiarch N=1024 --candidates >s100.txt 2>&1
check "10.0: ISA 1 through its portable PTX" contains s100.txt "variant:  $V1"
check "10.0: JIT of compute_90" contains s100.txt "binary:   ptx compute_90 (JIT by the driver)"
check "10.0: ISA 2 has nothing that runs there" contains s100.txt "n1k $V2: no binary runs on sm_100 (this variant has cubin sm_90a (arch-specific: 9.0 only), no PTX)$"
"$INSPECT" t1/m.bundle --arch sm_86 >l86.txt 2>&1
check "8.6: every tuned problem served by the sm_80 cubin" test "$(grep -c "$V0  \[cubin sm_80\]" l86.txt)" -eq 3

# 2. --quiet still names what was skipped
bundle t1 q.txt --arch sm_90a,sm_80 --quiet -o q.bundle
check "--quiet: skipped variants still listed" contains q.txt "^sm_80: 2 of 3 variants skipped"
check "--quiet: no per-problem summary" lacks q.txt "portable: expressions"

bundle t1 np.txt --arch sm_90a,sm_80 --no-ptx -o np.bundle
check "--no-ptx: cubins only, sm_80 for ISA 0 alone" contains np.txt "wrote np.bundle: 1 family, 3 problems, 3 variants, 4 binaries"
check "--no-ptx: no PTX line" lacks np.txt "PTX (JIT"

# 3. measured on sm_90a, bundled for sm_80 only: the variants that do not compile there have no binary
bundle t1 b80.txt --arch sm_80 -o only80.bundle
check "sm_80 only: written, without the variants that have no binary (rc $?)" contains b80.txt "wrote only80.bundle: 1 family, 1 problems, 1 variants, 2 binaries"
check "sm_80 only: the problems left out are named" contains b80.txt "tuned problem multiarch / n1k there: nearest n1m $V0 \[cubin sm_80\] (its own variant compiles for no --arch: left out of the bundle)"
"$INSPECT" t1/only80.bundle --arch sm_80 --select multiarch N=65536 >o80.txt 2>&1
check "sm_80 only: n64k served by ISA 0" contains o80.txt "variant:  $V0"

# 4. the arch a variant was measured on must compile: a template that broke ISA 2 since is an error
cp -r t1 t4
printf '#if ISA == 2\n#error "broken after the measurement (multiarch_bundle_test)"\n#endif\n' >>t4/templates/multiarch/multiarch.cuh
bundle t4 b4.txt --arch sm_90a,sm_80 --allow-source-change -o broken.bundle
check "a variant that no longer compiles for its measured arch fails the bundle (rc $?)" test ! -f t4/broken.bundle
check "and says so" contains b4.txt "does not compile for sm_90a, the architecture it was measured on"

# 5. every winner needs sm_90: family multiarch has nothing for sm_80
prep t5 "$FX" n1k "$V2" n64k "$V1" n1m '{"ISA":1,"BLOCK":128}'
bundle t5 b5.txt --arch sm_90a,sm_80 -o m.bundle
check "no variant for sm_80: not written (rc $?)" test ! -f t5/m.bundle
check "the refusal names the arch, the family and the reason" contains b5.txt "sm_80: family multiarch: none of its 3 variants compiles for it (Instruction 'wgmma.fence' not supported on .target 'sm_80')"
check "and what to do" contains b5.txt "pass --allow-missing-arch"
bundle t5 b5a.txt --arch sm_90a,sm_80 --allow-missing-arch -o m.bundle
check "--allow-missing-arch writes it (rc $?)" contains b5a.txt "wrote m.bundle"
check "with a warning" contains b5a.txt "warning: sm_80: family multiarch: none of its 3 variants compiles for it"
check "the summary says libtunert refuses the family there" contains b5a.txt "family multiarch: no variant at all (--allow-missing-arch): libtunert refuses it on sm_80 with TUNERT_EARCH"
"$INSPECT" t5/m.bundle --arch sm_80 >e80.txt 2>&1
check "libtunert refuses the family on sm_80" contains e80.txt "error (no binary for this architecture): .*family multiarch: none of its 3 variants runs on sm_80"
"$INSPECT" t5/m.bundle --arch sm_90a --select multiarch N=65536 >e90.txt 2>&1
check "and serves it on 9.0" contains e90.txt "reason:   exact"

# 6. the same winners with a fallback of plain code: it serves every problem on sm_80
sed 's|^  domain = { "N >= 1" },|&\n  fallback = { ISA = 0, BLOCK = 128 },|' "$FX" >fb.lua
check "fallback form has the field" test "$(grep -c 'fallback = { ISA = 0' fb.lua)" -eq 1
prep t6 fb.lua n1k "$V2" n64k "$V1" n1m '{"ISA":1,"BLOCK":128}'
bundle t6 b6.txt --arch sm_90a,sm_80 -o m.bundle
check "with a fallback: written (rc $?)" contains b6.txt "wrote m.bundle"
check "the tuned problems go to the fallback on sm_80" contains b6.txt "tuned problem multiarch / n64k there: fallback"
"$INSPECT" t6/m.bundle --arch sm_80 --select multiarch N=65536 >f80.txt 2>&1
check "8.0: n64k served by the fallback" contains f80.txt "kind:     fallback"
check "8.0: plain code, sm_80 cubin" contains f80.txt 'variant:  {"ISA":0,"BLOCK":128}'
check "8.0: the reason says its tuned entry cannot serve it" contains f80.txt "is tuned problem n64k, but its entry cannot serve it here"
finish
