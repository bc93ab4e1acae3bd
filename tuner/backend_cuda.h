/* backend_cuda.h: a cuda backend's measure in two halves, for backend_pool.c, which keeps one
 * variant in flight on each of several GPUs and waits on their replies together. */
#ifndef TUNE_BACKEND_CUDA_H
#define TUNE_BACKEND_CUDA_H

#include "backend.h"

/* The problem (inputs, reference) to the worker, then its answer: set_problem in two halves,
 * so that several GPUs prepare a problem at once. */
int tune_cuda_send_problem(tune_backend *b, const tune_problem_setup *s, const db_binary *ref_bin,
                           const char *ref_lowered, uint64_t seed, tune_err *err);
int tune_cuda_recv_problem(tune_backend *b, const tune_recipe *r, const tune_problem *p, tune_err *err);
/* Send q to the worker (its data is serialised now; q may go). A worker already gone is seen
 * by the recv. */
int tune_cuda_send_measure(tune_backend *b, const tune_measure_req *q, tune_err *err);
/* The reply to the variant sent, within timeout_ms (0: only if it is there now). No reply in
 * time or a dead worker: out says timeout or crash and the worker is restarted; err only when
 * the restart failed. */
int tune_cuda_recv_measure(tune_backend *b, int timeout_ms, db_result *out, tune_err *err);
/* The descriptor the reply arrives on (poll it), and the watchdog of the variant sent [ms]. */
int tune_cuda_reply_fd(const tune_backend *b);
int tune_cuda_pending_timeout_ms(const tune_backend *b);
/* GPUs the worker's driver sees (CUDA_VISIBLE_DEVICES applies). */
int tune_cuda_device_count(const tune_backend *b);

#endif
