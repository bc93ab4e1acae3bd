/* file_util.h: whole-file reads for the tuner (recipes, templates). */
#ifndef TUNE_FILE_UTIL_H
#define TUNE_FILE_UTIL_H

#include <stddef.h>

/* The file's bytes plus a terminating NUL, malloc'd (the caller frees), or
 * NULL when it cannot be read. *n_out, when given, receives the size without
 * the NUL. */
char *tune_read_file(const char *path, size_t *n_out);

#endif
