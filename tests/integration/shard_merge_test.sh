#!/usr/bin/env bash
# tune run --shard I/N and tune db merge, on the replay backend: the shards of an exhaustive run
# hold exactly the unsharded run's (problem, config) pairs, once each; a merge adds each result
# once, a second merge adds nothing; results of another device model are merged and listed; a
# shard resumes from its own database. Then the launchers' logic (tools/cluster): the entry
# script with the variables Slurm and Kubernetes set, and slurm_array.sh through a stand-in sbatch
# that runs the array's tasks here, each followed by the merge.
. "$(dirname "$0")/lib.sh"
REC="$SRC/data/recorded/copy.db"
run() { "$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --strategy exhaustive --quiet "$@"; }
pairs() { sql "$1" "select p.hash || ':' || c.hash from results r join problems p on p.id = r.problem_id
                    join configs c on c.id = r.config_id" | sort; }

run --db all.db >all.txt 2>&1
check "unsharded run exits 0" test $? -eq 0
pairs all.db >all.pairs
check "the unsharded run has results" test "$(wc -l <all.pairs)" -gt 100

# three shards of copy's 2 problems: each problem cut into 3 parts by config hash
for i in 1 2 3; do
  run --shard "$i/3" --db "s$i.db" >"s$i.txt" 2>&1
  check "shard $i/3 exits 0" test $? -eq 0
  check "shard $i/3 says how it cut the work" contains "s$i.txt" "cut into 3 parts by config hash"
  check "shard $i/3 is recorded in its run row" test "$(sql "s$i.db" "select strategy from runs")" = "exhaustive shard $i/3"
done
for i in 1 2 3; do pairs "s$i.db"; done | sort >union.pairs
check "the shards' union is the unsharded run's pairs" cmp -s union.pairs all.pairs
check "no pair is in two shards" test "$(sort -u union.pairs | wc -l)" -eq "$(wc -l <union.pairs)"
for i in 1 2 3; do check "shard $i has a share" test "$(pairs "s$i.db" | wc -l)" -gt 0; done

# two shards of 2 problems: whole problems, one each
run --shard 1/2 --db w1.db >w1.txt 2>&1
run --shard 2/2 --db w2.db >w2.txt 2>&1
check "1/2 and 2/2 take whole problems" contains w1.txt "whole problems, round robin"
check "shard 1/2 has one problem" test "$(sql w1.db "select count(distinct problem_id) from results")" -eq 1
check "shard 2/2 has the other" test "$(sql w2.db "select p.name from results r join problems p on p.id = r.problem_id limit 1")" != \
  "$(sql w1.db "select p.name from results r join problems p on p.id = r.problem_id limit 1")"

# resume per shard: the same shard again measures nothing new
n2=$(sql s2.db "select count(*) from results")
run --shard 2/3 --db s2.db >s2again.txt 2>&1
check "shard 2/3 again resumes all of its share" contains s2again.txt "copy: $n2 results, $n2 ok; $n2 resumed"
check "shard 2/3 again adds no result" test "$(sql s2.db "select count(*) from results")" -eq "$n2"

"$TUNE" run --shard 0/3 "$SRC/recipes/copy.lua" >bad.txt 2>&1
check "--shard 0/3 is a usage error" test $? -eq 2
check "--shard 0/3 says what it wants" contains bad.txt "want I/N"

# merge: counts, union, idempotence
"$TUNE" db merge m.db s1.db s2.db s3.db >merge1.txt 2>&1
check "merge exits 0" test $? -eq 0
n=$(wc -l <all.pairs)
check "merge counts every result read and added" contains merge1.txt "m.db: results $n read, $n added, 0 duplicates"
pairs m.db >merged.pairs
check "merged pairs are the unsharded run's" cmp -s merged.pairs all.pairs
check "merged database is consistent" test "$(sql m.db "pragma foreign_key_check" | wc -l)" -eq 0
check "merged runs keep their shards" test "$(sql m.db "select count(*) from runs where strategy like 'exhaustive shard %/3'")" -ge 3
"$TUNE" db merge m.db s1.db s2.db s3.db >merge2.txt 2>&1
check "second merge exits 0" test $? -eq 0
check "second merge adds nothing" contains merge2.txt "m.db: results $n read, 0 added, $n duplicates"
check "second merge says all were duplicates" lacks merge2.txt "added: "
check "merge of shards lists no mix" lacks merge1.txt "several device models"
"$TUNE" db merge m.db m.db >self.txt 2>&1
check "merging a database into itself is refused" test $? -eq 1
# an older schema (3) of another GPU model: merged, and its problems listed
"$TUNE" db merge m.db "$SRC/data/recorded/h100/copy.db" --json >h100.json 2>&1
check "merge of another device's recording exits 0" test $? -eq 0
check "the other device's results are added" python3 -c "import json,sys; d=json.load(open('h100.json'))
sys.exit(d['inputs'][0]['tables']['results']['added'] == 0)"
check "both problems are listed as mixing device models" python3 -c "import json,sys; d=json.load(open('h100.json'))
m=[r for r in d['mixes'] if len(r['devices']) == 2]; sys.exit(len(m) != 2)"
cp s1.db strict.db
"$TUNE" db merge --strict strict.db "$SRC/data/recorded/h100/copy.db" >strict.txt 2>&1
check "--strict refuses the mix" test $? -eq 1
check "--strict leaves OUT as it was" test "$(sql strict.db "select count(*) from results")" -eq "$(sql s1.db "select count(*) from results")"

# the launchers: Slurm's and Kubernetes' task variables to --shard, then the merge
SH="$SRC/tools/cluster/tune_shard.sh"
export TUNE
opts=("$SRC/recipes/copy.lua" --device "replay:$REC" --strategy exhaustive --quiet)
for id in 4 5 6; do   # an array 4-6: shards 1..3
  SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 TUNE_OUT=slurm "$SH" run "${opts[@]}" >"slurm$id.txt" 2>&1
  check "slurm task $id exits 0" test $? -eq 0
done
check "slurm task 5 is shard 2/3" contains slurm5.txt "shard 2/3"
SLURM_ARRAY_TASK_COUNT=3 TUNE_OUT=slurm "$SH" merge >slurm_merge.txt 2>&1
check "slurm merge exits 0" test $? -eq 0
check "slurm shards merge to the unsharded run" cmp -s <(pairs slurm/merged.db | sort -u) all.pairs
for idx in 0 1 2; do
  JOB_COMPLETION_INDEX=$idx TUNE_SHARDS=3 TUNE_OUT=k8s "$SH" run "${opts[@]}" >"k8s$idx.txt" 2>&1
  check "k8s index $idx exits 0" test $? -eq 0
done
check "k8s index 0 is shard 1/3" contains k8s0.txt "shard 1/3"
TUNE_SHARDS=3 TUNE_OUT=k8s "$SH" merge >k8s_merge.txt 2>&1
check "k8s merge exits 0" test $? -eq 0
check "k8s shards merge to the unsharded run" cmp -s <(pairs k8s/merged.db | sort -u) all.pairs
rm k8s/shard-2-of-3.done
TUNE_SHARDS=3 TUNE_OUT=k8s "$SH" merge >k8s_missing.txt 2>&1
check "merge refuses while a shard is not done" test $? -eq 2
check "and names it" contains k8s_missing.txt "shard(s) 2 of 3 not done"
JOB_COMPLETION_INDEX=3 TUNE_SHARDS=3 TUNE_OUT=k8s "$SH" run "${opts[@]}" >k8s_bad.txt 2>&1
check "an index past the Job's completions is refused" test $? -eq 2

# slurm_array.sh through a stand-in sbatch: runs an array's tasks one after another with the
# variables Slurm sets, and a dependent job after them
mkdir -p bin
cat >bin/sbatch <<'SB'
#!/usr/bin/env bash
array="" script="" ; args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --array=*) array=${1#--array=} ;;
    --export=*) IFS=, read -ra kv <<<"${1#--export=}"; for e in "${kv[@]}"; do [ "$e" = ALL ] || export "$e"; done ;;
    --*) ;;
    *) script=$1; shift; args=("$@"); break ;;
  esac
  shift
