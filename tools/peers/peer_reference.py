"""peer_reference.py: the float64 attention reference the peers' outputs are checked against
(peer_server.py's SDPA peers, the varlen, varlen_kv and FP8 KV cache families; docs/peers.md).
torch is passed in by the caller: nothing here imports it.
"""
import math

SCORES_ELEMS = 1 << 25  # float64 scores of one step of the reference (256 MB): a 128k-key sequence fits


def attention_reference(torch, q, k, v, causal, rows=None, k_scale=None, v_scale=None):
    """float64 softmax(q k^T / sqrt(D)) v of one sequence at its query rows `rows` (an index tensor;
    all rows by default): q [Sq, HQ, D], k and v [Sk, HKV, D], query head h reading KV head
    h // (HQ / HKV); causal aligned at the end (query i sees keys j <= i + Sk - Sq, the usual mask
    when Sq == Sk); k_scale, v_scale: factors broadcast against [Sk, HKV, 1] (an fp8 cache's
    dequantization). One KV head and a few rows at a time, so that the scores stay within
    SCORES_ELEMS. -> [len(rows), HQ, D]"""
    Sq, HQ, D = q.shape
    Sk, HKV = k.shape[0], k.shape[1]
    g = HQ // HKV
    rows = torch.arange(Sq, device=q.device) if rows is None else rows
    out = torch.empty(len(rows), HQ, D, dtype=torch.float64, device=q.device)
    step = max(1, SCORES_ELEMS // (g * Sk))
    keys = torch.arange(Sk, device=q.device)
    for h in range(HKV):
        kh, vh = k[:, h].double(), v[:, h].double()
        if k_scale is not None:
            kh = kh * k_scale[:, h].double()
        if v_scale is not None:
            vh = vh * v_scale[:, h].double()
        heads = slice(h * g, (h + 1) * g)
        for r0 in range(0, len(rows), step):
            r = rows[r0:r0 + step]
            s = (q[r, heads].double() / math.sqrt(D)).transpose(0, 1) @ kh.t()  # [g, R, Sk], one copy
            if causal:
                s.masked_fill_(keys[None, :] > r[:, None] + (Sk - Sq), float("-inf"))
            s -= s.amax(-1, keepdim=True)  # the softmax written out, in place
            s.exp_()
            s /= s.sum(-1, keepdim=True)
            out[r0:r0 + step, heads] = (s @ vh).transpose(0, 1)
    return out
