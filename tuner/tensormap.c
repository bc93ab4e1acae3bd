/* tensormap.c: tensor-map args: wire form, checks and the build (docs/tensormap-args.md). */
#include "tensormap.h"

#include <dlfcn.h>
#include <string.h>

#include "cuda_dl.h"

json_t *tune_tmap_def_json(const tune_tmap_def *d) {
  json_t *estr = json_array();
  for (int i = 0; i < d->n_estr; ++i) json_array_append_new(estr, json_integer(d->estr[i]));
  return json_pack("{s:i,s:i,s:i,s:b,s:o}", "tensor", d->tensor, "swizzle", d->swizzle, "l2_promotion",
                   d->l2_promotion, "oob_nan", d->oob_nan, "element_strides", estr);
}

int tune_tmap_def_from_json(const json_t *j, tune_tmap_def *d) {
  memset(d, 0, sizeof *d);
  json_t *estr = json_object_get(j, "element_strides");
  if (!json_is_object(j) || !json_is_integer(json_object_get(j, "tensor")) || !json_is_array(estr) ||
      json_array_size(estr) > TUNE_TMAP_MAX_RANK)
    return -1;
  d->tensor = (int)json_integer_value(json_object_get(j, "tensor"));
  d->swizzle = (int)json_integer_value(json_object_get(j, "swizzle"));
  d->l2_promotion = (int)json_integer_value(json_object_get(j, "l2_promotion"));
  d->oob_nan = json_is_true(json_object_get(j, "oob_nan"));
  d->n_estr = (int)json_array_size(estr);
  for (int i = 0; i < d->n_estr; ++i) d->estr[i] = (unsigned)json_integer_value(json_array_get(estr, (size_t)i));
  return 0;
}

json_t *tune_tmap_var_json(const tune_tmap_var *v) {
  if (v->rank <= 0) return json_null();
  json_t *dims = json_array(), *strides = json_array(), *box = json_array();
  for (int i = 0; i < v->rank; ++i) {
    json_array_append_new(dims, json_integer((json_int_t)v->dims[i]));
    json_array_append_new(box, json_integer(v->box[i]));
    if (i + 1 < v->rank) json_array_append_new(strides, json_integer((json_int_t)v->strides[i]));
  }
  return json_pack("{s:o,s:o,s:o}", "dims", dims, "strides", strides, "box", box);
}

int tune_tmap_var_from_json(const json_t *j, tune_tmap_var *v) {
  memset(v, 0, sizeof *v);
  if (json_is_null(j) || !j) return 0;
  json_t *dims = json_object_get(j, "dims"), *strides = json_object_get(j, "strides"), *box = json_object_get(j, "box");
  size_t rank = json_array_size(dims);
  if (rank < 1 || rank > TUNE_TMAP_MAX_RANK || json_array_size(box) != rank || json_array_size(strides) != rank - 1) return -1;
  v->rank = (int)rank;
  for (size_t i = 0; i < rank; ++i) {
    json_int_t d = json_integer_value(json_array_get(dims, i)), b = json_integer_value(json_array_get(box, i));
    if (d < 1 || b < 0 || b > 0xffffffffLL) return -1;
    v->dims[i] = (uint64_t)d;
    v->box[i] = (unsigned)b;
    if (i + 1 < rank) {
      json_int_t s = json_integer_value(json_array_get(strides, i));
      if (s < 0) return -1;
      v->strides[i] = (uint64_t)s;
    }
  }
  return 0;
}

static size_t list_u64(char *buf, size_t n, const uint64_t *x, int k) {
  size_t len = (size_t)snprintf(buf, n, "{");
  for (int i = 0; i < k && len < n; ++i) len += (size_t)snprintf(buf + len, n - len, "%s%llu", i ? ", " : "", (unsigned long long)x[i]);
  if (len < n) len += (size_t)snprintf(buf + len, n - len, "}");
  return len;
}

void tune_tmap_describe(const tune_tmap_def *d, const tune_tmap_var *v, char *buf, size_t n) {
  uint64_t box[TUNE_TMAP_MAX_RANK];
  for (int i = 0; i < v->rank; ++i) box[i] = v->box[i];
  char a[128], b[128], c[128];
  list_u64(a, sizeof a, v->dims, v->rank);
  list_u64(b, sizeof b, v->strides, v->rank > 0 ? v->rank - 1 : 0);
  list_u64(c, sizeof c, box, v->rank);
  snprintf(buf, n, "rank %d dims %s strides %s box %s swizzle %d", v->rank, a, b, c, d->swizzle);
}

#define WHY(...) do { snprintf(why, why_n, __VA_ARGS__); return -1; } while (0)

