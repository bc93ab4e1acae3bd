# compare_dbs.sh (sourced): compare_dbs DIR lists the comparison databases of DIR in name order,
# one path per line, each one tune can open: a FILE.db as it is, a FILE.db.xz (data/compare/ keeps
# most of its databases compressed, within the 64 MiB a device call copies) decompressed into a
# temporary folder that is removed when the sourcing shell exits (sourcing sets its EXIT trap).
COMPARE_DBS_TMP=$(mktemp -d)
trap 'rm -rf "$COMPARE_DBS_TMP"' EXIT
compare_dbs() {
  local f plain
  for f in "$1"/*.db "$1"/*.db.xz; do
    [ -e "$f" ] || continue
    echo "${f%.xz}|$f"
  done | sort -t'|' -k1,1 | while IFS='|' read -r plain f; do
    if [ "$f" = "$plain" ]; then echo "$f"; continue; fi
    mkdir -p "$COMPARE_DBS_TMP/$(basename "$1")"
    local out=$COMPARE_DBS_TMP/$(basename "$1")/$(basename "$plain")
    python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o: shutil.copyfileobj(i, o)' "$f" "$out" || return 1
    echo "$out"
  done
}
