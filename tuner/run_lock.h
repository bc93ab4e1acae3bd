/* run_lock.h: which `running` runs of a database still have a live process.
 *
 * Owns: one lock file per run beside the database, "<db>.run-<id>.lock", held with flock(2) by
 * the process that runs it for the run's whole life; the kernel drops the lock when that process
 * dies however it dies (kill -9 included). A later tune that opens the database marks as
 * interrupted every `running` run silent for 2 s or more whose lock file is there but not held,
 * and every one whose lock file is missing (a run of a tune without locks, or one killed between
 * its row and its lock) once it has shown no sign of life for TUNE_RUN_LOCK_GRACE_S. Must not: run SQL (db.h
 * does: db_runs_running, db_run_mark_interrupted). Locks are advisory and local: a run on another
 * host over a network file system is seen as dead only if that file system carries flock. */
#ifndef TUNE_RUN_LOCK_H
#define TUNE_RUN_LOCK_H

#include <stdint.h>

#include "db.h"
#include "tune_err.h"

/* [s] how long a `running` run without a lock file must have been silent to count as dead. */
#define TUNE_RUN_LOCK_GRACE_S 60.0

/* Take the lock of run run_id of the database at db_path: *fd is the held lock (-1 when it could
 * not be made: the run goes on unguarded, as runs of older versions did, and says so). */
void tune_run_lock_take(const char *db_path, int64_t run_id, int *fd);

/* Release a lock taken by tune_run_lock_take (fd -1: nothing) and remove its file. */
void tune_run_lock_release(const char *db_path, int64_t run_id, int fd);

/* Mark the database's `running` runs whose process is gone as interrupted; *n_marked: how many. */
int tune_run_lock_reap(db_conn *db, const char *db_path, int *n_marked, tune_err *err);

#endif