int tune_tmap_check(const tune_tmap_def *d, const tune_tmap_var *v, int elsize, CUdeviceptr ptr,
                    size_t tensor_bytes, char *why, size_t why_n) {
  if (v->rank < 1 || v->rank > TUNE_TMAP_MAX_RANK) WHY("rank %d, want 1..%d", v->rank, TUNE_TMAP_MAX_RANK);
  if (ptr % 16) WHY("the tensor's address is not 16-byte aligned");
  if (d->n_estr && d->n_estr != v->rank) WHY("%d element strides for rank %d", d->n_estr, v->rank);
  uint64_t last = (uint64_t)elsize; /* one past the last byte the map can address */
  for (int i = 0; i < v->rank; ++i) {
    if (v->dims[i] < 1 || v->dims[i] > (1ull << 32)) WHY("dim %d is %llu, want 1..2^32", i + 1, (unsigned long long)v->dims[i]);
    if (v->box[i] < 1 || v->box[i] > 256) WHY("box %d is %u, want 1..256", i + 1, v->box[i]);
    if (d->n_estr && (d->estr[i] < 1 || d->estr[i] > 8)) WHY("element stride %d is %u, want 1..8", i + 1, d->estr[i]);
    uint64_t stride = i == 0 ? (uint64_t)elsize : v->strides[i - 1];
    if (i > 0 && (stride % 16 || stride >= (1ull << 40))) WHY("stride %d is %llu bytes, want a multiple of 16 below 2^40", i + 1, (unsigned long long)stride);
    last += (v->dims[i] - 1) * stride;
  }
  if ((uint64_t)v->box[0] * (uint64_t)elsize % 16) WHY("the inner box (%u x %d bytes) is not a multiple of 16 bytes", v->box[0], elsize);
  if (d->swizzle && (uint64_t)v->box[0] * (uint64_t)elsize > (uint64_t)d->swizzle)
    WHY("the inner box (%u x %d bytes) exceeds the %d-byte swizzle span", v->box[0], elsize, d->swizzle);
  if (last > tensor_bytes) WHY("the map reaches byte %llu of a %zu-byte tensor", (unsigned long long)last, tensor_bytes);
  return 0;
}

typedef __typeof__(&cuTensorMapEncodeTiled) encode_fn;

/* The driver's entry, from the libcuda tune_cuda_load opened (RTLD_NOLOAD: never a second copy). */
static encode_fn encode_entry(void) {
  static encode_fn fn;
  if (fn) return fn;
  const char *names[] = {"libcuda.so.1", "libcuda.so"};
  for (unsigned i = 0; i < 2 && !fn; ++i) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h) fn = (encode_fn)dlsym(h, "cuTensorMapEncodeTiled");
  }
  return fn;
}

CUresult tune_tmap_encode(CUtensorMap *map, const tune_tmap_def *d, const tune_tmap_var *v, tune_dtype dt,
                          CUdeviceptr ptr, char *why, size_t why_n) {
  static const CUtensorMapDataType types[] = {
      [TUNE_F32] = CU_TENSOR_MAP_DATA_TYPE_FLOAT32, [TUNE_F16] = CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
      [TUNE_BF16] = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, [TUNE_I32] = CU_TENSOR_MAP_DATA_TYPE_INT32,
      [TUNE_I64] = CU_TENSOR_MAP_DATA_TYPE_INT64, [TUNE_F64] = CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
      [TUNE_E4M3] = CU_TENSOR_MAP_DATA_TYPE_UINT8};
  encode_fn fn = encode_entry();
  if (!fn) {
    snprintf(why, why_n, "the driver has no cuTensorMapEncodeTiled (CUDA 12.0 or later needed)");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  cuuint64_t dims[TUNE_TMAP_MAX_RANK], strides[TUNE_TMAP_MAX_RANK];
  cuuint32_t box[TUNE_TMAP_MAX_RANK], estr[TUNE_TMAP_MAX_RANK];
  for (int i = 0; i < v->rank; ++i) {
    dims[i] = v->dims[i];
    box[i] = v->box[i];
    estr[i] = d->n_estr ? d->estr[i] : 1;
    if (i + 1 < v->rank) strides[i] = v->strides[i];
  }
  CUtensorMapSwizzle swz = d->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : d->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                         : d->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2 = d->l2_promotion == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                            : d->l2_promotion == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                            : d->l2_promotion == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B : CU_TENSOR_MAP_L2_PROMOTION_NONE;
  CUresult r = fn(map, types[dt], (cuuint32_t)v->rank, (void *)(uintptr_t)ptr, dims, strides, box, estr,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, swz, l2,
                  d->oob_nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    char desc[512];
    tune_tmap_describe(d, v, desc, sizeof desc);
    snprintf(why, why_n, "cuTensorMapEncodeTiled: %s; %s %s", tune_cuda_error_name(r), tune_dtype_name(dt), desc);
  }
  return r;
}
