#!/usr/bin/env bash
# A recording stays current for replay while only comments change in its recipe's sources: the
# database keeps the normalised code hash beside the raw one (recipes.code_hash, source_hash.h);
# a change to the code makes replay say the answers are of another version.
. "$(dirname "$0")/lib.sh"
mkdir -p tree && cp -r "$SRC/tests/fixtures/recipes" "$SRC/tests/fixtures/templates" tree/ && touch tree/.tune-root
R=tree/recipes/prune.lua
"$TUNE" run "$R" --compile-only --db rec.db --budget 3 --seed 1 --quiet >rec.txt 2>&1
check "compile-only run for the stand-in recording" test $? -eq 0
check "the recipe row keeps a code hash" test -n "$(sql rec.db "select code_hash from recipes where name='prune'")"
synth_ok rec.db
"$TUNE" run "$R" --device replay:rec.db --db a.db --budget 3 --quiet >a.txt 2>&1
check "replay of the unchanged tree: no note" lacks a.txt "recorded with another version"
tpl=$(ls tree/templates/prune/prune.cuh)
printf '// a comment added after the recording\n' >> "$tpl"
"$TUNE" run "$R" --device replay:rec.db --db b.db --budget 3 --quiet >b.txt 2>&1
check "a comment edit: still current, no note" lacks b.txt "recorded with another version"
printf '__device__ int tune_test_changed_code() { return 1; }\n' >> "$tpl"
"$TUNE" run "$R" --device replay:rec.db --db c.db --budget 3 --quiet >c.txt 2>&1
check "a code edit: the note says so" contains c.txt "recorded with another version"

# A recipe a list file requires is hashed over the module that defines it, not over the list: a
# code edit in a sibling module leaves it current, and so does a comment edit in its own module.
mkdir -p list && cp -r "$SRC/tests/fixtures/recipes" "$SRC/tests/fixtures/templates" list/ && touch list/.tune-root
mkdir -p list/recipes/pair
for m in a b; do sed "s/name = \"prune\"/name = \"pair_$m\"/" list/recipes/prune.lua >list/recipes/pair/$m.lua; done
printf 'return { require "pair.a", require "pair.b" }\n' >list/recipes/pair.lua
L=list/recipes/pair.lua
"$TUNE" run "$L" --compile-only --db list.db --budget 3 --seed 1 --quiet >list.txt 2>&1
check "compile-only run of the list for the stand-in recording" test $? -eq 0
synth_ok list.db
# block LOG RECIPE: the lines tune printed while replaying RECIPE, in LOG.RECIPE
block() { awk -v r="replaying $2 from" 'index($0, r) == 1 { on = 1 } /^replaying / && index($0, r) != 1 { on = 0 } on' "$1" >"$1.$2"; }
printf -- '-- a comment added after the recording\n' >>list/recipes/pair/a.lua
sed -i '1i local changed_code = 1' list/recipes/pair/b.lua
"$TUNE" run "$L" --device replay:list.db --db d.db --budget 3 --quiet >d.txt 2>&1
check "replay of the edited list runs" test $? -eq 0
block d.txt pair_a && block d.txt pair_b
check "the list replays pair_a" contains d.txt.pair_a "replaying pair_a"
check "a comment edit in a listed module, code edits beside it: no note" lacks d.txt.pair_a "recorded with another version"
check "the code edit in the sibling module: its note" contains d.txt.pair_b "recorded with another version"
sed -i '1i local changed_code = 1' list/recipes/pair/a.lua
"$TUNE" run "$L" --device replay:list.db --db e.db --budget 3 --quiet >e.txt 2>&1
block e.txt pair_a
check "a code edit in a listed module: its note" contains e.txt.pair_a "recorded with another version"
finish
