"""Run the Llama decoder (model.py) stock and on tune's kernels, and print accuracy and speed.

    python3 examples/llama/run.py --bundle model.bundle            # on a GPU
    python3 examples/llama/run.py --shapes-out shapes.jsonl        # the GEMM problems to tune

Accuracy: per prompt, the last prefill position's logits, then every decode step's (both sides
fed the same tokens: the stock model's greedy choices): relative L2 of the logits and top-1
agreement. Speed: prefill tokens/s (all prompts packed into one ragged batch: varlen attention,
stock on torch's FlashAttention-2 varlen kernel) and decode ms/step
(the whole batch, each side's step captured in a CUDA graph and replayed back to back), timed
with CUDA events in interleaved rounds (stock, tuned, ... per round); each ratio is given as the
median and min-max over the rounds. "faster" needs the whole range above 1.
"""
import argparse
import json
import statistics
import sys

import torch

import model as M


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", help="tune bundle to run on (tunert.torch.use_bundle)")
    ap.add_argument("--layers", type=int, default=2, help="decoder layers (default 2)")
    ap.add_argument("--prompts", default="37,128,300,1000", help="prompt lengths, comma-separated")
    ap.add_argument("--steps", type=int, default=16, help="decode steps checked for accuracy (default 16)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default 5)")
    ap.add_argument("--replays", type=int, default=50, help="decode graph replays per round (default 50)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile(mode='reduce-overhead')")
    ap.add_argument("--strict", action="store_true", help="raise where the bundle cannot serve a problem")
    ap.add_argument("--shapes-out", help="write the problems to tune as a served-problem log and exit")
    ap.add_argument("--json-out", help="also write the results as JSON")
    return ap.parse_args()


def rel_l2(a, b):
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b).clamp_min(1e-30)).item()


def accuracy(stock, tuned, cfg, prompts, batch, steps, device):
    cs = M.PagedCache(cfg, batch, max(prompts) + steps + 1, device)
    ct = M.PagedCache(cfg, batch, max(prompts) + steps + 1, device)
    g = torch.Generator(device="cpu").manual_seed(1)
    toks = [torch.randint(0, cfg.vocab, (n,), generator=g).to(device) for n in prompts]
    errs, agree, total = [], 0, 0
    seqs = list(range(len(toks)))
    ls, lt = stock.prefill_batch(toks, cs, seqs), tuned.prefill_batch(toks, ct, seqs)
    for b in seqs:
        errs.append(rel_l2(lt[b], ls[b]))
    agree += int((ls.argmax(-1) == lt.argmax(-1)).sum())
    total += len(seqs)
    lens = torch.tensor(prompts, device=device)
    cur = ls.argmax(-1)
    for _ in range(steps):
        lens = lens + 1
        cs.set_step(lens)
        ct.set_step(lens)
        ls = stock.decode_step(cur, lens - 1, cs)
        lt = tuned.decode_step(cur, lens - 1, ct)
        errs.append(rel_l2(lt, ls))
        agree += int((ls.argmax(-1) == lt.argmax(-1)).sum())
        total += ls.shape[0]
        cur = ls.argmax(-1)
    return {"logits_rel_l2_max": max(errs), "logits_rel_l2_median": statistics.median(errs),
            "top1_agreement": agree / total, "positions": total}


def time_prefill(model, cfg, prompts, device):
    cache = M.PagedCache(cfg, len(prompts), max(prompts) + 1, device)
    g = torch.Generator(device="cpu").manual_seed(2)
    toks = [torch.randint(0, cfg.vocab, (n,), generator=g).to(device) for n in prompts]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    model.prefill_batch(toks, cache, list(range(len(toks))))
    end.record()
    end.synchronize()
    return sum(prompts) / (start.elapsed_time(end) / 1e3)   # tokens/s


