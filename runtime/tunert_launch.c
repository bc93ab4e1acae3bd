/* tunert_launch.c: lazy loading of a variant's binary (cubin, else PTX through
 * the driver's JIT) and the launch hot path; vendor selections go to
 * tunert_vendor_cublaslt.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tunert_cluster.h"
#include "tunert_launch_config.h"
#include "tunert_int.h"
#include "tunert_vendor_cublaslt.h"

/* Read, check and load the chosen binary of v; under ctx->lock with the
 * bundle's primary context current. Sets v->loaded. */
static void load_variant(tunert_ctx *ctx, rt_variant *v) {
  char e[256];
  sqlite3_stmt *st = NULL;
  void *copy = NULL;
  size_t copy_n = 0;
  if (v->chosen < 0) {
    snprintf(v->load_error, sizeof v->load_error, "%s", v->binary_desc);
    atomic_store_explicit(&v->loaded, -1, memory_order_release);
    return;
  }
  rt_binary *b = &v->bins[v->chosen];
  if (sqlite3_prepare_v2(ctx->db, "SELECT data FROM binaries WHERE id = ?1", -1, &st, NULL) != SQLITE_OK ||
      sqlite3_bind_int64(st, 1, b->id) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
    snprintf(v->load_error, sizeof v->load_error, "reading binary %s of variant %s: %s", b->arch, v->params_json,
             sqlite3_errmsg(ctx->db));
    goto fail;
  }
  const void *data = sqlite3_column_blob(st, 0);
  int64_t n = sqlite3_column_bytes(st, 0);
  if (!data || n != b->size || tunert_fnv1a64(data, (unsigned long long)n) != b->hash) {
    snprintf(v->load_error, sizeof v->load_error, "binary %s of variant %s is damaged (%lld bytes, %lld expected, or a checksum mismatch)",
             b->arch, v->params_json, (long long)n, (long long)b->size);
    goto fail;
  }
  CUresult r;
  if (b->is_ptx) {
    /* the JIT wants a NUL-terminated text */
    copy_n = (size_t)n + 1;
    copy = ctx->arena.al.alloc(ctx->arena.al.ud, copy_n);
    if (!copy) { snprintf(v->load_error, sizeof v->load_error, "out of memory for the PTX of %s", v->params_json); goto fail; }
    memcpy(copy, data, (size_t)n);
    ((char *)copy)[n] = 0;
    char jit_log[4096] = "";
    CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {jit_log, (void *)(uintptr_t)sizeof jit_log};
    r = ctx->cu.cuModuleLoadDataEx(&v->module, copy, 2, opts, vals);
    if (r != CUDA_SUCCESS) {
      snprintf(v->load_error, sizeof v->load_error, "JIT of the PTX %s of %s: %s%s%.200s", b->arch, v->params_json,
               tunert_cuda_error(&ctx->cu, r, e, sizeof e), jit_log[0] ? ": " : "", jit_log);
      goto fail;
    }
  } else {
    r = ctx->cu.cuModuleLoadData(&v->module, data);
    if (r != CUDA_SUCCESS) {
      snprintf(v->load_error, sizeof v->load_error, "cuModuleLoadData (cubin %s of %s): %s", b->arch, v->params_json,
               tunert_cuda_error(&ctx->cu, r, e, sizeof e));
      goto fail;
    }
  }
  for (int k = 0; k < v->n_kernels; ++k) {
    r = ctx->cu.cuModuleGetFunction(&v->fn[k], v->module, v->kernels[k]);
    if (r != CUDA_SUCCESS) {
      snprintf(v->load_error, sizeof v->load_error, "kernel %s not in the binary of %s: %s", v->kernels[k], v->params_json,
               tunert_cuda_error(&ctx->cu, r, e, sizeof e));
      ctx->cu.cuModuleUnload(v->module);
      v->module = NULL;
      goto fail;
    }
    v->smem_optin[k] = 0; /* any dynamic size is opted in: the 48 KiB default also counts static memory */
  }
  sqlite3_finalize(st);
  if (copy) ctx->arena.al.free(ctx->arena.al.ud, copy, copy_n);
  atomic_store_explicit(&v->loaded, 1, memory_order_release);
  return;
fail:
  sqlite3_finalize(st);
  if (copy) ctx->arena.al.free(ctx->arena.al.ud, copy, copy_n);
  atomic_store_explicit(&v->loaded, -1, memory_order_release);
}

