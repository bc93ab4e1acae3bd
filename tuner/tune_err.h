/* tune_err.h: errors as values, shared by every module of tune.
 *
 * A fallible function returns int (TUNE_OK == 0) and fills a caller-owned
 * tune_err with "where: what". The first failure wins: later calls to
 * tune_fail() on an already failed tune_err keep the original message, so the
 * root cause is what the user reads. Header-only; no allocation. */
#ifndef TUNE_ERR_H
#define TUNE_ERR_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  TUNE_OK = 0,
  TUNE_EINVAL,    /* bad argument or bad input file */
  TUNE_ENOMEM,    /* allocation failed */
  TUNE_EIO,       /* file or pipe I/O failed */
  TUNE_ERECIPE,   /* the recipe is wrong: message carries file:line */
  TUNE_ECUDA,     /* a CUDA driver call failed */
  TUNE_ENVRTC,    /* NVRTC itself failed (not a compile error of a variant) */
  TUNE_ESQL,      /* SQLite failed */
  TUNE_ENOGPU,    /* the operation needs a GPU/driver and there is none */
  TUNE_ECUPTI,    /* CUPTI failed */
  TUNE_EWORKER,   /* the GPU worker process died or spoke nonsense */
  TUNE_ENOTFOUND, /* a lookup found nothing */
  TUNE_EINTERNAL  /* a bug in tune */
};

typedef struct tune_err {
  int code;       /* TUNE_OK or one of the codes above */
  char msg[2048]; /* "where: what", NUL-terminated */
} tune_err;

static inline void tune_err_clear(tune_err *e) { e->code = TUNE_OK; e->msg[0] = 0; }

/* Record a failure (unless one is already recorded) and return its code. */
static inline int tune_fail(tune_err *e, int code, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 3, 4)))
#endif
  ;
static inline int tune_fail(tune_err *e, int code, const char *fmt, ...) {
  if (!e) return code;
  if (e->code != TUNE_OK) return e->code;
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return code;
}

static inline const char *tune_err_name(int code) {
  static const char *names[] = {"ok", "invalid", "out of memory", "io", "recipe", "cuda",
                                "nvrtc", "sqlite", "no gpu", "cupti", "worker", "not found",
                                "internal"};
  return (code >= 0 && code <= TUNE_EINTERNAL) ? names[code] : "unknown";
}

/* Invariants only (bugs), never for input or GPU failures. */
#define TUNE_ASSERT(c)                                                            \
  do {                                                                            \
    if (!(c)) {                                                                   \
      fprintf(stderr, "tune: assertion failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); \
      abort();                                                                    \
    }                                                                             \
  } while (0)

#endif
