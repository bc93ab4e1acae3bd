# search_lib.sh: shell helpers shared by tools/bench/search_report.sh and search_criteria.sh (sourced).

# recipe_of STEM [RECIPES_DIR]: the recipe file a recording data/recorded/<STEM>.db is replayed with:
# recipes/<stem>.lua; for a sub-recipe's own recording (<family>.<sub>.db) the family's recipe when it
# requires the sub-recipe (attention.lua: require "attention.prefill_sm90"), else the sub-recipe's own
# file recipes/<family>/<sub>.lua (softmax.stream, not in softmax.lua's list).
recipe_of() {
  local dir=${2:-$RECIPES} fam=${1%%.*} sub=${1#*.}
  if [ -f "$dir/$1.lua" ]; then echo "$dir/$1.lua"
  elif [ "$sub" != "$1" ] && [ -f "$dir/$fam/$sub.lua" ] && ! grep -q "require \"$1\"" "$dir/$fam.lua" 2>/dev/null; then
    echo "$dir/$fam/$sub.lua"
  else echo "$dir/$fam.lua"; fi
}
