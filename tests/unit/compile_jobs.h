/* compile_jobs.h: the compile tests' batch of jobs (header-only, for tests/unit only).
 * n jobs of one built-in source: job i is compiled with -DK=<i + 2>, job `bad` also with -DBAD
 * (the source must fail to compile with it); every job asks for the same kernel names. */
#ifndef TUNE_TEST_COMPILE_JOBS_H
#define TUNE_TEST_COMPILE_JOBS_H

#include <stdio.h>
#include <string.h>

#include "compile.h"

static void compile_jobs_setup(tune_compile_job *jobs, char (*defs)[2][160], int n, int bad, const char *source,
                               int n_names, const char *const *names, const int *is_expr) {
  memset(jobs, 0, sizeof *jobs * (size_t)n);
  for (int i = 0; i < n; ++i) {
    snprintf(defs[i][0], sizeof defs[i][0], "-DK=%d", i + 2);
    snprintf(defs[i][1], sizeof defs[i][1], "-DBAD");
    jobs[i].source_path = "scale.cu";
    jobs[i].source_text = source;
    jobs[i].include_root = ".";
    jobs[i].arch = "sm_90a";
    jobs[i].n_defines = i == bad ? 2 : 1;
    jobs[i].defines = (const char(*)[160])defs[i];
    jobs[i].n_names = n_names;
    for (int k = 0; k < n_names; ++k) {
      jobs[i].names[k] = names[k];
      jobs[i].is_expr[k] = is_expr ? is_expr[k] : 0;
    }
  }
}

static void compile_jobs_release(tune_compile_job *jobs, int n) {
  for (int i = 0; i < n; ++i) db_binary_release(&jobs[i].bin);
}

#endif