int rt_context_retain_locked(tunert_ctx *ctx, tunert_err *err) {
  char e[256];
  int was_known = ctx->dev_known;
  int rc = rt_device_open(ctx, err);
  if (rc) return rc;
  if (!was_known) rt_choose_binaries(ctx); /* the device became known only now */
  if (ctx->cuctx) return TUNERT_OK;
  CUresult r = ctx->cu.cuDevicePrimaryCtxRetain(&ctx->cuctx, ctx->cudev);
  if (r == CUDA_SUCCESS) return TUNERT_OK;
  ctx->cuctx = NULL;
  return rt_fail(err, TUNERT_ECUDA, "cuDevicePrimaryCtxRetain(device %d): %s", ctx->device, tunert_cuda_error(&ctx->cu, r, e, sizeof e));
}

int rt_context_use(tunert_ctx *ctx, const char *family, tunert_err *err) {
  CUcontext cur = NULL;
  CUresult r = ctx->cu.cuCtxGetCurrent(&cur);
  if (r == CUDA_SUCCESS && cur != ctx->cuctx) {
    if (cur) return rt_fail(err, TUNERT_ECONTEXT, "tunert_launch %s: the thread's current CUDA context is not device %d's primary context", family, ctx->device);
    r = ctx->cu.cuCtxSetCurrent(ctx->cuctx);
  }
  char e[256];
  if (r != CUDA_SUCCESS) return rt_fail(err, TUNERT_ECUDA, "tunert_launch %s: context: %s", family, tunert_cuda_error(&ctx->cu, r, e, sizeof e));
  return TUNERT_OK;
}

/* Slow path of a launch: driver, context, binary, shared-memory limits. */
static int prepare(tunert_ctx *ctx, tunert_selection *s, tunert_err *err) {
  int rc = TUNERT_OK;
  char e[256];
  pthread_mutex_lock(&ctx->lock);
  if (atomic_load_explicit(&s->ready, memory_order_acquire)) goto out;
  if ((rc = rt_context_retain_locked(ctx, err))) goto out;
  CUcontext prev = NULL;
  ctx->cu.cuCtxGetCurrent(&prev);
  if (prev != ctx->cuctx) ctx->cu.cuCtxSetCurrent(ctx->cuctx);
  rt_variant *v = s->v;
  if (atomic_load_explicit(&v->loaded, memory_order_acquire) == 0) load_variant(ctx, v);
  if (atomic_load_explicit(&v->loaded, memory_order_acquire) < 0) {
    rc = rt_fail(err, v->chosen < 0 ? TUNERT_EARCH : TUNERT_ECUDA, "%s: %s", s->f->name, v->load_error);
  } else {
    for (int l = 0; l < s->n_launches && !rc; ++l) {
      int need = (int)s->launch[l].shared;
      if (need <= v->smem_optin[l]) continue;
      CUresult r = ctx->cu.cuFuncSetAttribute(v->fn[l], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, need);
      if (r != CUDA_SUCCESS)
        rc = rt_fail(err, TUNERT_ECUDA, "%s: %s: %d bytes of dynamic shared memory refused: %s", s->f->name, v->kernels[l], need,
                     tunert_cuda_error(&ctx->cu, r, e, sizeof e));
      else v->smem_optin[l] = need;
    }
    if (!rc) atomic_store_explicit(&s->ready, 1, memory_order_release);
  }
  if (prev != ctx->cuctx) ctx->cu.cuCtxSetCurrent(prev);
out:
  pthread_mutex_unlock(&ctx->lock);
  return rc;
}

static uint16_t to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
  int exp = (int)((x >> 23) & 0xff) - 127 + 15;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    mant |= 0x800000;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return (uint16_t)(sign | h);
  }
  uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return (uint16_t)h;
}

