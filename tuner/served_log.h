/* served_log.h: the log of problems a deployment served without a tuned entry
 * (libtunert writes it when TUNERT_LOG_UNTUNED names a file; docs/runtime.md),
 * read back as the problem list of `tune run --problems-from FILE`.
 *
 * One JSON object per line: {"family":"gemm","dims":{"K":4096,"M":37,...},...};
 * other keys are ignored, blank lines skipped. Problems are deduplicated per
 * family (the runtime logs each once per context, but a log appended by many
 * processes repeats them). */
#ifndef TUNE_SERVED_LOG_H
#define TUNE_SERVED_LOG_H

#include "tune_err.h"

typedef struct tune_served_problem {
  char *family;
  char *dims_json;   /* the dims object, compact JSON with sorted keys */
} tune_served_problem;

typedef struct tune_served_log {
  int n;
  tune_served_problem *p;
} tune_served_log;

/* Read FILE. TUNE_EINVAL names the file and line of a line that is not such an
 * object; TUNE_EIO when it cannot be read. */
int tune_served_log_load(const char *path, tune_served_log *out, tune_err *err);
void tune_served_log_free(tune_served_log *log);

/* The dims of the log's problems of `family`, in log order (pointers into log). */
int tune_served_log_dims(const tune_served_log *log, const char *family, const char **dims, int max);

#endif
