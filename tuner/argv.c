/* argv.c: the command-line option parser (argv.h). */
#include "argv.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tune_argv_init(tune_argv *ap, const char *prog, int argc, char **argv) {
  memset(ap, 0, sizeof *ap);
  ap->prog = prog;
  ap->argc = argc;
  ap->argv = argv;
}

int tune_argv_error(tune_argv *ap, const char *fmt, ...) {
  if (ap->failed) return 1; /* the first error is the one to fix */
  int n = snprintf(ap->msg, sizeof ap->msg, "%s: ", ap->prog);
  va_list va;
  va_start(va, fmt);
  vsnprintf(ap->msg + n, sizeof ap->msg - (size_t)n, fmt, va);
  va_end(va);
  ap->failed = 1;
  return 1;
}

int tune_argv_next(tune_argv *ap) {
  if (ap->failed || ap->next >= ap->argc) return 0;
  ap->arg = ap->argv[ap->next++];
  ap->inline_v = NULL;
  ap->value = NULL;
  const char *eq = strncmp(ap->arg, "--", 2) ? NULL : strchr(ap->arg, '=');
  size_t len = eq ? (size_t)(eq - ap->arg) : strlen(ap->arg);
  if (len >= sizeof ap->name) len = sizeof ap->name - 1; /* no option is this long: it stays unknown */
  memcpy(ap->name, ap->arg, len);
  ap->name[len] = 0;
  if (eq) ap->inline_v = eq + 1;
  return 1;
}

/* The value of the current option: after '=', else the next argument. */
static int take_value(tune_argv *ap) {
  if (ap->inline_v) ap->value = ap->inline_v;
  else if (ap->next < ap->argc) ap->value = ap->argv[ap->next++];
  else return tune_argv_error(ap, "%s needs a value", ap->name), -1;
  return 0;
}

int tune_argv_flag(tune_argv *ap, const char *name) {
  if (strcmp(ap->name, name)) return 0;
  if (ap->inline_v) tune_argv_error(ap, "%s takes no value (got %s)", name, ap->arg);
  return 1;
}

int tune_argv_str(tune_argv *ap, const char *name, const char **out) {
  if (strcmp(ap->name, name)) return 0;
  if (!take_value(ap)) *out = ap->value;
  return 1;
}

int tune_argv_opt_str(tune_argv *ap, const char *name, int *has_value, const char **out) {
  if (strcmp(ap->name, name)) return 0;
  *has_value = ap->inline_v != NULL;
  if (ap->inline_v) *out = ap->value = ap->inline_v;
  return 1;
}

int tune_parse_int(const char *s, int *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno || v < INT_MIN || v > INT_MAX) return -1;
  *out = (int)v;
  return 0;
}

int tune_argv_int(tune_argv *ap, const char *name, int *out) {
  if (strcmp(ap->name, name)) return 0;
  if (take_value(ap)) return 1;
  if (tune_parse_int(ap->value, out)) tune_argv_bad(ap, "not an integer");
  return 1;
}

int tune_argv_u64(tune_argv *ap, const char *name, uint64_t *out) {
  if (strcmp(ap->name, name)) return 0;
  if (take_value(ap)) return 1;
  const char *s = ap->value;
  int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, hex ? 16 : 10);
  if (end == s || *end || errno || strchr(s, '-') || (hex && !s[2])) tune_argv_bad(ap, "not an integer");
  else *out = (uint64_t)v;
  return 1;
}

int tune_parse_double(const char *s, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int tune_argv_double(tune_argv *ap, const char *name, double *out) {
  if (strcmp(ap->name, name)) return 0;
  if (take_value(ap)) return 1;
  if (tune_parse_double(ap->value, out)) tune_argv_bad(ap, "not a number");
  return 1;
}

int tune_parse_duration(const char *s, double *secs) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || !(v > 0) || !isfinite(v)) return -1;
  double unit = !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60 : !strcmp(end, "h") ? 3600 : 0;
  if (unit == 0) return -1;
  *secs = v * unit;
  return 0;
}

int tune_argv_count_or_duration(tune_argv *ap, const char *name, long long *count, double *secs) {
  if (strcmp(ap->name, name)) return 0;
  if (take_value(ap)) return 1;
  char *end;
  errno = 0;
  long long n = strtoll(ap->value, &end, 10);
  if (end != ap->value && !*end && !errno && n > 0) *count = n;
  else if (tune_parse_duration(ap->value, secs)) tune_argv_bad(ap, "want a count or a duration like 90s, 10m, 1h");
  return 1;
}

int tune_argv_positional(tune_argv *ap, const char **out) {
  if (ap->arg[0] == '-' && ap->arg[1]) return 0; /* "-" alone is a value (stdout) */
  *out = ap->arg;
  return 1;
}

int tune_argv_bad(tune_argv *ap, const char *why) {
  if (ap->value && ap->value != ap->inline_v) return tune_argv_error(ap, "%s %s: %s", ap->name, ap->value, why);
  return tune_argv_error(ap, "%s: %s", ap->arg, why);
}

int tune_argv_unknown(tune_argv *ap) {
  if (ap->arg[0] == '-' && ap->arg[1]) return tune_argv_error(ap, "unknown option %s (see %s --help)", ap->arg, ap->prog);
  return tune_argv_error(ap, "unexpected argument %s (see %s --help)", ap->arg, ap->prog);
}
