#!/usr/bin/env bash
# The project root is chosen deliberately (tuner/project_root.h): a checkout under a path that
# contains /recipes/, and one nested in another checkout, each compile their own templates. The
# templates of every wrong root carry an #error, so using one shows as a compile_error.
. "$(dirname "$0")/lib.sh"
# checkout DIR [bad]: a minimal tree holding copy.lua; "bad" templates fail to compile
checkout() {
  mkdir -p "$1/recipes" "$1/templates" && cp "$SRC/recipes/copy.lua" "$1/recipes/"
  cp -r "$SRC/templates/copy" "$SRC/templates/common" "$1/templates/" && cp "$SRC/.tune-root" "$1/"
  if [ "${2:-}" = bad ]; then sed -i "1i #error \"wrong root $1\"" "$1/templates/copy/copy.cuh"; fi
}
compiles() { # name recipe: the run compiles its variant without error
  "$TUNE" run "$2" --compile-only --budget 1 --jobs 2 --db "$1.db" >"$1.txt" 2>&1
  check "$1 runs" test $? -eq 0
  check "$1 compiled its own templates" lacks "$1.txt" "wrong root"
  check "$1 compiled a variant" contains "$1.txt" "\] compiled "
}
checkout x bad                       # x/templates is wrong for anything below x/recipes/
rm x/.tune-root
checkout x/recipes/checkout
compiles under_recipes x/recipes/checkout/recipes/copy.lua
checkout outer bad
checkout outer/vendor/inner
compiles nested outer/vendor/inner/recipes/copy.lua
# the test can fail: the outer tree's own recipe does use its broken templates
"$TUNE" run outer/recipes/copy.lua --compile-only --budget 1 --jobs 2 --db o.db >outer.txt 2>&1
check "outer uses its own (broken) templates" contains outer.txt "wrong root"
# TUNE_ROOT overrides the marker
TUNE_ROOT="$PWD/outer" "$TUNE" run outer/vendor/inner/recipes/copy.lua --compile-only --budget 1 --jobs 2 --db e.db >env.txt 2>&1
check "TUNE_ROOT picks the root" contains env.txt "wrong root outer\""
TUNE_ROOT="$PWD/nowhere" "$TUNE" run outer/recipes/copy.lua --compile-only --db n.db >nowhere.txt 2>&1
check "TUNE_ROOT to a missing directory fails" test $? -ne 0
check "TUNE_ROOT names the directory" contains nowhere.txt "TUNE_ROOT .*nowhere: no such directory"
# a tree with neither marker nor recipes/ beside templates/: an error that says what to do
mkdir -p loose && cp "$SRC/recipes/copy.lua" loose/
"$TUNE" run loose/copy.lua --compile-only --db l.db >loose.txt 2>&1
check "no root fails" test $? -ne 0
check "no root message" contains loose.txt "loose/copy.lua: no project root above it.*--root DIR or set TUNE_ROOT"
finish
