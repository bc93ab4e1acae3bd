/* backend_pool.c: every GPU of a host (tune run --device cuda:all): one cuda backend, that is
 * one supervised worker, per GPU, a variant in flight on each, replies taken as they come.
 * The compile pool and the database writer stay the session's, one each. A GPU whose worker
 * cannot be restarted, cannot take the problem, or crashes on variant after variant while
 * the others measure theirs is set aside with a message; the run goes on with the rest. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "backend_cuda.h"

#define POOL_MAX_GPUS 16
#define POOL_CRASHES_SET_ASIDE 3 /* crashes in a row, while another GPU had none, that set a GPU aside */

typedef struct member {
  tune_backend *be;
  int in_use;            /* 0: set aside */
  int busy, tag;         /* a variant in flight, the caller's tag for it */
  db_result *out;        /* where its figures go */
  double deadline_s;     /* its watchdog */
  int crashes_in_row;
} member;

typedef struct pool_impl {
  int n;
  member m[POOL_MAX_GPUS];
} pool_impl;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int in_use(const pool_impl *p) {
  int k = 0;
  for (int i = 0; i < p->n; ++i) k += p->m[i].in_use;
  return k;
}

static void set_aside(tune_backend *b, member *m, const char *why) {
  pool_impl *p = b->impl;
  m->in_use = 0;
  m->busy = 0;
  b->slots = in_use(p);
  fprintf(stderr, "%s (%s) set aside: %s; %d GPU(s) go on\n", m->be->name, m->be->device.uuid, why, b->slots);
}

/* The first GPU still in use: single-variant calls and the peaks go there. */
static member *first(tune_backend *b, tune_err *err) {
  pool_impl *p = b->impl;
  for (int i = 0; i < p->n; ++i)
    if (p->m[i].in_use) return &p->m[i];
  tune_fail(err, TUNE_EWORKER, "%s: every GPU was set aside", b->name);
  return NULL;
}

/* Every GPU in use takes the problem; one that cannot is set aside, unless none can (then the
 * problem itself is at fault and the run hears why). */
static int pool_set_problem(tune_backend *b, const tune_recipe *r, const tune_problem *pr, const tune_problem_setup *s,
                            const db_binary *ref_bin, const char *ref_lowered, uint64_t seed, tune_err *err) {
  pool_impl *p = b->impl;
  tune_err e[POOL_MAX_GPUS];
  int ok = 0, failed = -1;
  for (int i = 0; i < p->n; ++i) {
    tune_err_clear(&e[i]);
    if (p->m[i].in_use) tune_cuda_send_problem(p->m[i].be, s, ref_bin, ref_lowered, seed, &e[i]);
  }
  for (int i = 0; i < p->n; ++i) { /* every GPU prepares its inputs and reference at once */
    if (!p->m[i].in_use) continue;
    if (!e[i].code && !tune_cuda_recv_problem(p->m[i].be, r, pr, &e[i])) ++ok;
    else if (failed < 0) failed = i;
  }
  if (failed >= 0 && !ok) {
    *err = e[failed];
    return err->code;
  }
  for (int i = 0; i < p->n; ++i)
    if (p->m[i].in_use && e[i].code) set_aside(b, &p->m[i], e[i].msg);
  return TUNE_OK;
}

static int pool_measure(tune_backend *b, const tune_measure_req *q, db_result *out, tune_err *err) {
  member *m = first(b, err);
  if (!m) return err->code;
  m->be->timeout_ms = b->timeout_ms;
  int rc = m->be->measure(m->be, q, out, err);
  tune_kernel_time_take(&m->be->kernels, &b->kernels); /* the pool's figure is its GPUs' sum */
  if (rc == TUNE_EWORKER && in_use(b->impl) > 1) { /* its worker could not be restarted */
    set_aside(b, m, err->msg);
    tune_err_clear(err);
    return TUNE_OK; /* out already says crash or timeout */
  }
  return rc;
}

