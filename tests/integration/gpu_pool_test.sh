#!/usr/bin/env bash
# tune run --device cuda:all on any CPU: tests/support/fake_worker.c answers for two "GPUs"
# (made-up times, 200 ms per variant, timer "fake"), so what is checked is the run's logic:
#  - one worker per GPU, variants in flight on both at once, every result stored once, each
#    naming the card that measured it, all under one device row;
#  - a GPU whose worker dies on every variant is set aside with a message and the other one
#    measures the rest;
#  - GPUs of different models, a GPU named twice or one that does not exist are refused.
. "$(dirname "$0")/lib.sh"
export TUNE_WORKER_PROGRAM="${FAKE_WORKER:?set FAKE_WORKER to the stand-in worker}"
R="$SRC/tests/fixtures/recipes/pool.lua"
run() { "$TUNE" run "$R" --strategy exhaustive --seed 1 "$@"; }

FAKE_MEASURE_MS=200 FAKE_LOG=$PWD/a.log run --device cuda:all --db a.db >a.txt 2>&1
check "cuda:all exits 0" test $? -eq 0
check "the header names both GPUs" contains a.txt "2 GPUs of this model"
check "24 results (12 configs x 2 problems), each once" \
  test "$(sql a.db "select count(*), count(distinct config_id || '/' || problem_id) from results")" = "24|24"
check "both cards measured" test "$(sql a.db "select count(distinct gpu) from results where status = 'ok'")" = 2
check "one device row" test "$(sql a.db "select count(*) from devices")" = 1
check "the gpu column holds the cards' UUIDs" \
  test "$(sql a.db "select group_concat(distinct gpu) from (select gpu from results order by gpu)")" = "GPU-fake-0000,GPU-fake-0001"
# in flight on both at once: some measure on GPU 1 starts before one on GPU 0 has ended
overlap=$(python3 - a.log <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
a = [(float(s), float(e)) for g, s, e in rows if g == "0"]
b = [(float(s), float(e)) for g, s, e in rows if g == "1"]
print(sum(1 for s0, e0 in a for s1, e1 in b if s1 < e0 and s0 < e1))
PY
)
check "measures overlap across the GPUs ($overlap pairs)" test "$overlap" -ge 5
check "a selection per problem, its rounds over both cards (4 candidates x 3 rounds x 2 problems)" \
  test "$(sql a.db "select (select count(*) from selections), count(*), count(distinct round) from measurements")" = "2|24|3"

# the default strategy (bayes) proposes a point per GPU after its design: both cards get work
FAKE_MEASURE_MS=100 "$TUNE" run "$R" --seed 1 --budget 8 --device cuda:all --db b.db >b.txt 2>&1
check "bayes over cuda:all exits 0" test $? -eq 0
check "bayes keeps both cards busy" test "$(sql b.db "select count(distinct gpu) from results where status = 'ok'")" = 2

FAKE_MEASURE_MS=20 run --device cuda:0 --db one.db >one.txt 2>&1
check "cuda:0 alone exits 0" test $? -eq 0
check "cuda:0: one card" test "$(sql one.db "select count(distinct gpu) from results")" = 1

# one card, bayes: the backend measures asynchronously (submit, then collect) while the round of
# compile-ahead guesses runs; every proposal measured once, the guesses compiled ahead
FAKE_GPUS=1 FAKE_MEASURE_MS=100 FAKE_LOG=$PWD/s.log "$TUNE" run "$R" --seed 1 --budget 10 --device cuda:0 \
  --db s.db >s.txt 2>&1
check "bayes on one card exits 0" test $? -eq 0
check "bayes on one card: 20 results, each once" \
  test "$(sql s.db "select count(*), count(distinct config_id || '/' || problem_id) from results")" = "20|20"
check "bayes on one card: guesses compiled ahead" grep -q "^compiled ahead: [1-9]" s.txt
# 20 measures and 2 x 4 x 3 selection rounds of 100 ms: the rounds are the GPU's work too
check "bayes on one card: the selection rounds count as GPU work" python3 - s.txt <<'PY'
import re, sys
m = re.search(r"^GPU busy: ([0-9.]+) % of ([0-9.]+) s wall \(measure ([0-9.]+) s, selection rounds ([0-9.]+) s", open(sys.argv[1]).read(), re.M)
busy, wall, measure, select = map(float, m.groups())
sys.exit(not (select >= 2.0 and abs(busy - 100 * (measure + select) / wall) < 4))
PY
check "bayes on one card: one measure at a time" test "$(python3 - s.log <<'PY'
import sys
rows = sorted((float(s), float(e)) for _, s, e in (l.split() for l in open(sys.argv[1])))
print(sum(1 for (s0, e0), (s1, e1) in zip(rows, rows[1:]) if s1 < e0))
PY
)" = 0

FAKE_MEASURE_MS=20 FAKE_CRASH_GPU=1 run --device cuda:all --db c.db >c.txt 2>&1
check "a crashing GPU: the run still exits 0" test $? -eq 0
check "it is set aside, named" contains c.txt "cuda:1 (GPU-fake-0001) set aside"
check "every variant has its result" \
  test "$(sql c.db "select count(*), count(distinct config_id || '/' || problem_id) from results")" = "24|24"
check "at most 3 crashes before it was set aside" \
  test "$(sql c.db "select count(*) <= 3 from results where status = 'crash'")" = 1
check "GPU 0 measured the rest" test "$(sql c.db "select count(*) >= 21 from results where status = 'ok' and gpu = 'GPU-fake-0000'")" = 1

FAKE_OTHER_MODEL_GPU=1 run --device cuda:all --db m.db >m.txt 2>&1
check "different models refused" test $? -ne 0
check "... saying why" contains m.txt "different GPU models never pool"
run --device cuda:0,0 --db d.db >d.txt 2>&1
check "a GPU named twice refused" contains d.txt "GPU 0 named twice"
run --device cuda:0,7 --db d.db >e.txt 2>&1
check "a GPU that is not there refused" contains e.txt "ordinals below 2"

# the device limits on a fresh database: the matrix kernel compiled while the worker starts
# (tuner/peaks.h), measured once; a later run reads them
FAKE_GPUS=1 FAKE_MEASURE_MS=1 FAKE_HELLO_MS=300 run --device cuda:0 --db p.db >p.txt 2>&1
check "a fresh database: exits 0" test $? -eq 0
check "it measures both limits, and says how long that took" \
  contains p.txt "device limits: copy 3000 GB/s (measured), DRAM 3352 GB/s (bound), dense bf16 800 TFLOP/s (measured); measured now, [0-9.]* s"
check "it says how long the worker took to start (at least its 300 ms hello)" python3 -c '
import re, sys
m = re.search(r"kernel timer: fake; worker up in ([0-9.]+) s", open(sys.argv[1]).read())
sys.exit(not (m and float(m.group(1)) >= 0.29))' p.txt
FAKE_GPUS=1 FAKE_MEASURE_MS=1 run --device cuda:0 --db p.db >q.txt 2>&1
check "a later run reads them" test "$(sql p.db "select count(*) from peaks where kind = 'bf16_dense_TFLOPs'")" = 1
check "... without measuring" lacks q.txt "measured now"
finish
