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
finish
