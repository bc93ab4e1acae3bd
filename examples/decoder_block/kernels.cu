// kernels.cu: the decoder block example's plumbing and yardstick (see kernels.h). Plain, obviously
// correct kernels: none of them is tuned, and none is what the example measures.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

#include "kernels.h"

typedef __nv_bfloat16 bf16;

static __device__ __forceinline__ float ldf(const void *p, int dt, size_t i) {
  return dt == DT_BF16 ? __bfloat162float(((const bf16 *)p)[i]) : ((const float *)p)[i];
}
static __device__ __forceinline__ void stf(void *p, int dt, size_t i, float v) {
  if (dt == DT_BF16) ((bf16 *)p)[i] = __float2bfloat16(v);
  else ((float *)p)[i] = v;
}
static __device__ __forceinline__ float rnd_bf16(float v) { return __bfloat162float(__float2bfloat16(v)); }
static __device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

static int launched(void) { return (int)cudaGetLastError(); }
static unsigned blocks_for(size_t n, unsigned threads) {
  size_t b = (n + threads - 1) / threads;
  return (unsigned)(b > 65535u * 16u ? 65535u * 16u : (b ? b : 1));  // grid-stride loops cover the rest
}
#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

// ---- seeded inputs -----------------------------------------------------------------------------

static __device__ __forceinline__ uint64_t mix64(uint64_t z) {  // splitmix64 finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static __device__ __forceinline__ float draw(uint64_t seed, size_t i, int normal) {
  uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ull + i + 1);
  float u1 = ((uint32_t)(h >> 40) + 1) * (1.0f / 16777217.0f);  // (0, 1]
  float u2 = (uint32_t)(h & 0xffffff) * (1.0f / 16777216.0f);   // [0, 1)
  if (!normal) return 2.f * u2 - 1.f;
  return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);  // Box-Muller
}

__global__ void init_kernel(void *p, int dt, size_t n, uint64_t seed, int normal, float scale, float offset) {
  GRID_STRIDE(i, n) stf(p, dt, i, offset + scale * draw(seed, i, normal));
}
__global__ void init_weight_kernel(bf16 *w, int64_t N, int64_t K, int col, uint64_t seed, float scale) {
  GRID_STRIDE(i, (size_t)(N * K)) {
    int64_t n = (int64_t)i / K, k = (int64_t)i % K;  // logical W[n][k] = value number i
    float v = scale * draw(seed, i, 1);
    w[col ? n * K + k : k * N + n] = __float2bfloat16(v);
  }
}
__global__ void bf16_to_f32_kernel(const bf16 *s, float *d, size_t n) {
  GRID_STRIDE(i, n) d[i] = __bfloat162float(s[i]);
}

extern "C" int k_init(void *p, int dt, size_t n, uint64_t seed, int normal, float scale, float offset, void *stream) {
  init_kernel<<<blocks_for(n, 256), 256, 0, (cudaStream_t)stream>>>(p, dt, n, seed, normal, scale, offset);
  return launched();
}
extern "C" int k_init_weight(uint16_t *w, int64_t N, int64_t K, int col, uint64_t seed, float scale, void *stream) {
  init_weight_kernel<<<blocks_for((size_t)(N * K), 256), 256, 0, (cudaStream_t)stream>>>((bf16 *)w, N, K, col, seed, scale);
  return launched();
}
extern "C" int k_bf16_to_f32(const uint16_t *src, float *dst, size_t n, void *stream) {
  bf16_to_f32_kernel<<<blocks_for(n, 256), 256, 0, (cudaStream_t)stream>>>((const bf16 *)src, dst, n);
  return launched();
}

// ---- layout glue (element moves; E is the element type: 2 or 4 bytes) --------------------------

