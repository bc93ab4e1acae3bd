/* compile_server_test.c: the compile pool's servers (tuner/compile_server*.c), NVRTC, no GPU.
 * $TUNE is the tune binary whose `compile-server` verb the pool starts.
 * Checks: a request and a reply survive their frames field by field; a batch compiled by
 * servers (cubin and PTX, a compile error, a name expression) equals the in-process batch byte
 * for byte, key and resources included; a server killed mid-job (the test hook) leaves that job
 * a pool error naming the job and the signal, the other jobs compiled, and the next batch gets
 * a new server; a server that cannot start or does not answer leaves the jobs compiled in process.
 * Exit status: 0 when every CHECK passed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "compile_jobs.h"
#include "compile_ptx.h"
#include "compile_server.h"
#include "compile_server_int.h"

/* kernel K multiplies by K; BAD makes it not compile; `twice<N>` is reached by a name expression */
static const char *const kSource =
    "extern \"C\" __global__ void scale(float *x) {\n"
    "#ifdef BAD\n"
    "  this is not C++;\n"
    "#endif\n"
    "  x[threadIdx.x] *= K;\n"
    "}\n"
    "template <int N> __global__ void twice(float *x) { x[threadIdx.x] *= 2 * N + K; }\n";

enum { N_JOBS = 5 };

/* job i: K = i + 2; job `bad` does not compile; both kernels, the second by a name expression */
static void setup(tune_compile_job *jobs, char (*defs)[2][160], int bad) {
  static const char *const names[] = {"scale", "twice<3>"};
  static const int is_expr[] = {0, 1};
  compile_jobs_setup(jobs, defs, N_JOBS, bad, kSource, 2, names, is_expr);
}

static void release(tune_compile_job *jobs) { compile_jobs_release(jobs, N_JOBS); }

static int same_bytes(const void *a, size_t an, const void *b, size_t bn) {
  return an == bn && (!an || (a && b && !memcmp(a, b, an)));
}


/* ptxas logs its own run time ("Compile time = 1.1 ms"): the rest of the log must match */
static int same_log(const char *a, const char *b) {
  if (!a || !b) return !a && !b;
  for (;;) {
    const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
    size_t na = ea ? (size_t)(ea - a) : strlen(a), nb = eb ? (size_t)(eb - b) : strlen(b);
    int timed = strstr(a, "Compile time = ") && strstr(a, "Compile time = ") < a + na;
    if (!timed && (na != nb || memcmp(a, b, na))) return 0;
    if (!ea || !eb) return !ea && !eb;
    a = ea + 1;
    b = eb + 1;
  }
}

/* everything a job's compile leaves, but the time it took */
static int same_outcome(const tune_compile_job *x, const tune_compile_job *y) {
  const db_binary *a = &x->bin, *b = &y->bin;
  int same = !strcmp(a->key, b->key) && !strcmp(a->options, b->options) && !strcmp(a->arch, b->arch) &&
             !strcmp(a->nvrtc_version, b->nvrtc_version) && a->ok == b->ok &&
             same_bytes(a->cubin, a->cubin_size, b->cubin, b->cubin_size) &&
             same_bytes(a->ptx, a->ptx_size, b->ptx, b->ptx_size) && same_log(a->log, b->log) &&
             !strcmp(a->lowered_name, b->lowered_name) && a->registers == b->registers &&
             a->shared_bytes == b->shared_bytes && a->local_bytes == b->local_bytes &&
             a->spill_stores == b->spill_stores && a->spill_loads == b->spill_loads && x->err.code == y->err.code;
  for (int i = 0; i < x->n_names; ++i) same = same && !strcmp(x->lowered[i], y->lowered[i]);
  return same;
}

