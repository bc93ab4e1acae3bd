/* worker_kernels.c: tune's own kernels in the worker, compiled with NVRTC on first use: an input
 * checksum, the zeroing of zero = true scratch, and the comparison of an output with its reference
 * on the device (no copy of a large output to the host). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "compile.h"
#include "inputs.h"
#include "worker_int.h"

/* Order-independent checksum of a device buffer's 32-bit words (each mixed
 * with its index) plus its last bytes: any change to an input shows, at the
 * cost of one pass at device bandwidth instead of a copy to the host. */
static const char kernels_src[] =
    "extern \"C\" __global__ void tune_checksum(const unsigned *p, unsigned long long n,\n"
    "    unsigned long long *out) {\n"
    "  unsigned long long acc = 0;\n"
    "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += (unsigned long long)gridDim.x * blockDim.x) {\n"
    "    unsigned long long x = p[i] ^ (i * 0x9E3779B97F4A7C15ull);\n"
    "    x *= 0xff51afd7ed558ccdull; acc += x ^ (x >> 33);\n"
    "  }\n"
    "  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);\n"
    "  if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);\n"
    "}\n"
    /* zero = true scratch, before each launch of the variant. Not named tune_*: CUPTI then counts
       it in the variant's time, as a memset the variant needs must be. */
    "extern \"C\" __global__ void scratch_zero(unsigned long long *p, unsigned long long n8,\n"
    "    unsigned char *tail, unsigned long long ntail) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < ntail) tail[i] = 0;\n"
    "  for (; i < n8; i += (unsigned long long)gridDim.x * blockDim.x) p[i] = 0ull;\n"
    "}\n"
    /* out against ref, both of dtype dt (tune_dtype's order), as tuner/inputs.c reads them:
       acc = {sum (o - r)^2, sum r^2, sum tune_round_var(ref)}, stat = {max |o - r| (bits of a nonnegative double), NaN/Inf
       count, first index that is non-finite or over tol (~0 none)} */
    "__device__ double tune_elem(const void *p, int dt, unsigned long long i) {\n"
    "  switch (dt) {\n"
    "  case 0: return ((const float *)p)[i];\n"
    "  case 1: { unsigned h = ((const unsigned short *)p)[i], e = (h >> 10) & 31, m = h & 1023;\n"
    "    double a = e == 31 ? __longlong_as_double(m ? 0x7ff8000000000000ll : 0x7ff0000000000000ll)\n"
    "             : e ? ldexp(1.0 + m / 1024.0, (int)e - 15) : ldexp((double)m, -24);\n"
    "    return (h & 0x8000) ? -a : a; }\n"
    "  case 2: return __uint_as_float((unsigned)((const unsigned short *)p)[i] << 16);\n"
    "  case 3: return ((const int *)p)[i];\n"
    "  case 4: return (double)((const long long *)p)[i];\n"
    "  case 5: return ((const double *)p)[i];\n"
    "  case 6: { unsigned b = ((const unsigned char *)p)[i], e = (b >> 3) & 15, m = b & 7;\n"
    "    if ((b & 0x7f) == 0x7f) return __longlong_as_double(0x7ff8000000000000ll);\n"
    "    double a = e ? ldexp(1.0 + m / 8.0, (int)e - 7) : ldexp((double)m, -9);\n"
    "    return (b & 0x80) ? -a : a; }\n"
    "  }\n"
    "  return __longlong_as_double(0x7ff8000000000000ll);\n"
    "}\n"
    "__device__ bool tune_finite(double x) { return ((__double_as_longlong(x) >> 52) & 0x7ff) != 0x7ff; }\n"
    /* the expected squared error of rounding a real value to nearest in dtype dt, given that it
       rounded to element i of p, as tune_inputs_round_var (tuner/inputs.c) computes it */
    "__device__ double tune_round_var(const void *p, int dt, unsigned long long i) {\n"
    "  unsigned long long bits;\n"
    "  int shift, bias;\n"
    "  switch (dt) {\n"
    "  case 0: bits = ((const unsigned *)p)[i] & 0x7fffffffu; shift = 23; bias = 150; break;\n"
    "  case 1: bits = ((const unsigned short *)p)[i] & 0x7fffu; shift = 10; bias = 25; break;\n"
    "  case 2: bits = ((const unsigned short *)p)[i] & 0x7fffu; shift = 7; bias = 134; break;\n"
    "  case 5: bits = ((const unsigned long long *)p)[i] & 0x7fffffffffffffffull; shift = 52; bias = 1075; break;\n"
    "  case 6: bits = ((const unsigned char *)p)[i] & 0x7fu; shift = 3; bias = 10; break;\n"
    "  default: return 0;\n"
    "  }\n"
    "  if (!bits) return 0;\n"
    "  int e = (int)(bits >> shift);\n"
    "  double ulp = ldexp(1.0, (e ? e : 1) - bias);\n"
    "  bool pow2 = e > 1 && !(bits & ((1ull << shift) - 1));\n"
    "  return ulp * ulp / (pow2 ? 16.0 : 12.0);\n"
    "}\n"
    /* bytes of p[0..n) that differ from want: out = {count, first index (~0 none), last index} */
    "extern \"C\" __global__ void tune_guard(const unsigned char *p, unsigned long long n, unsigned want,\n"
    "    unsigned long long *out) {\n"
    "  unsigned long long hits = 0, first = ~0ull, last = 0;\n"
    "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    if (p[i] != want) { ++hits; first = i < first ? i : first; last = i > last ? i : last; }\n"
    "  if (hits) { atomicAdd(&out[0], hits); atomicMin(&out[1], first); atomicMax(&out[2], last); }\n"
    "}\n"
    "extern \"C\" __global__ void tune_compare(const void *out, const void *ref, int dt, unsigned long long n,\n"
    "    double tol, double *acc, unsigned long long *stat) {\n"
    "  double num = 0, den = 0, hon = 0, mx = 0;\n"
    "  unsigned long long bad = 0, first = ~0ull;\n"
    "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += (unsigned long long)gridDim.x * blockDim.x) {\n"
    "    double o = tune_elem(out, dt, i), r = tune_elem(ref, dt, i);\n"
    "    if (!tune_finite(o) || !tune_finite(r)) { ++bad; if (i < first) first = i; continue; }\n"
    "    double d = fabs(o - r);\n"
    "    num += d * d; den += r * r; hon += tune_round_var(ref, dt, i); mx = fmax(mx, d);\n"
    "    if (d > tol && i < first) first = i;\n"
    "  }\n"
    "  for (int o = 16; o > 0; o >>= 1) {\n"
    "    num += __shfl_xor_sync(0xffffffffu, num, o); den += __shfl_xor_sync(0xffffffffu, den, o);\n"
    "    hon += __shfl_xor_sync(0xffffffffu, hon, o);\n"
    "    mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o)); bad += __shfl_xor_sync(0xffffffffu, bad, o);\n"
    "    unsigned long long f = __shfl_xor_sync(0xffffffffu, first, o); first = f < first ? f : first;\n"
    "  }\n"
    "  if ((threadIdx.x & 31) == 0) {\n"
    "    atomicAdd(&acc[0], num); atomicAdd(&acc[1], den); atomicAdd(&acc[2], hon);\n"
    "    atomicMax(&stat[0], (unsigned long long)__double_as_longlong(mx)); atomicAdd(&stat[1], bad);\n"
    "    atomicMin(&stat[2], first);\n"
    "  }\n"
    "}\n"
    /* tune_inputs_fill's elementwise inits on the device: element i from (base, i) by the same
       integer hash and the same double arithmetic, rounded (no contraction: __dmul_rn, __dadd_rn)
       into dtype dt as tuner/inputs.c stores it. log, cos and exp2 are CUDA's, within an ulp or
       two of the host library's: f64 values of the normal and wide inits differ from the host's in
       their last places, narrower ones only where a value lies on a rounding boundary
       (tests/gpu/inputs_fill_gpu.c measures both). */
    "__device__ unsigned long long tf_mix(unsigned long long x) {\n"
    "  x += 0x9e3779b97f4a7c15ull;\n"
    "  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;\n"
    "  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;\n"
    "  return x ^ (x >> 31);\n"
    "}\n"
    "__device__ double tf_u01(unsigned long long k) { return __dmul_rn((double)(tf_mix(k) >> 11) + 0.5, 0x1.0p-53); }\n"
    "__device__ unsigned char tf_e4m3(double v) {\n"
    "  unsigned char sign = signbit(v) ? 0x80 : 0;\n"
    "  double a = fabs(v);\n"
    "  if (isnan(v)) return 0x7f;\n"
    "  if (a >= 448.0) return sign | 0x7e;\n"
    "  if (a < 0x1p-6) return sign | (unsigned char)rint(__dmul_rn(a, 0x1p9));\n"
    "  int e;\n"
    "  double m = __dadd_rn(__dmul_rn(frexp(a, &e), 2.0), -1.0);\n"
    "  double q = rint(__dmul_rn(m, 8.0));\n"
    "  if (q == 8.0) { q = 0; ++e; }\n"
    "  unsigned bits = ((unsigned)(e - 1 + 7) << 3) | (unsigned)q;\n"
    "  return sign | (unsigned char)(bits > 0x7e ? 0x7e : bits);\n"
    "}\n"
    "extern \"C\" __global__ void tune_fill(void *dst, int dt, int init, double a, double b,\n"
    "    unsigned long long base, unsigned long long n) {\n"
    "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += (unsigned long long)gridDim.x * blockDim.x) {\n"
    "    unsigned long long k = base + 2 * i;\n"
    "    double v;\n"
    "    if (init == 2) {\n" /* TUNE_INIT_NORMAL */
    "      double r = sqrt(__dmul_rn(-2.0, log(tf_u01(k))));\n"
    "      v = __dadd_rn(a, __dmul_rn(__dmul_rn(b, r), cos(__dmul_rn(6.283185307179586, tf_u01(k + 1)))));\n"
    "    } else if (init == 3) {\n" /* TUNE_INIT_RANDINT */
    "      long long lo = (long long)a, hi = (long long)b;\n"
    "      v = (double)(lo + (long long)(tf_mix(k) % (unsigned long long)(hi - lo + 1)));\n"
    "    } else if (init == 6) {\n" /* TUNE_INIT_WIDE */
    "      v = __dmul_rn(exp2(__dadd_rn(a, __dmul_rn(__dadd_rn(b, -a), tf_u01(k)))), (tf_mix(k + 1) & 1) ? -1.0 : 1.0);\n"
    "    } else {\n"
    "      v = __dadd_rn(a, __dmul_rn(__dadd_rn(b, -a), tf_u01(k)));\n"
    "    }\n"
    "    switch (dt) {\n" /* tune_dtype's order */
    "    case 0: ((float *)dst)[i] = __double2float_rn(v); break;\n"
    "    case 1: { unsigned short h; asm(\"cvt.rn.f16.f64 %0, %1;\" : \"=h\"(h) : \"d\"(v)); ((unsigned short *)dst)[i] = h; break; }\n"
    "    case 2: { unsigned u = __float_as_uint(__double2float_rn(v));\n"
    "      ((unsigned short *)dst)[i] = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0 : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "      break; }\n"
    "    case 3: ((int *)dst)[i] = (int)v; break;\n"
    "    case 4: ((long long *)dst)[i] = (long long)v; break;\n"
    "    case 5: ((double *)dst)[i] = v; break;\n"
    "    default: ((unsigned char *)dst)[i] = tf_e4m3(v); break;\n"
    "    }\n"
    "  }\n"
    "}\n";

