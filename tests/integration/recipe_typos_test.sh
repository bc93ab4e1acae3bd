#!/usr/bin/env bash
# Misspelt recipe fields and wrong types are errors that name the field path and the nearest valid
# name (tuner/recipe_schema.h), at the top level and nested; a list file names the recipe.
. "$(dirname "$0")/lib.sh"
FX="$SRC/tests/fixtures/recipes"
expect_error() { # recipe pattern
  local name
  name=$(basename "$1" .lua)
  "$TUNE" run "$1" --compile-only --budget 1 --jobs 2 --db "$name.db" >"$name.txt" 2>&1
  local rc=$?
  check "$name fails (rc $rc)" test $rc -ne 0
  check "$name message" contains "$name.txt" "$2"
}
expect_error "$FX/schema_constraint_typo.lua" "schema_constraint_typo.lua: constraint: unknown field (did you mean constraints?)"
expect_error "$FX/schema_tolerance_typo.lua" "schema_tolerance_typo.lua: tolerance.rel_12: unknown field (did you mean rel_l2?)"
expect_error "$FX/schema_wrong_type.lua" "schema_wrong_type.lua: tolerance.rel_l2 must be a number (not a string)"
# the same mistakes in a copy of copy.lua, nested deeper
mkdir -p recipes && ln -s "$SRC/templates" templates
base() { sed "$1" "$SRC/recipes/copy.lua" > "recipes/$2.lua"; }
base 's/  name = "copy",/  nmae = "copy",/' name
expect_error recipes/name.lua "recipes/name.lua: nmae: unknown field (did you mean name?)"
base 's/    block = function/    blocks = function/' launch
expect_error recipes/launch.lua "recipes/launch.lua: launch.blocks: unknown field (did you mean block?)"
base 's/{ "dst", tensor = "f32", shape = { "N" }, output = true }/{ "dst", tensor = "f32", shape = { "N" }, ouput = true }/' arg
expect_error recipes/arg.lua "recipes/arg.lua: args\[2\].ouput: unknown field (did you mean output?)"
base 's/output = true/output = 1/' argtype
expect_error recipes/argtype.lua "recipes/argtype.lua: args\[2\].output must be a boolean (not a number)"
base 's/source = "templates/sorce = "templates/' ref
expect_error recipes/ref.lua "recipes/ref.lua: reference.sorce: unknown field (did you mean source?)"
base 's/^  metrics = {/  metrics = { flop = 1,/' metrics
expect_error recipes/metrics.lua "recipes/metrics.lua: metrics.flop: unknown field (did you mean flops?)"
base 's/"BLOCK \* MIN_BLOCKS <= 2048"/{ "BLOCK * MIN_BLOCKS <= 2048" }/' constrainttype
expect_error recipes/constrainttype.lua "constraints\[[0-9]\] must be a string or function (not a table)"
base 's/N = 16 \* 1024 \* 1024 }/N = { 16 * 1024 * 1024 } }/' dimtype
expect_error recipes/dimtype.lua "recipes/dimtype.lua: problems\[1\].N must be a number, string or boolean (not a table)"
base 's/^  params = {/  params = { extra = 1,/' paramkey
expect_error recipes/paramkey.lua "recipes/paramkey.lua: params.extra: unknown field (params is a list"
base 's/^  tolerance = {/  tolerances = {/' unknown
expect_error recipes/unknown.lua "recipes/unknown.lua: tolerances: unknown field (did you mean tolerance?)"
base 's/^  tolerance = {/  colour = "red", tolerance = {/' far
expect_error recipes/far.lua "recipes/far.lua: colour: unknown field (known: name, template"
# adversarial (the second input set's data): numbers, uniform or normal, floating-point inputs only
base 's/init = { "uniform", -1, 1 } }/init = { "uniform", -1, 1 }, adversarial = { "normal", 0, "N" } }/' advexpr
expect_error recipes/advexpr.lua "recipes/advexpr.lua: arg src: adversarial must be {\"uniform\", lo, hi}, {\"normal\", mean, std} or {\"wide\", lo_exp2, hi_exp2} with numbers"
base 's/init = { "uniform", -1, 1 } }/init = { "uniform", -1, 1 }, adversarial = { "randint", 0, 9 } }/' advkind
expect_error recipes/advkind.lua "recipes/advkind.lua: arg src: adversarial must be"
base 's/output = true }/output = true, adversarial = { "normal", 0, 9 } }/' advout
expect_error recipes/advout.lua "recipes/advout.lua: arg dst: adversarial is for floating-point inputs"
base 's/init = { "uniform", -1, 1 } }/init = { "uniform", -1, 1 }, adversarial = { "normal", 0, 30 } }/' advok
"$TUNE" run recipes/advok.lua --compile-only --budget 1 --jobs 2 --db advok.db >advok.txt 2>&1
check "a well-formed adversarial init is accepted (rc $?)" test $? -eq 0
# in a list file, the message names the recipe
printf 'local r = {}\nfor k, v in pairs(require "copy") do r[k] = v end\nr.name = "copy2"\nr.tolerance = { max_ab = 1 }\nreturn { require "copy", r }\n' >recipes/list.lua
cp "$SRC/recipes/copy.lua" recipes/copy.lua
expect_error recipes/list.lua "recipes/list.lua: recipe 'copy2': tolerance.max_ab: unknown field (did you mean max_abs?)"
finish
