/* compile_async_test.c: the background compile pool (tuner/compile.c: tune_compile_start / wait /
 * finish), which tune run uses to measure a batch's first variants while its later ones compile.
 * NVRTC needs no GPU. Checks: every job is compiled once and in place, waiting in any order; a
 * compile error is the job's result (wait returns TUNE_OK, bin.ok 0, the log kept), not the pool's
 * failure; a job waited for is done (tune_compile_done); more threads than jobs; one thread;
 * tune_compile_batch (the same pool, joined) agrees. An open pool (tune_compile_open / add): jobs
 * added in two lots get consecutive indices and compile; jobs queued but never waited for are
 * compiled by tune_compile_finish before it returns.
 * Exit status: 0 when every CHECK passed. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "compile.h"
#include "compile_jobs.h"

/* kernel k multiplies by K; BAD makes it not compile */
static const char *const kSource =
    "extern \"C\" __global__ void scale(float *x) {\n"
    "#ifdef BAD\n"
    "  this is not C++;\n"
    "#endif\n"
    "  x[threadIdx.x] *= K;\n"
    "}\n";

enum { N_JOBS = 6 };

static void setup(tune_compile_job *jobs, char (*defs)[2][160], int n, int bad) {
  static const char *const names[] = {"scale"};
  compile_jobs_setup(jobs, defs, n, bad, kSource, 1, names, NULL);
}

static void release(tune_compile_job *jobs, int n) { compile_jobs_release(jobs, n); }

/* n_threads threads, waits in the order given; job `bad` does not compile */
static void run_async(int n_threads, const int *order, int bad) {
  tune_compile_job jobs[N_JOBS];
  char defs[N_JOBS][2][160];
  tune_compile_job *ptrs[N_JOBS];
  setup(jobs, defs, N_JOBS, bad);
  for (int i = 0; i < N_JOBS; ++i) ptrs[i] = &jobs[i];
  tune_err err;
  tune_err_clear(&err);
  tune_compile_async *a = NULL;
  CHECK(tune_compile_start(ptrs, N_JOBS, n_threads, &a, &err) == TUNE_OK);
  CHECK(a != NULL);
  double waited = 0;
  for (int k = 0; k < N_JOBS && a; ++k) {
    int i = order[k];
    CHECK(tune_compile_wait(a, i, &waited, &err) == TUNE_OK);
    CHECK(tune_compile_done(a, i)); /* what a caller asks before it would block */
    if (i == bad) {
      CHECK(jobs[i].bin.ok == 0);
      CHECK(jobs[i].bin.log && strstr(jobs[i].bin.log, "error"));
    } else {
      CHECK(jobs[i].bin.ok == 1);
      CHECK(jobs[i].bin.cubin && jobs[i].bin.cubin_size > 0);
      CHECK(!strcmp(jobs[i].lowered[0], "scale"));
    }
  }
  CHECK(waited >= 0);
  tune_compile_finish(a);
  /* distinct defines, distinct keys: each job compiled its own program */
  for (int i = 1; i < N_JOBS; ++i) CHECK(strcmp(jobs[i].bin.key, jobs[0].bin.key) != 0);
  release(jobs, N_JOBS);
}

/* An open pool on n_threads threads: two lots of jobs, the second added after the first is done
 * (its threads waited idle meanwhile), the last lot never waited for before finish. */
static void run_open(int n_threads) {
  tune_compile_job jobs[N_JOBS];
  char defs[N_JOBS][2][160];
  tune_compile_job *ptrs[N_JOBS];
  setup(jobs, defs, N_JOBS, 1);
  for (int i = 0; i < N_JOBS; ++i) ptrs[i] = &jobs[i];
  tune_err err;
  tune_err_clear(&err);
  tune_compile_async *a = NULL;
  int first = -1;
  CHECK(tune_compile_open(n_threads, &a, &err) == TUNE_OK && a != NULL);
  if (!a) return;
  CHECK(tune_compile_all_done(a)); /* nothing queued yet */
  CHECK(tune_compile_add(a, ptrs, 2, &first, &err) == TUNE_OK && first == 0);
  for (int i = 0; i < 2; ++i) CHECK(tune_compile_wait(a, i, NULL, &err) == TUNE_OK);
  CHECK(tune_compile_add(a, ptrs + 2, 2, &first, &err) == TUNE_OK && first == 2);
  CHECK(tune_compile_wait(a, 3, NULL, &err) == TUNE_OK && tune_compile_done(a, 3));
  CHECK(tune_compile_add(a, ptrs + 4, 2, &first, &err) == TUNE_OK && first == 4);
  tune_compile_finish(a);
  for (int i = 0; i < N_JOBS; ++i) CHECK(jobs[i].bin.ok == (i != 1) && jobs[i].bin.log != NULL);
  CHECK(jobs[5].bin.cubin && !strcmp(jobs[5].lowered[0], "scale"));
  release(jobs, N_JOBS);
}

int main(void) {
  const int forward[N_JOBS] = {0, 1, 2, 3, 4, 5}, backward[N_JOBS] = {5, 4, 3, 2, 1, 0};
  run_async(3, forward, 2);
  run_async(3, backward, -1);
  run_async(16, backward, 0); /* more threads than jobs */
  run_async(1, forward, 5);
  run_open(3);
  run_open(1);
  tune_compile_finish(NULL); /* a no-op */
  {
    tune_compile_async *a = (tune_compile_async *)1;
    tune_err err;
    tune_err_clear(&err);
    CHECK(tune_compile_start(NULL, 0, 4, &a, &err) == TUNE_OK && a == NULL); /* no jobs: no pool */
  }
  /* tune_compile_batch: the same results, joined before it returns */
  {
    tune_compile_job jobs[N_JOBS];
    char defs[N_JOBS][2][160];
    setup(jobs, defs, N_JOBS, 4);
    tune_err err;
    tune_err_clear(&err);
    CHECK(tune_compile_batch(jobs, N_JOBS, 2, &err) == TUNE_OK);
    for (int i = 0; i < N_JOBS; ++i) CHECK(jobs[i].bin.ok == (i != 4));
    release(jobs, N_JOBS);
  }
  printf("compile_async_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
