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
 * are device pointers. Layouts: a row per token (prompts packed back to back, or one per sequence
 * in a decode step); hidden index = head * D + d. */
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

/* ---- layout glue ----
 * qkv rows hold [HQ query heads | HKV key heads | HKV value heads] x D at a row stride ld
 * (elements); paged caches are [pages][page][HKV][D] through block_table [B][max_pages]. */
/* qkv [rows] -> dense q [rows][HQ * D], k, v [rows][HKV * D] (same dtype). */
int k_split_qkv(const void *qkv, void *q, void *k, void *v, int dt, int64_t rows, int HQ, int HKV, int D, void *stream);
/* The K and V of qkv's rows into the paged caches (dtype dt_in -> dt_out). Row r is token j of
 * sequence b: with cu_seqlens [n_seq + 1] (packed prompts) b holds r and j = r - cu_seqlens[b];
 * without (NULL: one new token per sequence, rows = n_seq) b = r and j = seq_lens[b] - 1. */
int k_kv_to_cache(const void *qkv, int dt_in, int64_t ld, void *k_cache, void *v_cache, int dt_out, const int32_t *block_table,
                  int max_pages, int page, int64_t rows, int n_seq, const int32_t *cu_seqlens, const int32_t *seq_lens, int HQ, int HKV,
                  int D, void *stream);
/* dst [B][W] = src's last row of each packed sequence (src [T][W], cu_seqlens [B + 1]). */
int k_last_rows(const void *src, void *dst, int dt, const int32_t *cu_seqlens, int B, int64_t W, void *stream);

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
/* Causal GQA attention within each packed sequence: q, k, v read from qkv (row stride ld),
 * o [T][HQ * D]; D a multiple of 32, <= 256. */
int k_ref_varlen(const void *qkv, int64_t ld, const int32_t *cu_seqlens, void *o, int dt_in, int dt_out, int64_t T, int B, int HQ,
                 int HKV, int D, void *stream);
/* One query per sequence (row b of qkv, stride ld) over seq_lens[b] cached tokens of the paged
 * caches (dtype dt_in, like q); o [B][HQ * D]. A token-major cache is the case page = its rows,
 * max_pages = 1, block_table[b] = b. */
int k_ref_decode(const void *qkv, int64_t ld, const void *k_cache, const void *v_cache, const int32_t *block_table,
                 const int32_t *seq_lens, void *o, int dt_in, int dt_out, int B, int HQ, int HKV, int D, int page, int max_pages,
                 void *stream);

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