template <typename E>
__global__ void split_heads_kernel(const E *qkv, E *q, E *k, E *v, int B, int S, int HQ, int HKV, int D) {
  const size_t W = (size_t)(HQ + 2 * HKV) * D;
  GRID_STRIDE(i, (size_t)B * S * W) {
    size_t t = i / W, c = i % W;
    size_t head = c / D, d = c % D, b = t / S, s = t % S;
    E x = qkv[i];
    if (head < (size_t)HQ) q[((b * HQ + head) * S + s) * D + d] = x;
    else if (head < (size_t)(HQ + HKV)) k[((b * HKV + head - HQ) * S + s) * D + d] = x;
    else v[((b * HKV + head - HQ - HKV) * S + s) * D + d] = x;
  }
}
template <typename E>
__global__ void merge_heads_kernel(const E *o, E *out, int B, int S, int H, int D) {
  GRID_STRIDE(i, (size_t)B * H * S * D) {  // i indexes o [B][H][S][D]
    size_t d = i % D, s = (i / D) % S, h = (i / ((size_t)D * S)) % H, b = i / ((size_t)D * S * H);
    out[(b * S + s) * (size_t)H * D + h * D + d] = o[i];
  }
}
template <typename E>
__global__ void to_pages_kernel(const E *k, const E *v, E *kc, E *vc, const int32_t *bt, int B, int HKV, int S, int D, int page) {
  const size_t pages_per_seq = (size_t)S / page;
  GRID_STRIDE(i, (size_t)B * HKV * S * D) {  // i indexes k [B][HKV][S][D]
    size_t d = i % D, j = (i / D) % S, h = (i / ((size_t)D * S)) % HKV, b = i / ((size_t)D * S * HKV);
    size_t p = (size_t)bt[b * pages_per_seq + j / page];
    size_t dst = ((p * page + j % page) * HKV + h) * D + d;
    kc[dst] = k[i];
    vc[dst] = v[i];
  }
}
template <typename E>
__global__ void last_row_kernel(const E *src, E *dst, int B, int H, int S, int D) {
  GRID_STRIDE(i, (size_t)B * H * D) {
    size_t d = i % D, bh = i / D;
    dst[i] = src[(bh * S + S - 1) * D + d];
  }
}

#define BY_SIZE(dt, call_u16, call_u32) ((dt) == DT_BF16 ? (call_u16) : (call_u32))

extern "C" int k_split_heads(const void *qkv, void *q, void *k, void *v, int dt, int B, int S, int HQ, int HKV, int D, void *stream) {
  unsigned g = blocks_for((size_t)B * S * (HQ + 2 * HKV) * D, 256);
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == DT_BF16) split_heads_kernel<<<g, 256, 0, st>>>((const uint16_t *)qkv, (uint16_t *)q, (uint16_t *)k, (uint16_t *)v, B, S, HQ, HKV, D);
  else split_heads_kernel<<<g, 256, 0, st>>>((const uint32_t *)qkv, (uint32_t *)q, (uint32_t *)k, (uint32_t *)v, B, S, HQ, HKV, D);
  return launched();
}
extern "C" int k_merge_heads(const void *o, void *out, int dt, int B, int S, int H, int D, void *stream) {
  unsigned g = blocks_for((size_t)B * S * H * D, 256);
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == DT_BF16) merge_heads_kernel<<<g, 256, 0, st>>>((const uint16_t *)o, (uint16_t *)out, B, S, H, D);
  else merge_heads_kernel<<<g, 256, 0, st>>>((const uint32_t *)o, (uint32_t *)out, B, S, H, D);
  return launched();
}
extern "C" int k_to_pages(const void *k, const void *v, void *k_cache, void *v_cache, const int32_t *bt, int dt, int B, int HKV,
                          int S, int D, int page, void *stream) {
  unsigned g = blocks_for((size_t)B * HKV * S * D, 256);
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == DT_BF16)
    to_pages_kernel<<<g, 256, 0, st>>>((const uint16_t *)k, (const uint16_t *)v, (uint16_t *)k_cache, (uint16_t *)v_cache, bt, B, HKV, S, D, page);
  else
    to_pages_kernel<<<g, 256, 0, st>>>((const uint32_t *)k, (const uint32_t *)v, (uint32_t *)k_cache, (uint32_t *)v_cache, bt, B, HKV, S, D, page);
  return launched();
}
extern "C" int k_last_row(const void *src, void *dst, int dt, int B, int H, int S, int D, void *stream) {
  unsigned g = blocks_for((size_t)B * H * D, 256);
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == DT_BF16) last_row_kernel<<<g, 256, 0, st>>>((const uint16_t *)src, (uint16_t *)dst, B, H, S, D);
  else last_row_kernel<<<g, 256, 0, st>>>((const uint32_t *)src, (uint32_t *)dst, B, H, S, D);
  return launched();
}

