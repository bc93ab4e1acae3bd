#!/usr/bin/env bash
# The C OpenAI-compatible adapter (tools/llm/openai_proposer.c, build/tune-openai-proposer)
# against loopback servers, next to the Python one: a good answer (flags and environment), the
# key sent as a Bearer header and never printed, an HTTP error, a timeout, refused connections,
# answers that are not JSON or hold no object, an oversized answer; each case run through both
# adapters, which must agree on the exit status and the printed object. Then full replay runs of
# `tune run --strategy llm` through it (an answering endpoint, a failing one).
. "$(dirname "$0")/lib.sh"
PROPOSER="${PROPOSER:?set PROPOSER to the tune-openai-proposer binary}"
PY="python3 $SRC/tools/llm/openai_proposer.py"
REC="$SRC/data/recorded/copy.db"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
"$PROPOSER" --help >help.txt 2>&1
rc=$?
if [ $rc -eq 127 ]; then echo "skipped: $PROPOSER cannot start here (libcurl missing?)"; cat help.txt; exit 77; fi
check "--help exits 0" test $rc -eq 0
check "--help lists the options" contains help.txt "--max-tokens N"

KEY=sk-loopback-5e1f9c0d
export TEST_LLM_KEY=$KEY
wait_port() { for _ in $(seq 100); do [ -s "$1" ] && break; sleep 0.1; done; cat "$1"; }

# the loopback chat server of llm_test.sh: good answers (a fenced object), 404 elsewhere
python3 "$SRC/tests/integration/llm_chat_server.py" port.txt chat.log 12 &
srv=$!
# a misbehaving one: the first path segment picks the answer
cat >bad_server.py <<'PYEOF'
import http.server, json, os, sys, threading, time
def chat(content):
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})
ANSWERS = {
    "prose": (200, chat("I would rather not say.")),
    "array": (200, chat("[1, 2, 3]")),
    "badjson": (200, chat('```json\n{"version": 1, "proposals": [\n```')),
    "notjson": (200, "<html>gateway says hi</html>"),
    "nochoices": (200, json.dumps({"choices": []})),
    "trailing": (200, chat('Sure: {"version": 1, "proposals": [], "x": "caf\u00e9"} and {"more": 1}')),
    "fenced": (200, chat('a {b}\n```\n{"version": 1, "proposals": [{"kind": "params", "values": {"A": 1.5}}]}\n```\nbye {}')),
    "error500": (500, "upstream exploded"),
    "big": (200, chat("x" * (5 << 20))),
}
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"path": self.path, "auth": self.headers.get("Authorization")}) + "\n")
        kind = self.path.split("/")[1]
        if kind == "slow":
            time.sleep(10)
        code, body = ANSWERS.get(kind, (200, chat("{}")))
        body = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try: self.wfile.write(body)
        except OSError: pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
