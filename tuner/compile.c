/* compile.c: NVRTC on a thread pool, with content-hash compile keys. */
#include "compile.h"

#include <nvrtc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "compile_ptx.h"
#include "compile_server.h"
#include "file_util.h"
#include "source_hash.h"

#ifndef TUNE_CUDA_INCLUDE
#define TUNE_CUDA_INCLUDE "/usr/local/cuda/include"
#endif

/* Both strings are found once per process (pthread_once): pool threads and the main thread may ask
 * at the same moment, and a reader must never see a string half written. */
static pthread_once_t nvrtc_version_once = PTHREAD_ONCE_INIT, include_dir_once = PTHREAD_ONCE_INIT;
static char nvrtc_version[16];
static char include_dir[4096]; /* empty: no candidate has cuda_bf16.h */

static void find_nvrtc_version(void) {
  int maj = 0, min = 0;
  nvrtcVersion(&maj, &min);
  snprintf(nvrtc_version, sizeof nvrtc_version, "%d.%d", maj, min);
}

const char *tune_nvrtc_version(void) {
  pthread_once(&nvrtc_version_once, find_nvrtc_version);
  return nvrtc_version;
}

static void find_include_dir(void) {
  const char *env = getenv("CUDA_HOME");
  const char *cands[3] = {NULL, "/usr/local/cuda/include", TUNE_CUDA_INCLUDE};
  char buf[4096];
  if (env) { snprintf(buf, sizeof buf, "%s/include", env); cands[0] = buf; }
  for (int i = 0; i < 3; ++i) {
    if (!cands[i]) continue;
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/cuda_bf16.h", cands[i]);
    if (!access(probe, R_OK)) { snprintf(include_dir, sizeof include_dir, "%s", cands[i]); return; }
  }
}

const char *tune_cuda_include_dir(void) {
  pthread_once(&include_dir_once, find_include_dir);
  return include_dir[0] ? include_dir : NULL;
}

/* Options in a fixed order: they are part of the key. */
static int build_options(const tune_compile_job *job, const char **opts, char (*own)[4200], int *n_opts) {
  int n = 0;
  snprintf(own[0], 4200, "-arch=%s", job->arch);
  snprintf(own[1], 4200, "-I%s", job->include_root);
  const char *cinc = tune_cuda_include_dir();
  snprintf(own[2], 4200, "-I%s", cinc ? cinc : TUNE_CUDA_INCLUDE);
  opts[n++] = own[0];
  opts[n++] = "-std=c++17";
  opts[n++] = own[1];
  opts[n++] = own[2];
  opts[n++] = "--ptxas-options=-v";
  opts[n++] = "-lineinfo";
  for (int i = 0; i < job->n_defines; ++i) opts[n++] = job->defines[i];
  *n_opts = n;
  return 0;
}

int tune_compile_key(tune_compile_job *job, tune_err *err) {
  const char *opts[TUNE_MAX_DEFINES + 8];
  char own[3][4200];
  int n;
  build_options(job, opts, own, &n);
  XXH64_state_t *h = XXH64_createState();
  if (!h) return tune_fail(err, TUNE_ENOMEM, "compile: out of memory");
  XXH64_reset(h, 0);
  int rc = job->source_text ? (XXH64_update(h, job->source_text, strlen(job->source_text)), TUNE_OK)
                            : tune_source_hash_update(h, job->source_path, job->include_root, err);
  if (!rc && job->source_text && job->text_of_template)
    rc = tune_source_hash_update(h, job->source_path, job->include_root, err);
  size_t len = 0;
  job->bin.options[0] = 0;
  for (int i = 0; i < n; ++i) {
    /* the CUDA include path varies between machines; its headers are
       covered by the NVRTC version */
    const char *o = (i == 3) ? "-I<cuda>" : (i == 2 ? "-I<templates>" : opts[i]);
    XXH64_update(h, o, strlen(o) + 1);
    if (len < sizeof job->bin.options)
      len += (size_t)snprintf(job->bin.options + len, sizeof job->bin.options - len, "%s%s", i ? " " : "", o);
  }
  for (int i = 0; i < job->n_names; ++i) XXH64_update(h, job->names[i], strlen(job->names[i]) + 1);
  const char *ver = tune_nvrtc_version();
  XXH64_update(h, ver, strlen(ver));
  snprintf(job->bin.key, sizeof job->bin.key, "%016llx", (unsigned long long)XXH64_digest(h));
  XXH64_freeState(h);
  snprintf(job->bin.arch, sizeof job->bin.arch, "%s", job->arch);
  snprintf(job->bin.nvrtc_version, sizeof job->bin.nvrtc_version, "%s", ver);
  return rc;
}