int tune_wk_kernels_compile(const char *arch, tune_compile_job *job, tune_err *err) {
  memset(job, 0, sizeof *job);
  job->source_path = "tune_worker_kernels.cu";
  job->source_text = kernels_src;
  job->include_root = ".";
  job->arch = arch;
  /* extern "C" kernels: the names key the job; tune_fill (no room for a fifth) loads by its name alike */
  job->n_names = 4;
  job->names[0] = "tune_checksum";
  job->names[1] = "scratch_zero";
  job->names[2] = "tune_compare";
  job->names[3] = "tune_guard";
  if (tune_compile_batch(job, 1, 1, err)) return err->code;
  if (job->bin.ok) return TUNE_OK;
  tune_fail(err, TUNE_EINTERNAL, "worker: tune's own kernels do not compile for %s: %s", arch, job->bin.log ? job->bin.log : "");
  db_binary_release(&job->bin);
  return err->code;
}

int tune_wk_kernels_init(wstate *w, tune_err *err) {
  if (w->sum_fn) return TUNE_OK;
  int maj = 0, min = 0;
  CU_TRY(err, cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, w->dev));
  CU_TRY(err, cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, w->dev));
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", maj, min);
  tune_compile_job job;
  if (tune_wk_kernels_compile(arch, &job, err)) return err->code;
  CUresult r = tune_cu.cuModuleLoadData(&w->sum_mod, job.bin.cubin);
  db_binary_release(&job.bin);
  if (r != CUDA_SUCCESS) return tune_fail(err, TUNE_ECUDA, "worker: module of tune's own kernels: %s", tune_cuda_error_name(r));
  CU_TRY(err, cuModuleGetFunction(&w->sum_fn, w->sum_mod, "tune_checksum"));
  CU_TRY(err, cuModuleGetFunction(&w->zero_fn, w->sum_mod, "scratch_zero"));
  CU_TRY(err, cuModuleGetFunction(&w->cmp_fn, w->sum_mod, "tune_compare"));
  CU_TRY(err, cuModuleGetFunction(&w->guard_fn, w->sum_mod, "tune_guard"));
  CU_TRY(err, cuModuleGetFunction(&w->fill_fn, w->sum_mod, "tune_fill"));
  CU_TRY(err, cuMemAlloc(&w->guard_out, TUNE_WK_GUARD_SLOTS * 3 * sizeof(unsigned long long)));
  CU_TRY(err, cuMemAlloc(&w->sum_out, 8 + sizeof(tune_wk_cmp))); /* the checksum's 8 bytes, a comparison's result */
  return TUNE_OK;
