/* argv_test.c: the command-line parser (tuner/argv.c): both value forms, flags, whole-number and
 * duration checks, and the messages that name the option. Exit status 0 when every CHECK passed. */
#include <string.h>

#include "argv.h"
#include "check.h"

#define ARGS(...) (char *[]){__VA_ARGS__}, (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *))

typedef struct opts {
  const char *db, *pos, *halving_v;
  int jobs, quiet, halving, has_halving_v, n_pos;
  uint64_t seed;
  double frac;
  long long count;
  double secs;
} opts;

/* A parser as a verb writes one; returns 0 or 2 with ap->msg set. */
static int parse(tune_argv *ap, char **argv, int argc, opts *o) {
  memset(o, 0, sizeof *o);
  tune_argv_init(ap, "tune t", argc, argv);
  while (tune_argv_next(ap)) {
    const char *p;
    if (tune_argv_flag(ap, "--quiet")) o->quiet = 1;
    else if (tune_argv_str(ap, "--db", &o->db) || tune_argv_str(ap, "-o", &o->db)) {}
    else if (tune_argv_int(ap, "--jobs", &o->jobs)) { if (o->jobs < 1) tune_argv_bad(ap, "want a positive count"); }
    else if (tune_argv_u64(ap, "--seed", &o->seed)) {}
    else if (tune_argv_double(ap, "--frac", &o->frac)) { if (!(o->frac >= 0 && o->frac < 1)) tune_argv_bad(ap, "want a fraction in [0, 1)"); }
    else if (tune_argv_opt_str(ap, "--halving", &o->has_halving_v, &o->halving_v)) o->halving = 1;
    else if (tune_argv_count_or_duration(ap, "--budget", &o->count, &o->secs)) {}
    else if (tune_argv_positional(ap, &p)) { o->pos = p; o->n_pos++; }
    else tune_argv_unknown(ap);
  }
  return ap->failed ? 2 : 0;
}

static void test_forms(void) {
  tune_argv ap;
  opts o;
  CHECK(parse(&ap, ARGS("r.lua", "--db", "a.db", "--jobs=4", "--quiet", "--seed", "0x10"), &o) == 0);
  CHECK(o.pos && !strcmp(o.pos, "r.lua") && o.n_pos == 1);
  CHECK(o.db && !strcmp(o.db, "a.db"));
  CHECK(o.jobs == 4 && o.quiet == 1 && o.seed == 16);
  CHECK(parse(&ap, ARGS("--db=x=y", "-o", "-"), &o) == 0); /* only the first '=' splits; "-" is a value */
  CHECK(!strcmp(o.db, "-"));
  CHECK(parse(&ap, ARGS("--db=b.db"), &o) == 0 && !strcmp(o.db, "b.db"));
  CHECK(parse(&ap, ARGS("--db", "--quiet"), &o) == 0 && !strcmp(o.db, "--quiet") && !o.quiet); /* a value is a value */
  CHECK(parse(&ap, ARGS("-"), &o) == 0 && !strcmp(o.pos, "-"));
  CHECK(parse(&ap, ARGS("--seed", "18446744073709551615"), &o) == 0 && o.seed == UINT64_MAX);
}

static void test_optional_value(void) {
  tune_argv ap;
  opts o;
  CHECK(parse(&ap, ARGS("--halving", "x.lua"), &o) == 0);
  CHECK(o.halving && !o.has_halving_v && !strcmp(o.pos, "x.lua")); /* the next argument is not its value */
  CHECK(parse(&ap, ARGS("--halving=0.2"), &o) == 0);
  CHECK(o.halving && o.has_halving_v && !strcmp(o.halving_v, "0.2"));
}

static void test_numbers(void) {
  tune_argv ap;
  opts o;
  CHECK(parse(&ap, ARGS("--seed", "abc"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: --seed abc: not an integer"));
  CHECK(parse(&ap, ARGS("--seed", "-1"), &o) == 2);
  CHECK(parse(&ap, ARGS("--seed", "0x"), &o) == 2);
  CHECK(parse(&ap, ARGS("--jobs", "12x"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: --jobs 12x: not an integer"));
  CHECK(parse(&ap, ARGS("--jobs", "99999999999"), &o) == 2); /* does not fit an int */
  CHECK(parse(&ap, ARGS("--jobs=0"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: --jobs=0: want a positive count")); /* as the user wrote it */
  CHECK(parse(&ap, ARGS("--frac", "0.25"), &o) == 0 && o.frac == 0.25);
  CHECK(parse(&ap, ARGS("--frac", "1"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: --frac 1: want a fraction in [0, 1)"));
  CHECK(parse(&ap, ARGS("--frac", "nan"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: --frac nan: not a number"));
  CHECK(parse(&ap, ARGS("--frac", ""), &o) == 2);
}

static void test_durations(void) {
  tune_argv ap;
  opts o;
  CHECK(parse(&ap, ARGS("--budget", "40"), &o) == 0 && o.count == 40 && o.secs == 0);
  CHECK(parse(&ap, ARGS("--budget", "90s"), &o) == 0 && o.count == 0 && o.secs == 90);
  CHECK(parse(&ap, ARGS("--budget=10m"), &o) == 0 && o.secs == 600);
  CHECK(parse(&ap, ARGS("--budget", "1.5h"), &o) == 0 && o.secs == 5400);
  CHECK(parse(&ap, ARGS("--budget", "0"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: --budget 0: want a count or a duration like 90s, 10m, 1h"));
  CHECK(parse(&ap, ARGS("--budget", "10d"), &o) == 2);
  CHECK(parse(&ap, ARGS("--budget", "-5s"), &o) == 2);
  double s = 0;
  CHECK(tune_parse_duration("2m", &s) == 0 && s == 120);
  CHECK(tune_parse_duration("2", &s) == -1); /* a duration says its unit */
}

static void test_errors(void) {
  tune_argv ap;
  opts o;
  CHECK(parse(&ap, ARGS("--frobnicate"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: unknown option --frobnicate (see tune t --help)"));
  CHECK(parse(&ap, ARGS("--db"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: --db needs a value"));
  CHECK(parse(&ap, ARGS("--quiet=1"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: --quiet takes no value (got --quiet=1)"));
  /* the first error stands and ends the walk: later arguments are not read */
  CHECK(parse(&ap, ARGS("--jobs", "x", "--db"), &o) == 2);
  CHECK(!strcmp(ap.msg, "tune t: --jobs x: not an integer"));
  CHECK(parse(&ap, ARGS("--nope", "a.lua"), &o) == 2 && o.pos == NULL);
  CHECK(tune_argv_error(&ap, "later %d", 1) == 1 && !strcmp(ap.msg, "tune t: unknown option --nope (see tune t --help)"));
  /* an option name too long for the buffer never matches a shorter one */
  char longopt[100];
  memset(longopt, 'x', sizeof longopt);
  memcpy(longopt, "--db", 4);
  longopt[99] = 0;
  CHECK(parse(&ap, ARGS(longopt), &o) == 2 && strstr(ap.msg, "unknown option --dbxxx"));
}

int main(void) {
  test_forms();
  test_optional_value();
  test_numbers();
  test_durations();
  test_errors();
  printf("argv_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