done
echo "sbatch $array $script ${args[*]}" >>"$SBATCH_LOG"
if [ -n "$array" ]; then
  lo=${array%-*} hi=${array#*-}
  for id in $(seq "$lo" "$hi"); do
    SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=$lo SLURM_ARRAY_TASK_COUNT=$((hi - lo + 1)) "$script" "${args[@]}" >/dev/null || exit 1
  done
else
  "$script" "${args[@]}" >/dev/null || exit 1
fi
echo $((RANDOM + 1000))
SB
chmod +x bin/sbatch
SBATCH="$PWD/bin/sbatch" SBATCH_LOG="$PWD/sbatch.log" TUNE_OUT=array "$SRC/tools/cluster/slurm_array.sh" 3 "${opts[@]}" >array.txt 2>&1
check "slurm_array.sh exits 0" test $? -eq 0
check "it submitted an array of 3" contains sbatch.log "sbatch 1-3 .*tune_shard.sh run"
check "and the merge" contains sbatch.log "tune_shard.sh merge"
check "the array's merge is the unsharded run" cmp -s <(pairs array/merged.db | sort -u) all.pairs
# the reference kernels (peaks) of GPUs of one model, from different machines, are compared at merge
peaks_db() { # peaks_db FILE UUID COPY_GBPS
  python3 - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO devices(kind, name, arch, uuid) VALUES ('gpu', 'NVIDIA H100 80GB HBM3', 'sm_90', ?)", (sys.argv[2],))
dev = db.execute("SELECT id FROM devices WHERE uuid = ?", (sys.argv[2],)).fetchone()[0]
db.execute("INSERT INTO peaks(device_id, kind, value, unit) VALUES (?, 'copy_GBps', ?, 'GB/s')", (dev, float(sys.argv[3])))
db.commit()
PY
}
for i in 1 2 3; do cp all.db peaks$i.db; done
peaks_db peaks1.db GPU-a 3000; peaks_db peaks2.db GPU-b 3030; peaks_db peaks3.db GPU-c 2500
"$TUNE" db merge ref_ok.db peaks1.db peaks2.db >ref_ok.txt 2>&1
check "a merge of two machines' GPUs succeeds" test $? -eq 0
check "their reference kernels agree" contains ref_ok.txt "reference copy_GBps on 2 GPUs of NVIDIA H100 80GB HBM3: 3000 .. 3030 GB/s (spread 1.0 %): comparable"
"$TUNE" db merge ref_bad.db peaks1.db peaks2.db peaks3.db >ref_bad.txt 2>&1
check "a slower machine is named" contains ref_bad.txt "on 3 GPUs of NVIDIA H100 80GB HBM3: 2500 .. 3030 GB/s (spread 21.2 %): NOT comparable"
"$TUNE" db merge ref_json.db peaks1.db peaks3.db --json >ref.json 2>&1
check "--json lists the reference spread" python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["reference"]; sys.exit(0 if r and r[0]["gpus"] == 2 and abs(r[0]["spread"] - 0.2) < 1e-9 else 1)' ref.json
finish
