#!/usr/bin/env bash
# Recipe errors say file:line and the cause; the sandbox holds.
. "$(dirname "$0")/lib.sh"
mkdir -p recipes templates/copy
cp "$SRC"/templates/copy/*.cuh templates/copy/; cp -r "$SRC/templates/common" templates/
base() { sed "$1" "$SRC/recipes/copy.lua" > "recipes/$2.lua"; }
expect_error() { # name pattern
  "$TUNE" run "recipes/$1.lua" --compile-only --db e.db >"$1.txt" 2>&1
  local rc=$?
  check "$1 fails (rc $rc)" test $rc -ne 0
  check "$1 message" contains "$1.txt" "$2"
}
printf 'return {\n  name = "x",\n  params = { {"A", {1,2}} \n' > recipes/syntax.lua
expect_error syntax "recipes/syntax.lua:4:"
base 's/^return {/os.execute("true")\nreturn {/' os
expect_error os "recipes/os.lua:3:.*os"
base 's/^return {/io.open("x")\nreturn {/' io
expect_error io "recipes/io.lua:3:.*io"
base 's/^return {/require("..\/..\/etc\/passwd")\nreturn {/' req
expect_error req "only recipe modules"
base 's/c.BLOCK \* c.ILP \* c.VEC_BYTES/c.BLOKC * c.ILP * c.VEC_BYTES/' typo
expect_error typo "unknown name 'BLOKC'"
base 's/"BLOCK \* MIN_BLOCKS <= 2048"/"BLOCK * MIN_BLOCKS"/' notbool
expect_error notbool "constraint 1 returned number"
base 's/init = { "uniform", -1, 1 }/init = { "uniform", 1, -1 }/' badinit
expect_error badinit "uniform needs lo < hi"
base 's/, output = true/, scratch = true/' noout
expect_error noout "no arg has output = true"
base 's/{ "src", tensor = "f32", shape = { "N" }, init = { "uniform", -1, 1 } },/{ "src", tensor = "f32", shape = { "N" } },/' zeros
expect_error zeros "needs init (never zeros)"
base 's/^return {/error("boom", 0)\nreturn {/' errzero
expect_error errzero "recipes/errzero.lua: boom"
base 's/^return {/error({})\nreturn {/' errtable
expect_error errtable "recipes/errtable.lua: (error object is not a string)"
base 's|template = "templates/copy/copy.cuh"|template = "templates/copy/cpy.cuh"|' notemplate
expect_error notemplate "recipes/notemplate.lua: recipe 'copy': template .*templates/copy/cpy.cuh: no such file (project root .*, recipes/ beside templates/)"
"$TUNE" run recipes/missing.lua --compile-only >missing.txt 2>&1
check "missing file fails" test $? -ne 0
check "missing file message" contains missing.txt "no such recipe file"
finish
