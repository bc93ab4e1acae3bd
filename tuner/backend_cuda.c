/* backend_cuda.c: the cuda backend: a supervised `tune worker` process. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "backend_cuda.h"
#include "compile.h"
#include "protocol.h"
#include "tensormap.h"

typedef struct cuda_impl {
  char exe[4096];
  int ordinal;
  pid_t pid;
  int to_w, from_w;        /* pipe ends: tuner -> worker, worker -> tuner */
  json_t *problem_msg;     /* re-sent to a restarted worker */
  void *ref_cubin;
  size_t ref_cubin_n;
  double ref_ms;
  int device_count;        /* GPUs the worker's driver sees */
  /* the variant sent and not yet answered (tune_cuda_send_measure) */
  int pending_timeout_ms, pending_sustained;
  tune_err pending_err;    /* its send failed: the worker is gone */
  db_result *pending_out;  /* submit: where its figures go, under pending_tag */
  int pending_tag;
} cuda_impl;

static void worker_stop(cuda_impl *c, int kill_it) {
  if (c->pid <= 0) return;
  if (kill_it) kill(c->pid, SIGKILL);
  close(c->to_w);
  close(c->from_w);
  int st;
  waitpid(c->pid, &st, 0);
  c->pid = 0;
}

static int worker_start(cuda_impl *c, tune_err *err) {
  int a[2], b[2];
  /* close-on-exec: a worker started later for another GPU must not hold this one's pipe ends
     open, or this worker never sees EOF when the tuner closes them */
  if (pipe(a) || pipe(b)) return tune_fail(err, TUNE_EIO, "cuda: pipe: %s", strerror(errno));
  for (int i = 0; i < 2; ++i)
    if (fcntl(a[i], F_SETFD, FD_CLOEXEC) || fcntl(b[i], F_SETFD, FD_CLOEXEC))
      return tune_fail(err, TUNE_EIO, "cuda: fcntl: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) return tune_fail(err, TUNE_EIO, "cuda: fork: %s", strerror(errno));
  if (pid == 0) {
    dup2(a[0], 0);
    dup2(b[1], 1);
    close(a[0]); close(a[1]); close(b[0]); close(b[1]);
    char dev[16];
    snprintf(dev, sizeof dev, "%d", c->ordinal);
    execl(c->exe, c->exe, "worker", "--device", dev, (char *)NULL);
    _exit(127);
  }
  close(a[0]);
  close(b[1]);
  c->pid = pid;
  c->to_w = a[1];
  c->from_w = b[0];
  signal(SIGPIPE, SIG_IGN); /* a dead worker is seen as a write error */
  return TUNE_OK;
}

/* Send and wait for the reply; on EOF or timeout the worker is gone. */
static int call(cuda_impl *c, json_t *msg, const void *blob, size_t n, int timeout_ms, json_t **reply, tune_err *err) {
  if (tune_msg_write(c->to_w, msg, blob, n, err)) return err->code;
  return tune_msg_read(c->from_w, reply, NULL, NULL, timeout_ms, err);
}

static int hello(cuda_impl *c, db_device *d, char *notes, size_t notes_n, tune_err *err) {
  json_t *msg = json_pack("{s:s}", "op", "hello"), *rep = NULL;
  int rc = call(c, msg, NULL, 0, 120000, &rep, err);
  json_decref(msg);
  if (rc) return tune_fail(err, TUNE_EWORKER, "cuda: the worker did not start");
  if (strcmp(json_string_value(json_object_get(rep, "status")) ?: "", "ok")) {
    rc = tune_fail(err, TUNE_ENOGPU, "%s", json_string_value(json_object_get(rep, "error")) ?: "worker failed");
    json_decref(rep);
    return rc;
  }
  json_t *v = json_object_get(rep, "device");
  if (d) {
    memset(d, 0, sizeof *d);
    snprintf(d->kind, sizeof d->kind, "gpu");
    snprintf(d->name, sizeof d->name, "%s", json_string_value(json_object_get(v, "name")) ?: "?");
    d->cc_major = (int)json_integer_value(json_object_get(v, "cc_major"));
    d->cc_minor = (int)json_integer_value(json_object_get(v, "cc_minor"));
    snprintf(d->arch, sizeof d->arch, "sm_%d%d%s", d->cc_major, d->cc_minor, d->cc_major == 9 ? "a" : "");
    d->sm_count = (int)json_integer_value(json_object_get(v, "sm_count"));
    d->sm_clock_khz = (int)json_integer_value(json_object_get(v, "sm_clock_khz"));
    d->mem_clock_khz = (int)json_integer_value(json_object_get(v, "mem_clock_khz"));
    d->mem_bus_bits = (int)json_integer_value(json_object_get(v, "mem_bus_bits"));
    d->l2_bytes = (int)json_integer_value(json_object_get(v, "l2_bytes"));
    d->smem_per_block_optin = (int)json_integer_value(json_object_get(v, "smem_per_block_optin"));
    d->mem_bytes = json_integer_value(json_object_get(v, "mem_bytes"));
    snprintf(d->driver, sizeof d->driver, "%s", json_string_value(json_object_get(v, "driver")) ?: "");
    snprintf(d->cuda, sizeof d->cuda, "%s", tune_nvrtc_version());
    snprintf(d->uuid, sizeof d->uuid, "%s", json_string_value(json_object_get(v, "uuid")) ?: "");
  }
  c->device_count = (int)json_integer_value(json_object_get(v, "device_count"));
  if (notes) snprintf(notes, notes_n, "%s", json_string_value(json_object_get(v, "timer")) ?: "?");
  json_decref(rep);
  return TUNE_OK;
}

static int restart(cuda_impl *c, tune_err *err) {
  worker_stop(c, 1);
  if (worker_start(c, err) || hello(c, NULL, NULL, 0, err)) return err->code;
  if (!c->problem_msg) return TUNE_OK;
  json_t *rep = NULL;
  int rc = call(c, c->problem_msg, c->ref_cubin, c->ref_cubin_n, 600000, &rep, err);
  if (!rc && strcmp(json_string_value(json_object_get(rep, "status")) ?: "", "ok"))
    rc = tune_fail(err, TUNE_EWORKER, "cuda: the restarted worker refused the problem: %s", json_string_value(json_object_get(rep, "error")) ?: "");
  json_decref(rep);
  return rc;
}

int tune_cuda_send_problem(tune_backend *b, const tune_problem_setup *s, const db_binary *ref_bin,
                           const char *ref_lowered, uint64_t seed, tune_err *err) {
  cuda_impl *c = b->impl;
  json_t *args = json_array();
  for (int i = 0; i < s->n_args; ++i) {
    const tune_arg_def *d = &s->def[i];
    json_array_append_new(args, json_pack("{s:s,s:b,s:i,s:I,s:b,s:b,s:i,s:f,s:f,s:f,s:I}", "name", d->name, "tensor", d->is_tensor,
                                          "dtype", (int)d->dtype, "numel", (json_int_t)s->numel[i], "output", d->output,
                                          "scratch", d->scratch, "init", (int)d->init, "a", d->init_a, "b", d->init_b,
                                          "f", s->scalar_f[i], "i", (json_int_t)s->scalar_i[i]));
    /* zeroed scratch and tensor maps (docs/tensormap-args.md) */
    json_t *last = json_array_get(args, json_array_size(args) - 1);
    if (d->zero) json_object_set_new(last, "zero", json_true());
    if (d->adv_init) json_object_set_new(last, "adversarial", json_pack("{s:i,s:f,s:f}", "init", (int)d->adv_init, "a", d->adv_a, "b", d->adv_b));
    if (d->is_tmap) json_object_set_new(last, "tmap", tune_tmap_def_json(&d->tmap));
  }
  const tune_launch *l = &s->ref_launch;
  json_t *ref = json_pack("{s:s,s:[i,i,i],s:[i,i,i],s:i}", "kernel", ref_lowered, "grid", l->grid[0], l->grid[1], l->grid[2],
                          "block", l->block[0], l->block[1], l->block[2], "shared", l->shared);
  json_decref(c->problem_msg);
  free(c->ref_cubin);
  c->problem_msg = json_pack("{s:s,s:I,s:f,s:f,s:f,s:o,s:o}", "op", "problem", "seed", (json_int_t)seed, "tol_rel_l2", s->tol_rel_l2,
                             "tol_max_abs", s->tol_max_abs, "tol_honest", s->tol_honest, "args", args, "ref", ref);
  c->ref_cubin = malloc(ref_bin->cubin_size);
  if (!c->ref_cubin) return tune_fail(err, TUNE_ENOMEM, "cuda: out of memory");
  memcpy(c->ref_cubin, ref_bin->cubin, ref_bin->cubin_size);
  c->ref_cubin_n = ref_bin->cubin_size;
  tune_err_clear(&c->pending_err);
  tune_msg_write(c->to_w, c->problem_msg, c->ref_cubin, c->ref_cubin_n, &c->pending_err); /* a dead worker: seen by the recv */
  return TUNE_OK;
}

int tune_cuda_recv_problem(tune_backend *b, const tune_recipe *r, const tune_problem *p, tune_err *err) {
  cuda_impl *c = b->impl;
  json_t *rep = NULL;
  if (c->pending_err.code || tune_msg_read(c->from_w, &rep, NULL, NULL, 600000, err))
    return tune_fail(err, TUNE_EWORKER, "cuda: the worker died while setting up problem %s", p->name);
  if (strcmp(json_string_value(json_object_get(rep, "status")) ?: "", "ok")) {
    int rc = tune_fail(err, TUNE_EWORKER, "problem %s of %s: %s", p->name, r->name, json_string_value(json_object_get(rep, "error")) ?: "?");
    json_decref(rep);
    /* the worker may be in a bad state: start afresh next time */
    json_decref(c->problem_msg);
    c->problem_msg = NULL;
    restart(c, &(tune_err){0});
    return rc;
  }
  c->ref_ms = json_number_value(json_object_get(rep, "ref_ms"));
  json_decref(rep);
  return TUNE_OK;
}

static int cuda_set_problem(tune_backend *b, const tune_recipe *r, const tune_problem *p, const tune_problem_setup *s,
                            const db_binary *ref_bin, const char *ref_lowered, uint64_t seed, tune_err *err) {
  if (tune_cuda_send_problem(b, s, ref_bin, ref_lowered, seed, err)) return err->code;
  return tune_cuda_recv_problem(b, r, p, err);
}

/* The measure request as the worker reads it (protocol.h). */
static json_t *measure_msg(const tune_measure_req *q) {
  const tune_variant *v = q->variant;
  json_t *launches = json_array(), *scratch = json_array(), *tmaps = json_array();
  for (int i = 0; i < v->n_launches; ++i) json_array_append_new(launches, tune_launch_to_json(&v->launch[i], q->lowered[i]));
  for (int i = 0; i < q->setup->n_args; ++i) json_array_append_new(scratch, json_integer(v->scratch_numel[i]));
  json_t *msg = json_pack("{s:s,s:o,s:o}", "op", "measure", "launches", launches, "scratch", scratch);
  tune_measure_policy_to_json(msg, q->samples); /* 0: the default policy; >= 3: a quick timing */
  if (q->sustained) json_object_set_new(msg, "timing", json_string("sustained"));
  for (int i = 0; i < q->setup->n_args; ++i) json_array_append_new(tmaps, tune_tmap_var_json(&v->tmap[i]));
  json_object_set_new(msg, "tmaps", tmaps);
  return msg;
}

int tune_cuda_send_measure(tune_backend *b, const tune_measure_req *q, tune_err *err) {
  cuda_impl *c = b->impl;
  json_t *msg = measure_msg(q);
  /* watchdog: generous against the reference (itself simple and slow) */
  c->pending_timeout_ms = b->timeout_ms > 0 ? b->timeout_ms : (int)(30000 + 400 * c->ref_ms);
  c->pending_sustained = q->sustained;
  tune_err_clear(&c->pending_err);
  /* a worker that died before reading it answers nothing: recv then reports the crash */
  tune_msg_write(c->to_w, msg, q->bin->cubin, q->bin->cubin_size, &c->pending_err);
  json_decref(msg);
  (void)err;
  return TUNE_OK;
}

int tune_cuda_reply_fd(const tune_backend *b) { return ((const cuda_impl *)b->impl)->from_w; }

int tune_cuda_pending_timeout_ms(const tune_backend *b) { return ((const cuda_impl *)b->impl)->pending_timeout_ms; }

/* The reply's figures into out; 1 when the worker said its state is lost (restart it). */
static int read_reply(json_t *rep, int sustained, db_result *out) {
  const char *st = json_string_value(json_object_get(rep, "status")) ?: "error";
  int s = db_status_parse(st);
  out->status = s < 0 ? DB_CRASH : (db_status)s;
  snprintf(out->error_text, sizeof out->error_text, "%s", json_string_value(json_object_get(rep, "error")) ?: "");
  out->median_ns = json_number_value(json_object_get(rep, "median_ns"));
  out->min_ns = json_number_value(json_object_get(rep, "min_ns"));
  out->max_ns = json_number_value(json_object_get(rep, "max_ns"));
  out->stddev_ns = json_number_value(json_object_get(rep, "stddev_ns"));
  out->samples = (int)json_integer_value(json_object_get(rep, "samples"));
  json_t *rl = json_object_get(rep, "rel_l2"), *ma = json_object_get(rep, "max_abs");
  out->err_rel_l2 = rl ? json_number_value(rl) : -1;
  out->err_max_abs = ma ? json_number_value(ma) : -1;
  json_t *hr = json_object_get(rep, "honest_rel_l2");
  out->honest_rel_l2 = hr ? json_number_value(hr) : -1;
  out->measure_ms = json_number_value(json_object_get(rep, "measure_ms"));
  json_t *sm = json_object_get(rep, "sm_mhz"), *mem = json_object_get(rep, "mem_mhz");
  out->sm_mhz = sm ? (int)json_integer_value(sm) : -1;
  out->mem_mhz = mem ? (int)json_integer_value(mem) : -1;
  out->clock_reasons = (int64_t)json_integer_value(json_object_get(rep, "clock_reasons"));
  out->power_w = (int)json_integer_value(json_object_get(rep, "power_w"));
  out->event_median_ns = json_number_value(json_object_get(rep, "event_median_ns"));
  out->rel_ci = json_number_value(json_object_get(rep, "rel_ci"));
  snprintf(out->timer, sizeof out->timer, "%s", json_string_value(json_object_get(rep, "timer")) ?: "");
  snprintf(out->timing, sizeof out->timing, "%s", sustained ? "sustained" : "burst");
  return json_is_true(json_object_get(rep, "fatal")) || s < 0;
}

/* A measure reply's kernel time (protocol.h), where it has one, into b->kernels; rep NULL: no reply. */
static void note_kernels(tune_backend *b, json_t *rep) {
  double ns;
  b->kernels.n_replies++;
  if (!rep || !tune_reply_kernels_from_json(rep, &ns)) return;
  b->kernels.ns += ns;
  b->kernels.n_reported++;
}

int tune_cuda_recv_measure(tune_backend *b, int timeout_ms, db_result *out, tune_err *err) {
  cuda_impl *c = b->impl;
  json_t *rep = NULL;
  tune_err e = c->pending_err;
  snprintf(out->gpu, sizeof out->gpu, "%s", b->device.uuid);
  if (e.code || tune_msg_read(c->from_w, &rep, NULL, NULL, timeout_ms, &e)) {
    note_kernels(b, NULL);
    int timed_out = strstr(e.msg, "timeout") != NULL;
    out->status = timed_out ? DB_TIMEOUT : DB_CRASH;
    snprintf(out->error_text, sizeof out->error_text, "%s", "the worker died without a reply");
    if (timed_out)
      snprintf(out->error_text, sizeof out->error_text, "watchdog: no answer within %d ms; worker killed",
               c->pending_timeout_ms);
    return restart(c, err);
  }
  int fatal = read_reply(rep, c->pending_sustained, out);
  note_kernels(b, rep);
  json_decref(rep);
  return fatal ? restart(c, err) : TUNE_OK;
}

static int cuda_measure(tune_backend *b, const tune_measure_req *q, db_result *out, tune_err *err) {
  if (tune_cuda_send_measure(b, q, err)) return err->code;
  return tune_cuda_recv_measure(b, tune_cuda_pending_timeout_ms(b), out, err);
}

/* One variant in flight (slots 1): the caller works while the GPU measures, then collects. */
static int cuda_submit(tune_backend *b, const tune_measure_req *q, db_result *out, int tag, tune_err *err) {
  cuda_impl *c = b->impl;
  c->pending_out = out;
  c->pending_tag = tag;
  return tune_cuda_send_measure(b, q, err);
}

static int cuda_collect(tune_backend *b, int *tag, tune_err *err) {
  cuda_impl *c = b->impl;
  *tag = c->pending_tag;
  return tune_cuda_recv_measure(b, tune_cuda_pending_timeout_ms(b), c->pending_out, err);
}

static int cuda_mma_peak(tune_backend *b, const db_binary *bin, const char *kernel, double *tflops, tune_err *err) {
  cuda_impl *c = b->impl;
  json_t *msg = json_pack("{s:s,s:s}", "op", "mma_peak", "kernel", kernel), *rep = NULL;
  int rc = call(c, msg, bin->cubin, bin->cubin_size, 120000, &rep, err);
  json_decref(msg);
  if (rc) return tune_fail(err, TUNE_EWORKER, "cuda: the worker died measuring matrix throughput");
  if (strcmp(json_string_value(json_object_get(rep, "status")) ?: "", "ok"))
    rc = tune_fail(err, TUNE_EWORKER, "matrix throughput: %s", json_string_value(json_object_get(rep, "error")) ?: "?");
  else *tflops = json_number_value(json_object_get(rep, "TFLOPs"));
  json_decref(rep);
  return rc;
}

static int cuda_copy_peak(tune_backend *b, const db_binary *bin, const char *kernel, double *gbps, tune_err *err) {
  cuda_impl *c = b->impl;
  json_t *msg = json_pack("{s:s,s:s}", "op", "copy_peak", "kernel", kernel), *rep = NULL;
  int rc = call(c, msg, bin->cubin, bin->cubin_size, 120000, &rep, err);
  json_decref(msg);
  if (rc) return tune_fail(err, TUNE_EWORKER, "cuda: the worker died measuring copy bandwidth");
  if (strcmp(json_string_value(json_object_get(rep, "status")) ?: "", "ok"))
    rc = tune_fail(err, TUNE_EWORKER, "copy bandwidth: %s", json_string_value(json_object_get(rep, "error")) ?: "?");
  else *gbps = json_number_value(json_object_get(rep, "GBps"));
  json_decref(rep);
  /* the worker's problem buffers are untouched: nothing to restore */
  return rc;
}

static void cuda_close(tune_backend *b) {
  cuda_impl *c = b->impl;
  if (c) {
    worker_stop(c, 0);
    json_decref(c->problem_msg);
    free(c->ref_cubin);
    free(c);
  }
  free(b);
}

int tune_backend_cuda_open(const char *exe, int ordinal, tune_backend **out, tune_err *err) {
  *out = NULL;
  tune_backend *b = calloc(1, sizeof *b);
  cuda_impl *c = calloc(1, sizeof *c);
  if (!b || !c) { free(b); free(c); return tune_fail(err, TUNE_ENOMEM, "cuda: out of memory"); }
  b->impl = c;
  snprintf(c->exe, sizeof c->exe, "%s", exe);
  c->ordinal = ordinal;
  snprintf(b->name, sizeof b->name, "cuda:%d", ordinal);
  b->set_problem = cuda_set_problem;
  b->measure = cuda_measure;
  b->slots = 1;
  b->submit = cuda_submit;
  b->collect = cuda_collect;
  b->close = cuda_close;
  b->needs_binaries = 1;
  b->measure_copy_peak = cuda_copy_peak;
  b->measure_mma_peak = cuda_mma_peak;
  if (worker_start(c, err) || hello(c, &b->device, b->provenance, sizeof b->provenance, err)) { cuda_close(b); return err->code; }
  *out = b;
  return TUNE_OK;
}

int tune_cuda_device_count(const tune_backend *b) { return ((const cuda_impl *)b->impl)->device_count; }
