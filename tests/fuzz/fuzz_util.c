/* fuzz_util.c: the scratch directory and file helpers of the fuzz harnesses. */
#define _GNU_SOURCE
#include "fuzz_util.h"

#include <fcntl.h>
#include <stdarg.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char scratch[PATH_MAX];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)flag; (void)ftw;
  remove(path);
  return 0;
}

static void remove_scratch(void) {
  if (scratch[0]) nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_scratch_dir(void) {
  if (scratch[0]) return scratch;
  const char *tmp = getenv("TMPDIR");
  snprintf(scratch, sizeof scratch, "%s/tune-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(scratch)) { perror("fuzz: mkdtemp"); abort(); }
  atexit(remove_scratch);
  return scratch;
}

void fuzz_write_file(const char *path, const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f)) { perror(path); abort(); }
}

void fuzz_quiet_stdout(void) {
  int fd = open("/dev/null", O_WRONLY);
  if (fd >= 0) { dup2(fd, STDOUT_FILENO); close(fd); }
}

void fuzz_note(const char *fmt, ...) {
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("TUNE_FUZZ_VERBOSE") != NULL;
  if (!verbose) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}
