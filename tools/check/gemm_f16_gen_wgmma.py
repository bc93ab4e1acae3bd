#!/usr/bin/env python3
"""gemm_f16_gen_wgmma.py: prints the fp16 wgmma wrappers of templates/gemm/f16.cuh
(wgmma_f16_m64n{64,128,256}k16_ss), the operand lists of templates/common/wgmma.cuh's bf16 forms with
the fp16 type. They were written into f16.cuh from this output; editing f16.cuh changes the source
hash of data/recorded/gemm.f16.db, so regenerate and paste together with a re-recording.
    usage: python3 tools/check/gemm_f16_gen_wgmma.py
"""


def regs(r):
    out = []
    for i in range(0, r, 16):
        s = ", ".join(f"%{j}" for j in range(i, min(i + 16, r)))
        out.append(f'      "{s}{", " if i + 16 < r else ""}"')
    return "\n".join(out)
def ops(r):
    out = []
    for i in range(0, r, 8):
        s = ", ".join(f'"+f"(d[{j}])' for j in range(i, i + 8))
        out.append(("      : " if i == 0 else "        ") + s + ("," if i + 8 < r else ""))
    return "\n".join(out)
for n in (64, 128, 256):
    r = n // 2
    print(f"template <int TRANS_B>")
    print(f"__device__ __forceinline__ void wgmma_f16_m64n{n}k16_ss(float (&d)[{r}], unsigned long long desc_a,")
    print(f"                                                    unsigned long long desc_b, int scale_d) {{")
    print("  asm volatile(")
    print(f'      "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{r + 2}, 0;\\n"')
    print(f'      "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{"')
    print(regs(r))
    print(f'      "}}, %{r}, %{r + 1}, p, 1, 1, 0, %{r + 3};\\n}}\\n"')
    print(ops(r))
    print('      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TRANS_B));')
    print("}")
    print()
