/* version_test.c: the project has one version number. The CMake project version
 * (TUNE_PROJECT_VERSION, given by tests/CMakeLists.txt) must equal tunert.h's
 * macros, tunert_version() of the library, tune's TUNE_VERSION, the pkg-config
 * file and the CMake package generated in the build tree, the shared library's
 * file name, and the version docs/runtime.md asks find_package for.
 * Prints "N passed, M failed"; exits nonzero on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "tunert.h"
#include "version.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The whole file as a NUL-terminated string (NULL when unreadable); caller frees. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "cannot read %s\n", path); return NULL; }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) { free(s); s = NULL; }
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

/* 1 when the file holds `before` immediately followed by `want` and then `after`. */
static int file_says(const char *path, const char *before, const char *want, const char *after) {
  char *text = slurp(path);
  if (!text) return 0;
  char needle[256];
  snprintf(needle, sizeof needle, "%s%s%s", before, want, after);
  int ok = strstr(text, needle) != NULL;
  if (!ok) fprintf(stderr, "%s lacks '%s'\n", path, needle);
  free(text);
  return ok;
}

int main(void) {
  const char *v = TUNE_PROJECT_VERSION, *b = TUNE_BUILD_DIR, *src = TUNE_SOURCE_DIR;
  char macros[64], path[1024], major_minor[32];
  snprintf(macros, sizeof macros, "%d.%d.%d", TUNERT_VERSION_MAJOR, TUNERT_VERSION_MINOR, TUNERT_VERSION_PATCH);
  snprintf(major_minor, sizeof major_minor, "%d.%d", TUNERT_VERSION_MAJOR, TUNERT_VERSION_MINOR);
  CHECK(strcmp(macros, v) == 0);
  CHECK(strcmp(TUNERT_VERSION_STRING, v) == 0);
  CHECK(strcmp(tunert_version(), v) == 0);
  CHECK(strcmp(TUNE_VERSION, v) == 0);
  snprintf(path, sizeof path, "%s/runtime/tunert.pc", b);
  CHECK(file_says(path, "\nVersion: ", v, "\n"));
  snprintf(path, sizeof path, "%s/runtime/tunertConfigVersion.cmake", b);
  CHECK(file_says(path, "set(PACKAGE_VERSION \"", v, "\")"));
  snprintf(path, sizeof path, "%s/runtime/tunertConfig.cmake", b);
  CHECK(file_says(path, "/libtunert.so.", v, "\""));
  snprintf(path, sizeof path, "%s/lib/libtunert.so.%s", b, v);
  CHECK(access(path, R_OK) == 0);
  snprintf(path, sizeof path, "%s/docs/runtime.md", src);
  CHECK(file_says(path, "find_package(tunert ", major_minor, " REQUIRED)"));
  CHECK(file_says(path, "this libtunert ", v, " reads format 1.x only"));
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
