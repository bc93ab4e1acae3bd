/* compile.h: the NVRTC compile pool.
 *
 * Owns: turning (template, defines, kernel names, arch) into a cubin with its
 * resource usage (registers, shared memory, stack, spills parsed from the
 * ptxas report, so no GPU is needed), and the compile key: a content hash of
 * the template and every local header it includes, the options, the arch,
 * the kernel names and the NVRTC version. A compile error is a result (ok=0,
 * log kept), never a failure of the pool. Threads: one job per worker thread;
 * jobs share nothing. NVRTC serialises compiles across the threads of one
 * process, so a pool of more than one thread hands each job to a compile server
 * (compile_server.h), one child process per thread, when the program enabled
 * them; otherwise, or with TUNE_COMPILE_IN_PROCESS=1, it compiles in this
 * process. Both give the same binary. The cache lives in the database and is
 * consulted by the caller on the main thread. */
#ifndef TUNE_COMPILE_H
#define TUNE_COMPILE_H

#include "db.h"
#include "recipe.h"
#include "tune_err.h"

typedef struct tune_compile_job {
  /* in */
  const char *source_path;          /* the template (absolute), or a name when source_text is set */
  const char *source_text;          /* built-in source (tune's own kernels), NULL: read source_path */
  int text_of_template;             /* 1: source_text is the template at source_path with a region
                                       replaced (a code proposal): the key also covers the
                                       template's local includes */
  const char *include_root;         /* templates/ folder */
  const char *arch;                 /* "sm_90a" */
  int n_defines;
  const char (*defines)[160];       /* "-DNAME=VALUE" */
  int n_names;
  const char *names[TUNE_MAX_LAUNCHES]; /* kernel names or name expressions */
  int is_expr[TUNE_MAX_LAUNCHES];
  /* out */
  db_binary bin;                    /* key, options, cubin, log, resources */
  char lowered[TUNE_MAX_LAUNCHES][512]; /* symbol of each kernel in the cubin */
  tune_err err;                     /* failure of the pool itself (not a compile error) */
} tune_compile_job;

/* What a job produces: a cubin with its ptxas report (tune_compile_batch), or PTX for a
 * virtual architecture (compile_ptx.h). */
typedef enum tune_compile_kind { TUNE_COMPILE_CUBIN, TUNE_COMPILE_PTX } tune_compile_kind;

/* The kernel symbols of a binary (bin->lowered_name, space-separated) into lowered[] (at most
 * TUNE_MAX_LAUNCHES): what a cached binary gives back for the launch steps. */
void tune_lowered_names(const db_binary *bin, char lowered[][512]);

/* Fill job->bin.key (and options) without compiling. */
int tune_compile_key(tune_compile_job *job, tune_err *err);
/* The compile cache's binary for job (its key computed) into job->bin, with its lowered names;
 * *hit = 0 (and job untouched) when db holds none. */
int tune_compile_from_cache(db_conn *db, tune_compile_job *job, int *hit, tune_err *err);
/* Compile jobs[0..n) on n_threads threads. Returns TUNE_OK unless the pool
 * itself failed; each job's bin.ok says whether NVRTC accepted it. */
int tune_compile_batch(tune_compile_job *jobs, int n, int n_threads, tune_err *err);
/* The same pool in the background, so that the caller can measure the jobs
 * compiled first while later ones compile (problem_run.c): tune_compile_start
 * starts n_threads threads on jobs[0..n) (taken in order) and returns;
 * tune_compile_wait blocks until jobs[i] is done and returns its pool error
 * (TUNE_OK for a compiled job or a compile error, which is the variant's
 * result), adding the seconds it blocked to *waited; tune_compile_finish
 * joins the threads and frees the handle (NULL is a no-op). The jobs must
 * stay in place until finish; the caller touches a job only after waiting
 * for it. */
typedef struct tune_compile_async tune_compile_async;
int tune_compile_start(tune_compile_job **jobs, int n, int n_threads, tune_compile_async **out, tune_err *err);
/* A pool that stays open for jobs added later (a problem's batches and the compiles ahead of
 * them, problem_run.c): tune_compile_open starts n_threads threads that wait for jobs;
 * tune_compile_add queues jobs[0..n) behind those added before (taken in the order added) and
 * sets *first to the pool's index of jobs[0], which tune_compile_wait and tune_compile_done
 * take; tune_compile_finish compiles what is queued, then joins. */
int tune_compile_open(int n_threads, tune_compile_async **out, tune_err *err);
int tune_compile_add(tune_compile_async *a, tune_compile_job **jobs, int n, int *first, tune_err *err);
int tune_compile_wait(tune_compile_async *a, int i, double *waited, tune_err *err);
void tune_compile_finish(tune_compile_async *a);
/* 1 when every job of the pool is done (it does not block); 1 for NULL. */
int tune_compile_all_done(tune_compile_async *a);
/* 1 when jobs[i] of the pool is done, so that tune_compile_wait would not block. */
int tune_compile_done(tune_compile_async *a, int i);
/* tune_compile_batch for either kind. */
int tune_compile_batch_kind(tune_compile_job *jobs, int n, int n_threads, tune_compile_kind kind, tune_err *err);
/* Compile one job in this process (what a pool thread or a compile server does with it); the
 * outcome is in the job (bin, lowered, err). A cubin job computes its key first unless
 * bin.key is set. */
void tune_compile_one(tune_compile_job *job);
/* Parse a ptxas -v report into bin's resource fields (max over kernels). */
void tune_compile_parse_resources(const char *log, db_binary *bin);
/* 1 when a ptxas report says it serialized a kernel's wgmma ("Potential Performance Loss:
 * wgmma.mma_async instructions are serialized ..."): each then waits for the one before, which
 * costs a tensor-core kernel much of its throughput and shows in no resource count. */
int tune_compile_wgmma_serialized(const char *log);
/* "13.0" */
const char *tune_nvrtc_version(void);
/* CUDA include folder for <cuda_bf16.h> and friends, NULL when not found. */
const char *tune_cuda_include_dir(void);

#endif
