/* compile_server.h: compile servers, child processes that run NVRTC for the compile pool.
 *
 * Owns: the processes that let a pool of several threads compile in parallel (NVRTC serialises
 * compiles across the threads of one process). Each is the program itself started with the
 * hidden verb `compile-server`; it speaks the frames of protocol.h on its stdin and stdout: a
 * "ready" frame with its NVRTC version when it starts, then one reply per request, until EOF.
 * A request carries what a job's compile reads (source path or text, include root, arch,
 * defines, kernel names); the reply carries what tune_compile_one or tune_compile_ptx_one
 * leave in the job, so a binary compiled by a server is the one the process would have
 * compiled. The compile key is computed by the pool before sending, never by the server.
 * Threads: a server serves one pool thread at a time (acquire/release); servers outlive pools
 * and are stopped once, when the program ends. */
#ifndef TUNE_COMPILE_SERVER_H
#define TUNE_COMPILE_SERVER_H

#include "compile.h"

/* Lets the pools of this process use servers: exe is a program whose verb `compile-server`
 * runs tune_compile_server_main ("/proc/self/exe" for tune itself). Without it (tests and
 * tools linking the library) or with TUNE_COMPILE_IN_PROCESS=1 in the environment, pools
 * compile in process. Call before any pool starts. */
void tune_compile_servers_enable(const char *exe);
int tune_compile_servers_enabled(void);
/* Close every server's pipes and reap it (a server exits on EOF). No pool may be running. */
void tune_compile_servers_stop(void);

typedef struct tune_compile_server tune_compile_server;
/* A server for one pool thread; its process starts at the first job. NULL when every slot is
 * taken: the thread compiles in process. */
tune_compile_server *tune_compile_server_acquire(void);
/* Give it back for a later thread (NULL is a no-op); the process keeps running. */
void tune_compile_server_release(tune_compile_server *s);
/* Compile job (kind) in the server, leaving the job as the in-process compile would, with
 * bin.compile_ms the wall time of the whole job for a cubin. A server that cannot start, and a
 * job the protocol cannot carry, are compiled in process (a server that cannot start also turns
 * servers off for the rest of the process). A server that dies mid-job leaves the job with a
 * pool error (job->err) naming the job and how the server ended; the next job starts a new one. */
void tune_compile_server_run(tune_compile_server *s, tune_compile_job *job, tune_compile_kind kind);

/* What a server adds to its niceness: compiles yield the CPU to the worker measuring on the
 * GPU and to the run's main thread (both at the caller's). */
#define TUNE_COMPILE_SERVER_NICE 10

/* The verb's loop: a "ready" frame, then requests from in_fd answered on out_fd until EOF.
 * Returns 0 at EOF, 1 when the requests stop making sense. Test hook: with
 * TUNE_TEST_COMPILE_SERVER_KILL_ON=DEFINE in its environment, a server kills itself (SIGKILL)
 * on a job that has that define ("-DNAME=VALUE"). */
int tune_compile_server_main(int in_fd, int out_fd);

#endif
