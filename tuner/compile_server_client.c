/* compile_server_client.c: the pool side: server slots, starting a server, one job's round trip. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compile_ptx.h"
#include "compile_server.h"
#include "compile_server_int.h"
#include "protocol.h"

extern char **environ;

enum { MAX_SERVERS = 256, READY_TIMEOUT_MS = 60000 };

struct tune_compile_server {
  pid_t pid; /* 0: not running */
  int to, from;
  int taken; /* under slots_mu */
};

static tune_compile_server slots[MAX_SERVERS];
static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static char server_exe[4096];
static atomic_int servers_on;

void tune_compile_servers_enable(const char *exe) {
  const char *in_process = getenv("TUNE_COMPILE_IN_PROCESS");
  if (in_process && *in_process && strcmp(in_process, "0")) return;
  snprintf(server_exe, sizeof server_exe, "%s", exe);
  atomic_store(&servers_on, 1);
}

int tune_compile_servers_enabled(void) { return atomic_load(&servers_on); }

tune_compile_server *tune_compile_server_acquire(void) {
  tune_compile_server *s = NULL;
  pthread_mutex_lock(&slots_mu);
  for (int i = 0; i < MAX_SERVERS && !s; ++i)
    if (!slots[i].taken) s = &slots[i];
  if (s) s->taken = 1;
  pthread_mutex_unlock(&slots_mu);
  return s;
}

void tune_compile_server_release(tune_compile_server *s) {
  if (!s) return;
  pthread_mutex_lock(&slots_mu);
  s->taken = 0;
  pthread_mutex_unlock(&slots_mu);
}

/* How the server's process ended, into why: it closed its pipe, so it is gone or going. */
static void server_reap(tune_compile_server *s, char *why, size_t why_n) {
  close(s->to);
  close(s->from);
  int st = 0;
  pid_t r = 0;
  for (int i = 0; i < 200 && (r = waitpid(s->pid, &st, WNOHANG)) == 0; ++i) nanosleep(&(struct timespec){0, 10000000}, NULL);
  if (r == 0) { /* alive with its pipe closed: it is of no use */
    kill(s->pid, SIGKILL);
    r = waitpid(s->pid, &st, 0);
  }
  if (r != s->pid) snprintf(why, why_n, "ended (its status is unknown)");
  else if (WIFSIGNALED(st)) snprintf(why, why_n, "was killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  else snprintf(why, why_n, "exited with status %d", WEXITSTATUS(st));
  s->pid = 0;
}

static int spawn(tune_compile_server *s, tune_err *err) {
  int a[2], b[2];
  /* close-on-exec from the start: a process that another thread starts meanwhile (a server, the
     GPU worker) must not inherit these ends, or this server never sees EOF */
  if (pipe2(a, O_CLOEXEC)) return tune_fail(err, TUNE_EIO, "pipe: %s", strerror(errno));
  if (pipe2(b, O_CLOEXEC)) { close(a[0]); close(a[1]); return tune_fail(err, TUNE_EIO, "pipe: %s", strerror(errno)); }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  sigset_t none;
  sigemptyset(&none);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, a[0], 0);
  posix_spawn_file_actions_adddup2(&fa, b[1], 1);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
  /* nor may it hold ends that a racing thread has not marked close-on-exec yet */
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &none); /* a pool thread's blocked signals are not the server's */
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  signal(SIGPIPE, SIG_IGN); /* a dead server is seen as a write error (the server's too) */
  char *argv[] = {server_exe, "compile-server", NULL};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, server_exe, &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(a[0]);
  close(b[1]);
  if (rc) {
    close(a[1]);
    close(b[0]);
    return tune_fail(err, TUNE_EIO, "cannot start %s compile-server: %s", server_exe, strerror(rc));
  }
  s->pid = pid;
  s->to = a[1];
  s->from = b[0];
  json_t *ready = NULL;
  tune_err e;
  tune_err_clear(&e);
  if (tune_msg_read(s->from, &ready, NULL, NULL, READY_TIMEOUT_MS, &e)) {
    char why[128];
    server_reap(s, why, sizeof why);
    return tune_fail(err, TUNE_EIO, "%s compile-server did not start (%s): it %s", server_exe, e.msg, why);
  }
  const char *v = json_string_value(json_object_get(ready, "nvrtc")) ?: "?";
  if (strcmp(v, tune_nvrtc_version())) { /* the compile key names this process's NVRTC */
    tune_fail(err, TUNE_EIO, "%s compile-server runs NVRTC %s, this process %s", server_exe, v, tune_nvrtc_version());
    char why[128];
    server_reap(s, why, sizeof why);
  }
  json_decref(ready);
  return err->code;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void compile_in_process(tune_compile_job *job, tune_compile_kind kind) {
  if (kind == TUNE_COMPILE_PTX) tune_compile_ptx_one(job);
  else tune_compile_one(job);
}