// ---- references ------------------------------------------------------------------------------------

// 64 x 64 output tile per 16 x 16 block, 4 x 4 outputs per thread (rows ty + 16 i, cols tx + 16 j),
// k in slices of 16 through shared memory; any M, N, K.
__global__ void __launch_bounds__(256) ref_gemm_kernel(const void *a, int dta, const bf16 *w, int col, void *c, int dtc, int M, int N, int K) {
  __shared__ float As[16][65];  // As[kk][row]
  __shared__ float Bs[16][65];  // Bs[kk][n]
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int e = tid; e < 1024; e += 256) {
      int row = e / 16, kk = e % 16, m = m0 + row, k = k0 + kk;
      As[kk][row] = (m < M && k < K) ? ldf(a, dta, (size_t)m * K + k) : 0.f;
      if (col) {
        int n = n0 + e / 16, kq = e % 16;
        Bs[kq][e / 16] = (n < N && k0 + kq < K) ? __bfloat162float(w[(size_t)n * K + k0 + kq]) : 0.f;
      } else {
        int n = n0 + e % 64, kq = e / 64;
        Bs[kq][e % 64] = (n < N && k0 + kq < K) ? __bfloat162float(w[(size_t)(k0 + kq) * N + n]) : 0.f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      int m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < M && n < N) stf(c, dtc, (size_t)m * N + n, acc[i][j]);
    }
}

// One block of 256 threads per row.
__global__ void ref_rmsnorm_kernel(const void *x, const void *r, const bf16 *w, void *y, void *hout, int dti, int dto, int H, float eps) {
  __shared__ float part[8];
  const size_t row = (size_t)blockIdx.x * H;
  float ss = 0.f;
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    float h = ldf(x, dti, row + j) + (r ? ldf(r, dti, row + j) : 0.f);
    if (dto == DT_BF16) h = rnd_bf16(h);
    if (hout) stf(hout, dto, row + j, h);
    ss += h * h;
  }
  ss = warp_sum(ss);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = ss;
  __syncthreads();
  float tot = 0.f;
  for (int i = 0; i < (int)blockDim.x / 32; ++i) tot += part[i];
  const float inv = rsqrtf(tot / H + eps);
  for (int j = threadIdx.x; j < H; j += blockDim.x) {
    float h = ldf(x, dti, row + j) + (r ? ldf(r, dti, row + j) : 0.f);
    if (dto == DT_BF16) h = rnd_bf16(h);
    stf(y, dto, row + j, h * inv * __bfloat162float(w[j]));
  }
}

__global__ void ref_silu_kernel(const void *x, const bf16 *scale, const bf16 *bias, void *y, int dti, int dto, int64_t rows, int64_t cols) {
  GRID_STRIDE(i, (size_t)(rows * cols)) {
    size_t cidx = i % (size_t)cols;
    float z = ldf(x, dti, i) * __bfloat162float(scale[cidx]) + __bfloat162float(bias[cidx]);
    stf(y, dto, i, z / (1.f + expf(-z)));
  }
}