/* The free GPU for q: the card it asks for while that one is free, else the first free one. */
static member *free_member(pool_impl *p, int card) {
  for (int i = 0, k = 0; card > 0 && i < p->n; ++i)
    if (p->m[i].in_use && ++k == card && !p->m[i].busy) return &p->m[i];
  for (int i = 0; i < p->n; ++i)
    if (p->m[i].in_use && !p->m[i].busy) return &p->m[i];
  return NULL;
}

static int pool_submit(tune_backend *b, const tune_measure_req *q, db_result *out, int tag, tune_err *err) {
  member *m = free_member(b->impl, q->card);
  if (!m) return tune_fail(err, TUNE_EINTERNAL, "%s: submit with every GPU busy", b->name);
  m->be->timeout_ms = b->timeout_ms;
  if (tune_cuda_send_measure(m->be, q, err)) return err->code;
  m->busy = 1;
  m->tag = tag;
  m->out = out;
  m->deadline_s = now_s() + 1e-3 * tune_cuda_pending_timeout_ms(m->be);
  return TUNE_OK;
}

/* The reply of busy member m (or its timeout): figures into m->out, crash bookkeeping. */
static int finish(tune_backend *b, member *m, int timeout_ms, int *tag, tune_err *err) {
  pool_impl *p = b->impl;
  tune_err e;
  tune_err_clear(&e);
  int rc = tune_cuda_recv_measure(m->be, timeout_ms, m->out, &e);
  tune_kernel_time_take(&m->be->kernels, &b->kernels);
  m->busy = 0;
  *tag = m->tag;
  int crashed = m->out->status == DB_CRASH || m->out->status == DB_TIMEOUT;
  m->crashes_in_row = crashed ? m->crashes_in_row + 1 : 0;
  int others_fine = 0;
  for (int i = 0; i < p->n; ++i) others_fine |= &p->m[i] != m && p->m[i].in_use && p->m[i].crashes_in_row == 0;
  if (rc && in_use(p) > 1) set_aside(b, m, e.msg);
  else if (rc) return *err = e, err->code;
  else if (m->crashes_in_row >= POOL_CRASHES_SET_ASIDE && others_fine)
    set_aside(b, m, "its worker crashed on every one of its last variants while the other GPUs measured theirs");
  return TUNE_OK;
}

static int pool_collect(tune_backend *b, int *tag, tune_err *err) {
  pool_impl *p = b->impl;
  for (;;) {
    struct pollfd fds[POOL_MAX_GPUS];
    int who[POOL_MAX_GPUS], n = 0;
    double t = now_s(), wait_s = 3600;
    for (int i = 0; i < p->n; ++i) {
      member *m = &p->m[i];
      if (!m->in_use || !m->busy) continue;
      if (m->deadline_s <= t) return finish(b, m, 0, tag, err); /* past its watchdog */
      if (m->deadline_s - t < wait_s) wait_s = m->deadline_s - t;
      fds[n] = (struct pollfd){.fd = tune_cuda_reply_fd(m->be), .events = POLLIN};
      who[n++] = i;
    }
    if (!n) return tune_fail(err, TUNE_EINTERNAL, "%s: collect with nothing in flight", b->name);
    int k = poll(fds, (nfds_t)n, (int)(wait_s * 1e3) + 1);
    if (k < 0 && errno != EINTR) return tune_fail(err, TUNE_EIO, "%s: poll: %s", b->name, strerror(errno));
    for (int j = 0; k > 0 && j < n; ++j) {
      if (!fds[j].revents) continue;
      member *m = &p->m[who[j]];
      int left_ms = (int)((m->deadline_s - now_s()) * 1e3);
      return finish(b, m, left_ms > 0 ? left_ms : 0, tag, err);
    }
  }
}

static int pool_copy_peak(tune_backend *b, const db_binary *bin, const char *kernel, double *gbps, tune_err *err) {
  member *m = first(b, err);
  return m ? m->be->measure_copy_peak(m->be, bin, kernel, gbps, err) : err->code;
}

static int pool_mma_peak(tune_backend *b, const db_binary *bin, const char *kernel, double *tflops, tune_err *err) {
  member *m = first(b, err);
  return m ? m->be->measure_mma_peak(m->be, bin, kernel, tflops, err) : err->code;
}