int tune_compile_from_cache(db_conn *db, tune_compile_job *job, int *hit, tune_err *err) {
  db_binary cached;
  tune_err e;
  tune_err_clear(&e);
  int got = db_binary_get(db, job->bin.key, &cached, &e);
  *hit = got == TUNE_OK;
  if (got == TUNE_ENOTFOUND) return TUNE_OK;
  if (got != TUNE_OK) return tune_fail(err, got, "%s", e.msg);
  job->bin = cached;
  tune_lowered_names(&job->bin, job->lowered);
  return TUNE_OK;
}

static int parse_int_before(const char *line, const char *word) {
  const char *w = strstr(line, word);
  if (!w) return -1;
  const char *p = w;
  while (p > line && p[-1] == ' ') --p;
  while (p > line && p[-1] >= '0' && p[-1] <= '9') --p;
  return atoi(p);
}

void tune_compile_parse_resources(const char *log, db_binary *b) {
  b->registers = b->shared_bytes = b->local_bytes = b->spill_stores = b->spill_loads = -1;
  if (!log) return;
  int seen_used = 0;
  const char *line = log;
  while (line && *line) {
    const char *end = strchr(line, '\n');
    char buf[1024];
    size_t n = end ? (size_t)(end - line) : strlen(line);
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, line, n);
    buf[n] = 0;
    int v;
    if (strstr(buf, "Used") && (v = parse_int_before(buf, " registers")) >= 0 && v > b->registers) b->registers = v;
    if ((v = parse_int_before(buf, " bytes smem")) >= 0 && v > b->shared_bytes) b->shared_bytes = v;
    if ((v = parse_int_before(buf, " bytes stack frame")) >= 0 && v > b->local_bytes) b->local_bytes = v;
    if ((v = parse_int_before(buf, " bytes spill stores")) >= 0) b->spill_stores = (b->spill_stores < 0 ? 0 : b->spill_stores) + v;
    if ((v = parse_int_before(buf, " bytes spill loads")) >= 0) b->spill_loads = (b->spill_loads < 0 ? 0 : b->spill_loads) + v;
    seen_used |= strstr(buf, "Used") != NULL;
    line = end ? end + 1 : NULL;
  }
  if (seen_used) { /* ptxas omits what is zero */
    if (b->shared_bytes < 0) b->shared_bytes = 0;
    if (b->local_bytes < 0) b->local_bytes = 0;
    if (b->spill_stores < 0) b->spill_stores = 0;
    if (b->spill_loads < 0) b->spill_loads = 0;
  }
}

int tune_compile_wgmma_serialized(const char *log) {
  return log && strstr(log, "wgmma.mma_async instructions are serialized") != NULL;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}


#define NVRTC_TRY(err, call)                                                                  \
  do {                                                                                        \
    nvrtcResult nv_r_ = (call);                                                               \
    if (nv_r_ != NVRTC_SUCCESS) {                                                             \
      tune_fail((err), TUNE_ENVRTC, "%s:%d: %s: %s", __FILE__, __LINE__, #call,               \
                nvrtcGetErrorString(nv_r_));                                                  \
      goto fail;                                                                              \
    }                                                                                         \
  } while (0)

