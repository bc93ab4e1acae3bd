/* recipe_fixture.h: a scratch project for unit tests that load recipes they write themselves: DIR
 * with recipes/ (the tests' recipe files) and templates/k.cuh (empty kernels k and r, the
 * template and reference such recipes name). fixture_project makes it under /tmp, fixture_remove
 * deletes it. */
#ifndef TUNE_TEST_RECIPE_FIXTURE_H
#define TUNE_TEST_RECIPE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir (n bytes) = /tmp/tune_<tag>.XXXXXX with the layout above; 0, or -1 after perror. */
static int fixture_project(char *dir, size_t n, const char *tag) {
  snprintf(dir, n, "/tmp/tune_%s.XXXXXX", tag);
  if (!mkdtemp(dir)) { perror("mkdtemp"); return -1; }
  char p[512];
  snprintf(p, sizeof p, "%s/recipes", dir);
  if (mkdir(p, 0755)) { perror(p); return -1; }
  snprintf(p, sizeof p, "%s/templates", dir);
  if (mkdir(p, 0755)) { perror(p); return -1; }
  snprintf(p, sizeof p, "%s/templates/k.cuh", dir);
  FILE *f = fopen(p, "w");
  if (!f) { perror(p); return -1; }
  fputs("extern \"C\" __global__ void k(int *out) {}\nextern \"C\" __global__ void r(int *out) {}\n", f);
  return fclose(f) ? -1 : 0;
}

static void fixture_remove(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
}

#endif
