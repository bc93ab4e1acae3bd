/* tunert_tmap.c: tensor-map specs, their checks and their encode (see tunert_tmap.h). */
#include "tunert_tmap.h"

#include <stdio.h>
#include <string.h>

int rt_tmap_dtype(const char *d) {
  if (!strcmp(d, "f32")) return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  if (!strcmp(d, "f16")) return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  if (!strcmp(d, "bf16")) return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  if (!strcmp(d, "i32")) return CU_TENSOR_MAP_DATA_TYPE_INT32;
  if (!strcmp(d, "i64")) return CU_TENSOR_MAP_DATA_TYPE_INT64;
  if (!strcmp(d, "f64")) return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  if (!strcmp(d, "e4m3")) return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  return -1;
}

static size_t list_u64(char *buf, size_t n, const uint64_t *x, int k) {
  size_t len = (size_t)snprintf(buf, n, "{");
  for (int i = 0; i < k && len < n; ++i) len += (size_t)snprintf(buf + len, n - len, "%s%llu", i ? ", " : "", (unsigned long long)x[i]);
  if (len < n) len += (size_t)snprintf(buf + len, n - len, "}");
  return len;
}

void rt_tmap_describe(const rt_tmap_spec *m, char *buf, size_t n) {
  uint64_t box[TUNERT_TMAP_MAX_RANK];
  int rank = m->rank < 0 ? 0 : m->rank > TUNERT_TMAP_MAX_RANK ? TUNERT_TMAP_MAX_RANK : m->rank;
  for (int i = 0; i < rank; ++i) box[i] = m->box[i];
  char a[128], b[128], c[128];
  list_u64(a, sizeof a, m->dims, rank);
  list_u64(b, sizeof b, m->strides, rank > 0 ? rank - 1 : 0);
  list_u64(c, sizeof c, box, rank);
  snprintf(buf, n, "rank %d dims %s strides %s box %s swizzle %d", m->rank, a, b, c, m->swizzle);
}

#define WHY(...) do { snprintf(why, why_n, __VA_ARGS__); return -1; } while (0)

int rt_tmap_check(const rt_tmap_spec *m, uint64_t tensor_bytes, char *why, size_t why_n) {
  if (m->rank < 1 || m->rank > TUNERT_TMAP_MAX_RANK) WHY("rank %d, want 1..%d", m->rank, TUNERT_TMAP_MAX_RANK);
  uint64_t last = (uint64_t)m->elsize; /* one past the last byte the map can address */
  for (int i = 0; i < m->rank; ++i) {
    if (m->dims[i] < 1 || m->dims[i] > (1ull << 32)) WHY("dim %d is %llu, want 1..2^32", i + 1, (unsigned long long)m->dims[i]);
    if (m->box[i] < 1 || m->box[i] > 256) WHY("box %d is %u, want 1..256", i + 1, m->box[i]);
    if (m->estr[i] < 1 || m->estr[i] > 8) WHY("element stride %d is %u, want 1..8", i + 1, m->estr[i]);
    uint64_t stride = i == 0 ? (uint64_t)m->elsize : m->strides[i - 1];
    if (i > 0 && (stride % 16 || stride >= (1ull << 40)))
      WHY("stride %d is %llu bytes, want a multiple of 16 below 2^40", i + 1, (unsigned long long)stride);
    last += (m->dims[i] - 1) * stride;
  }
  if ((uint64_t)m->box[0] * (uint64_t)m->elsize % 16) WHY("the inner box (%u x %d bytes) is not a multiple of 16 bytes", m->box[0], m->elsize);
  if (m->swizzle && (uint64_t)m->box[0] * (uint64_t)m->elsize > (uint64_t)m->swizzle)
    WHY("the inner box (%u x %d bytes) exceeds the %d-byte swizzle span", m->box[0], m->elsize, m->swizzle);
  if (last > tensor_bytes) WHY("the map reaches byte %llu of a %llu-byte tensor", (unsigned long long)last, (unsigned long long)tensor_bytes);
  return 0;
}

