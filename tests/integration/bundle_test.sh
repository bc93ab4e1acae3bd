#!/usr/bin/env bash
# tune bundle + libtunert without a GPU: a bundle from the recorded copy.db (cubin and PTX for
# sm_90a compiled here by NVRTC), opened and selected by libtunert (tunert_inspect); launching
# says "no driver" cleanly; a recipe changed since it was measured is refused unless allowed;
# the expression form of a recipe gives portable variants (nearest tuned problem, requirements);
# damaged and newer-version bundles are refused with a message.
. "$(dirname "$0")/lib.sh"
INSPECT="${TUNERT_INSPECT:?set TUNERT_INSPECT}"
REC="$SRC/data/recorded/copy.db"

# 1. the recipe as it is now: its templates changed since the recording -> refused, then allowed
mkdir -p t1/recipes && cp "$SRC/recipes/copy.lua" t1/recipes/ && cp -r "$SRC/templates" t1/templates
echo "// a change after the measurement" >> t1/templates/copy/copy.cuh
(cd t1 && "$TUNE" bundle --recipe copy --db "$REC" --arch sm_90a -o c.bundle) >refused.txt 2>&1
check "changed sources are refused (rc $?)" test ! -f t1/c.bundle
check "the refusal says why and what to do" contains refused.txt "allow-source-change"
(cd t1 && "$TUNE" bundle --recipe copy --db "$REC" --arch sm_90a -o c.bundle --allow-source-change) >b.txt 2>&1
check "bundle with --allow-source-change exits 0" test $? -eq 0
check "it warns that the measurement was of other code" contains b.txt "warning: copy / 64MiB: measured with source"
check "reports what it wrote" contains b.txt "wrote c.bundle: 1 family, 2 problems, 2 variants, 4 binaries"
check "copy's Lua-function geometry makes exact-only entries" contains b.txt "exact-only: launch grid: a Lua function"
B=t1/c.bundle
python3 - "$B" >db.txt <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("app", db.execute("pragma application_id").fetchone()[0])
print("format", dict(db.execute("select key, value from meta")).get("format_major"))
for kind, arch, head in db.execute("select kind, arch, hex(substr(data, 1, 4)) from binaries order by id"):
    print("bin", kind, arch, head)
for (same,) in db.execute("select same_binary from entries"):
    print("same_binary", same)
PY
check "application id tunb" contains db.txt "app 1953853026"
check "format 1" contains db.txt "format 1"
check "sm_90a cubins are ELF" contains db.txt "bin cubin sm_90a 7F454C46"
check "portable PTX for compute_90 (copy uses no sm_90a-only instruction)" contains db.txt "bin ptx compute_90 2F2F"
check "provenance: not the measured binary" contains db.txt "same_binary 0"

# 2. libtunert: open, select, launch without a driver
"$INSPECT" "$B" --arch sm_90a >inspect.txt 2>&1
check "inspect exits 0" test $? -eq 0
check "inspect lists the tuned problems" contains inspect.txt "64MiB"
# the recording's own best for 64MiB (read from it, so the test follows a re-recording)
best=$(sql "$REC" "select json_extract(c.params_json, '$.VEC_BYTES') || '|' || printf('%.2f us', r.median_ns / 1000.0) from results r join configs c on c.id = r.config_id join problems p on p.id = r.problem_id where p.name = '64MiB' and r.status = 'ok' order by r.median_ns, r.id limit 1")
check "with their variants" contains inspect.txt "\"VEC_BYTES\":${best%|*},"
check "and measured times" contains inspect.txt "${best#*|}"
"$INSPECT" "$B" --select copy N=16777216 --try-launch >sel.txt 2>&1
check "exact selection" contains sel.txt "reason:   exact"
check "geometry for 64MiB" contains sel.txt "grid (16384, 1, 1) block (256, 1, 1)"
if python3 -c "import ctypes; ctypes.CDLL('libcuda.so.1')" 2>/dev/null; then
  echo "(a driver is present: the no-driver launch check is skipped)"
else
  check "launching says there is no driver" contains sel.txt "launch: no driver: no NVIDIA driver"