threading.Timer(120, os._exit, (0,)).start()  # bounded life
open(sys.argv[1] + ".tmp", "w").write(str(srv.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
srv.serve_forever()
PYEOF
python3 bad_server.py bad_port.txt bad.log &
bad=$!
trap 'kill $srv $bad 2>/dev/null; rm -rf "$WORK"' EXIT
port=$(wait_port port.txt)
bport=$(wait_port bad_port.txt)
GOOD="http://127.0.0.1:$port/v1"
echo '{"version": 1, "budget": 2, "recipe": {"name": "copy"}, "note": "caf\u00e9"}' >req.json

# both NAME URL [more options]: runs the C and the Python adapter on req.json; c_NAME.{out,err,rc}
both() {
  local name=$1 url=$2; shift 2
  "$PROPOSER" --url "$url" --model m --key-env TEST_LLM_KEY --timeout 1 "$@" <req.json >"c_$name.out" 2>"c_$name.err"
  echo $? >"c_$name.rc"
  $PY --url "$url" --model m --key-env TEST_LLM_KEY --timeout 1 "$@" <req.json >"p_$name.out" 2>"p_$name.err"
  echo $? >"p_$name.rc"
  check "$name: both adapters exit $(cat "p_$name.rc") (C: $(cat "c_$name.rc"))" test "$(cat "c_$name.rc")" = "$(cat "p_$name.rc")"
  check "$name: same output" python3 -c '
import json,sys
a,b=(open(f).read() for f in sys.argv[1:])
assert (json.loads(a) if a.strip() else None)==(json.loads(b) if b.strip() else None), (a,b)' "c_$name.out" "p_$name.out"
}
rc_is() { test "$(cat "c_$1.rc")" -eq "$2"; }

# 1. a good answer: the fenced object, the request's shape and the key as a Bearer header
both good "$GOOD"
check "good: exits 0" rc_is good 0
check "good: prints the proposals" python3 -c '
import json; r=json.load(open("c_good.out"))
assert r["version"]==1 and len(r["proposals"])==2 and r["proposals"][0]["values"]["VEC_BYTES"]==16, r'
check "good: request shape and key" python3 -c '
import json; e=json.loads(open("chat.log").readline())
assert e=={"path":"/v1/chat/completions","model":"m","auth":"Bearer sk-loopback-5e1f9c0d","roles":["system","user"],"request_version":1,"budget":2}, e'
# URL and model from the environment, a trailing slash, no key: no Authorization header
env -u TEST_LLM_KEY OPENAI_BASE_URL="$GOOD/" OPENAI_MODEL=env-model "$PROPOSER" --key-env TEST_LLM_KEY <req.json >env.out 2>env.err
check "environment: exits 0" test $? -eq 0
check "environment: URL and model from OPENAI_BASE_URL, OPENAI_MODEL; no key, no header" python3 -c '
import json; e=json.loads(open("chat.log").readlines()[-1])
assert e["path"]=="/v1/chat/completions" and e["model"]=="env-model" and e["auth"] is None, e'
# options as --name=value; the flag wins over the environment
OPENAI_MODEL=env-model "$PROPOSER" --url="$GOOD" --model=flag-model --timeout=5 --max-tokens=64 <req.json >eq.out 2>eq.err
check "--name=value: exits 0" test $? -eq 0
check "--name=value: the flag wins" python3 -c '
import json; e=json.loads(open("chat.log").readlines()[-1]); assert e["model"]=="flag-model", e'

# 2. errors: exit 1 with a message, nothing on stdout
both http404 "http://127.0.0.1:$port/v2"
check "http404: exits 1" rc_is http404 1
check "http404: says so" contains c_http404.err "HTTP 404"
both error500 "http://127.0.0.1:$bport/error500"
check "error500: exits 1" rc_is error500 1
check "error500: status and body excerpt" contains c_error500.err "HTTP 500: upstream exploded"
t0=$(date +%s%N)
"$PROPOSER" --url "http://127.0.0.1:$bport/slow" --model m --key-env TEST_LLM_KEY --timeout 1 <req.json >c_slow.out 2>c_slow.err
echo $? >c_slow.rc
t1=$(date +%s%N)
check "timeout: exits 1" rc_is slow 1
check "timeout: says so" contains c_slow.err "timed out after 1 s"
check "timeout: gives up after about --timeout ($(( (t1 - t0) / 1000000 )) ms)" test $(( (t1 - t0) / 1000000 )) -lt 3000
both slow_py "http://127.0.0.1:$bport/slow"
closed=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
both refused "http://127.0.0.1:$closed/v1"
check "refused: exits 1" rc_is refused 1
both prose "http://127.0.0.1:$bport/prose"
check "prose: exits 1" rc_is prose 1
check "prose: no JSON object" contains c_prose.err "no JSON object in the model's answer"
both array "http://127.0.0.1:$bport/array"
check "array: exits 1 (not an object)" rc_is array 1
both badjson "http://127.0.0.1:$bport/badjson"
check "badjson: exits 1" rc_is badjson 1
check "badjson: malformed" contains c_badjson.err "the model's JSON is malformed"
both notjson "http://127.0.0.1:$bport/notjson"
check "notjson: exits 1" rc_is notjson 1
check "notjson: the endpoint's answer is not JSON" contains c_notjson.err "answer is not JSON"
both nochoices "http://127.0.0.1:$bport/nochoices"
check "nochoices: exits 1" rc_is nochoices 1
check "nochoices: unusable answer" contains c_nochoices.err "unusable answer"
"$PROPOSER" --url "http://127.0.0.1:$bport/big" --model m --timeout 10 <req.json >c_big.out 2>c_big.err
echo $? >c_big.rc
check "big: exits 1" rc_is big 1
check "big: over the limit" contains c_big.err "larger than the 4194304 byte limit"
for f in c_http404 c_error500 c_slow c_refused c_prose c_array c_badjson c_notjson c_nochoices c_big; do
  check "$f: nothing on stdout" test ! -s "$f.out"
done

# 3. answers with an object among prose: the first object (fenced first), as the Python adapter
both trailing "http://127.0.0.1:$bport/trailing"
check "trailing: exits 0" rc_is trailing 0
check "trailing: the first object, non-ASCII kept" python3 -c '
import json; r=json.load(open("c_trailing.out")); assert r=={"version":1,"proposals":[],"x":"caf\u00e9"}, r'
both fenced "http://127.0.0.1:$bport/fenced"
check "fenced: the fence body, not the first brace" python3 -c '
import json; r=json.load(open("c_fenced.out")); assert r["proposals"][0]["values"]=={"A":1.5}, r'

# 4. usage: exit 2
env -u OPENAI_MODEL "$PROPOSER" --url "$GOOD" <req.json >u1.out 2>u1.err
check "no model: exits 2" test $? -eq 2
check "no model: says so" contains u1.err "--model or OPENAI_MODEL is required"
"$PROPOSER" --model m --timeout soon <req.json >u2.out 2>u2.err
check "bad --timeout: exits 2" test $? -eq 2
"$PROPOSER" --model m --frobnicate <req.json >u3.out 2>u3.err
check "unknown option: exits 2" test $? -eq 2
echo 'not json' | "$PROPOSER" --url "$GOOD" --model m >u4.out 2>u4.err
check "request not JSON: exits 1" test $? -eq 1

# 5. tune run through the C adapter (replay): its proposals are measured; a failing endpoint
#    makes tune fall back to random
"$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --db oa.db --problem 64MiB --budget 3 \
  --strategy llm --proposer-env TEST_LLM_KEY \
  --proposer "$PROPOSER --url http://127.0.0.1:$port/v1 --model test-model --key-env TEST_LLM_KEY --timeout 20" \
  >oa.txt 2>&1
check "tune run: exits 0" test $? -eq 0
check "tune run: the adapter's proposals were measured" test "$(sql oa.db "select count(*) from results r join configs c on c.id=r.config_id where r.status='ok' and c.origin like 'llm:%'")" -eq 3
check "tune run: request shape and key" python3 -c '
import json; e=json.loads(open("chat.log").readlines()[-1])
assert e=={"path":"/v1/chat/completions","model":"test-model","auth":"Bearer sk-loopback-5e1f9c0d","roles":["system","user"],"request_version":1,"budget":3}, e'
"$TUNE" run "$SRC/recipes/copy.lua" --device "replay:$REC" --db fail.db --problem 64MiB --budget 3 \
  --strategy llm --proposer-env TEST_LLM_KEY \
  --proposer "$PROPOSER --url http://127.0.0.1:$bport/error500 --model test-model --key-env TEST_LLM_KEY --timeout 20" \
  >fail.txt 2>&1
check "tune run, failing endpoint: exits 0" test $? -eq 0
check "... says why" contains fail.txt "exited with status 1: tune-openai-proposer: HTTP 500"
check "... falls back to random" contains fail.txt "come from the random strategy"
check "... stored as rejected" test "$(sql fail.db "select count(*) from proposals where status='rejected' and reason like '%HTTP 500%'")" -ge 1

# 6. the key reached the servers as a Bearer header, and was never printed
check "the misbehaving server got the key as a Bearer header" python3 -c '
import json; a={json.loads(l)["auth"] for l in open("bad.log")}; assert "Bearer sk-loopback-5e1f9c0d" in a, a'
for f in c_*.out c_*.err env.* eq.* u*.out u*.err oa.txt fail.txt; do
  check "the key is not in $f" lacks "$f" "$KEY"
done
check "nor in the proposals table" test "$(sql fail.db "select count(*) from proposals where reason like '%$KEY%'")" -eq 0
finish
