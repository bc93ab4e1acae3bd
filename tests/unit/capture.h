/* capture.h: what a unit test's code under test prints, read back: stdout is sent to a temporary
 * file while a function runs. The text lands in `captured` (at most its size less one). */
#ifndef TUNE_TEST_CAPTURE_H
#define TUNE_TEST_CAPTURE_H

#include <stdio.h>
#include <unistd.h>

#include "check.h"

static char captured[8192];

/* Run f(arg) with stdout going to a temporary file; its text lands in captured. */
static void capture(void (*f)(void *), void *arg) {
  fflush(stdout);
  FILE *tmp = tmpfile();
  if (!tmp) { CHECK(tmp != NULL); captured[0] = 0; return; }
  int saved = dup(1);
  dup2(fileno(tmp), 1);
  f(arg);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  rewind(tmp);
  size_t n = fread(captured, 1, sizeof captured - 1, tmp);
  captured[n] = 0;
  fclose(tmp);
}

#endif
