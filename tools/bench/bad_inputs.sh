#!/usr/bin/env bash
# bad_inputs.sh TUNE_BINARY SOURCE_TREE [OUT.md]: the bad inputs of issue 28 ("Why"), tried on one
# tune binary without a GPU (replay of data/recorded/copy.db, --compile-only), one markdown table
# row each: the command, its exit status, wall time, the first line of output that says what
# happened, and what was counted. SOURCE_TREE is the checkout the binary was built from (its
# recipes/copy.lua and templates/). Every command runs under a time limit, so the script ends.
# bad_inputs.sh --merge BEFORE.md AFTER.md: the two tables side by side, row by case.
# Environment: TUNERT_INSPECT (default: tools/tunert_inspect beside the binary), BAD_INPUTS_TRIALS
# (concurrent-bundle trials, default 12), BAD_INPUTS_VMEM_KB (address-space cap of every command,
# default 6 GiB, so a memory bomb cannot take a shared machine down), BAD_INPUTS_KEEP (keep the
# temporary directory).
set -u
if [ "${1:-}" = --merge ]; then # --merge BEFORE.md AFTER.md: one table of the two, row by case
  [ $# -eq 3 ] || { echo "usage: $0 --merge BEFORE.md AFTER.md" >&2; exit 2; }
  exec python3 - "$2" "$3" <<'PY'
import sys
def rows(p):
    out = {}
    order = []
    for l in open(p):
        if not l.startswith('| ') or l.startswith('| case') or l.startswith('| ---'):
            continue
        cells = [c.strip() for c in l.strip()[1:-1].replace('\\|', '\x00').split(' | ')]
        cells = [c.replace('\x00', '\\|') for c in cells]
        out[cells[0]] = cells
        order.append(cells[0])
    return order, out
ob, b = rows(sys.argv[1])
oa, a = rows(sys.argv[2])
print('| case | command | before: exit, wall s | before: output / counted | after: exit, wall s | after: output / counted |')
print('| --- | --- | --- | --- | --- | --- |')
for k in oa + [k for k in ob if k not in a]:
    x, y = b.get(k), a.get(k)
    cmd = (y or x)[1]
    def cell(r):
        if not r: return 'not run', ''
        out = r[4] + (f' ({r[5]})' if r[5] else '')
        return f'{r[2]}, {r[3]}', out
    be, bo = cell(x); ae, ao = cell(y)
    print(f'| {k} | {cmd} | {be} | {bo} | {ae} | {ao} |')
PY
fi
[ $# -ge 2 ] || { echo "usage: $0 TUNE_BINARY SOURCE_TREE [OUT.md]" >&2; exit 2; }
TUNE=$(realpath "$1")
SRC=$(realpath "$2")
OUT=${3:-/dev/stdout}
INSPECT=${TUNERT_INSPECT:-$(dirname "$TUNE")/tools/tunert_inspect}
TRIALS=${BAD_INPUTS_TRIALS:-12}
ulimit -v "${BAD_INPUTS_VMEM_KB:-6291456}"
W=$(mktemp -d /tmp/bad_inputs.XXXXXX)
trap '[ -n "${BAD_INPUTS_KEEP:-}" ] || rm -rf "$W"' EXIT
ROWS=$W/rows.md

# A project of our own (marker, templates of SOURCE_TREE) and a copy of the recording, so that no
# binary migrates or writes anything of the source tree.
P=$W/proj
mkdir -p "$P/recipes" && touch "$P/.tune-root" && ln -s "$SRC/templates" "$P/templates"
cp "$SRC/recipes/copy.lua" "$P/recipes/"
REC=$W/copy.rec.db
cp "$SRC/data/recorded/copy.db" "$REC"
REPLAY="replay:$REC"
COPY=$P/recipes/copy.lua
variant() { # name sed-script: recipes/NAME.lua from copy.lua
  sed "$2" "$COPY" > "$P/recipes/$1.lua"
}
variant loop_load '1i while true do end'
variant loop_constraint 's/^    "BLOCK \* MIN_BLOCKS <= 2048",/    function(c) while true do end end,/'
variant memory '1i local t = {}; while true do t[#t + 1] = string.rep("x", 1000) .. #t end'
variant constraint_typo 's/^  constraints = {/  constraint = {/'
variant tolerance_typo 's/rel_l2 = 0/rel_12 = 0/'
variant empty 's/^    "BLOCK \* MIN_BLOCKS <= 2048",/    "BLOCK * MIN_BLOCKS <= 2048", "BLOCK < 0",/'
# slowed in its Lua launch geometry, so that a signal or a kill finds it mid-run
variant slow 's/^    grid = function(c, p, d)/    grid = function(c, p, d)\n      local x = 0; for i = 1, 300000 do x = x + i end/'
variant slower 's/^    grid = function(c, p, d)/    grid = function(c, p, d)\n      local x = 0; for i = 1, 3000000 do x = x + i end/'
# 10^8 configs: copy.cuh with its knobs fixed and four parameters of 100 values it ignores
sed -e 's/{ 4, 8, 16 }/{ 16 }/; s/{ 1, 2, 4, 8 }/{ 1 }/; s/{ 128, 256, 512, 1024 }/{ 256 }/' \
    -e 's/{ false, true }/{ false }/; s/{ 1, 2 } },/{ 1 } }, { "X1", H }, { "X2", H }, { "X3", H }, { "X4", H },/' \
    -e '1i local H = {}; for i = 1, 100 do H[i] = i end' "$COPY" > "$P/recipes/large.lua"

# --- helpers ----------------------------------------------------------------------------------
esc() { # a table cell: one line, pipes escaped, at most 150 characters
  tr -d '\r' | head -c 150 | sed 's/|/\\|/g; s/`/'"'"'/g'
}
first_line() { # file [pattern]: the first line matching pattern, else the first that is not a header
  local l=""
  [ -n "${2:-}" ] && l=$(grep -E -m1 -- "$2" "$1" 2>/dev/null)
  [ -n "$l" ] || l=$(grep -Ev -m1 '^[[:space:]]*$|^root |^no GPU here' "$1" 2>/dev/null)
  [ -n "$l" ] || l="(no output)"
  printf '%s' "$l" | sed 's/^[[:space:]]*//' | sed "s#$W/##g" | esc
}
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
row() { # case command rc wall output counted
  printf '| %s | `%s` | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5" "${6:-}" >> "$ROWS"
}
RC=0 WALL=0
timed() { # name limit-seconds cmd...: runs cmd (stdin closed) into $W/name.out; sets RC and WALL
  local name=$1 limit=$2 t0
  shift 2
  t0=$(now)
  timeout -k 5 "$limit" "$@" </dev/null >"$W/$name.out" 2>&1
  RC=$?
  WALL=$(since "$t0")
}
limit_note() { # what the exit status says about the time limit
  case $RC in 124) echo "hit the ${1}s limit";; 137) echo "killed at the limit";; *) echo "";; esac
}
simple() { # name short-command limit pattern cmd...: one row
  local name=$1 short=$2 limit=$3 pat=$4
  shift 4
  timed "$name" "$limit" "$@"
  row "$name" "$short" "$RC" "$WALL" "$(first_line "$W/$name.out" "$pat")" "$(limit_note "$limit")"
}
sql() { sqlite3 -batch "$1" "$2" 2>/dev/null; }
rows_of() { sql "$1" "select count(*) from results"; }
distinct_of() { sql "$1" "select count(*) from (select distinct recipe_id, problem_id, config_id, device_id from results)"; }
run_status() { sql "$1" "select group_concat(status, ',') from (select status from runs order by id)"; }

