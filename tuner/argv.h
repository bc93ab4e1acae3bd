/* argv.h: the one command-line option parser of tune's verbs and tools.
 *
 * Options take their value as "--opt VALUE" or "--opt=VALUE"; flags take none
 * ("--quiet=1" is an error). Numbers are checked whole ("--seed 12x" fails),
 * and every error names the option and the value it got ("tune run: --seed
 * abc: not an integer"). A parser walks argv once:
 *
 *   tune_argv ap;
 *   tune_argv_init(&ap, "tune run", argc, argv);
 *   while (tune_argv_next(&ap)) {
 *     if (tune_argv_flag(&ap, "--quiet")) o.quiet = 1;
 *     else if (tune_argv_int(&ap, "--jobs", &o.jobs)) { if (o.jobs < 1) tune_argv_bad(&ap, "want a positive count"); }
 *     else if (!tune_argv_positional(&ap, &recipe)) tune_argv_unknown(&ap);
 *   }
 *   if (ap.failed) { fprintf(stderr, "%s\n", ap.msg); return 2; }
 *
 * The matchers return 1 when the current argument is theirs (its value then
 * consumed, or an error recorded), 0 otherwise. After the first error
 * tune_argv_next returns 0 and ap.msg holds the message. Prints nothing;
 * owns no memory (values point into argv). */
#ifndef TUNE_ARGV_H
#define TUNE_ARGV_H

#include <stdint.h>

typedef struct tune_argv {
  const char *prog;      /* "tune run": the head of every message */
  int argc;
  char **argv;           /* borrowed */
  int next;              /* index of the argument after the current one */
  const char *arg;       /* the current argument, as given */
  char name[64];         /* its option name: "--db" of "--db=x" */
  const char *inline_v;  /* the value after '=', else NULL */
  const char *value;     /* the value the last matcher took (for tune_argv_bad) */
  int failed;            /* an error was recorded: the walk is over */
  char msg[512];         /* that error: "PROG: what" */
} tune_argv;

void tune_argv_init(tune_argv *ap, const char *prog, int argc, char **argv);

/* Step to the next argument: 1 while there is one and nothing failed. */
int tune_argv_next(tune_argv *ap);

/* "--name" without a value. */
int tune_argv_flag(tune_argv *ap, const char *name);

/* "--name VALUE" or "--name=VALUE": *out points into argv. */
int tune_argv_str(tune_argv *ap, const char *name, const char **out);

/* "--name" alone (*has_value 0) or "--name=VALUE" (*has_value 1, *out set):
 * an option whose value is optional and can only be given after '='. */
int tune_argv_opt_str(tune_argv *ap, const char *name, int *has_value, const char **out);

/* Whole numbers: a decimal (or 0x) integer that fits the type. */
int tune_argv_int(tune_argv *ap, const char *name, int *out);
int tune_argv_u64(tune_argv *ap, const char *name, uint64_t *out);

/* A decimal number (strtod syntax), finite. */
int tune_argv_double(tune_argv *ap, const char *name, double *out);

/* A positive count N, or a duration: a positive number with s, m or h
 * ("90s", "1.5h"). Sets *count (duration: left alone) or *secs [s]. */
int tune_argv_count_or_duration(tune_argv *ap, const char *name, long long *count, double *secs);

/* An argument that is no option (a recipe, a verb, "-" for stdout). */
int tune_argv_positional(tune_argv *ap, const char **out);

/* Record errors about the current argument (each returns 1, so a matcher's
 * branch can end in one): "OPT VALUE: why" for a value out of range;
 * "unknown option OPT (see PROG --help)"; or any text. */
int tune_argv_bad(tune_argv *ap, const char *why);
int tune_argv_unknown(tune_argv *ap);
int tune_argv_error(tune_argv *ap, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same checks on a text at hand (an optional value after '='): 0 when
 * s parses whole, -1 otherwise (*out then untouched). */
int tune_parse_int(const char *s, int *out);
int tune_parse_double(const char *s, double *out); /* finite */
int tune_parse_duration(const char *s, double *secs);

#endif
