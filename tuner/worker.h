/* worker.h: the GPU worker process (`tune worker`).
 *
 * Owns the CUDA context of one GPU. It reads requests from a pipe (see
 * protocol.h): hello (device facts), problem (allocate buffers once, fill
 * seeded random inputs, run the reference), measure (load a cubin, poison
 * outputs, run, verify against the reference, check inputs are untouched,
 * then time). A variant that breaks the context (illegal address...) makes
 * the worker reply `crash` and exit: the tuner starts a fresh one. The worker
 * never decides anything about the search. */
#ifndef TUNE_WORKER_H
#define TUNE_WORKER_H

/* Serve requests on in_fd/out_fd until EOF. Returns the process exit code. */
int tune_worker_main(int device_ordinal, int in_fd, int out_fd);

#endif