void tune_compile_one(tune_compile_job *job) {
  tune_err *err = &job->err;
  nvrtcProgram prog = NULL;
  char *src = NULL;
  double t0 = now_ms();
  const char *opts[TUNE_MAX_DEFINES + 8];
  char own[3][4200];
  int n_opts;
  db_binary *b = &job->bin;
  if (!b->key[0] && tune_compile_key(job, err)) return;
  build_options(job, opts, own, &n_opts);
  src = job->source_text ? strdup(job->source_text) : tune_read_file(job->source_path, NULL);
  if (!src) { tune_fail(err, TUNE_EIO, "%s: cannot read template", job->source_path); return; }
  const char *base = strrchr(job->source_path, '/');
  NVRTC_TRY(err, nvrtcCreateProgram(&prog, src, base ? base + 1 : job->source_path, 0, NULL, NULL));
  for (int i = 0; i < job->n_names; ++i)
    if (job->is_expr[i]) NVRTC_TRY(err, nvrtcAddNameExpression(prog, job->names[i]));
  nvrtcResult cr = nvrtcCompileProgram(prog, n_opts, opts);
  size_t log_n = 0;
  NVRTC_TRY(err, nvrtcGetProgramLogSize(prog, &log_n));
  b->log = malloc(log_n + 1);
  if (!b->log) { tune_fail(err, TUNE_ENOMEM, "compile: out of memory"); goto fail; }
  NVRTC_TRY(err, nvrtcGetProgramLog(prog, b->log));
  b->log[log_n] = 0;
  tune_compile_parse_resources(b->log, b);
  if (cr == NVRTC_SUCCESS) {
    NVRTC_TRY(err, nvrtcGetCUBINSize(prog, &b->cubin_size));
    b->cubin = malloc(b->cubin_size);
    if (!b->cubin) { tune_fail(err, TUNE_ENOMEM, "compile: out of memory"); goto fail; }
    NVRTC_TRY(err, nvrtcGetCUBIN(prog, (char *)b->cubin));
    size_t lowered_len = 0;
    for (int i = 0; i < job->n_names; ++i) {
      const char *low = job->names[i];
      if (job->is_expr[i]) NVRTC_TRY(err, nvrtcGetLoweredName(prog, job->names[i], &low));
      snprintf(job->lowered[i], sizeof job->lowered[i], "%s", low);
      lowered_len += (size_t)snprintf(b->lowered_name + lowered_len, sizeof b->lowered_name - lowered_len,
                                      "%s%s", i ? " " : "", low);
    }
    b->ok = 1;
  } else if (cr == NVRTC_ERROR_COMPILATION) {
    b->ok = 0; /* the variant's result, not the pool's failure */
  } else {
    tune_fail(err, TUNE_ENVRTC, "nvrtcCompileProgram: %s", nvrtcGetErrorString(cr));
  }
fail:
  b->compile_ms = now_ms() - t0;
  if (prog) nvrtcDestroyProgram(&prog);
  free(src);
}

struct tune_compile_async {
  tune_compile_job **jobs; /* [cap]: grows as jobs are added (under mu) */
  int *done;               /* [cap], under mu */
  int n, cap, next;        /* jobs added, room, the next to take: under mu */
  int open;                /* more jobs may be added: idle threads wait for them (under mu) */
  int n_threads;
  tune_compile_kind kind;
  int use_servers;
  pthread_mutex_t mu;
  pthread_cond_t cv;       /* a job added or done, or the pool closed */
  pthread_t th[256];
};

/* The next job to compile, -1 when there is none and none will come (the pool closed). */
static int take_job(tune_compile_async *a, tune_compile_job **job) {
  pthread_mutex_lock(&a->mu);
  while (a->next >= a->n && a->open) pthread_cond_wait(&a->cv, &a->mu);
  int i = a->next < a->n ? a->next++ : -1;
  *job = i >= 0 ? a->jobs[i] : NULL;
  pthread_mutex_unlock(&a->mu);
  return i;
}

