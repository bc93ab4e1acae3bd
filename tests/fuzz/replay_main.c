/* replay_main.c: run a fuzz harness over saved inputs without libFuzzer.
 *
 * Usage: HARNESS_replay PATH...  Each PATH is an input file or a directory
 * whose regular files are inputs (not recursive; sorted, so runs repeat). Exit
 * 0 when every input ran; a crash is the harness's abort or a sanitizer's
 * report, as under the fuzzer. Built with the normal compiler, so the corpora
 * of tests/fuzz/corpus are regression tests of every build. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_util.h"

/* Harnesses without setup do not define it. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); return -1; }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap *= 2);
      if (!nb) { free(buf); buf = NULL; }
      else buf = nb;
    }
  }
  fclose(f);
  if (!buf) { fprintf(stderr, "%s: out of memory\n", path); return -1; }
  /* an exact-size copy, so a read past the input is caught as under the fuzzer */
  uint8_t *in = malloc(n ? n : 1);
  if (!in) { free(buf); return -1; }
  memcpy(in, buf, n);
  free(buf);
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(in, n);
  free(in);
  return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int run_dir(const char *dir, int *n_run) {
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, by_name), bad = n < 0;
  if (n < 0) perror(dir);
  for (int i = 0; i < n; ++i) {
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
    if (ents[i]->d_name[0] != '.' && !stat(path, &st) && S_ISREG(st.st_mode)) {
      bad |= run_file(path) != 0;
      ++*n_run;
    }
    free(ents[i]);
  }
  free(ents);
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s INPUT_OR_DIR...\n", argv[0]); return 2; }
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  int bad = 0, n_run = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st)) { perror(argv[i]); bad = 1; }
    else if (S_ISDIR(st.st_mode)) bad |= run_dir(argv[i], &n_run);
    else { bad |= run_file(argv[i]) != 0; ++n_run; }
  }
  fprintf(stderr, "replay: %d input(s)%s\n", n_run, bad ? ", some unreadable" : "");
  /* an empty corpus is a mistake in the test, not a pass */
  return bad || n_run == 0;
}
