#!/usr/bin/env bash
# Bundles of several GPU models (bundle format 1.5, docs/runtime.md "Bundles of several GPU models"),
# without a GPU: the fixture tests/fixtures/recipes/cluster.lua is compiled (--compile-only) once, its
# database copied into two, and each marked ok with SYNTHETIC times (nothing is a measurement) and
# renamed to a GPU model of its own with a different winner per problem. `tune bundle` over both
# (two --db, and a `tune db merge` of them) writes entries per model; libtunert opened without a
# device, naming each model in turn (tunert_inspect --device-name, TUNERT_DEVICE_NAME, the python
# package's device_name), selects that model's own winner; a model without an entry that serves a
# problem takes the other model's (same arch), saying so; --device keeps one model; a single-model
# bundle downgraded to format 1.4 still opens.
. "$(dirname "$0")/lib.sh"
INSPECT="${TUNERT_INSPECT:?set TUNERT_INSPECT}"
A="synthetic model A (no measurement)"
B="synthetic model B (no measurement)"

mkdir -p w/recipes && cp "$SRC/tests/fixtures/recipes/cluster.lua" w/recipes/ && cp -r "$SRC/tests/fixtures/templates" w/
(cd w && "$TUNE" run recipes/cluster.lua --compile-only --db f.db) >compile.txt 2>&1
check "fixture compiles" contains compile.txt "compile: 4 compiled"
cp w/f.db w/a.db && cp w/f.db w/b.db
# winners: A takes CL 4 / THREADS 64 at nb64r2 and CL 2 / THREADS 32 at nb6r1; B the others
synth_ok w/a.db nb64r2 '{"CL":4,"THREADS":64}' nb6r1 '{"CL":2,"THREADS":32}'
synth_ok w/b.db nb64r2 '{"CL":2,"THREADS":32}' nb6r1 '{"CL":2,"THREADS":64}'
rename() { python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("update devices set name = ?", (sys.argv[2],)); d.commit()' "$1" "$2"; }
rename w/a.db "$A"
rename w/b.db "$B"

# 1. two databases given together: entries of both models, min_reader_minor 5
(cd w && "$TUNE" bundle --recipe cluster --db a.db --db b.db -o two.bundle) >two.txt 2>&1
check "a bundle of two models is written and checked" contains two.txt "checked with libtunert"
check "the summary names both models" contains two.txt "GPU models: '$A', '$B'"
check "format 1.6, min_reader_minor 5" test "$(sql w/two.bundle "select group_concat(value, ' ') from (select value from meta where key in ('format_minor', 'min_reader_minor') order by key)")" = "6 5"
sql w/two.bundle "select m.name, e.problem_name, v.params_json from entries e join models m on m.id = e.model_id
  join variants v on v.id = e.variant_id order by m.name, e.problem_name" >entries.txt
cat >want.txt <<EOF
$A|nb64r2|{"CL":4,"THREADS":64}
$A|nb6r1|{"CL":2,"THREADS":32}
$B|nb64r2|{"CL":2,"THREADS":32}
$B|nb6r1|{"CL":2,"THREADS":64}
EOF
check "one entry per problem and model, each model's own winner" cmp -s entries.txt want.txt
[ -s entries.txt ] && ! cmp -s entries.txt want.txt && diff want.txt entries.txt >&2
check "models rows: the arch each was measured on" test "$(sql w/two.bundle "select group_concat(arch) from models")" = "$(sql w/a.db "select arch from devices"),$(sql w/b.db "select arch from devices")"

# 2. libtunert picks by the model it is told it runs on
sel() { # bundle name dims out [more inspect args]
  local b=$1 n=$2 d=$3 o=$4; shift 4
  "$INSPECT" "$b" --arch sm_90a --device-name "$n" --select cluster "$d" "$@" >"$o" 2>&1
}
sel w/two.bundle "$A" NB=64,ROWS=2 a64.txt
check "model A: its nb64r2 winner" contains a64.txt 'variant:  {"CL":4,"THREADS":64}'
check "... exact, measured on A" contains a64.txt "reason:   exact: .* on $A)"
sel w/two.bundle "$B" NB=64,ROWS=2 b64.txt
check "model B: its nb64r2 winner" contains b64.txt 'variant:  {"CL":2,"THREADS":32}'
sel w/two.bundle "$A" NB=6,ROWS=1 a6.txt
check "model A: its nb6r1 winner" contains a6.txt 'variant:  {"CL":2,"THREADS":32}'
sel w/two.bundle "$B" NB=6,ROWS=1 b6.txt
check "model B: its nb6r1 winner" contains b6.txt 'variant:  {"CL":2,"THREADS":64}'
check "... no word of another model" lacks b6.txt "another GPU model"
TUNERT_DEVICE_NAME="model b" "$INSPECT" w/two.bundle --arch sm_90a --select cluster NB=64,ROWS=2 >env.txt 2>&1
check "TUNERT_DEVICE_NAME (a part of the name, any case) picks model B" contains env.txt 'variant:  {"CL":2,"THREADS":32}'
"$INSPECT" w/two.bundle --arch sm_90a --device-name "$B" >list.txt 2>&1
check "tunert_inspect lists the models ..." contains list.txt "GPU models: 2; selecting for $B"
check "... model A: same arch, 2 tuned problems" contains list.txt "$A *sm_90a* .* 2 tuned problems  ranks: same arch"
check "... model B: this GPU" contains list.txt "$B *sm_90a* .* 2 tuned problems  ranks: this GPU"
check "... and each problem once, with B's winner" test "$(grep -c '^  nb' list.txt)" -eq 2
check "... nb64r2 listed with B's winner" contains list.txt 'nb64r2 .*{"CL":2,"THREADS":32}'
# a problem no entry of A serves at NB=62 (4 does not divide 62): A's own nearest (nb6r1) before B's nb64r2
sel w/two.bundle "$A" NB=62,ROWS=2 a62.txt --candidates
check "NB=62 on A: A's own portable entry first" contains a62.txt 'variant:  {"CL":2,"THREADS":32}'
check "... tuned for nb6r1 on A" contains a62.txt "tuned for: nb6r1 .* on $A)"
check "... candidates: A's first, then B's, each naming its model" test "$(grep -c "^  [0-9]*\. ok .* on $A$\|^  [0-9]*\. ok .* on $B$" a62.txt)" -ge 2
check "... B's nb64r2 ranks after A's nb6r1" test "$(grep -n "ok .*nb6r1.* on $A$" a62.txt | cut -d: -f1)" -lt "$(grep -n "ok .*nb64r2.* on $B$" a62.txt | cut -d: -f1)"
# an unknown model: every model ranks alike, and the reason says why
sel w/two.bundle "NVIDIA H20" NB=64,ROWS=2 unk.txt
check "an unknown model selects (ties: bundle order)" contains unk.txt "reason:   exact"
check "... saying the model is unknown" contains unk.txt "the bundle has no entry tuned on 'NVIDIA H20'"

# 3. a model with no entry that serves a problem: the other model's of the same arch, said so
cp w/a.db w/a6.db
python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("delete from results where problem_id in (select id from problems where name = ?)", ("nb6r1",)); d.commit()' w/a6.db
(cd w && "$TUNE" bundle --recipe cluster --db a6.db --db b.db -o gap.bundle) >gap.txt 2>&1
check "a bundle where A lacks nb6r1" contains gap.txt "checked with libtunert"
sel w/gap.bundle "$A" NB=6,ROWS=1 gap6.txt
check "A at nb6r1: B's winner" contains gap6.txt 'variant:  {"CL":2,"THREADS":64}'
check "... the reason names the other model of the same arch" contains gap6.txt "tuned on $B, another GPU model of the same arch (sm_90a*) as this $A"

# 4. tune db merge of the two databases: the same bundle contents
"$TUNE" db merge w/m.db w/a.db w/b.db >merge.txt 2>&1
check "merged" test -s w/m.db
(cd w && "$TUNE" bundle --recipe cluster --db m.db -o merged.bundle) >merged.txt 2>&1
check "a bundle from the merged database" contains merged.txt "checked with libtunert"
sql w/merged.bundle "select m.name, e.problem_name, v.params_json from entries e join models m on m.id = e.model_id
  join variants v on v.id = e.variant_id order by m.name, e.problem_name" >merged_entries.txt
check "the merged database gives the same entries" cmp -s merged_entries.txt want.txt

# 5. --device keeps one model: no min_reader_minor, readable by older readers
(cd w && "$TUNE" bundle --recipe cluster --db m.db --device "model B" -o one.bundle) >one.txt 2>&1
check "--device: one model" test "$(sql w/one.bundle "select count(*) || ' ' || min(name) from models")" = "1 $B"
check "... no newer reader needed" test "$(sql w/one.bundle "select count(*) from meta where key = 'min_reader_minor' and value = '5'")" = "0"
"$TUNE" bundle --help >help.txt 2>&1
check "--help says that --device filters the models" contains help.txt "only the GPU models whose name contains NAME"

# 6. an old (1.4) single-model bundle opens and selects; the device's model does not matter to it
cp w/one.bundle w/old.bundle
python3 - w/old.bundle <<'PY'
import sqlite3, sys
d = sqlite3.connect(sys.argv[1])
d.execute("drop table models")  # entries.model_id stays: a 1.4 reader never reads it
d.execute("update meta set value = '4' where key = 'format_minor'")
d.commit()
PY
sel w/old.bundle "$A" NB=64,ROWS=2 old.txt
check "a 1.4 bundle opens and selects its entry" contains old.txt 'variant:  {"CL":2,"THREADS":32}'
"$INSPECT" w/old.bundle --arch sm_90a >oldlist.txt 2>&1
check "... as one model, that of its meta" contains oldlist.txt "GPU models: 1"
check "... named" contains oldlist.txt "$B"

# 7. the python package selects through libtunert the same way (not under the sanitizers: python
#    cannot load a libtunert built with ASan, whose runtime must come first)
if [ -n "${TUNERT_LIBRARY:-}" ] && [ -z "${TUNE_SANITIZED:-}" ]; then
  PYTHONPATH="$SRC/python/src" python3 - w/two.bundle "$A" "$B" >py.txt 2>&1 <<'PY'
import sys, tunert
path, a, b = sys.argv[1:4]
for name in (a, b):
    with tunert.Bundle(path, no_device=True, arch="sm_90a", device_name=name) as bd:
        s = bd.select("cluster", {"NB": 64, "ROWS": 2})
        print(name, "->", s.info.variant, s.info.measured_on)
        print("models:", [(m["name"], m["tier"]) for m in bd.models])
PY
  check "python, model A: A's winner" contains py.txt "$A -> {'CL': 4, 'THREADS': 64} $A"
  check "python, model B: B's winner" contains py.txt "$B -> {'CL': 2, 'THREADS': 32} $B"
  check "python lists the models with their tier" contains py.txt "('$B', 'this GPU')"
fi
finish