// A warp per query row (lane holds dims lane + 32 e), online softmax over the keys, fp32.
#define MAX_DPL 8
__global__ void ref_prefill_kernel(const void *q, const void *k, const void *v, void *o, int dti, int dto, int HQ, int HKV, int S, int D, int causal) {
  const int lane = threadIdx.x % 32, i = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int h = blockIdx.y, b = blockIdx.z, kvh = h / (HQ / HKV), dpl = D / 32;
  if (i >= S) return;
  const size_t qo = (((size_t)b * HQ + h) * S + i) * D, kv0 = ((size_t)b * HKV + kvh) * S * D;
  float qv[MAX_DPL], acc[MAX_DPL];
#pragma unroll
  for (int e = 0; e < MAX_DPL; ++e) {
    qv[e] = e < dpl ? ldf(q, dti, qo + lane + 32 * e) : 0.f;
    acc[e] = 0.f;
  }
  const float scale = rsqrtf((float)D);
  float m = -INFINITY, l = 0.f;
  const int nk = causal ? i + 1 : S;
  for (int j = 0; j < nk; ++j) {
    float s = 0.f;
#pragma unroll
    for (int e = 0; e < MAX_DPL; ++e)
      if (e < dpl) s += qv[e] * ldf(k, dti, kv0 + (size_t)j * D + lane + 32 * e);
    s = warp_sum(s) * scale;
    float mn = fmaxf(m, s), corr = expf(m - mn), p = expf(s - mn);
    l = l * corr + p;
#pragma unroll
    for (int e = 0; e < MAX_DPL; ++e)
      if (e < dpl) acc[e] = acc[e] * corr + p * ldf(v, dti, kv0 + (size_t)j * D + lane + 32 * e);
    m = mn;
  }
#pragma unroll
  for (int e = 0; e < MAX_DPL; ++e)
    if (e < dpl) stf(o, dto, qo + lane + 32 * e, acc[e] / l);
}

__global__ void ref_decode_kernel(const void *q, const void *kc, const void *vc, const int32_t *bt, void *o, int dti, int dto, int HQ,
                                  int HKV, int L, int D, int page) {
  const int lane = threadIdx.x % 32, hq = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, b = blockIdx.y;
  if (hq >= HQ) return;
  const int hkv = hq / (HQ / HKV), dpl = D / 32, mp = L / page;
  const size_t qo = ((size_t)b * HQ + hq) * D;
  float qv[MAX_DPL], acc[MAX_DPL];
#pragma unroll
  for (int e = 0; e < MAX_DPL; ++e) {
    qv[e] = e < dpl ? ldf(q, dti, qo + lane + 32 * e) : 0.f;
    acc[e] = 0.f;
  }
  const float scale = rsqrtf((float)D);
  float m = -INFINITY, l = 0.f;
  for (int j = 0; j < L; ++j) {
    const size_t row = (((size_t)bt[(size_t)b * mp + j / page] * page + j % page) * HKV + hkv) * D;
    float s = 0.f;
#pragma unroll
    for (int e = 0; e < MAX_DPL; ++e)
      if (e < dpl) s += qv[e] * ldf(kc, dti, row + lane + 32 * e);
    s = warp_sum(s) * scale;
    float mn = fmaxf(m, s), corr = expf(m - mn), p = expf(s - mn);
    l = l * corr + p;
#pragma unroll
    for (int e = 0; e < MAX_DPL; ++e)
      if (e < dpl) acc[e] = acc[e] * corr + p * ldf(vc, dti, row + lane + 32 * e);
    m = mn;
  }
#pragma unroll
  for (int e = 0; e < MAX_DPL; ++e)
    if (e < dpl) stf(o, dto, qo + lane + 32 * e, acc[e] / l);
}

