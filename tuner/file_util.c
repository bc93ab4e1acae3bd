/* file_util.c: whole-file reads. */
#include "file_util.h"

#include <stdio.h>
#include <stdlib.h>

char *tune_read_file(const char *path, size_t *n_out) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    else {
      buf[n] = 0;
      if (n_out) *n_out = (size_t)n;
    }
  }
  fclose(f);
  return buf;
}