cd "$W" || exit 1
DB=$W/db

# --- the wrong source tree ----------------------------------------------------------------------
checkout() { # DIR [bad]: a minimal checkout holding copy.lua; "bad" templates carry an #error
  mkdir -p "$1/recipes" "$1/templates" && cp "$COPY" "$1/recipes/"
  cp -r "$SRC/templates/copy" "$1/templates/"
  [ -d "$SRC/templates/common" ] && cp -r "$SRC/templates/common" "$1/templates/"
  touch "$1/.tune-root"
  [ "${2:-}" = bad ] && sed -i "1i #error \"wrong root $1\"" "$1/templates/copy/copy.cuh"
  return 0
}
checkout x bad && rm x/.tune-root && checkout x/recipes/checkout
checkout outer bad && checkout outer/vendor/inner
for c in "under_recipes x/recipes/checkout/recipes/copy.lua" "nested outer/vendor/inner/recipes/copy.lua"; do
  set -- $c
  timed "root_$1" 120 "$TUNE" run "$2" --compile-only --budget 1 --jobs 1 --db "$DB.root_$1"
  if grep -q "wrong root" "$W/root_$1.out"; then used="used the WRONG tree's templates"; else used="own templates"; fi
  row "checkout $1" "tune run $2 --compile-only --budget 1" "$RC" "$WALL" \
    "$(first_line "$W/root_$1.out" 'wrong root|\] compiled|compiled|error')" "$used"
