/* check.h: the one assertion macro of the unit tests: counts passes and prints each failure with
 * its place; a test's main returns n_fail != 0. */
#ifndef TUNE_TEST_CHECK_H
#define TUNE_TEST_CHECK_H

#include <stdio.h>

static int n_pass, n_fail;
#define CHECK(c)                                                                   \
  do {                                                                             \
    if (c) ++n_pass;                                                               \
    else { ++n_fail; fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } \
  } while (0)

#endif
