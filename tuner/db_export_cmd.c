/* db_export_cmd.c: `tune db export`: one problem's results in another tool's format (db_export.c
 * writes them); this file checks the options and owns the output file. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

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
  FILE *f = to_stdout ? stdout : fopen(out_path, "w");
  if (!f) {
    fprintf(stderr, "tune db export: %s: cannot write\n", out_path);
    return 1;
  }
  tune_err err;
  tune_err_clear(&err);
  int rc = db_export(db, format, recipe, problem, f, &err);
  if (!to_stdout && fclose(f) && !rc) rc = tune_fail(&err, TUNE_EIO, "%s: write failed", out_path);
  if (rc) {
    fprintf(stderr, "tune db export: %s\n", err.msg);
    if (!to_stdout) remove(out_path); /* no half-written export is left to be mistaken for one */
    return 1;
  }
  return 0;
}