static uint16_t to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

/* The map m (tensormap k of the selection) for the tensor at ptr, into dst (64-byte aligned): from
 * the selection's cache (same pointer and strides), else encoded (into a free slot when there is
 * one). No lock, no allocation. */
static int put_tmap(tunert_ctx *ctx, tunert_selection *s, int k, const rt_tmap_spec *m, uint64_t ptr, unsigned char *dst,
                    tunert_err *err) {
  rt_tmap_cache *c = &s->tm_cache[k];
  const rt_family *f = s->f;
  size_t sb = sizeof(uint64_t) * (size_t)(m->rank > 1 ? m->rank - 1 : 0);
  unsigned n = atomic_load_explicit(&c->claimed, memory_order_acquire);
  if (n > TUNERT_TMAP_SLOTS) n = TUNERT_TMAP_SLOTS;
  for (unsigned i = 0; i < n; ++i)
    if (atomic_load_explicit(&c->key[i], memory_order_acquire) == ptr && !memcmp(c->strides[i], m->strides, sb)) {
      memcpy(dst, c->map[i], 128);
      return TUNERT_OK;
    }
  if (ptr % 16)
    return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: tensor map %s: the address of %s (0x%llx) is not 16-byte aligned", f->name,
                   f->arg_names[m->arg], f->arg_names[m->tensor], (unsigned long long)ptr);
  if (!ctx->cu.cuTensorMapEncodeTiled)
    return rt_fail(err, TUNERT_ENODRIVER, "tunert_launch %s: tensor map %s: the driver has no cuTensorMapEncodeTiled (CUDA 12.0 or later needed)",
                   f->name, f->arg_names[m->arg]);
  unsigned slot = TUNERT_TMAP_SLOTS;
  if (atomic_load_explicit(&c->claimed, memory_order_relaxed) < TUNERT_TMAP_SLOTS)
    slot = atomic_fetch_add_explicit(&c->claimed, 1, memory_order_acq_rel);
  unsigned char *out = slot < TUNERT_TMAP_SLOTS ? c->map[slot] : dst;
  CUresult r = rt_tmap_encode(ctx->cu.cuTensorMapEncodeTiled, m, ptr, out);
  if (r != CUDA_SUCCESS) { /* a claimed slot stays empty (key 0): never matched */
    char e[256], d[300];
    rt_tmap_describe(m, d, sizeof d);
    return rt_fail(err, TUNERT_ECUDA, "tunert_launch %s: tensor map %s of %s: cuTensorMapEncodeTiled: %s; %s %s", f->name,
                   f->arg_names[m->arg], f->arg_names[m->tensor], tunert_cuda_error(&ctx->cu, r, e, sizeof e), f->arg_dtypes[m->tensor], d);
  }
  if (out != dst) {
    memcpy(c->strides[slot], m->strides, sb); /* before the key: readers compare it after theirs */
    atomic_store_explicit(&c->key[slot], ptr, memory_order_release);
    memcpy(dst, out, 128);
  }
  return TUNERT_OK;
}

int rt_tmap_for_row_stride(const tunert_ctx *ctx, const tunert_selection *s, int k, int64_t ld, rt_tmap_spec *out,
                           tunert_err *err) {
  const rt_family *f = s->f;
  const rt_tmap_expr *x = &s->entry->tm[k];
  tunert_xval env[TUNERT_MAX_DIMS + TUNERT_MAX_PARAMS + 1 + TUNERT_MAX_ARGS];
  for (int d = 0; d < f->n_dims; ++d) env[d] = f->dim_bool[d] ? tunert_xbool(s->dims[d] != 0) : tunert_xint(s->dims[d]);
  for (int p = 0; p < f->n_params; ++p) env[f->n_dims + p] = s->v->params[p];
  env[f->n_dims + f->n_params] = tunert_xint(rt_sm_count(ctx));
  for (int j = f->n_dims + f->n_params + 1; j < f->n_names; ++j) env[j] = tunert_xint(0); /* only ld_slot is read */
  env[x->ld_slot] = tunert_xint(ld);
  *out = s->tm[k];
  char w[400], d[300];
  const tunert_arg_info *t = &s->args[x->tensor];
  if (!rt_tmap_eval(x, env, ld, 1, out, w, sizeof w) &&
      !rt_tmap_check(out, rt_tmap_view_bytes(t->shape, t->rank, t->numel, f->arg_size[x->tensor], ld), w, sizeof w))
    return TUNERT_OK;
  rt_tmap_describe(out, d, sizeof d);
  return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: tensor map %s of %s with %s = %lld: %.300s (%.250s)", f->name, f->arg_names[x->arg],
                 f->arg_names[x->tensor], f->arg_names[x->ld_arg], (long long)ld, w, d);
}