done

# --- runaway recipes ------------------------------------------------------------------------------
for r in loop_load loop_constraint; do
  simple "$r" "tune run recipes/$r.lua --compile-only (20 s limit)" 20 'error|budget|exceeded|interrupt' \
    "$TUNE" run "$P/recipes/$r.lua" --compile-only --budget 1 --jobs 1 --db "$DB.$r"
  # a signal 2 s in, a kill 10 s after it; the instruction budget lifted so the loop is still running
  for sig in INT TERM; do
    TUNE_LUA_MAX_INSTRUCTIONS=1000000000000000 timed "$r.$sig" 30 \
      timeout -s "$sig" -k 10 2 "$TUNE" run "$P/recipes/$r.lua" --compile-only --budget 1 --jobs 1 --db "$DB.$r.$sig"
    case $RC in
      137) stop="SIG$sig ignored: killed 10 s later";;
      124) stop="stopped by SIG$sig in $(awk -v w="$WALL" 'BEGIN { printf "%.2f", w - 2 }') s";;
      *) stop="ended before the signal";;
    esac
    row "$r + SIG$sig" "timeout -s $sig -k 10 2 tune run recipes/$r.lua" "$RC" "$WALL" \
      "$(first_line "$W/$r.$sig.out" 'interrupt|signal|SIG|error')" "$stop"
  done
done
# its peak resident size read from /proc while it runs (VmHWM of timeout's child, tune)
t0=$(now)
timeout -k 5 120 "$TUNE" run "$P/recipes/memory.lua" --compile-only --budget 1 --jobs 1 --db "$DB.memory" \
  </dev/null >"$W/memory.out" 2>&1 &
tp=$! peak=0
while kill -0 "$tp" 2>/dev/null; do
  for c in $(pgrep -P "$tp"); do
    h=$(awk '/^VmHWM/ { print $2 }' "/proc/$c/status" 2>/dev/null)
    [ "${h:-0}" -gt "$peak" ] && peak=$h
  done
  sleep 0.2
done
wait "$tp"; RC=$?; WALL=$(since "$t0")
rss="$((peak / 1024)) MiB peak RSS"
row "Lua memory bomb at load" "tune run recipes/memory.lua --compile-only" "$RC" "$WALL" \
  "$(first_line "$W/memory.out" 'memory|error')" "$rss $(limit_note 120)"

# 10^8 configs, --budget 2: lines stamped with the time since start
t0=$(now)
timeout -k 5 90 stdbuf -oL -eL "$TUNE" run "$P/recipes/large.lua" --compile-only --budget 2 --jobs 1 \
  --problem 64MiB --db "$DB.large" </dev/null 2>&1 |
  while IFS= read -r l; do printf '%s %s\n' "$(since "$t0")" "$l"; done > "$W/large.out"
