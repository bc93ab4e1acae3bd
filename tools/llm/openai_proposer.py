#!/usr/bin/env python3
"""openai_proposer.py: a tune proposer (docs/llm-hook.md) backed by an OpenAI-compatible
chat-completions endpoint (OpenAI, vLLM, llama.cpp server, ...). Standard library only.

  tune run RECIPE --strategy llm --proposer-env OPENAI_API_KEY \\
      --proposer 'python3 tools/llm/openai_proposer.py --model gpt-4o-mini'

Reads tune's request on stdin, asks the model for proposals, prints the protocol's response on
stdout. Options (else environment, else default):
  --url URL        base URL up to /v1 (OPENAI_BASE_URL, https://api.openai.com/v1)
  --model NAME     model name (OPENAI_MODEL; required)
  --key-env NAME   environment variable holding the API key (OPENAI_API_KEY); tune clears the
                   environment, so pass it with --proposer-env NAME
  --timeout S      HTTP timeout in seconds (50; keep it below tune's --proposer-timeout)
  --max-tokens N   completion limit (2048)
Exits non-zero with a message on stderr when the endpoint fails or the model's answer is not
a JSON object; tune records that and falls back to random for the batch.
"""
import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request

SYSTEM = """You propose configurations for a CUDA kernel autotuner.
The user message is a JSON request: the recipe (parameters with their allowed values,
constraints, problems, optionally template regions with their current device code), the problem
being tuned, the device, the best measured results so far, recent failures, and a budget.
Answer with ONE JSON object and nothing else:
{"version": 1, "proposals": [{"kind": "params", "values": {"PARAM": value, ...}, "rationale": "..."}]}
Give at most `budget` proposals, each setting every parameter to one of its allowed values and
satisfying the constraints; do not repeat configurations listed in best or failures.
You may also propose device code for a template region:
{"kind": "code", "region": "NAME", "code": "...", "rationale": "..."}
where code replaces the body between the region markers and must be device code only."""


def extract_json(text):
    """The first JSON object in the model's text (it may wrap it in a code fence)."""
    m = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.S)
    if m:
        text = m.group(1)
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in the model's answer")
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    return obj


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"))
    ap.add_argument("--model", default=os.environ.get("OPENAI_MODEL"))
    ap.add_argument("--key-env", default="OPENAI_API_KEY")
    ap.add_argument("--timeout", type=float, default=50)
    ap.add_argument("--max-tokens", type=int, default=2048)
    a = ap.parse_args()
    if not a.model:
        sys.stderr.write("openai_proposer: --model or OPENAI_MODEL is required\n")
        return 2
    req = json.load(sys.stdin)
    body = {
        "model": a.model,
        "messages": [{"role": "system", "content": SYSTEM},
                     {"role": "user", "content": json.dumps(req)}],
        "max_tokens": a.max_tokens,
        "temperature": 0.2,
    }
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(a.key_env)
    if key:
        headers["Authorization"] = "Bearer " + key
    http = urllib.request.Request(a.url.rstrip("/") + "/chat/completions",
                                  data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(http, timeout=a.timeout) as r:
            answer = json.loads(r.read(4 << 20))
    except urllib.error.HTTPError as e:
        sys.stderr.write("openai_proposer: HTTP %d: %s\n" % (e.code, e.read(300).decode(errors="replace")))
        return 1
    except (urllib.error.URLError, OSError, ValueError) as e:
        sys.stderr.write("openai_proposer: %s\n" % e)
        return 1
    try:
        content = answer["choices"][0]["message"]["content"]
        out = extract_json(content)
    except (KeyError, IndexError, TypeError, ValueError) as e:
        sys.stderr.write("openai_proposer: unusable answer: %s\n" % e)
        return 1
    # pass the proposals through as the model gave them: tune validates strictly
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
