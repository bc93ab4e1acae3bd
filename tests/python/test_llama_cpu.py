"""The Llama example (examples/llama/model.py) on the CPU with a tiny configuration: the ragged
prefill (prompts packed into one batch, varlen attention) against each prompt prefilled alone and
against attention computed from the formula, the paged cache it leaves behind, the tunert op table
(PyTorch fallbacks without a bundle) against the stock table, and the problems model_shapes lists."""
import math
import unittest

from common import HAVE_TORCH, SRC, needs_torch

if HAVE_TORCH:
    import sys
    import torch
    sys.path.insert(0, str(SRC / "examples" / "llama"))
    import model as M

TINY = dict(hidden=64, heads=4, kv_heads=2, head_dim=16, intermediate=96, vocab=101, n_layers=2, page_size=4)


def attention_formula(q, k, v, cu):
    """Causal GQA attention of each packed sequence, fp64, no library call."""
    T, HQ, D = q.shape
    G = HQ // k.shape[1]
    o = torch.zeros(T, HQ, D, dtype=torch.float64)
    cu = cu.tolist()
    for lo, hi in zip(cu[:-1], cu[1:]):
        n = hi - lo
        for h in range(HQ):
            s = q[lo:hi, h].double() @ k[lo:hi, h // G].double().T / math.sqrt(D)
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
            o[lo:hi, h] = torch.softmax(s, -1) @ v[lo:hi, h // G].double()
    return o


@needs_torch
class LlamaExampleTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.cfg = M.Config(**TINY)
        self.model = M.Llama(self.cfg, device="cpu", dtype=torch.float32, max_pos=64)
        self.prompts = [torch.randint(0, self.cfg.vocab, (n,)) for n in (5, 1, 13)]

    def test_varlen_op_matches_formula(self):
        lens = [3, 1, 7, 4]
        cu = torch.tensor([0, 3, 4, 11, 15], dtype=torch.int32)
        q, k, v = torch.randn(15, 4, 16) * 3, torch.randn(15, 2, 16) * 3, torch.randn(15, 2, 16)
        o = M.TORCH_OPS["attention_varlen"](q, k, v, cu, max(lens))
        torch.testing.assert_close(o.double(), attention_formula(q, k, v, cu), rtol=1e-5, atol=1e-5)

    def test_batch_prefill_matches_one_at_a_time(self):
        n = len(self.prompts)
        batch = M.PagedCache(self.cfg, n, 16, "cpu", dtype=torch.float32)
        alone = M.PagedCache(self.cfg, n, 16, "cpu", dtype=torch.float32)
        logits = self.model.prefill_batch(self.prompts, batch, list(range(n)))
        self.assertEqual(tuple(logits.shape), (n, self.cfg.vocab))
        for b, t in enumerate(self.prompts):
            torch.testing.assert_close(logits[b], self.model.prefill(t, alone, b), rtol=1e-4, atol=1e-4)
        for layer in range(self.cfg.n_layers):
            torch.testing.assert_close(batch.k[layer], alone.k[layer])
            torch.testing.assert_close(batch.v[layer], alone.v[layer])
        # the cache holds each prompt's keys: a page of sequence 2 is written, padding past it is not
        used = batch.k[0].view(-1, self.cfg.kv_heads, self.cfg.head_dim).abs().sum((1, 2)) > 0
        self.assertEqual(int(used.sum()), sum(int(t.shape[0]) for t in self.prompts))

    def test_tunert_table_matches_stock_without_bundle(self):
        try:
            ops = M.tunert_ops()
        except Exception as e:  # the package needs libtunert (TUNERT_LIBRARY or build/lib)
            self.skipTest(f"tunert.torch not importable: {e}")
        tuned = self.model.with_ops(ops)
        n = len(self.prompts)
        cs = M.PagedCache(self.cfg, n, 16, "cpu", dtype=torch.float32)
        ct = M.PagedCache(self.cfg, n, 16, "cpu", dtype=torch.float32)
        torch.testing.assert_close(tuned.prefill_batch(self.prompts, ct, list(range(n))),
                                   self.model.prefill_batch(self.prompts, cs, list(range(n))), rtol=1e-4, atol=1e-4)

    def test_shapes_list_the_packed_prefill(self):
        lines = M.model_shapes(self.cfg, [5, 1, 13], 3, (20,))
        varlen = [x["dims"] for x in lines if x["family"] == "attention.varlen"]
        self.assertEqual(varlen, [{"B": 3, "T": 19, "HQ": 4, "HKV": 2, "D": 16, "causal": True}])
        gemm_m = {x["dims"]["M"] for x in lines if x["family"] == "gemm"}
        self.assertEqual(gemm_m, {19, 3})
        self.assertFalse([x for x in lines if x["family"] == "attention.prefill_sm90"])


if __name__ == "__main__":
    unittest.main()