/* Job i compiled (by srv, NULL: in this process), then marked done. */
static void run_job(tune_compile_async *a, tune_compile_server *srv, int i, tune_compile_job *job) {
  if (srv) tune_compile_server_run(srv, job, a->kind);
  else if (a->kind == TUNE_COMPILE_PTX) tune_compile_ptx_one(job);
  else tune_compile_one(job);
  pthread_mutex_lock(&a->mu);
  a->done[i] = 1;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
}

/* Each thread holds one compile server for its life (none when the pool compiles in process). */
static void *async_main(void *arg) {
  tune_compile_async *a = arg;
  tune_compile_server *srv = a->use_servers ? tune_compile_server_acquire() : NULL;
  tune_compile_job *job;
  for (int i; (i = take_job(a, &job)) >= 0;) run_job(a, srv, i, job);
  tune_compile_server_release(srv);
  return NULL;
}

/* Room for n more jobs (under mu, or before any thread runs). */
static int pool_reserve(tune_compile_async *a, int n, tune_err *err) {
  if (a->n + n <= a->cap) return TUNE_OK;
  int cap = a->cap ? a->cap : 64;
  while (cap < a->n + n) cap *= 2;
  tune_compile_job **jobs = realloc(a->jobs, (size_t)cap * sizeof *jobs);
  if (jobs) a->jobs = jobs;
  int *done = jobs ? realloc(a->done, (size_t)cap * sizeof *done) : NULL;
  if (!done) return tune_fail(err, TUNE_ENOMEM, "compile: out of memory");
  memset(done + a->cap, 0, (size_t)(cap - a->cap) * sizeof *done);
  a->done = done;
  a->cap = cap;
  return TUNE_OK;
}

/* An empty pool; *threads: how many threads to start once it has its first jobs. */
static int pool_new(int n_threads, int max_threads, tune_compile_kind kind, int open, int *threads,
                    tune_compile_async **out, tune_err *err) {
  /* decided on the pool's size, not on the jobs it got: a pool of one job still runs beside
     the other pools of a run (speculation, the device limits' matrix kernel) */
  int use_servers = n_threads > 1 && tune_compile_servers_enabled();
  if (n_threads > max_threads) n_threads = max_threads;
  if (n_threads < 1) n_threads = 1;
  if (n_threads > 256) n_threads = 256;
  tune_compile_async *a = calloc(1, sizeof *a);
  if (!a) return tune_fail(err, TUNE_ENOMEM, "compile: out of memory");
  a->kind = kind;
  a->use_servers = use_servers;
  a->open = open;
  pthread_mutex_init(&a->mu, NULL);
  pthread_cond_init(&a->cv, NULL);
  *threads = n_threads;
  *out = a;
  return TUNE_OK;
}

static void pool_run_threads(tune_compile_async *a, int n_threads) {
  for (int i = 0; i < n_threads; ++i) {
    if (pthread_create(&a->th[i], NULL, async_main, a)) break;
    a->n_threads++;
  }
}

static int pool_start(tune_compile_job **jobs, int n, int n_threads, tune_compile_kind kind, tune_compile_async **out,
                      tune_err *err) {
  *out = NULL;
  if (n <= 0) return TUNE_OK;
  tune_compile_async *a;
  int threads;
  if (pool_new(n_threads, n, kind, 0, &threads, &a, err)) return err->code;
  if (pool_reserve(a, n, err)) {
    tune_compile_finish(a);
    return err->code;
  }
  memcpy(a->jobs, jobs, (size_t)n * sizeof *jobs);
  a->n = n;
  pool_run_threads(a, threads);
  if (!a->n_threads) async_main(a); /* no thread at all: compile here, before returning */
  *out = a;
  return TUNE_OK;
}

int tune_compile_start(tune_compile_job **jobs, int n, int n_threads, tune_compile_async **out, tune_err *err) {
  return pool_start(jobs, n, n_threads, TUNE_COMPILE_CUBIN, out, err);
}

int tune_compile_open(int n_threads, tune_compile_async **out, tune_err *err) {
  *out = NULL;
  tune_compile_async *a;
  int threads;
  if (pool_new(n_threads, 256, TUNE_COMPILE_CUBIN, 1, &threads, &a, err)) return err->code;
  pool_run_threads(a, threads);
  *out = a;
  return TUNE_OK;
}

