/* tunert_vendor_test.c: the cuBLASLt path of vendor entries (runtime/tunert_vendor_cublaslt.c)
 * without a GPU: the column-major mapping of row-major GEMMs, played by a column-major GEMM on
 * the host exactly as cuBLASLt reads its descriptors, against a row-major reference (both b
 * layouts, shapes no tile divides); the library's opening (a missing one's message names what
 * was tried; the toolkit's, where it is installed, resolves every entry point). Exit 0 when every
 * CHECK passed. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tunert_vendor_cublaslt.h"

/* D = op(A) B in cuBLASLt's terms: column-major, element (r, c) of a matrix at [r + c * ld]. */
static void colmajor_gemm(const rt_lt_shape *sh, const double *A, const double *B, double *D) {
  uint64_t m = sh->trans_a ? sh->cols[0] : sh->rows[0], k = sh->trans_a ? sh->rows[0] : sh->cols[0], n = sh->cols[1];
  CHECK(sh->rows[1] == k && sh->rows[2] == m && sh->cols[2] == n); /* the shapes agree as cuBLASLt checks them */
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (uint64_t q = 0; q < k; ++q) {
        double a = sh->trans_a ? A[q + i * (uint64_t)sh->ld[0]] : A[i + q * (uint64_t)sh->ld[0]];
        acc += a * B[q + j * (uint64_t)sh->ld[1]];
      }
      D[i + j * (uint64_t)sh->ld[2]] = acc;
    }
}

static void check_mapping(int64_t M, int64_t N, int64_t K, int b_row) {
  double *a = malloc(sizeof(double) * (size_t)(M * K)), *b = malloc(sizeof(double) * (size_t)(K * N));
  double *c = calloc((size_t)(M * N), sizeof(double)), *ref = calloc((size_t)(M * N), sizeof(double));
  for (int64_t i = 0; i < M * K; ++i) a[i] = (double)((i * 7919) % 13) - 6;
  for (int64_t i = 0; i < K * N; ++i) b[i] = (double)((i * 104729) % 11) - 5;
  for (int64_t m = 0; m < M; ++m) /* row-major c[m][n] = sum_k a[m][k] B[k][n] */
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) ref[m * N + n] += a[m * K + k] * (b_row ? b[k * N + n] : b[n * K + k]);
  rt_lt_shape sh;
  rt_cublaslt_shape(M, N, K, b_row, &sh);
  colmajor_gemm(&sh, b, a, c); /* cuBLASLt's A is our b, its B our a, its D our c */
  int same = 1;
  for (int64_t i = 0; i < M * N; ++i) same &= c[i] == ref[i];
  CHECK(same);
  if (!same) fprintf(stderr, "  M %lld N %lld K %lld b %s\n", (long long)M, (long long)N, (long long)K, b_row ? "row" : "col");
  free(a), free(b), free(c), free(ref);
}

static void test_mapping(void) {
  const int64_t shapes[][3] = {{1, 8, 8}, {37, 200, 72}, {5, 3, 7}, {64, 128, 32}, {129, 17, 1}, {2, 9, 33}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
    for (int b_row = 0; b_row < 2; ++b_row) check_mapping(shapes[i][0], shapes[i][1], shapes[i][2], b_row);
  rt_lt_shape sh;
  rt_cublaslt_shape(4, 6, 8, 0, &sh); /* b [N][K]: the K x N column-major B, transposed by the op */
  CHECK(sh.trans_a && sh.rows[0] == 8 && sh.cols[0] == 6 && sh.ld[0] == 8 && sh.ld[1] == 8 && sh.ld[2] == 6);
  rt_cublaslt_shape(4, 6, 8, 1, &sh); /* b [K][N]: B^T column-major as stored */
  CHECK(!sh.trans_a && sh.rows[0] == 6 && sh.cols[0] == 8 && sh.ld[0] == 6);
}

static void test_open(void) {
  rt_cublaslt_lib l;
  char msg[600];
  const char *missing[] = {"libcublasLt.so.missing-1", "libcublasLt.so.missing-2"};
  CHECK(rt_cublaslt_open(&l, missing, 2, msg, sizeof msg) == -1 && !l.lib);
  CHECK(strstr(msg, "cuBLASLt cannot be opened: ") == msg);
  CHECK(strstr(msg, "libcublasLt.so.missing-1") && strstr(msg, "libcublasLt.so.missing-2"));
  /* the toolkit's library, where this machine has it: every entry point resolves */
  const char *real[] = {"libcublasLt.so.13", "libcublasLt.so.12", "/usr/local/cuda/lib64/libcublasLt.so.13",
                        "/usr/local/cuda/lib64/libcublasLt.so.12"};
  if (rt_cublaslt_open(&l, real, 4, msg, sizeof msg) == 0) {
    CHECK(l.cublasLtMatmul && l.cublasLtMatmulAlgoGetHeuristic && l.cublasLtMatmulPreferenceSetAttribute && l.name[0]);
    CHECK(!strcmp(l.cublasLtGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS"));
    rt_cublaslt_close(&l);
    CHECK(!l.lib);
  } else
    fprintf(stderr, "  (no libcublasLt here: %s)\n", msg);
}

int main(void) {
  test_mapping();
  test_open();
  printf("tunert_vendor_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