fi
"$INSPECT" "$B" --select copy N=1000 >nosel.txt 2>&1
check "other sizes of an exact-only family are refused (rc $?)" contains nosel.txt "error (no variant)"
check "with the reason" contains nosel.txt "launch grid: a Lua function"
"$INSPECT" "$B" --arch sm_80 >arch.txt 2>&1
check "another architecture is refused" contains arch.txt "no binary runs on sm_80"

# 3. the expression form: portable variants, replayed from the same recording
mkdir -p t2/recipes && cp "$SRC/tests/fixtures/bundle/copy_expr.lua" t2/recipes/copy.lua && ln -s "$SRC/templates" t2/templates
(cd t2 && "$TUNE" run recipes/copy.lua --device "replay:$REC" --db p.db --quiet --seed 1) >run.txt 2>&1
check "the expression recipe replays (rc $?)" contains run.txt "best for 64MiB"
(cd t2 && "$TUNE" bundle --recipe copy --db p.db -o p.bundle) >pb.txt 2>&1
check "bundle of the expression recipe needs no flag" contains pb.txt "wrote p.bundle"
check "its entries are portable" contains pb.txt "portable: expressions"
P=t2/p.bundle
"$INSPECT" "$P" --select copy N=1000000 >near.txt 2>&1
check "a problem that was not tuned gets the nearest variant" contains near.txt "reason:   nearest"
check "tuned for 64MiB" contains near.txt "tuned for: 64MiB"
# the one-shot grid of the chosen variant, ceil(N / (BLOCK * VEC_BYTES / 4 * ILP)), worked out here
geo=$(python3 -c 'import json, re, sys
v = json.loads(re.search(r"variant: +(\{.*\})", open(sys.argv[1]).read()).group(1))
assert not v["GRID_STRIDE"], v
per = v["BLOCK"] * v["VEC_BYTES"] // 4 * v["ILP"]
print("grid (%d, 1, 1) block (%d, 1, 1)" % (-(-1000000 // per), v["BLOCK"]))' near.txt)
check "geometry evaluated for N=1000000 ($geo)" contains near.txt "$geo"
check "scalar n from its expression" contains near.txt "= 1000000"
"$INSPECT" "$P" --select copy N=1000001 >req.txt 2>&1
check "a failing requirement is reported per variant" contains req.txt "requirement 1 of 'N % (VEC_BYTES // 4) == 0' is false"
check "and the fallback serves the problem" contains req.txt "reason:   fallback"
check "the selection says its kind" contains req.txt "kind:     fallback"
check "the bundle wrote the fallback entry" contains pb.txt "fallback (.*MiB)"
sql "$P" "select kind, count(*) from entries group by kind order by kind" >kinds.txt
check "one fallback entry (one set of defines), two tuned" test "$(tr '\n' ' ' <kinds.txt)" = "fallback|1 tuned|2 "
sql "$P" "select value from meta where key = 'min_reader_minor'" >mr.txt
check "a domain and a fallback need a 1.3 reader" test "$(cat mr.txt)" = "3"
"$INSPECT" "$P" --select copy N=5000000000 >dom.txt 2>&1
check "a problem outside the domain is refused with the rule" contains dom.txt "outside the domain of copy: N <= 4294967296"
"$INSPECT" "$P" --exact --select copy N=1000000 >ex.txt 2>&1
check "exact-only mode refuses the nearest" contains ex.txt "TUNERT_OPEN_EXACT_ONLY"

# 4. damaged and newer bundles
head -c 20000 "$P" > t2/trunc.bundle
"$INSPECT" t2/trunc.bundle >trunc.txt 2>&1
check "a truncated bundle is refused" contains trunc.txt "truncated"
cp "$P" t2/v2.bundle
python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute(\"update meta set value='2' where key='format_major'\"); d.commit()" t2/v2.bundle
"$INSPECT" t2/v2.bundle >v2.txt 2>&1
check "a newer major version is refused" contains v2.txt "bundle format 2.[0-9]*, but this libtunert"
"$INSPECT" "$REC" >notb.txt 2>&1
check "a results database is not a bundle" contains notb.txt "results database, not a bundle"
(cd t2 && "$TUNE" bundle --recipe nosuch --db p.db -o x.bundle) >none.txt 2>&1
check "an unknown recipe is a clear error" contains none.txt "no verified (ok) result for nosuch"
check "and no file is left" test ! -e t2/x.bundle -a ! -e t2/x.bundle.tmp
finish
