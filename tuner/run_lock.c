/* run_lock.c: lock files of running runs and the reaping of dead ones (run_lock.h). */
#include "run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static void lock_path(const char *db_path, int64_t run_id, char *out, size_t n) {
  snprintf(out, n, "%s.run-%lld.lock", db_path, (long long)run_id);
}

void tune_run_lock_take(const char *db_path, int64_t run_id, int *fd) {
  char path[4200];
  lock_path(db_path, run_id, path, sizeof path);
  *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (*fd >= 0 && flock(*fd, LOCK_EX | LOCK_NB) == 0) return;
  fprintf(stderr, "warning: %s: %s: a later tune cannot tell whether this run is alive\n", path, strerror(errno));
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

void tune_run_lock_release(const char *db_path, int64_t run_id, int fd) {
  if (fd < 0) return;
  char path[4200];
  lock_path(db_path, run_id, path, sizeof path);
  unlink(path); /* while held: no other process can take it for a live run in between */
  close(fd);
}

/* 1 when run r's process is gone: its lock file there and free (taken here, then removed), or
 * missing and the run silent for the grace period. A run that began or stored a result in the
 * last TAKE_S seconds is alive: its process may be between its row and its lock. */
#define TAKE_S 2.0
static int run_is_dead(const char *db_path, const db_running_run *r) {
  if (r->idle_s < TAKE_S) return 0;
  char path[4200];
  lock_path(db_path, r->id, path, sizeof path);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT && r->idle_s > TUNE_RUN_LOCK_GRACE_S;
  int dead = flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (dead) unlink(path);
  close(fd);
  return dead;
}

int tune_run_lock_reap(db_conn *db, const char *db_path, int *n_marked, tune_err *err) {
  db_running_run *runs = NULL;
  int n = 0;
  *n_marked = 0;
  if (db_runs_running(db, &runs, &n, err)) return err->code;
  int rc = TUNE_OK;
  for (int i = 0; i < n && !rc; ++i)
    if (run_is_dead(db_path, &runs[i])) {
      rc = db_run_mark_interrupted(db, runs[i].id, err);
      if (!rc) ++*n_marked;
    }
  free(runs);
  return rc;
}