/* The row stride passed for the scalar of map k (ld_arg), or the selection's when AUTO. */
static int64_t passed_row_stride(const tunert_selection *s, int k, const tunert_arg *args) {
  const tunert_arg *x = &args[s->tm[k].ld_arg];
  return x->kind == TUNERT_ARG_INT ? x->v.i : x->kind == TUNERT_ARG_FLOAT ? (int64_t)x->v.f : s->tm[k].ld;
}

TUNERT_API int tunert_launch(tunert_ctx *ctx, const tunert_selection *sel, void *stream, const tunert_arg *args,
                             int n_args, tunert_err *err) {
  tunert_selection *s = (tunert_selection *)sel;
  if (!ctx || !s) return rt_fail(err, TUNERT_EINVAL, "tunert_launch: NULL context or selection");
  const rt_family *f = s->f;
  if (n_args != f->n_args || (n_args && !args))
    return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: %d args given, the family has %d", f->name, n_args, f->n_args);
  if (s->vendor) return rt_vendor_launch(ctx, s, stream, args, n_args, err); /* no kernel of ours */
  if (!atomic_load_explicit(&s->ready, memory_order_acquire)) {
    int rc = prepare(ctx, s, err);
    if (rc) return rc;
  }
  int crc = rt_context_use(ctx, f->name, err);
  if (crc) return crc;
  CUresult r;
  char e[256];
  _Alignas(64) unsigned char buf[4096];
  for (int a = 0; a < n_args; ++a) {
    unsigned char *dst = buf + s->offset[a];
    const tunert_arg *x = &args[a];
    if (f->arg_roles[a] == TUNERT_ROLE_TENSORMAP) { /* built below, once every pointer is checked */
      if (x->kind != TUNERT_ARG_AUTO)
        return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: arg %d (%s) is a tensor map: give TUNERT_ARG_AUTO (it is built from arg %s)",
                       f->name, a, f->arg_names[a], f->arg_names[s->tm_info[a].tensor]);
      continue;
    }
    if (f->arg_roles[a] != TUNERT_ROLE_SCALAR) {
      if (x->kind != TUNERT_ARG_PTR || !x->v.ptr)
        return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: arg %d (%s) is a tensor: give a non-NULL device pointer", f->name, a, f->arg_names[a]);
      memcpy(dst, &x->v.ptr, 8);
      continue;
    }
    double fv;
    int64_t iv;
    int is_float = f->arg_dtypes[a][0] == 'f' || f->arg_dtypes[a][0] == 'b';
    switch (x->kind) {
    case TUNERT_ARG_INT: iv = x->v.i; fv = (double)x->v.i; break;
    case TUNERT_ARG_FLOAT:
      fv = x->v.f;
      if (!is_float && fv != floor(fv))
        return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: arg %s is an integer, got %g", f->name, f->arg_names[a], fv);
      iv = (int64_t)fv;
      break;
    case TUNERT_ARG_AUTO:
      if (!s->args[a].has_value) return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: arg %s has no value in the bundle", f->name, f->arg_names[a]);
      fv = s->args[a].value;
      iv = (int64_t)fv;
      break;
    default:
      return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: arg %d (%s) is a scalar: give TUNERT_ARG_INT, _FLOAT or _AUTO", f->name, a, f->arg_names[a]);
    }
    switch (f->arg_size[a] * 4 + (is_float ? 1 : 0) + (f->arg_dtypes[a][0] == 'b' ? 2 : 0)) {
    case 17: { float v = (float)fv; memcpy(dst, &v, 4); break; }      /* f32 */
    case 33: memcpy(dst, &fv, 8); break;                              /* f64 */
    case 9: { uint16_t h = to_half((float)fv); memcpy(dst, &h, 2); break; }   /* f16 */
    case 11: { uint16_t h = to_bf16((float)fv); memcpy(dst, &h, 2); break; }  /* bf16 */
    case 16:                                                          /* i32 */
      if (iv < INT32_MIN || iv > INT32_MAX) return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: arg %s = %lld does not fit i32", f->name, f->arg_names[a], (long long)iv);
      { int32_t v = (int32_t)iv; memcpy(dst, &v, 4); }
      break;
    case 32: memcpy(dst, &iv, 8); break;                              /* i64 */
    default: return rt_fail(err, TUNERT_EINVAL, "tunert_launch %s: arg %s: dtype %s", f->name, f->arg_names[a], f->arg_dtypes[a]);
    }
  }
  for (int k = 0; k < s->n_tmaps; ++k) {
    const rt_tmap_spec *m = &s->tm[k];
    rt_tmap_spec strided;
    int64_t ld = m->ld_arg >= 0 ? passed_row_stride(s, k, args) : m->ld;
    if (ld != m->ld) { /* the caller's row stride: a strided view of the tensor */
      int rc = rt_tmap_for_row_stride(ctx, s, k, ld, &strided, err);
      if (rc) return rc;
      m = &strided;
    }
    int rc = put_tmap(ctx, s, k, m, args[m->tensor].v.ptr, buf + s->offset[m->arg], err);
    if (rc) return rc;
  }
  /* kernelParams form, as the tuner's worker launches: the driver copies each arg by the kernel's
     parameter table (a packed buffer with CU_LAUNCH_PARAM_BUFFER_SIZE was refused with
     LAUNCH_OUT_OF_RESOURCES for kernels taking 64-byte-aligned tensor maps on an H200) */
  void *ptrs[TUNERT_MAX_ARGS];
  for (int a = 0; a < n_args; ++a) ptrs[a] = buf + s->offset[a];
  const rt_variant *v = s->v;
  for (int l = 0; l < s->n_launches; ++l) {
    const tunert_launch_info *li = &s->launch[l];
    if (!li->grid[0] || !li->grid[1] || !li->grid[2]) continue; /* no blocks: not launched */
    const unsigned *cl = s->cluster[l];
    if (tunert_cluster_used(cl)) { /* a thread-block cluster: only the Ex form takes one */
      if (!ctx->cu.cuLaunchKernelEx)
        return rt_fail(err, TUNERT_ECUDA, "tunert_launch %s: kernel %s needs a thread-block cluster launch, but libcuda lacks "
                       "cuLaunchKernelEx (driver older than CUDA 12.0)", f->name, li->kernel);
      CUlaunchAttribute at;
      CUlaunchConfig lc = tunert_launch_config(li->grid, li->block, li->shared, (CUstream)stream, cl, &at);
      r = ctx->cu.cuLaunchKernelEx(&lc, v->fn[l], ptrs, NULL);
    } else
      r = ctx->cu.cuLaunchKernel(v->fn[l], li->grid[0], li->grid[1], li->grid[2], li->block[0], li->block[1], li->block[2],
                                 li->shared, (CUstream)stream, ptrs, NULL);
    if (r != CUDA_SUCCESS)
      return rt_fail(err, TUNERT_ECUDA, "tunert_launch %s: kernel %s (grid %u,%u,%u block %u,%u,%u cluster %u,%u,%u smem %u): %s", f->name,
                     li->kernel, li->grid[0], li->grid[1], li->grid[2], li->block[0], li->block[1], li->block[2], cl[0], cl[1], cl[2],
                     li->shared, tunert_cuda_error(&ctx->cu, r, e, sizeof e));
  }
  return TUNERT_OK;
}
