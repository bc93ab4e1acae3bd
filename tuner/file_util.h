/* file_util.h: whole-file reads for the tuner (recipes, templates), and files written whole or
 * not at all (exports, reports). */
#ifndef TUNE_FILE_UTIL_H
#define TUNE_FILE_UTIL_H

#include <stddef.h>
#include <stdio.h>

/* The file's bytes plus a terminating NUL, malloc'd (the caller frees), or
 * NULL when it cannot be read. *n_out, when given, receives the size without
 * the NUL. */
char *tune_read_file(const char *path, size_t *n_out);

/* A file replaced atomically: written into a temporary of this process's own beside it
 * (PATH.tmp.XXXXXX, mkstemp), renamed over PATH by tune_replace_commit. Readers see the old file
 * or the whole new one; a failure removes only that temporary, never PATH or another writer's. */
typedef struct tune_replace {
  FILE *f;            /* write here */
  const char *path;   /* borrowed */
  char tmp[4200];
} tune_replace;

/* 0, or -1 with errno set (nothing left behind). */
int tune_replace_open(tune_replace *r, const char *path);
/* Close and rename into place: 0, or -1 with errno set (the temporary removed). */
int tune_replace_commit(tune_replace *r);
/* Close and remove the temporary. */
void tune_replace_abort(tune_replace *r);

#endif