static void pool_close(tune_backend *b) {
  pool_impl *p = b->impl;
  for (int i = 0; p && i < p->n; ++i) p->m[i].be->close(p->m[i].be);
  free(p);
  free(b);
}

/* The ordinals named by gpus ("all" needs the count the first worker reports). */
static int parse_gpus(const char *gpus, int count, int *ord, int *n, tune_err *err) {
  *n = 0;
  if (!strcmp(gpus, "all")) {
    for (int i = 0; i < count && i < POOL_MAX_GPUS; ++i) ord[(*n)++] = i;
    return TUNE_OK;
  }
  for (const char *s = gpus; *s;) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v >= count || (*end && *end != ',') || *n == POOL_MAX_GPUS)
      return tune_fail(err, TUNE_EINVAL, "--device cuda:%s: want cuda:all or a list of GPU ordinals below %d (e.g. cuda:0,1)",
                       gpus, count);
    for (int i = 0; i < *n; ++i)
      if (ord[i] == v) return tune_fail(err, TUNE_EINVAL, "--device cuda:%s: GPU %ld named twice", gpus, v);
    ord[(*n)++] = (int)v;
    s = *end ? end + 1 : end;
  }
  return TUNE_OK;
}

/* Cards whose results may pool: the same model, memory and driver. */
static int same_model(const db_device *a, const db_device *b) {
  return !strcmp(a->name, b->name) && !strcmp(a->arch, b->arch) && a->sm_count == b->sm_count &&
         a->mem_bytes == b->mem_bytes && !strcmp(a->driver, b->driver);
}

static int open_members(const char *exe, const char *gpus, pool_impl *p, tune_err *err) {
  tune_backend *probe = NULL;
  if (tune_backend_cuda_open(exe, 0, &probe, err)) return err->code;
  int ord[POOL_MAX_GPUS], n = 0;
  if (parse_gpus(gpus, tune_cuda_device_count(probe), ord, &n, err)) { probe->close(probe); return err->code; }
  for (int i = 0; i < n; ++i) {
    tune_backend *be = NULL;
    if (ord[i] == 0 && probe) be = probe, probe = NULL;
    else if (tune_backend_cuda_open(exe, ord[i], &be, err)) break;
    p->m[p->n++] = (member){.be = be, .in_use = 1};
    if (!same_model(&be->device, &p->m[0].be->device))
      tune_fail(err, TUNE_EINVAL, "--device cuda:%s: %s is a %s (%s, driver %s), %s a %s (%s, driver %s): results of"
                " different GPU models never pool; name GPUs of one model (e.g. cuda:%d)", gpus, be->name, be->device.name,
                be->device.arch, be->device.driver, p->m[0].be->name, p->m[0].be->device.name, p->m[0].be->device.arch,
                p->m[0].be->device.driver, ord[0]);
    if (err->code) break;
  }
  if (probe) probe->close(probe);
  return err->code;
}

int tune_backend_pool_open(const char *exe, const char *gpus, tune_backend **out, tune_err *err) {
  *out = NULL;
  tune_backend *b = calloc(1, sizeof *b);
  pool_impl *p = calloc(1, sizeof *p);
  if (!b || !p) { free(b); free(p); return tune_fail(err, TUNE_ENOMEM, "cuda:%s: out of memory", gpus); }
  b->impl = p;
  b->close = pool_close;
  tune_err_clear(err);
  if (open_members(exe, gpus, p, err)) { pool_close(b); return err->code; }
  snprintf(b->name, sizeof b->name, "cuda:%s", gpus);
  b->device = p->m[0].be->device;
  snprintf(b->provenance, sizeof b->provenance, "%s", p->m[0].be->provenance);
  b->needs_binaries = 1;
  b->slots = p->n;
  b->set_problem = pool_set_problem;
  b->measure = pool_measure;
  b->submit = pool_submit;
  b->collect = pool_collect;
  b->measure_copy_peak = pool_copy_peak;
  b->measure_mma_peak = pool_mma_peak;
  *out = b;
  return TUNE_OK;
}
