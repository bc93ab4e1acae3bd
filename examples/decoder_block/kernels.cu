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

// ---- layout glue ------------------------------------------------------------------------------

// The sequence of packed row r: the last b with cu[b] <= r (B is small: a scan).
static __device__ __forceinline__ int seq_of(const int32_t *cu, int B, int64_t r) {
  int b = 0;
  while (b + 1 < B && cu[b + 1] <= r) ++b;
  return b;
}

template <typename E>
__global__ void split_qkv_kernel(const E *qkv, E *q, E *k, E *v, int64_t rows, int HQ, int HKV, int D) {
  const size_t W = (size_t)(HQ + 2 * HKV) * D, WQ = (size_t)HQ * D, WK = (size_t)HKV * D;
  GRID_STRIDE(i, (size_t)rows * W) {
    size_t r = i / W, c = i % W;
    E x = qkv[i];
    if (c < WQ) q[r * WQ + c] = x;
    else if (c < WQ + WK) k[r * WK + c - WQ] = x;
    else v[r * WK + c - WQ - WK] = x;
  }
}
__global__ void kv_to_cache_kernel(const void *qkv, int dti, int64_t ld, void *kc, void *vc, int dto, const int32_t *bt, int max_pages,
                                   int page, int64_t rows, const int32_t *cu, const int32_t *lens, int B, int HQ, int HKV, int D) {
  const size_t W = (size_t)HKV * D;
  GRID_STRIDE(i, (size_t)rows * W) {
    const int64_t r = (int64_t)(i / W);
    const size_t c = i % W;
    int b, j;
    if (cu) b = seq_of(cu, B, r), j = (int)(r - cu[b]);
    else b = (int)r, j = lens[b] - 1;
    if (j < 0) continue;
    const size_t p = (size_t)bt[(size_t)b * max_pages + j / page];
    const size_t dst = (p * page + j % page) * W + c, src = (size_t)r * ld + (size_t)HQ * D + c;
    stf(kc, dto, dst, ldf(qkv, dti, src));
    stf(vc, dto, dst, ldf(qkv, dti, src + W));
  }
}
template <typename E>
__global__ void last_rows_kernel(const E *src, E *dst, const int32_t *cu, int B, int64_t W) {
  GRID_STRIDE(i, (size_t)B * W) {
    size_t b = i / W, c = i % W;
    dst[i] = src[(size_t)(cu[b + 1] - 1) * W + c];
  }
}