static void messages_round_trip(void) {
  tune_compile_job jobs[N_JOBS];
  char defs[N_JOBS][2][160];
  setup(jobs, defs, 1);
  const void *text = NULL;
  size_t text_n = 0;
  json_t *m = tune_compile_request(&jobs[1], TUNE_COMPILE_PTX, &text, &text_n);
  CHECK(m && text == kSource && text_n == strlen(kSource));
  void *blob = malloc(text_n);
  if (blob) memcpy(blob, text, text_n);
  tune_compile_request_buf req;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_compile_request_read(m, blob, text_n, &req, &err) == TUNE_OK);
  const tune_compile_job *j = &req.job;
  CHECK(req.kind == TUNE_COMPILE_PTX && !strcmp(j->source_text, kSource) && !strcmp(j->source_path, "scale.cu"));
  CHECK(!strcmp(j->include_root, ".") && !strcmp(j->arch, "sm_90a") && j->n_defines == 2);
  CHECK(!strcmp(j->defines[0], "-DK=3") && !strcmp(j->defines[1], "-DBAD"));
  CHECK(j->n_names == 2 && !strcmp(j->names[1], "twice<3>") && j->is_expr[1] == 1 && j->is_expr[0] == 0);
  tune_compile_request_free(&req);
  /* a string JSON cannot carry: no request (the pool compiles that job in process) */
  snprintf(defs[0][0], sizeof defs[0][0], "-DK=\xff");
  CHECK(tune_compile_request(&jobs[0], TUNE_COMPILE_CUBIN, &text, &text_n) == NULL);
  /* a reply: cubin, PTX and log back in place */
  tune_compile_job out = jobs[2], back = jobs[2];
  unsigned char cubin[3] = {1, 0, 2};
  out.bin.ok = 1;
  out.bin.cubin = cubin;
  out.bin.cubin_size = sizeof cubin;
  out.bin.ptx = "ptx";
  out.bin.ptx_size = 3;
  out.bin.log = "ptxas info: Used 9 registers";
  out.bin.registers = 9;
  out.bin.spill_loads = -1;
  snprintf(out.bin.lowered_name, sizeof out.bin.lowered_name, "scale _Z5twiceILi3EEvPf");
  snprintf(out.lowered[1], sizeof out.lowered[1], "_Z5twiceILi3EEvPf");
  snprintf(out.bin.options, sizeof out.bin.options, "-arch=compute_90a");
  size_t n = 0;
  void *rblob = NULL;
  json_t *rep = tune_compile_reply(&out, &rblob, &n);
  CHECK(rep && n == sizeof cubin + 3 + strlen(out.bin.log));
  CHECK(tune_compile_reply_read(rep, rblob, n, TUNE_COMPILE_PTX, &back, &err) == TUNE_OK);
  CHECK(back.bin.ok == 1 && same_bytes(back.bin.cubin, back.bin.cubin_size, cubin, sizeof cubin));
  CHECK(back.bin.ptx && !strcmp(back.bin.ptx, "ptx") && back.bin.ptx_size == 3 && !strcmp(back.bin.log, out.bin.log));
  CHECK(back.bin.registers == 9 && back.bin.spill_loads == -1 && !strcmp(back.lowered[1], "_Z5twiceILi3EEvPf"));
  CHECK(!strcmp(back.bin.options, "-arch=compute_90a") && back.err.code == TUNE_OK);
  /* a reply shorter than it says is refused, not read past its end */
  tune_compile_job cut = jobs[2];
  CHECK(tune_compile_reply_read(rep, rblob, n - 1, TUNE_COMPILE_CUBIN, &cut, &err) != TUNE_OK);
  db_binary_release(&back.bin);
  json_decref(rep);
  free(rblob);
}

