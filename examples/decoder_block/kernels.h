/* kernels.h: the decoder block example's own CUDA kernels (compiled by nvcc into the program; no
 * NVRTC): seeded input generation, layout glue between the tuned steps, the plain fp32 reference
 * of every step, and the comparison of a result with its reference.
 *
 * Not tuned and not from the bundle: everything here is the program's plumbing or its yardstick.
 * The reference kernels take bf16 or fp32 activations (DT_* below) and always bf16 weights, and do
 * fp32 math; with bf16 in and out they also serve as the "stand-in" for a step that the bundle has
 * no variant for (decoder_block --standins), which the report marks as such.
 *
 * Every function launches on `stream` and returns a cudaError_t as int (0: launched). Pointers
 * are device pointers. Layouts: tokens t = b * S + s; hidden index = head * D + d. */
#ifndef DECODER_KERNELS_H
#define DECODER_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_BF16 0
#define DT_F32 1

/* p[i] = offset + scale * z_i, z_i ~ N(0, 1) (normal = 1) or U(-1, 1) (normal = 0), from (seed, i). */
int k_init(void *p, int dt, size_t n, uint64_t seed, int normal, float scale, float offset, void *stream);
/* The logical weight W[n][k] = scale * N(0, 1) from (seed, n * K + k), stored at n * K + k (col = 1,
 * the nn.Linear layout b[N][K]) or k * N + n (col = 0, b[K][N]): both layouts hold the same matrix. */
int k_init_weight(uint16_t *w, int64_t N, int64_t K, int col, uint64_t seed, float scale, void *stream);
/* dst (fp32) = src (bf16), n elements. */
int k_bf16_to_f32(const uint16_t *src, float *dst, size_t n, void *stream);

/* ---- layout glue ---- */
/* qkv [B*S][(HQ + 2 HKV) D] -> q [B][HQ][S][D], k, v [B][HKV][S][D] (same dtype). */
int k_split_heads(const void *qkv, void *q, void *k, void *v, int dt, int B, int S, int HQ, int HKV, int D, void *stream);
/* o [B][H][S][D] -> out [B*S][H*D]. */
int k_merge_heads(const void *o, void *out, int dt, int B, int S, int H, int D, void *stream);
/* k, v [B][HKV][S][D] of sequences 0..B-1 -> their rows of the paged caches [pages][page][HKV][D]
 * through block_table [n_seq][S / page] (only the first B sequences' rows are written). */
int k_to_pages(const void *k, const void *v, void *k_cache, void *v_cache, const int32_t *block_table, int dt, int B,
               int HKV, int S, int D, int page, void *stream);
/* src [B][H][S][D] -> dst [B][H][D]: row s = S - 1 of every (sequence, head). */
int k_last_row(const void *src, void *dst, int dt, int B, int H, int S, int D, void *stream);

/* ---- plain references: fp32 math, activations of dtype dt_in -> dt_out, bf16 weights ---- */
/* c[M][N] = a[M][K] @ W, W(k, n) = w[n * K + k] (col = 1) or w[k * N + n] (col = 0). */
int k_ref_gemm(const void *a, int dt_in, const uint16_t *w, int col, void *c, int dt_out, int M, int N, int K, void *stream);
/* h = x + r (r may be NULL: h = x; hout may be NULL), y = h * rsqrt(mean(h^2) + eps) * w, per row of H.
 * With dt_out bf16, h is rounded to bf16 before the norm (as the tuned kernel normalizes h as stored). */
int k_ref_rmsnorm(const void *x, const void *r, const uint16_t *w, void *y, void *hout, int dt_in, int dt_out, int T, int H,
                  float eps, void *stream);
/* y = silu(x * scale[col] + bias[col]), x, y [rows][cols]. */
int k_ref_silu(const void *x, const uint16_t *scale, const uint16_t *bias, void *y, int dt_in, int dt_out, int64_t rows,
               int64_t cols, void *stream);
/* causal (or full) GQA attention, q, o [B][HQ][S][D], k, v [B][HKV][S][D]; D a multiple of 32, <= 256. */
int k_ref_prefill(const void *q, const void *k, const void *v, void *o, int dt_in, int dt_out, int B, int HQ, int HKV, int S,
                  int D, int causal, void *stream);
/* decode: q, o [B][HQ][D], paged caches [pages][page][HKV][D], block_table [B][L / page]. */
int k_ref_decode(const void *q, const void *k_cache, const void *v_cache, const int32_t *block_table, void *o, int dt_in,
                 int dt_out, int B, int HQ, int HKV, int L, int D, int page, void *stream);

/* ---- comparison ---- */
typedef struct cmp_result {
  double sum_sq_diff, sum_sq_ref;  /* sum (t - r)^2, sum r^2 */
  float max_abs;                   /* max |t - r| */
  unsigned long long nonfinite;    /* elements of t that are NaN or inf */
} cmp_result;
/* Compares t (dtype dt_t) with r (dtype dt_r), n elements; *out filled after a synchronize. */
int k_compare(const void *t, int dt_t, const void *r, int dt_r, size_t n, cmp_result *out, void *stream);

#ifdef __cplusplus
}
#endif

#endif