extern "C" int k_split_qkv(const void *qkv, void *q, void *k, void *v, int dt, int64_t rows, int HQ, int HKV, int D, void *stream) {
  unsigned g = blocks_for((size_t)rows * (HQ + 2 * HKV) * D, 256);
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == DT_BF16) split_qkv_kernel<<<g, 256, 0, st>>>((const uint16_t *)qkv, (uint16_t *)q, (uint16_t *)k, (uint16_t *)v, rows, HQ, HKV, D);
  else split_qkv_kernel<<<g, 256, 0, st>>>((const uint32_t *)qkv, (uint32_t *)q, (uint32_t *)k, (uint32_t *)v, rows, HQ, HKV, D);
  return launched();
}
extern "C" int k_kv_to_cache(const void *qkv, int dt_in, int64_t ld, void *k_cache, void *v_cache, int dt_out, const int32_t *bt,
                             int max_pages, int page, int64_t rows, int n_seq, const int32_t *cu_seqlens, const int32_t *seq_lens, int HQ, int HKV,
                             int D, void *stream) {
  if (!cu_seqlens && !seq_lens) return (int)cudaErrorInvalidValue;
  unsigned g = blocks_for((size_t)rows * HKV * D, 256);
  kv_to_cache_kernel<<<g, 256, 0, (cudaStream_t)stream>>>(qkv, dt_in, ld, k_cache, v_cache, dt_out, bt, max_pages, page, rows, cu_seqlens,
                                                          seq_lens, n_seq, HQ, HKV, D);
  return launched();
}
extern "C" int k_last_rows(const void *src, void *dst, int dt, const int32_t *cu_seqlens, int B, int64_t W, void *stream) {
  unsigned g = blocks_for((size_t)B * W, 256);
  cudaStream_t st = (cudaStream_t)stream;
  if (dt == DT_BF16) last_rows_kernel<<<g, 256, 0, st>>>((const uint16_t *)src, (uint16_t *)dst, cu_seqlens, B, W);
  else last_rows_kernel<<<g, 256, 0, st>>>((const uint32_t *)src, (uint32_t *)dst, cu_seqlens, B, W);
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

// A warp per (query row, head): lane holds dims lane + 32 e; online softmax over the keys, fp32.
// Keys j = 0 .. n - 1 at rows key_row(j); one routine for the packed prefill and the paged decode.
#define MAX_DPL 8
struct attn_args {
  const void *q, *k, *v;       // q row at q + qoff; key row j at k / v + key_row(j)
  void *o;
  int dti, dto, D;
};
template <typename RowOf>
static __device__ void attend_row(const attn_args &a, size_t qoff, size_t ooff, int n, RowOf key_row) {
  const int lane = threadIdx.x % 32, dpl = a.D / 32;
  float qv[MAX_DPL], acc[MAX_DPL];
#pragma unroll
  for (int e = 0; e < MAX_DPL; ++e) {
    qv[e] = e < dpl ? ldf(a.q, a.dti, qoff + lane + 32 * e) : 0.f;
    acc[e] = 0.f;
  }
  const float scale = rsqrtf((float)a.D);
  float m = -INFINITY, l = 0.f;
  for (int j = 0; j < n; ++j) {
    const size_t row = key_row(j);
    float s = 0.f;
#pragma unroll
    for (int e = 0; e < MAX_DPL; ++e)
      if (e < dpl) s += qv[e] * ldf(a.k, a.dti, row + lane + 32 * e);
    s = warp_sum(s) * scale;
    float mn = fmaxf(m, s), corr = expf(m - mn), p = expf(s - mn);
    l = l * corr + p;
#pragma unroll
    for (int e = 0; e < MAX_DPL; ++e)
      if (e < dpl) acc[e] = acc[e] * corr + p * ldf(a.v, a.dti, row + lane + 32 * e);
    m = mn;
  }
#pragma unroll
  for (int e = 0; e < MAX_DPL; ++e)
    if (e < dpl) stf(a.o, a.dto, ooff + lane + 32 * e, n ? acc[e] / l : 0.f);
}

// grid (ceil(T / 8), HQ): 8 warps, one query token each
__global__ void ref_varlen_kernel(attn_args a, int64_t ld, const int32_t *cu, int64_t T, int B, int HQ, int HKV) {
  const int64_t i = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int h = blockIdx.y, kvh = h / (HQ / HKV);
  if (i >= T) return;
  const int b = seq_of(cu, B, i);
  const int64_t first = cu[b];
  const size_t koff = (size_t)HQ * a.D + (size_t)kvh * a.D;  // K of head kvh in a qkv row; V HKV heads later
  attn_args r = a;
  r.v = (const char *)a.v + (size_t)HKV * a.D * (a.dti == DT_BF16 ? 2 : 4);
  attend_row(r, (size_t)i * ld + (size_t)h * a.D, (size_t)i * HQ * a.D + (size_t)h * a.D, (int)(i - first + 1),
             [=](int j) { return (size_t)(first + j) * ld + koff; });
}

// grid (ceil(HQ / 8), B)
__global__ void ref_decode_kernel(attn_args a, int64_t ld, const int32_t *bt, const int32_t *lens, int HQ, int HKV, int page,
                                  int max_pages) {
  const int hq = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, b = blockIdx.y;
  if (hq >= HQ) return;
  const int hkv = hq / (HQ / HKV), D = a.D;
  attend_row(a, (size_t)b * ld + (size_t)hq * D, ((size_t)b * HQ + hq) * D, lens[b], [=](int j) {
    return (((size_t)bt[(size_t)b * max_pages + j / page] * page + j % page) * HKV + hkv) * D;
  });
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
extern "C" int k_ref_varlen(const void *qkv, int64_t ld, const int32_t *cu_seqlens, void *o, int dt_in, int dt_out, int64_t T, int B,
                            int HQ, int HKV, int D, void *stream) {
  if (D % 32 || D > 32 * MAX_DPL || HQ % HKV) return (int)cudaErrorInvalidValue;
  attn_args a = {qkv, qkv, qkv, o, dt_in, dt_out, D};  // k, v offsets are added per head in the kernel
  dim3 grid((unsigned)((T + 7) / 8), HQ);
  ref_varlen_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(a, ld, cu_seqlens, T, B, HQ, HKV);
  return launched();
}
extern "C" int k_ref_decode(const void *qkv, int64_t ld, const void *k_cache, const void *v_cache, const int32_t *bt,
                            const int32_t *seq_lens, void *o, int dt_in, int dt_out, int B, int HQ, int HKV, int D, int page, int max_pages,
                            void *stream) {
  if (D % 32 || D > 32 * MAX_DPL || HQ % HKV) return (int)cudaErrorInvalidValue;
  attn_args a = {qkv, k_cache, v_cache, o, dt_in, dt_out, D};
  dim3 grid((HQ + 7) / 8, B);
  ref_decode_kernel<<<grid, 256, 0, (cudaStream_t)stream>>>(a, ld, bt, seq_lens, HQ, HKV, page, max_pages);
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
