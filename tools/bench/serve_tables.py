#!/usr/bin/env python3
"""serve_tables.py [DIR...]: the serving tables of docs/benchmarks.md from what device runs left in
data/serve/<device>-<date>/ (no GPU): the untuned-shape sweep (sweep.json, tools/bench/untuned_sweep.py),
the MoE layer (moe_layer.txt, tools/bench/moe_layer.py), the verification survey (verify_survey.db,
tools/bench/verify_survey.py)
and the Llama example (model_run.json, examples/llama/run.py). benchmarks_page_test checks the page."""
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verify_survey  # noqa: E402  (tools/bench/verify_survey.py)


def sweep_table(path):
    rows = json.load(open(path))
    print("| shape | pick | tuned for | pick us | exact best us | best / pick |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        sh = ",".join(f"{k}={v}" for k, v in r["shape"].items())
        if "ratio" in r:
            print(f"| {sh} | {r['kind']} | {r['tuned_for']} | {r['pick_ns'] / 1e3:.2f} | {r['best_ns'] / 1e3:.2f} | "
                  f"{r['ratio']:.3f} |")
        else:
            print(f"| {sh} | {r['kind']} | {r['tuned_for']} | - | - | not timed |")
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    print(f"\n{len(ratios)} of {len(rows)} shapes timed: median {statistics.median(ratios):.3f}, "
          f"worst {min(ratios):.3f}\n")


def ratio(a, b):
    r = [x / y for x, y in zip(a, b)]
    return statistics.median(r), min(r), max(r)


def model_table(path):
    d = json.load(open(path))
    acc, pre, dec = d["accuracy"], d["prefill_tok_s"], d["decode_ms"]
    print(f"{d['device']}, torch {d['torch']}, {d['layers']} layers, prompts {d['prompts']}, "
          f"{len(pre['stock'])} interleaved rounds")
    print(f"accuracy: logits rel L2 median {acc['logits_rel_l2_median']:.2e} max {acc['logits_rel_l2_max']:.2e}, "
          f"top-1 agreement {acc['top1_agreement']:.3f} over {acc['positions']} positions\n")
    print("| measure | baseline | baseline value | tuned | tuned vs baseline (median, min-max) |")
    print("| --- | --- | --- | --- | --- |")
    m, lo, hi = ratio(pre["tuned"], pre["stock"])
    # runs whose tuned side called attention_varlen prefilled the prompts as one ragged batch
    mode = "ragged batch" if "attention_varlen" in d.get("op_calls", {}) else "one prompt at a time"
    print(f"| prefill tok/s (eager, {mode}) | stock | {statistics.median(pre['stock']):.0f} | "
          f"{statistics.median(pre['tuned']):.0f} | {m:.3f} ({lo:.3f}-{hi:.3f}) |")
    for base in ("stock", "compile"):
        if base in dec:
            m, lo, hi = ratio(dec[base], dec["tuned"])
            name = "stock" if base == "stock" else "torch.compile reduce-overhead"
            print(f"| decode ms/step (CUDA graph) | {name} | {statistics.median(dec[base]):.3f} | "
                  f"{statistics.median(dec['tuned']):.3f} | {m:.3f} ({lo:.3f}-{hi:.3f}) |")
    print()


def moe_table(path):
    print(open(path).read().strip() + "\n")


def survey_table(path):
    print(verify_survey.table(path) + "\n")


# file of a data/serve folder -> the heading of its table and the function that prints it
TABLES = (
    ("sweep.json", "Untuned GEMM shapes: the bundle's pick against the exact-shape best", sweep_table),
    ("model_run.json", "Llama example (examples/llama)", model_table),
    ("moe_layer.txt", "MoE layer (tools/bench/moe_layer.py)", moe_table),
    ("verify_survey.db", "Verification survey: err_rel_l2 / honest_rel_l2 (tools/bench/device_verify_survey.sh)",
     survey_table),
)


def main():
    dirs = sys.argv[1:] or sorted(glob.glob("data/serve/*/"))
    for d in dirs:
        d = d.rstrip("/")
        present = [(os.path.join(d, f), head, fn) for f, head, fn in TABLES if os.path.exists(os.path.join(d, f))]
        if not present:
            continue  # a folder of logs or profiles: nothing to tabulate
        print(f"## {os.path.basename(d)}\n")
        for path, head, fn in present:
            print(f"### {head}\n")
            fn(path)


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    main()