RC=${PIPESTATUS[0]}; WALL=$(since "$t0")
first=$(grep -E -m1 '^[0-9.]+ +\[ *[0-9]+' "$W/large.out" | cut -d' ' -f1)
row "1e8-point space, --budget 2" "tune run recipes/large.lua --compile-only --budget 2 --problem 64MiB" "$RC" "$WALL" \
  "$(sed 's/^[0-9.]* //' "$W/large.out" > "$W/large.txt"; first_line "$W/large.txt" 'configs|\[1')" \
  "first variant at ${first:-never} s; $(grep -cE '^[0-9.]+ +\[ *[0-9]+' "$W/large.out") variant lines $(limit_note 90)"

# --- typos that silently change results --------------------------------------------------------
for r in constraint_typo tolerance_typo; do
  simple "$r" "tune run recipes/$r.lua --device replay --budget 1" 60 'error|unknown|configs satisfy' \
    "$TUNE" run "$P/recipes/$r.lua" --device "$REPLAY" --budget 1 --no-warm-start --db "$DB.$r"
done
cli() { # name short pattern args...: tune run copy.lua --compile-only --budget 1 ARGS
  local name=$1 short=$2 pat=$3
  shift 3
  timed "$name" 120 "$TUNE" run "$COPY" --compile-only --budget 1 --jobs 1 --db "$DB.$name" "$@"
  local n
  n=$(grep -cE '\] (compiled|skipped)' "$W/$name.out")
  row "$name" "$short" "$RC" "$WALL" "$(first_line "$W/$name.out" "$pat")" "$n variant lines"
}
cli "--problem nope" "tune run copy.lua --compile-only --problem nope" 'nope|problem' --problem nope
cli "--only NOPE=1" "tune run copy.lua --compile-only --only NOPE=1" 'NOPE|configs' --only NOPE=1
cli "--seed abc" "tune run copy.lua --compile-only --seed abc" 'seed|abc' --seed abc
cli "--arch banana" "tune run copy.lua --compile-only --arch banana" 'banana|arch' --arch banana
cp "$REC" "$W/show.db"
simple "db show 1abc" "tune db show 1abc" 20 '' "$TUNE" db show 1abc --db "$W/show.db"
simple "empty space" "tune run recipes/empty.lua --compile-only" 60 'reject|configs|space' \
  "$TUNE" run "$P/recipes/empty.lua" --compile-only --budget 1 --jobs 1 --db "$DB.empty"

# --- clashing writers ------------------------------------------------------------------------
mkdir -p "$W/cb"
fails=0 missing=0 ok_missing=0 broken=0 t0=$(now)
for trial in $(seq 1 "$TRIALS"); do
  rm -f "$W/cb/same.bundle"
  pids=()
  for w in 1 2 3 4; do
    (cd "$P" && exec timeout -k 5 300 "$TUNE" bundle --recipe copy --db "$REC" --arch sm_90a --jobs 1 --quiet \
       --allow-source-change -o "$W/cb/same.bundle") </dev/null >"$W/cb/$trial.$w.out" 2>&1 &
    pids+=($!)
  done
  zero=0
  for p in "${pids[@]}"; do
    if wait "$p"; then zero=$((zero + 1)); else fails=$((fails + 1)); fi
  done
  if [ ! -s "$W/cb/same.bundle" ]; then
    missing=$((missing + 1)); [ $zero -gt 0 ] && ok_missing=$((ok_missing + 1))
  elif [ -x "$INSPECT" ] && ! "$INSPECT" "$W/cb/same.bundle" --arch sm_90a >/dev/null 2>&1; then
    broken=$((broken + 1))
  fi