extern "C" int k_ref_gemm(const void *a, int dt_in, const uint16_t *w, int col, void *c, int dt_out, int M, int N, int K, void *stream) {
  dim3 grid((N + 63) / 64, (M + 63) / 64), block(16, 16);
  ref_gemm_kernel<<<grid, block, 0, (cudaStream_t)stream>>>(a, dt_in, (const bf16 *)w, col, c, dt_out, M, N, K);
  return launched();
}
extern "C" int k_ref_rmsnorm(const void *x, const void *r, const uint16_t *w, void *y, void *hout, int dt_in, int dt_out, int T, int H,
                             float eps, void *stream) {
  ref_rmsnorm_kernel<<<T, 256, 0, (cudaStream_t)stream>>>(x, r, (const bf16 *)w, y, hout, dt_in, dt_out, H, eps);
  return launched();
}
extern "C" int k_ref_silu(const void *x, const uint16_t *scale, const uint16_t *bias, void *y, int dt_in, int dt_out, int64_t rows,
                          int64_t cols, void *stream) {
  ref_silu_kernel<<<blocks_for((size_t)(rows * cols), 256), 256, 0, (cudaStream_t)stream>>>(x, (const bf16 *)scale, (const bf16 *)bias, y,
                                                                                            dt_in, dt_out, rows, cols);
  return launched();
}
extern "C" int k_ref_prefill(const void *q, const void *k, const void *v, void *o, int dt_in, int dt_out, int B, int HQ, int HKV, int S,
                             int D, int causal, void *stream) {
  if (D % 32 || D > 32 * MAX_DPL || HQ % HKV) return (int)cudaErrorInvalidValue;
  dim3 grid((S + 7) / 8, HQ, B);
  ref_prefill_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(q, k, v, o, dt_in, dt_out, HQ, HKV, S, D, causal);
  return launched();
}
extern "C" int k_ref_decode(const void *q, const void *k_cache, const void *v_cache, const int32_t *bt, void *o, int dt_in, int dt_out, int B,
                            int HQ, int HKV, int L, int D, int page, void *stream) {
  if (D % 32 || D > 32 * MAX_DPL || HQ % HKV || L % page) return (int)cudaErrorInvalidValue;
  dim3 grid((HQ + 7) / 8, B);
  ref_decode_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(q, k_cache, v_cache, bt, o, dt_in, dt_out, HQ, HKV, L, D, page);
  return launched();
}

// ---- comparison ---------------------------------------------------------------------------------------

__global__ void compare_kernel(const void *t, int dtt, const void *r, int dtr, size_t n, cmp_result *out) {
  double sd = 0, sr = 0;
  float mx = 0.f;
  unsigned long long bad = 0;
  GRID_STRIDE(i, n) {
    float a = ldf(t, dtt, i), b = ldf(r, dtr, i);
    if (!isfinite(a) || !isfinite(b)) { bad++; continue; }
    double d = (double)a - (double)b;
    sd += d * d;
    sr += (double)b * b;
    mx = fmaxf(mx, fabsf(a - b));
  }
  for (int o = 16; o; o >>= 1) {
    sd += __shfl_xor_sync(0xffffffffu, sd, o);
    sr += __shfl_xor_sync(0xffffffffu, sr, o);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    bad += __shfl_xor_sync(0xffffffffu, bad, o);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&out->sum_sq_diff, sd);
    atomicAdd(&out->sum_sq_ref, sr);
    atomicMax((int *)&out->max_abs, __float_as_int(mx));  // non-negative floats order as ints
    atomicAdd(&out->nonfinite, bad);
  }
}

extern "C" int k_compare(const void *t, int dt_t, const void *r, int dt_r, size_t n, cmp_result *out, void *stream) {
  static cmp_result *dev;  // one small buffer for the program's life
  cudaStream_t st = (cudaStream_t)stream;
  int rc;
  if (!dev && (rc = (int)cudaMalloc((void **)&dev, sizeof *dev))) return rc;
  if ((rc = (int)cudaMemsetAsync(dev, 0, sizeof *dev, st))) return rc;
  compare_kernel<<<blocks_for(n, 256) > 4096 ? 4096 : blocks_for(n, 256), 256, 0, st>>>(t, dt_t, r, dt_r, n, dev);
  if ((rc = launched())) return rc;
  if ((rc = (int)cudaMemcpyAsync(out, dev, sizeof *out, cudaMemcpyDeviceToHost, st))) return rc;
  return (int)cudaStreamSynchronize(st);
}