fail:
  return err->code;
}

int tune_wk_checksum(wstate *w, int i, uint64_t *sum, tune_err *err) {
  unsigned long long n = w->bytes[i] / 4, h = 0;
  unsigned char tail[4] = {0};
  size_t rest = w->bytes[i] % 4;
  void *args[] = {&w->ptr[i], &n, &w->sum_out};
  /* the kernel is built on first use: a recipe without inputs or scratch reaches here first through
     its outputs' relaunch check */
  if (tune_wk_kernels_init(w, err)) return err->code;
  CU_TRY(err, cuMemsetD8(w->sum_out, 0, 8));
  if (n) CU_TRY(err, cuLaunchKernel(w->sum_fn, 1024, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
  CU_TRY(err, cuMemcpyDtoH(&h, w->sum_out, 8));
  if (rest) CU_TRY(err, cuMemcpyDtoH(tail, w->ptr[i] + n * 4, rest));
  *sum = h ^ XXH64(tail, rest, (uint64_t)rest);
  return TUNE_OK;
fail:
  return err->code;
}

/* The kernels name tune_init and tune_dtype values by number (tune_fill, tune_compare). */
_Static_assert(TUNE_INIT_NORMAL == 2 && TUNE_INIT_RANDINT == 3 && TUNE_INIT_WIDE == 6, "tune_fill's init numbers");
_Static_assert(TUNE_F32 == 0 && TUNE_F16 == 1 && TUNE_BF16 == 2 && TUNE_I32 == 3 && TUNE_I64 == 4 && TUNE_F64 == 5 &&
                   TUNE_E4M3 == 6,
               "the kernels' dtype numbers");

int tune_wk_fill(wstate *w, const tune_arg_def *def, int64_t numel, uint64_t seed, int arg_index, CUdeviceptr dst,
                 tune_err *err) {
  if (!tune_inputs_elementwise(def->init)) { /* a permutation, offsets: drawn in sequence, on the host */
    size_t bytes = (size_t)numel * (size_t)tune_dtype_size(def->dtype);
    if (tune_wk_host_reserve(w, bytes, err)) return err->code;
    tune_inputs_fill(def, numel, seed, arg_index, w->host);
    CU_TRY(err, cuMemcpyHtoD(dst, w->host, bytes));
    return TUNE_OK;
  }
  if (tune_wk_kernels_init(w, err)) return err->code;
  int dt = (int)def->dtype, init = (int)def->init;
  double a = def->init_a, b = def->init_b;
  unsigned long long base = tune_inputs_base(seed, arg_index), n = (unsigned long long)numel;
  void *args[] = {&dst, &dt, &init, &a, &b, &base, &n};
  unsigned blocks = (unsigned)(n / 256 + 1 > 4096 ? 4096 : n / 256 + 1);
  CU_TRY(err, cuLaunchKernel(w->fill_fn, blocks, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
  CU_TRY(err, cuCtxSynchronize());
  return TUNE_OK;
fail:
  return err->code;
}

const tune_wk_cmp tune_wk_cmp_init = {{0, 0, 0}, {0, 0, ~0ull}};

int tune_wk_compare_async(wstate *w, int i, CUdeviceptr ref, CUdeviceptr res, tune_err *err) {
  if (tune_wk_kernels_init(w, err)) return err->code;
  CUdeviceptr acc = res + offsetof(tune_wk_cmp, sums), stat = res + offsetof(tune_wk_cmp, stat);
  unsigned long long n = (unsigned long long)w->numel[i];
  double tol = w->tol_abs;
  int dt = (int)w->def[i].dtype;
  void *args[] = {&w->ptr[i], &ref, &dt, &n, &tol, &acc, &stat};
  unsigned blocks = (unsigned)(n / 256 + 1 > 1024 ? 1024 : n / 256 + 1);
  CU_TRY(err, cuLaunchKernel(w->cmp_fn, blocks, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
  return TUNE_OK;
fail:
  return err->code;
}

void tune_wk_compare_result(const tune_wk_cmp *r, tune_compare *c) {
  c->rel_l2 = r->sums[1] > 0 ? sqrt(r->sums[0] / r->sums[1]) : sqrt(r->sums[0]);
  c->honest_rel_l2 = r->sums[1] > 0 ? sqrt(r->sums[2] / r->sums[1]) : 0;
  memcpy(&c->max_abs, &r->stat[0], sizeof c->max_abs);
  c->n_nan = (int64_t)r->stat[1];
  c->first_bad = r->stat[2] == ~0ull ? -1 : (int64_t)r->stat[2];
}

int tune_wk_compare(wstate *w, int i, CUdeviceptr ref, tune_compare *c, tune_err *err) {
  if (tune_wk_kernels_init(w, err)) return err->code;
  CUdeviceptr res = w->sum_out + 8;
  tune_wk_cmp r = tune_wk_cmp_init;
  CU_TRY(err, cuMemcpyHtoD(res, &r, sizeof r));
  if (tune_wk_compare_async(w, i, ref, res, err)) return err->code;
  CU_TRY(err, cuMemcpyDtoH(&r, res, sizeof r));
  tune_wk_compare_result(&r, c);
  return TUNE_OK;
fail:
  return err->code;
}

int tune_wk_element(wstate *w, int i, CUdeviceptr buf, int64_t k, double *v, tune_err *err) {
  unsigned char one[8];
  size_t size = (size_t)tune_dtype_size(w->def[i].dtype);
  CU_TRY(err, cuMemcpyDtoH(one, buf + (size_t)k * size, size));
  *v = tune_inputs_get(w->def[i].dtype, one, 0);
  return TUNE_OK;
fail:
  return err->code;
}

int tune_wk_guard_scan(wstate *w, const CUdeviceptr *bands, int n, size_t band_bytes, unsigned char want,
                       unsigned long long (*found)[3], tune_err *err) {
  if (tune_wk_kernels_init(w, err)) return err->code;
  if (n > TUNE_WK_GUARD_SLOTS) return tune_fail(err, TUNE_EINTERNAL, "worker: %d guard bands, room for %d", n, TUNE_WK_GUARD_SLOTS);
  for (int k = 0; k < n; ++k) { found[k][0] = 0; found[k][1] = ~0ull; found[k][2] = 0; }
  CU_TRY(err, cuMemcpyHtoD(w->guard_out, found, (size_t)n * sizeof *found));
  unsigned long long len = band_bytes;
  unsigned pattern = want;
  for (int k = 0; k < n; ++k) {
    CUdeviceptr out = w->guard_out + (size_t)k * sizeof *found;
    void *args[] = {(void *)&bands[k], &len, &pattern, &out};
    CU_TRY(err, cuLaunchKernel(w->guard_fn, 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
  }
  CU_TRY(err, cuMemcpyDtoH(found, w->guard_out, (size_t)n * sizeof *found));
  return TUNE_OK;
fail:
  return err->code;
}
