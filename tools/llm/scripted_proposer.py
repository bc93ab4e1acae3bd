#!/usr/bin/env python3
"""scripted_proposer.py: a deterministic proposer for `tune run --strategy llm` (docs/llm-hook.md).

tune spawns a proposer once per request, so the script's position is kept in a state file.

  scripted_proposer.py --script STEPS.json --state FILE [--log-dir DIR]
      replays STEPS.json, a JSON list; request n gets step n (the last step repeats). A step is
        {"response": {...}}          printed as JSON
        {"raw": "text"}              printed as is (malformed JSON, ...)
        {"bytes": N}                 N bytes of filler (an oversized response)
        {"sleep": S}                 sleeps S seconds first (a hanging proposer), then goes on
                                     with the step's other keys, if any
        {"exit": CODE, "stderr": "..."}   exits with CODE after writing stderr
        {"seeded": N}                N configs drawn from the request's value lists (see --seed)
  scripted_proposer.py --seed S [--log-dir DIR]
      every request: `budget` configs drawn with random.Random(S + request number) from the
      request's parameter value lists (some may break the recipe's constraints: tune rejects them).

--log-dir DIR writes each request to DIR/request-N.json and the environment the proposer got
to DIR/env-N.json (tests read what tune sent).
"""
import argparse
import json
import os
import random
import sys
import time


def seeded(req, n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        values = {p["name"]: rng.choice(p["values"]) for p in req["recipe"]["params"]}
        out.append({"kind": "params", "values": values, "rationale": "seeded draw"})
    return {"version": 1, "proposals": out}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script")
    ap.add_argument("--state")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--log-dir")
    a = ap.parse_args()
    req = json.load(sys.stdin)
    if a.state:
        try:
            with open(a.state) as f:
                n = int(f.read() or 0)
        except FileNotFoundError:
            n = 0
        with open(a.state, "w") as f:
            f.write(str(n + 1))
    else:
        n = 0
        if a.log_dir:
            n = len([x for x in os.listdir(a.log_dir) if x.startswith("request-")])
    # n counts requests from 0
    if a.log_dir:
        with open(os.path.join(a.log_dir, "request-%d.json" % (n + 1)), "w") as f:
            json.dump(req, f, indent=1)
        with open(os.path.join(a.log_dir, "env-%d.json" % (n + 1)), "w") as f:
            json.dump(dict(os.environ), f, indent=1)
    if a.script is None:
        json.dump(seeded(req, req["budget"], (a.seed or 0) + n), sys.stdout)
        return 0
    with open(a.script) as f:
        steps = json.load(f)
    step = steps[min(n, len(steps) - 1)]
    if "sleep" in step:
        time.sleep(step["sleep"])
    if "exit" in step:
        sys.stderr.write(step.get("stderr", ""))
        return step["exit"]
    if "response" in step:
        json.dump(step["response"], sys.stdout)
    elif "raw" in step:
        sys.stdout.write(step["raw"])
    elif "bytes" in step:
        sys.stdout.write("x" * step["bytes"])
    elif "seeded" in step:
        json.dump(seeded(req, step["seeded"], n), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