/* The batch through servers (n_threads > 1) against the batch in process (one thread). */
static void same_as_in_process(tune_compile_kind kind) {
  tune_compile_job a[N_JOBS], b[N_JOBS];
  char da[N_JOBS][2][160], db[N_JOBS][2][160];
  setup(a, da, 3);
  setup(b, db, 3);
  const char *arch = kind == TUNE_COMPILE_PTX ? "compute_90a" : "sm_90a";
  for (int i = 0; i < N_JOBS; ++i) a[i].arch = b[i].arch = arch;
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_compile_batch_kind(a, N_JOBS, 2, kind, &err) == TUNE_OK);
  CHECK(tune_compile_batch_kind(b, N_JOBS, 1, kind, &err) == TUNE_OK);
  for (int i = 0; i < N_JOBS; ++i) {
    CHECK(a[i].bin.ok == (i != 3));
    CHECK(same_outcome(&a[i], &b[i]));
  }
  CHECK(kind == TUNE_COMPILE_PTX ? a[0].bin.ptx != NULL : a[0].bin.registers > 0 && a[0].bin.key[0]);
  CHECK(!strcmp(a[0].lowered[1], "_Z5twiceILi3EEvPf"));
  release(a);
  release(b);
}

/* The server compiling K=4 (job 2) kills itself. */
static void killed_mid_job(void) {
  setenv("TUNE_TEST_COMPILE_SERVER_KILL_ON", "-DK=4", 1);
  tune_compile_servers_stop(); /* the next servers start with the hook in their environment */
  tune_compile_job jobs[N_JOBS];
  char defs[N_JOBS][2][160];
  setup(jobs, defs, -1);
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_compile_batch(jobs, N_JOBS, 2, &err) == TUNE_ENVRTC);
  CHECK(strstr(err.msg, "compile server") && strstr(err.msg, "killed by signal 9") && strstr(err.msg, "scale.cu -DK=4"));
  for (int i = 0; i < N_JOBS; ++i) {
    CHECK(jobs[i].err.code == (i == 2 ? TUNE_ENVRTC : TUNE_OK));
    CHECK(i == 2 || jobs[i].bin.ok == 1);
  }
  CHECK(tune_compile_servers_enabled()); /* a server that died is no reason to stop using them */
  release(jobs);
  unsetenv("TUNE_TEST_COMPILE_SERVER_KILL_ON");
  tune_compile_servers_stop();
  /* the next batch starts new servers and compiles every job */
  setup(jobs, defs, -1);
  tune_err_clear(&err);
  CHECK(tune_compile_batch(jobs, N_JOBS, 2, &err) == TUNE_OK);
  for (int i = 0; i < N_JOBS; ++i) CHECK(jobs[i].bin.ok == 1 && jobs[i].err.code == TUNE_OK);
  release(jobs);
}

/* A server that cannot start (no such program; a program that does not answer "ready"): the
 * jobs compile in process. */
static void unusable_server(const char *exe) {
  tune_compile_servers_stop();
  tune_compile_servers_enable(exe);
  tune_compile_job jobs[N_JOBS];
  char defs[N_JOBS][2][160];
  setup(jobs, defs, -1);
  tune_err err;
  tune_err_clear(&err);
  CHECK(tune_compile_batch(jobs, N_JOBS, 2, &err) == TUNE_OK);
  for (int i = 0; i < N_JOBS; ++i) CHECK(jobs[i].bin.ok == 1);
  CHECK(!tune_compile_servers_enabled()); /* off for the rest of the process */
  release(jobs);
}

int main(void) {
  const char *tune = getenv("TUNE");
  if (!tune) { fprintf(stderr, "compile_server_test: set TUNE to the tune binary\n"); return 1; }
  unsetenv("TUNE_COMPILE_IN_PROCESS");
  messages_round_trip();
  tune_compile_servers_enable(tune);
  CHECK(tune_compile_servers_enabled());
  same_as_in_process(TUNE_COMPILE_CUBIN);
  same_as_in_process(TUNE_COMPILE_PTX);
  killed_mid_job();
  unusable_server("/nonexistent/tune");
  unusable_server("/bin/true");
  tune_compile_servers_stop();
  printf("compile_server_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