class DecodeBench:
    """A side's decode step in a CUDA graph, its cache filled to the prompt lengths."""

    def __init__(self, model, cfg, prompts, extra, device, step_fn=None):
        batch = len(prompts)
        self.cache = M.PagedCache(cfg, batch, max(prompts) + extra + 1, device)
        self.lens = torch.tensor(prompts, device=device) + 1
        self.cache.set_step(self.lens)
        self.tokens = torch.randint(0, cfg.vocab, (batch,), device=device)
        if step_fn is None:
            self.g = M.DecodeGraph(model, self.cache, batch)
            self.g.capture()
            self.step = lambda: self.g.replay(self.tokens, self.lens - 1)
        else:
            self.step = lambda: step_fn(self.tokens, self.lens - 1, self.cache)
            for _ in range(3):
                self.step()

    def ms_per_step(self, replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.step()
        start.record()
        for _ in range(replays):
            self.step()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / replays


def ratio_range(a, b):
    """Per-round ratios a[i] / b[i]: (median, min, max)."""
    r = [x / y for x, y in zip(a, b)]
    return statistics.median(r), min(r), max(r)


def verdict(lo, hi):
    return "faster" if lo >= 1.0005 else "slower" if hi < 0.9995 else "parity"


def main():
    a = parse()
    cfg = M.Config(n_layers=a.layers)
    prompts = [int(x) for x in a.prompts.split(",")]
    if a.shapes_out:
        with open(a.shapes_out, "w") as f:
            # the caches accuracy() and DecodeBench make: prompts + steps + 1 and prompts + 3 tokens
            caps = (max(prompts) + a.steps + 1, max(prompts) + 3)
            for line in M.model_shapes(cfg, prompts, len(prompts), caps):
                f.write(json.dumps(line) + "\n")
        print(f"{a.shapes_out}: the model's problems ({cfg.n_layers} layers, prompts {prompts})")
        return 0
    if not a.bundle:
        print("run.py: --bundle FILE is needed (or --shapes-out FILE)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("run.py: needs a CUDA GPU", file=sys.stderr)
        return 2
    import tunert.torch as tt
    tt.use_bundle(a.bundle)
    tt.set_strict(a.strict)
    dev = "cuda"
    stock = M.Llama(cfg, device=dev)
    tuned = stock.with_ops(M.tunert_ops())
    acc = accuracy(stock, tuned, cfg, prompts, len(prompts), a.steps, dev)
    tt.reset_stats()
    sides = {"stock": DecodeBench(stock, cfg, prompts, 2, dev), "tuned": DecodeBench(tuned, cfg, prompts, 2, dev)}
    if a.compile:
        fn = torch.compile(stock.decode_step, mode="reduce-overhead")
        sides["compile"] = DecodeBench(stock, cfg, prompts, 2, dev, step_fn=fn)
    pre = {k: [] for k in ("stock", "tuned")}
    dec = {k: [] for k in sides}
    for _ in range(a.rounds):
        pre["stock"].append(time_prefill(stock, cfg, prompts, dev))
        pre["tuned"].append(time_prefill(tuned, cfg, prompts, dev))
        for k, s in sides.items():
            dec[k].append(s.ms_per_step(a.replays))
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "layers": cfg.n_layers,
           "prompts": prompts, "accuracy": acc, "prefill_tok_s": pre, "decode_ms": dec, "op_calls": tt.stats()}
    print(f"\n{out['device']}, torch {torch.__version__}, Llama-3-8B dims, {cfg.n_layers} layers, "
          f"prompts {prompts}, {a.rounds} interleaved rounds")
    print(f"accuracy: logits rel L2 median {acc['logits_rel_l2_median']:.2e} max {acc['logits_rel_l2_max']:.2e}, "
          f"top-1 agreement {acc['top1_agreement']:.3f} over {acc['positions']} positions")
    print("| measure | stock | tuned | tuned vs stock (median, range) | verdict |")
    print("| --- | --- | --- | --- | --- |")
    m, lo, hi = ratio_range(pre["tuned"], pre["stock"])
    print(f"| prefill tok/s | {statistics.median(pre['stock']):.0f} | {statistics.median(pre['tuned']):.0f} | "
          f"{m:.3f} ({lo:.3f}-{hi:.3f}) | {verdict(lo, hi)} |")
    m, lo, hi = ratio_range(dec["stock"], dec["tuned"])
    print(f"| decode ms/step (graph) | {statistics.median(dec['stock']):.3f} | {statistics.median(dec['tuned']):.3f} | "
          f"{m:.3f} ({lo:.3f}-{hi:.3f}) | {verdict(lo, hi)} |")
    if "compile" in dec:
        m, lo, hi = ratio_range(dec["compile"], dec["tuned"])
        print(f"| decode ms/step vs torch.compile | {statistics.median(dec['compile']):.3f} | "
              f"{statistics.median(dec['tuned']):.3f} | {m:.3f} ({lo:.3f}-{hi:.3f}) | {verdict(lo, hi)} |")
    print("op calls during timing (tuned kernel / PyTorch fallback):", json.dumps(out["op_calls"]))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