CUresult rt_tmap_encode(rt_tmap_encode_fn fn, const rt_tmap_spec *m, uint64_t ptr, void *map) {
  cuuint64_t dims[TUNERT_TMAP_MAX_RANK], strides[TUNERT_TMAP_MAX_RANK];
  cuuint32_t box[TUNERT_TMAP_MAX_RANK], estr[TUNERT_TMAP_MAX_RANK];
  for (int i = 0; i < m->rank; ++i) {
    dims[i] = m->dims[i];
    box[i] = m->box[i];
    estr[i] = m->estr[i];
    if (i + 1 < m->rank) strides[i] = m->strides[i];
  }
  CUtensorMapSwizzle swz = m->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : m->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                         : m->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2 = m->l2_promotion == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                            : m->l2_promotion == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                            : m->l2_promotion == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B : CU_TENSOR_MAP_L2_PROMOTION_NONE;
  return fn((CUtensorMap *)map, (CUtensorMapDataType)m->cu_dtype, (cuuint32_t)m->rank, (void *)(uintptr_t)ptr, dims, strides, box,
            estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swz, l2,
            m->oob_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

uint64_t rt_tmap_view_bytes(const int64_t *shape, int rank, int64_t numel, int elsize, int64_t ld) {
  if (numel < 0 || elsize < 1) return UINT64_MAX;
  uint64_t n = (uint64_t)numel;
  if (ld >= 0 && rank >= 1 && shape[0] >= 1) {
    uint64_t rows = (uint64_t)shape[0] - 1, row = (uint64_t)numel / (uint64_t)shape[0];
    if (rows && (uint64_t)ld > (UINT64_MAX - row) / rows) return UINT64_MAX;
    n = rows * (uint64_t)ld + row;
  }
  return n > UINT64_MAX / (uint64_t)elsize ? UINT64_MAX : n * (uint64_t)elsize;
}

static int eval_item(const tunert_expr *e, int item, const tunert_xval *env, int64_t *out, char *why, size_t why_n) {
  tunert_xval v;
  if (tunert_expr_eval(e, item, env, &v, why, why_n)) return -1;
  if (tunert_xval_to_i64(&v, out)) WHY("'%s' item %d is not an integer", tunert_expr_text(e), item + 1);
  return 0;
}

int rt_tmap_eval(const rt_tmap_expr *x, const tunert_xval *env, int64_t ld_value, int strides_only, rt_tmap_spec *m,
                 char *why, size_t why_n) {
  if (!strides_only) {
    memset(m, 0, sizeof *m);
    m->arg = x->arg;
    m->tensor = x->tensor;
    m->elsize = x->elsize;
    m->cu_dtype = x->cu_dtype;
    m->swizzle = x->swizzle;
    m->l2_promotion = x->l2_promotion;
    m->oob_nan = x->oob_nan;
    m->rank = tunert_expr_items(x->dims);
  }
  m->ld_arg = x->ld_arg;
  m->ld = x->ld_arg >= 0 ? ld_value : -1;
  for (int i = 0; i < m->rank; ++i) {
    int64_t d = (int64_t)m->dims[i], b = m->box[i], st = 0;
    if ((!strides_only && (eval_item(x->dims, i, env, &d, why, why_n) || eval_item(x->box, i, env, &b, why, why_n))) ||
        (i + 1 < m->rank && eval_item(x->strides, i, env, &st, why, why_n)))
      return -1;
    if (d < 1 || b < 0 || b > UINT32_MAX || st < 0)
      WHY("dim %d is %lld, box %lld, stride %lld", i + 1, (long long)d, (long long)b, (long long)st);
    m->dims[i] = (uint64_t)d;
    m->box[i] = (uint32_t)b;
    if (i + 1 < m->rank) m->strides[i] = (uint64_t)st;
    m->estr[i] = x->estr[i];
  }
  return 0;
}
