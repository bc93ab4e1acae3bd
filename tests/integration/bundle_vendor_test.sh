#!/usr/bin/env bash
# Vendor entries of tune bundle (docs/runtime.md "Selection policy") from a recorded comparison
# database (data/compare/h100-2026-11-26-all/gemm.db, H100: tune's GEMMs and cuBLAS in interleaved
# rounds), no GPU: an entry is a vendor entry exactly where the peer was faster in the entry's
# timing mode (the latest comparison's verdict "slower", else the peer's best median below the
# entry's), an oracle here deciding the same from the database; libtunert selects it as kind
# vendor, a launch without a driver says so (cuBLASLt entries) and other vendors are sent back to
# the caller (TUNERT_EVENDOR); --no-vendor keeps every kernel, --no-vendor-for those of the families named.
. "$(dirname "$0")/lib.sh"
INSPECT="${TUNERT_INSPECT:?set TUNERT_INSPECT to tools/tunert_inspect}"
cp "$SRC/data/compare/h100-2026-11-26-all/gemm.db" g.db
BUNDLE=(--recipe gemm.splitk --recipe gemm.gemv_rows --arch sm_90a --no-ptx --allow-source-change --jobs 2)

# The rule, decided again from the database for each entry of a bundle: "family problem vendor".
oracle() { python3 - "$1" "$2" <<'PY'
import sqlite3, statistics, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
bundle = sqlite3.connect("file:" + sys.argv[2] + "?mode=ro", uri=True)
lib = {"cublas": "cublaslt", "flash-sdpa": "sdpa"}
entries = bundle.execute("""select f.name, e.problem_name, e.problem_hash, e.median_ns, e.device_name from entries e
                            join families f on f.id = e.family_id where e.kind != 'fallback'""").fetchall()
for fam, prob, ph, tune_ns, dev in sorted(entries):
    key = (fam, ph, dev)
    peers = db.execute("""select substr(c.origin, 6), min(r.median_ns) from results r join configs c on c.id = r.config_id
        join recipes rc on rc.id = r.recipe_id join problems p on p.id = r.problem_id join devices d on d.id = r.device_id
        where c.origin like 'peer:%' and r.status = 'ok' and r.timing = 'burst' and rc.name = ? and p.hash = ? and d.name = ?
        group by 1 order by 2""", key).fetchall()
    if not peers: continue
    rounds = db.execute("""select m.comparison_id, m.side, case when m.side = 'peer' then substr(c.origin, 6) else c.hash end,
        m.round, m.median_ns from measurements m join comparisons k on k.id = m.comparison_id join recipes rc on rc.id = k.recipe_id
        join problems p on p.id = m.problem_id join devices d on d.id = k.device_id join configs c on c.id = m.config_id
        where m.status = 'ok' and m.timing = 'burst' and rc.name = ? and p.hash = ? and d.name = ?""", key).fetchall()
    with_peer = [r[0] for r in rounds if r[1] == "peer"]
    vendor = None
    if with_peer:
        cid = max(with_peer)
        sides = {}
        for c, side, label, rnd, ns in rounds:
            if c == cid: sides.setdefault((side, label), {})[rnd] = ns
        best = lambda s: min((statistics.median(v.values()), l) for (sd, l), v in sides.items() if sd == s)[1]
        t, p = sides[("tune", best("tune"))], sides[("peer", best("peer"))]
        ratios = [p[r] / t[r] for r in t if r in p]
        if max(ratios) < 0.9995: vendor = best("peer")
    elif peers[0][1] < tune_ns:
        vendor = peers[0][0]
    if vendor: print(fam, prob, lib.get(vendor, vendor))
PY
}
vendors() { sql "$1" "SELECT f.name || ' ' || e.problem_name || ' ' || e.vendor FROM entries e JOIN families f ON f.id = e.family_id
                      WHERE e.kind = 'vendor' ORDER BY f.name, e.problem_name"; }

"$TUNE" bundle "${BUNDLE[@]}" --db g.db -o v.bundle > bundle.txt 2>&1
check "bundle exits 0" test $? -eq 0
vendors v.bundle > got.txt
oracle g.db v.bundle > want.txt
check "vendor entries exactly where cuBLAS was faster" diff want.txt got.txt
check "cuBLAS won some of the split-K problems" contains got.txt 'gemm.splitk m128n8192k8192_col cublaslt'
check "and none of the GEMV's (its comparison: faster)" lacks got.txt 'gemm.gemv_rows'
check "a line per vendor entry" test "$(grep -c 'vendor entry: cublaslt measured faster' bundle.txt)" -eq "$(wc -l < got.txt)"
check "the line gives the comparison's verdict" contains bundle.txt 'cublas burst: comparison 2, peer/tune ratio 0.956 (0.952-0.958, 3 rounds): tune slower'
check "vendor_ns is the peer's median" test "$(sql v.bundle "SELECT vendor_ns FROM entries WHERE kind = 'vendor' AND problem_name = 'm128n8192k8192_col'")" = \
  "$(sql g.db "SELECT min(r.median_ns) FROM results r JOIN configs c ON c.id = r.config_id JOIN problems p ON p.id = r.problem_id
               JOIN recipes rc ON rc.id = r.recipe_id WHERE c.origin = 'peer:cublas' AND r.timing = 'burst'
               AND p.name = 'm128n8192k8192_col' AND rc.name = 'gemm.splitk'")"
check "a vendor entry keeps its kernel (older readers launch it)" \
  test "$(sql v.bundle "SELECT count(*) FROM entries WHERE kind = 'vendor' AND variant_id IS NULL")" -eq 0

# the entries no peer timing weighed, counted per family: the oracle's (no peer result of their problem)
unweighed() { python3 - "$1" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
bundle = sqlite3.connect("file:" + sys.argv[2] + "?mode=ro", uri=True)
entries = bundle.execute("""select f.name, e.problem_hash, e.device_name from entries e join families f on f.id = e.family_id
                            where e.kind != 'fallback' order by f.id""").fetchall()
counts = {}
for fam, ph, dev in entries:
    peer = db.execute("""select count(*) from results r join configs c on c.id = r.config_id join recipes rc on rc.id = r.recipe_id
        join problems p on p.id = r.problem_id join devices d on d.id = r.device_id
        where c.origin like 'peer:%' and r.median_ns > 0 and r.timing = 'burst' and rc.name = ? and p.hash = ? and d.name = ?""",
        (fam, ph, dev)).fetchone()[0]
    n, u = counts.get(fam, (0, 0))
    counts[fam] = (n + 1, u + (peer == 0))
for fam, (n, u) in counts.items():
    if u: print(fam, u, "of", n)
PY
}
unweighed g.db v.bundle > want_unweighed.txt
awk '/^[a-z][^ ]* \(recipes/ {fam = $1} /not weighed against a vendor library/ {print fam, $7, $8, $9}' bundle.txt > got_unweighed.txt
check "some entries had no peer timing" test -s want_unweighed.txt
check "a line per family counts the entries no peer timing weighed" diff want_unweighed.txt got_unweighed.txt

# libtunert: the selection says vendor; a launch needs the driver (cuBLASLt runs it)
"$INSPECT" v.bundle --arch sm_90a --select gemm.splitk M=128,N=8192,K=8192,b_layout=0 --try-launch > sel.txt 2>&1
check "selected as a vendor entry" contains sel.txt 'kind:     vendor cublaslt'
check "its reason" contains sel.txt 'reason:   vendor: .* where cublaslt (57.41 us) measured faster'
if ! grep -q 'a driver is present' sel.txt; then
  check "launch without a driver: no driver" contains sel.txt '^launch: no driver: '
fi
"$INSPECT" v.bundle --arch sm_90a --select gemm.splitk M=128,N=8192,K=8192,b_layout=1 > row.txt 2>&1
check "the other layout stays tune's kernel" contains row.txt 'kind:     tuned'
# an attention library's entry (edited into a copy): the caller's own path, with or without a driver
cp v.bundle s.bundle
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("update entries set vendor = '"'sdpa'"' where kind = '"'vendor'"'"); c.commit()' s.bundle
"$INSPECT" s.bundle --arch sm_90a --select gemm.splitk M=128,N=8192,K=8192,b_layout=0 --try-launch > sdpa.txt 2>&1
if ! grep -q 'a driver is present' sdpa.txt; then
  check "another vendor: TUNERT_EVENDOR, call your own path" contains sdpa.txt '^launch: vendor entry: .*vendor entry (sdpa): call your own path'
fi

# --no-vendor: kernels everywhere, the same ones
"$TUNE" bundle "${BUNDLE[@]}" --db g.db -o k.bundle --no-vendor > plain.txt 2>&1
check "--no-vendor exits 0" test $? -eq 0
check "--no-vendor: no vendor entry" test "$(sql k.bundle "SELECT count(*) FROM entries WHERE kind = 'vendor'")" -eq 0
check "--no-vendor: no vendor line" lacks plain.txt 'vendor entry'
check "--no-vendor: nothing weighed, nothing said of it" lacks plain.txt 'not weighed'
check "--no-vendor: the same variants" test "$(sql k.bundle "SELECT group_concat(problem_name || variant_id) FROM entries")" = \
  "$(sql v.bundle "SELECT group_concat(problem_name || variant_id) FROM entries")"

# --no-vendor-for: kernels in the families named (a name or a prefix), vendor entries elsewhere
"$TUNE" bundle "${BUNDLE[@]}" --db g.db -o f.bundle --no-vendor-for gemm.splitk > for.txt 2>&1
check "--no-vendor-for exits 0" test $? -eq 0
check "--no-vendor-for gemm.splitk: none there" test "$(sql f.bundle "SELECT count(*) FROM entries e JOIN families f ON f.id = e.family_id
                                                              WHERE e.kind = 'vendor' AND f.name = 'gemm.splitk'")" -eq 0
check "--no-vendor-for: the same variants" test "$(sql f.bundle "SELECT group_concat(problem_name || variant_id) FROM entries")" = \
  "$(sql v.bundle "SELECT group_concat(problem_name || variant_id) FROM entries")"
"$TUNE" bundle "${BUNDLE[@]}" --db g.db -o f2.bundle --no-vendor-for attention,gemm.gemv_rows > for2.txt 2>&1
check "--no-vendor-for other families: the vendor entries stay" test "$(vendors f2.bundle)" = "$(vendors v.bundle)"
"$TUNE" bundle "${BUNDLE[@]}" --db g.db -o f3.bundle --no-vendor-for gemm > for3.txt 2>&1
check "--no-vendor-for a prefix (gemm): none" test "$(sql f3.bundle "SELECT count(*) FROM entries WHERE kind = 'vendor'")" -eq 0

# Without comparison rounds the medians decide, in the entry's timing mode only: a synthetic torch
# peer (not a measurement) faster than the GEMV at one problem in burst, and at another only in
# the sustained mode.
python3 - g.db <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("delete from measurements")
db.execute("insert into configs(recipe_name, hash, params_json, origin) values ('gemm.gemv_rows', 'synthetic-torch', '{\"peer\":\"torch\"}', 'peer:torch')")
cfg = db.execute("select id from configs where hash = 'synthetic-torch'").fetchone()[0]
rid = db.execute("select id from recipes where name = 'gemm.gemv_rows' order by id desc").fetchone()[0]
dev = db.execute("select d.id from results r join devices d on d.id = r.device_id join configs c on c.id = r.config_id where c.origin like 'peer:%'").fetchone()[0]
for prob, timing, ns in (("m1n14336k4096_row", "burst", 1000.0), ("m1n4096k14336_row", "sustained", 1.0)):
    pid = db.execute("select id from problems where recipe_name = 'gemm.gemv_rows' and name = ?", (prob,)).fetchone()[0]
    db.execute("""insert into results(recipe_id, device_id, config_id, problem_id, status, median_ns, min_ns, max_ns, samples, timing)
                  values (?, ?, ?, ?, 'ok', ?, ?, ?, 10, ?)""", (rid, dev, cfg, pid, ns, ns, ns, timing))
db.commit()
PY
"$TUNE" bundle "${BUNDLE[@]}" --db g.db -o m.bundle > medians.txt 2>&1
check "bundle without comparisons exits 0" test $? -eq 0
vendors m.bundle > got2.txt
oracle g.db m.bundle > want2.txt
check "vendor entries by the medians" diff want2.txt got2.txt
check "the synthetic burst peer wins its problem" contains got2.txt 'gemm.gemv_rows m1n14336k4096_row torch'
check "a sustained peer does not judge a burst entry" lacks got2.txt 'm1n4096k14336_row'
check "the medians' line" contains medians.txt 'torch burst median 1.00 us, tune.s .* (no comparison rounds)'
finish