/* "copy.cuh -DVEC=4 -DBLOCK=256" into out: which job a pool error is about */
static void job_name(const tune_compile_job *job, char *out, size_t n) {
  const char *base = job->source_path ? strrchr(job->source_path, '/') : NULL;
  size_t len = (size_t)snprintf(out, n, "%s", base ? base + 1 : job->source_path ? job->source_path : "?");
  for (int i = 0; i < job->n_defines && len < n; ++i) len += (size_t)snprintf(out + len, n - len, " %s", job->defines[i]);
}

/* Send the job and read its reply; on failure the server is gone (reaped) and job->err says so. */
static void round_trip(tune_compile_server *s, json_t *req, const void *text, size_t text_n, tune_compile_kind kind,
                       tune_compile_job *job) {
  tune_err e;
  tune_err_clear(&e);
  json_t *rep = NULL;
  void *blob = NULL;
  size_t blob_n = 0;
  if (!tune_msg_write(s->to, req, text, text_n, &e) && !tune_msg_read(s->from, &rep, &blob, &blob_n, -1, &e) &&
      !tune_compile_reply_read(rep, blob, blob_n, kind, job, &e)) {
    json_decref(rep);
    free(blob);
    return;
  }
  json_decref(rep);
  free(blob);
  char why[128], name[512];
  pid_t pid = s->pid;
  server_reap(s, why, sizeof why);
  job_name(job, name, sizeof name);
  tune_fail(&job->err, TUNE_ENVRTC,
            "compile server (pid %d) %s while compiling %s (%s); TUNE_COMPILE_IN_PROCESS=1 compiles in the tune process instead",
            (int)pid, why, name, e.msg);
}

void tune_compile_server_run(tune_compile_server *s, tune_compile_job *job, tune_compile_kind kind) {
  double t0 = now_ms();
  if (kind == TUNE_COMPILE_CUBIN && !job->bin.key[0] && tune_compile_key(job, &job->err)) return;
  const void *text = NULL;
  size_t text_n = 0;
  json_t *req = s && atomic_load(&servers_on) ? tune_compile_request(job, kind, &text, &text_n) : NULL;
  tune_err e;
  tune_err_clear(&e);
  if (req && !s->pid) { /* the server's start is not the job's compile time */
    double t_spawn = now_ms();
    int failed = spawn(s, &e);
    t0 += now_ms() - t_spawn;
    if (failed) {
      if (atomic_exchange(&servers_on, 0)) fprintf(stderr, "tune: %s; compiling in this process\n", e.msg);
      json_decref(req);
      req = NULL;
    }
  }
  if (!req) {
    compile_in_process(job, kind);
    return;
  }
  round_trip(s, req, text, text_n, kind, job);
  json_decref(req);
  if (kind == TUNE_COMPILE_CUBIN) job->bin.compile_ms = now_ms() - t0;
}

void tune_compile_servers_stop(void) {
  for (int i = 0; i < MAX_SERVERS; ++i) /* EOF to all first: they exit side by side */
    if (slots[i].pid) { close(slots[i].to); slots[i].to = -1; }
  for (int i = 0; i < MAX_SERVERS; ++i) {
    if (!slots[i].pid) continue;
    char why[128];
    server_reap(&slots[i], why, sizeof why);
  }
}
