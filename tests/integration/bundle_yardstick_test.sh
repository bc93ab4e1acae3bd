#!/usr/bin/env bash
# tune bundle warns when families that serve one problem on one GPU model were timed under
# different yardsticks (timing mode, timer, measurement protocol; docs/runtime.md), without a GPU:
# the fixture tests/fixtures/recipes/cluster.lua and a copy of it named cluster.alt (the same
# problems) are compiled (--compile-only) into a database each and marked ok with SYNTHETIC times
# (nothing is a measurement). Both timed alike: no warning. cluster.alt's from a file older than
# the timer and protocol columns, timed sustained, or without a timer: one warning line per
# problem, naming each family's yardstick; the bundle is written all the same and tune exits 0.
. "$(dirname "$0")/lib.sh"

mkdir -p w/recipes && cp "$SRC/tests/fixtures/recipes/cluster.lua" w/recipes/ && cp -r "$SRC/tests/fixtures/templates" w/
sed 's/name = "cluster",/name = "cluster.alt",/' w/recipes/cluster.lua >w/recipes/cluster_alt.lua
check "the copy is family cluster.alt" contains w/recipes/cluster_alt.lua 'name = "cluster.alt",'
(cd w && "$TUNE" run recipes/cluster.lua --compile-only --db a.db && "$TUNE" run recipes/cluster_alt.lua --compile-only --db b.db) >compile.txt 2>&1
check "both families compile" test "$(grep -c "compile: 4 compiled" compile.txt)" -eq 2
synth_ok w/a.db nb64r2 '{"CL":4,"THREADS":64}' nb6r1 '{"CL":2,"THREADS":32}'
synth_ok w/b.db nb64r2 '{"CL":2,"THREADS":32}' nb6r1 '{"CL":2,"THREADS":64}'
# yardstick DB TIMING TIMER PROTOCOL: every result of DB timed so
yardstick() { python3 - "$@" <<'PY'
import sqlite3, sys
d = sqlite3.connect(sys.argv[1])
d.execute("update results set timing = ?, timer = ?, protocol = ?", (sys.argv[2], sys.argv[3], int(sys.argv[4])))
d.commit()
PY
}
yardstick w/a.db burst cupti 1
yardstick w/b.db burst cupti 1

# bundle OUT DB...: tune bundle of both families, stdout and stderr apart, its exit status in OUT.rc
bundle() {
  local out=$1; shift
  local args=()
  for d in "$@"; do args+=(--db "$d"); done
  (cd w && "$TUNE" bundle --recipe cluster "${args[@]}" -o "$out.bundle" >"../$out.out" 2>"../$out.err"; echo $? >"../$out.rc")
}
W="tune bundle: warning: cluster and cluster.alt both serve"

# 1. both timed alike: no warning
bundle alike a.db b.db
check "alike: the bundle is written (rc $(cat alike.rc))" test "$(cat alike.rc)" -eq 0 -a -f w/alike.bundle
check "alike: it holds both families" test "$(sql w/alike.bundle "select group_concat(name) from (select name from families order by name)")" = "cluster,cluster.alt"
check "alike: no yardstick warning" lacks alike.err "timed differently"

# 2. cluster.alt's results from a file older than the timer and protocol columns (schema 3, as
#    data/recorded/gemm.db): unrecorded
cp w/b.db w/old.db
python3 - w/old.db <<'PY'
import sqlite3, sys
d = sqlite3.connect(sys.argv[1])
for (v,) in d.execute("select name from sqlite_master where type = 'view'").fetchall():
    d.execute(f"drop view {v}")
for t in ("selections", "measurements", "comparisons", "schema_migrations"):
    d.execute(f"drop table if exists {t}")
for c in ("timing", "timer", "event_median_ns", "rel_ci", "power_w", "gpu", "protocol", "honest_rel_l2"):
    d.execute(f"alter table results drop column {c}")
d.execute("alter table recipes drop column code_hash")
d.execute("pragma user_version = 3")
d.commit()
PY
bundle old a.db old.db
check "old file: the bundle is still written (rc $(cat old.rc))" test "$(cat old.rc)" -eq 0 -a -f w/old.bundle
check "old file: a warning for nb64r2, naming each family's yardstick" \
  contains old.err "$W nb64r2 on synthetic CPU-test device (no measurement) but were timed differently (cluster: burst, cupti, protocol 1; cluster.alt: burst, timer unrecorded, protocol unrecorded); choosing among families compares their recorded times"
check "old file: one line per problem" test "$(grep -c "timed differently" old.err)" -eq 2
check "old file: and one for nb6r1" contains old.err "$W nb6r1 on "

# 3. another timing mode, and a new file's result without a timer
cp w/b.db w/sustained.db && yardstick w/sustained.db sustained cupti 1
bundle sustained a.db sustained.db
check "sustained: warned" contains sustained.err "(cluster: burst, cupti, protocol 1; cluster.alt: sustained, cupti, protocol 1)"
check "sustained: the bundle is written" test "$(cat sustained.rc)" -eq 0 -a -f w/sustained.bundle
cp w/b.db w/notimer.db && yardstick w/notimer.db burst "" 1
bundle notimer a.db notimer.db
check "no timer: warned" contains notimer.err "cluster.alt: burst, timer unrecorded, protocol 1)"

# 4. other problems do not pair: cluster.alt without nb6r1 warns for nb64r2 only
cp w/old.db w/half.db
python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("delete from results where problem_id in (select id from problems where name = ?)", ("nb6r1",)); d.commit()' w/half.db
bundle half a.db half.db
check "half: one warning, for nb64r2" test "$(grep -c "timed differently" half.err)" -eq 1 -a "$(grep -c "serve nb64r2" half.err)" -eq 1
finish