done
cp "$W/cb/same.bundle" "$W/good.bundle" 2>/dev/null
err=$(cat "$W"/cb/*.out | grep -Ev '^[[:space:]]*$|^root ' | sort | uniq -c | sort -rn | head -1)
row "concurrent tune bundle -o same" "4 x tune bundle --recipe copy -o same.bundle, $TRIALS trials" "-" "$(since "$t0")" \
  "$(printf '%s' "${err:-(no output)}" | sed 's/^ *//' | sed "s#$W/##g" | esc)" \
  "$fails of $((4 * TRIALS)) writers failed; output missing in $missing trials ($ok_missing with a writer at exit 0); unreadable in $broken; $(ls -a "$W/cb" | grep -c '\.tmp') temporaries left"

# a replayed run of copy.lua over every config (an array: timeout runs commands, not functions)
REPLAY_RUN=("$TUNE" run "$COPY" --device "$REPLAY" --strategy exhaustive --no-warm-start --quiet)
timed solo 120 "${REPLAY_RUN[@]}" --db "$DB.solo"
expected=$(rows_of "$DB.solo")
t0=$(now) pids=()
for i in 1 2 3 4; do
  (exec timeout -k 5 120 "$TUNE" run "$P/recipes/slow.lua" --device "$REPLAY" --strategy exhaustive --no-warm-start \
     --quiet --db "$DB.soak") </dev/null >"$W/soak.$i.out" 2>&1 &
  pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
row "4 concurrent tune runs, one database" "4 x tune run recipes/slow.lua --device replay --db same.db" "-" "$(since "$t0")" \
  "$(first_line "$W/soak.1.out" '^copy: [0-9]+ results')" \
  "$fails of 4 failed; one run alone stores $expected rows; stored $(rows_of "$DB.soak") rows, $(distinct_of "$DB.soak") distinct configs x problems"

# 4 concurrent compile-only runs of 16 configs x 2 problems
t0=$(now) pids=()
for i in 1 2 3 4; do
  (exec timeout -k 5 300 "$TUNE" run "$COPY" --compile-only --strategy exhaustive --only VEC_BYTES=16,ILP=1 --jobs 1 \
     --quiet --db "$DB.cosoak") </dev/null >"$W/cosoak.$i.out" 2>&1 &
  pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
row "4 concurrent compile-only runs, one database" "4 x tune run copy.lua --compile-only --only VEC_BYTES=16,ILP=1 --db same.db" "-" \
  "$(since "$t0")" "$(first_line "$W/cosoak.1.out" '^copy: [0-9]+ results')" \
  "$fails of 4 failed; $(distinct_of "$DB.cosoak") distinct configs x problems expected once each; stored $(rows_of "$DB.cosoak") rows"

# a space of 4 configs, every one compiled: a rerun has nothing new to add
CO=("$TUNE" run "$COPY" --compile-only --strategy exhaustive --problem 64MiB --only VEC_BYTES=16,ILP=1,BLOCK=128 --jobs 1 --db "$DB.co")
timed co1 180 "${CO[@]}"
n1=$(rows_of "$DB.co")
row "compile-only variant shown as" "tune run copy.lua --compile-only --only VEC_BYTES=16,ILP=1,BLOCK=128" "$RC" "$WALL" \
  "$(first_line "$W/co1.out" '\] (compiled|skipped)')" "$(grep -cE '\] skipped' "$W/co1.out") skipped, $(grep -cE '\] compiled' "$W/co1.out") compiled"
timed co2 180 "${CO[@]}"
row "--compile-only rerun" "the same command again" "$RC" "$WALL" "$(first_line "$W/co2.out" '^copy: [0-9]+ results')" \
  "rows after the first run $n1, after the rerun $(rows_of "$DB.co") ($(distinct_of "$DB.co") distinct)"

(exec "$TUNE" run "$P/recipes/slower.lua" --device "$REPLAY" --strategy exhaustive --no-warm-start --quiet \
   --db "$DB.killed") </dev/null >"$W/killed.out" 2>&1 &
kp=$!
sleep 1.5
kill -9 $kp 2>/dev/null; wait $kp 2>/dev/null
left=$(run_status "$DB.killed")
sleep 2.5
timed killed2 120 "${REPLAY_RUN[@]}" --db "$DB.killed" --problem 64MiB --budget 1
row "killed run seen again" "kill -9 a run; tune run again on its database" "$RC" "$WALL" \
  "$(first_line "$W/killed2.out" 'interrupted|running')" \
  "runs after the kill: ${left:-none}; after the next run: $(run_status "$DB.killed")"

summaries=0 interrupted=0 t0=$(now)
for i in 1 2 3 4 5; do
  timeout -k 10 -s INT 1 "$TUNE" run "$P/recipes/slower.lua" --device "$REPLAY" --strategy exhaustive --no-warm-start \
    --quiet --db "$DB.int$i" </dev/null >"$W/int$i.out" 2>&1
  grep -qE '^copy: [0-9]+ results' "$W/int$i.out" && summaries=$((summaries + 1))
  [ "$(run_status "$DB.int$i")" = interrupted ] && interrupted=$((interrupted + 1))
done
row "timeout -s INT, 5 tries" "timeout -s INT 1 tune run recipes/slower.lua --device replay" "-" "$(since "$t0")" \
  "$(first_line "$W/int1.out" 'interrupt')" "summary printed in $summaries of 5; run recorded interrupted in $interrupted of 5"

# --- corrupt files, messages, counters ---------------------------------------------------------
head -c 8192 /dev/zero | tr '\0' 'x' > notadb.db
simple "corrupt database (db best)" "tune db best --db notadb.db" 20 'notadb|database|error' "$TUNE" db best --db notadb.db
simple "corrupt database (run)" "tune run copy.lua --compile-only --db notadb.db" 60 'notadb|database|error' \
  "$TUNE" run "$COPY" --compile-only --budget 1 --jobs 1 --db notadb.db
head -c $(($(stat -c %s "$REC") / 3)) "$REC" > truncated.db
simple "truncated database (db list)" "tune db list --db truncated.db" 20 'truncated|database|error|malformed' \
  "$TUNE" db list --db truncated.db
if [ -x "$INSPECT" ] && [ -s good.bundle ]; then
  n=$(stat -c %s good.bundle)
  head -c $((n / 2)) good.bundle > half.bundle
  poke() { # file offset: 8 bytes of 0xff written over the file at offset
    cp good.bundle "$1"
    printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
  }
  poke header.bundle 16   # the SQLite header's page size and format bytes
  elf=$(grep -obUaP '\x7fELF' good.bundle | head -1 | cut -d: -f1)
  poke cubin.bundle $((${elf:-0} + 256))   # inside the first cubin blob
  simple "corrupt bundle (truncated to half)" "tunert_inspect half.bundle" 20 '' "$INSPECT" half.bundle --arch sm_90a
  simple "corrupt bundle (header overwritten)" "tunert_inspect header.bundle" 20 '' "$INSPECT" header.bundle --arch sm_90a
  simple "corrupt bundle (8 bytes of a cubin overwritten)" "tunert_inspect cubin.bundle" 20 '' "$INSPECT" cubin.bundle --arch sm_90a
else
  row "corrupt bundle" "tunert_inspect" "-" "-" "not run: no tunert_inspect or no bundle" ""
fi
simple "tune worker --help" "tune worker --help" 10 '' "$TUNE" worker --help
timed only 60 "$TUNE" run "$COPY" --device "$REPLAY" --no-warm-start --strategy exhaustive --problem 64MiB \
  --only BLOCK=128,ILP=1 --db "$DB.only"
row "--only counters" "tune run copy.lua --device replay --only BLOCK=128,ILP=1 --problem 64MiB" "$RC" "$WALL" \
  "$(first_line "$W/only.out" 'configs')" \
  "$(grep -cE '^ *\[' "$W/only.out") variant lines, counted as $(grep -oE -m1 '^\[ *1/[0-9]+\]' "$W/only.out"); $(rows_of "$DB.only") rows; summary: $(grep -E -m1 '^copy: [0-9]+ results' "$W/only.out" | esc)"

{
  echo "| case | command | exit | wall s | first meaningful line of output | counted |"
  echo "| --- | --- | --- | --- | --- | --- |"
  cat "$ROWS"
} > "$OUT"
