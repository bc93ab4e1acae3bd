/* db_export_cmd.c: `tune db export`: one problem's results in another tool's format (db_export.c
 * writes them); this file checks the options and owns the output file. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "file_util.h"

int tune_cmd_db_export(db_conn *db, const char *format, const char *recipe, const char *problem,
                       const char *out_path) {
  if (!format || !recipe || !problem) {
    fprintf(stderr, "tune db export: want --format kernel_tuner|t4 --recipe R --problem P [-o FILE]\n");
    return 2;
  }
  if (strcmp(format, "kernel_tuner") && strcmp(format, "t4")) {
    fprintf(stderr, "tune db export: --format %s: want kernel_tuner or t4\n", format);
    return 2;
  }
  int to_stdout = !out_path || !strcmp(out_path, "-");
  tune_replace out = {.f = stdout}; /* a file: whole or not at all, and an earlier one kept on failure */
  if (!to_stdout && tune_replace_open(&out, out_path)) {
    fprintf(stderr, "tune db export: %s: cannot write: %s\n", out_path, strerror(errno));
    return 1;
  }
  tune_err err;
  tune_err_clear(&err);
  int rc = db_export(db, format, recipe, problem, out.f, &err);
  if (rc && !to_stdout) tune_replace_abort(&out);
  else if (!to_stdout && tune_replace_commit(&out))
    rc = tune_fail(&err, TUNE_EIO, "%s: write failed: %s", out_path, strerror(errno));
  if (rc) {
    fprintf(stderr, "tune db export: %s\n", err.msg);
    return 1;
  }
  return 0;
}