int tune_compile_add(tune_compile_async *a, tune_compile_job **jobs, int n, int *first, tune_err *err) {
  pthread_mutex_lock(&a->mu);
  *first = a->n;
  int rc = a->open ? pool_reserve(a, n, err) : tune_fail(err, TUNE_EINVAL, "compile: jobs added to a closed pool");
  if (!rc) {
    memcpy(a->jobs + a->n, jobs, (size_t)n * sizeof *jobs);
    a->n += n;
    pthread_cond_broadcast(&a->cv);
  }
  pthread_mutex_unlock(&a->mu);
  if (!rc && !a->n_threads) { /* no thread at all: compile here, before returning (nothing else takes jobs) */
    tune_compile_job *job;
    for (int i; a->next < a->n && (i = take_job(a, &job)) >= 0;) run_job(a, NULL, i, job);
  }
  return rc;
}

int tune_compile_wait(tune_compile_async *a, int i, double *waited, tune_err *err) {
  double t0 = now_ms();
  pthread_mutex_lock(&a->mu);
  while (!a->done[i]) pthread_cond_wait(&a->cv, &a->mu);
  const tune_compile_job *job = a->jobs[i];
  pthread_mutex_unlock(&a->mu);
  if (waited) *waited += (now_ms() - t0) / 1e3;
  if (job->err.code) return tune_fail(err, job->err.code, "%s", job->err.msg);
  return TUNE_OK;
}

int tune_compile_all_done(tune_compile_async *a) {
  if (!a) return 1;
  int all = 1;
  pthread_mutex_lock(&a->mu);
  for (int i = 0; i < a->n && all; ++i) all = a->done[i];
  pthread_mutex_unlock(&a->mu);
  return all;
}

int tune_compile_done(tune_compile_async *a, int i) {
  pthread_mutex_lock(&a->mu);
  int done = a->done[i];
  pthread_mutex_unlock(&a->mu);
  return done;
}

void tune_compile_finish(tune_compile_async *a) {
  if (!a) return;
  pthread_mutex_lock(&a->mu);
  a->open = 0; /* the threads compile what is left, then end */
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
  for (int i = 0; i < a->n_threads; ++i) pthread_join(a->th[i], NULL);
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cv);
  free(a->jobs);
  free(a->done);
  free(a);
}

int tune_compile_batch_kind(tune_compile_job *jobs, int n, int n_threads, tune_compile_kind kind, tune_err *err) {
  if (n <= 0) return TUNE_OK;
  tune_compile_job **ptrs = malloc((size_t)n * sizeof *ptrs);
  if (!ptrs) return tune_fail(err, TUNE_ENOMEM, "compile: out of memory");
  for (int i = 0; i < n; ++i) ptrs[i] = &jobs[i];
  tune_compile_async *a = NULL;
  int rc = pool_start(ptrs, n, n_threads, kind, &a, err);
  tune_compile_finish(a);
  free(ptrs);
  if (rc) return rc;
  for (int i = 0; i < n; ++i)
    if (jobs[i].err.code) return tune_fail(err, jobs[i].err.code, "%s", jobs[i].err.msg);
  return TUNE_OK;
}

int tune_compile_batch(tune_compile_job *jobs, int n, int n_threads, tune_err *err) {
  return tune_compile_batch_kind(jobs, n, n_threads, TUNE_COMPILE_CUBIN, err);
}

void tune_lowered_names(const db_binary *bin, char lowered[][512]) {
  char names[sizeof bin->lowered_name];
  snprintf(names, sizeof names, "%s", bin->lowered_name);
  int k = 0;
  for (char *save = NULL, *t = strtok_r(names, " ", &save); t && k < TUNE_MAX_LAUNCHES; t = strtok_r(NULL, " ", &save))
    snprintf(lowered[k++], 512, "%s", t);
}
