/* progress_lines_test.c: what `tune run` prints while it tunes (tuner/progress.c): the figures of a
 * time, the count a result line shows against its budget, the result lines themselves, a
 * problem's end and a recipe's summary, read back from a captured stdout. Exit status 0 when
 * every CHECK passed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "progress.h"

static void metrics(void) {
  tune_problem_setup s;
  memset(&s, 0, sizeof s);
  char buf[128];
  tune_print_metrics(1500, &s, buf, sizeof buf);
  CHECK(!strcmp(buf, "     1.50 us"));
  tune_print_metrics(2.5e6, &s, buf, sizeof buf);
  CHECK(!strcmp(buf, "    2.500 ms"));
  s.bytes = 3e6;  /* 3 MB in 1 us: 3000 GB/s */
  s.flops = 2e9;  /* 2 GFLOP in 1 us: 2000 TFLOP/s */
  tune_print_metrics(1000, &s, buf, sizeof buf);
  CHECK(!strcmp(buf, "     1.00 us   3000.0 GB/s  2000.0 TFLOP/s"));
}

static void done_count(void) {
  size_t limit = 0;
  /* a budget below the space: only this run's results count, against the budget */
  CHECK(tune_progress_done(10, 100, 4, 3, &limit) == 4 && limit == 10);
  /* no budget, or one above the space: resumed results count too, against the space */
  CHECK(tune_progress_done(0, 100, 4, 3, &limit) == 7 && limit == 100);
  CHECK(tune_progress_done(500, 100, 4, 3, &limit) == 7 && limit == 100);
  CHECK(tune_progress_done(100, 100, 4, 3, &limit) == 7 && limit == 100);
}

typedef struct line_case {
  tune_progress pg;
  db_result res;
  const char *label;
  int quick_only;
  long long evaluated;
  tune_run_stats st;
} line_case;

static void print_line(void *arg) {
  line_case *c = arg;
  tune_progress_result(&c->pg, &c->res, c->label, 1024, c->quick_only, c->evaluated, 0, 1500, &c->st);
}

static void result_lines(void) {
  tune_problem_setup s;
  memset(&s, 0, sizeof s);
  line_case c;
  memset(&c, 0, sizeof c);
  tune_progress_init(&c.pg, 0, 0, 40, &s);
  c.pg.tty = 0; /* plain output, whatever runs the test */
  c.label = "{\"A\":1}";
  c.res.status = DB_OK;
  c.res.median_ns = 1500;
  c.evaluated = 3;
  capture(print_line, &c);
  CHECK(!strcmp(captured, "[ 3/40] ok            {\"A\":1}      1.50 us\n"));
  c.quick_only = 1;
  c.res.samples = 3;
  capture(print_line, &c);
  CHECK(strstr(captured, "1.50 us  (quick: 3 samples, not a contender)\n") != NULL);
  /* every ~10 %: a progress line, with the failures so far */
  c.quick_only = 0;
  c.evaluated = 8;
  c.st.n_status[DB_WRONG] = 2;
  capture(print_line, &c);
  CHECK(strstr(captured, "[ 8/40] ok") == captured);
  CHECK(strstr(captured, "\nprogress: 8/40  ETA ") != NULL && strstr(captured, "best      1.50 us  | 2 wrong\n") != NULL);
  /* an error's first line, at most 100 characters */
  c.res.status = DB_COMPILE_ERROR;
  snprintf(c.res.error_text, sizeof c.res.error_text, "t.cuh(3): error: no\nsecond line");
  c.evaluated = 9;
  capture(print_line, &c);
  CHECK(!strcmp(captured, "[ 9/40] compile_error {\"A\":1} t.cuh(3): error: no\n"));
  /* compile-only: what the binary uses */
  c.res.status = DB_SKIPPED;
  snprintf(c.res.error_text, sizeof c.res.error_text, DB_REASON_COMPILE_ONLY);
  c.res.registers = 32;
  c.res.spill_stores = 4;
  c.res.spill_loads = -1;
  capture(print_line, &c);
  CHECK(!strcmp(captured, "[ 9/40] compiled      {\"A\":1} 32 registers, 0 B static smem, 1024 B dynamic, 0 B stack, 4 B spilled\n"));
  /* quiet: no result lines, no progress lines */
  c.pg.quiet = 1;
  capture(print_line, &c);
  CHECK(captured[0] == 0);
}

typedef struct end_case {
  tune_progress pg;
  int sweep;
  double best;
} end_case;

static void print_end(void *arg) {
  end_case *c = arg;
  tune_progress_problem_end(&c->pg, "p1", c->sweep, c->best, "{\"A\":1}");
}

static void print_recipe(void *arg) {
  const tune_run_stats *st = arg;
  tune_progress_recipe("r", st, 0.1, 1, NULL, "bayes");
}

static void summaries(void) {
  tune_problem_setup s;
  memset(&s, 0, sizeof s);
  end_case e;
  memset(&e, 0, sizeof e);
  tune_progress_init(&e.pg, 0, 0, 40, &s);
  e.pg.tty = 0;
  e.best = 1500;
  capture(print_end, &e);
  CHECK(!strcmp(captured, "best for p1: {\"A\":1}       1.50 us\n"));
  e.best = INFINITY;
  capture(print_end, &e);
  CHECK(!strcmp(captured, "no verified result for p1\n"));
  e.sweep = 1; /* a sweep has no best of its own */
  capture(print_end, &e);
  CHECK(captured[0] == 0);
  tune_run_stats st;
  memset(&st, 0, sizeof st);
  st.total = 5;
  st.resumed = 2;
  st.n_status[DB_OK] = 6;
  st.n_status[DB_WRONG] = 1;
  st.cached = 3;
  st.quick_only = 2;
  st.quick_full = 1;
  st.pruned = 1;
  capture(print_recipe, &st);
  CHECK(strstr(captured, "\nr: 7 results, 6 ok, 1 wrong; 2 resumed from the database\n") == captured);
  CHECK(strstr(captured, "compile: 0 compiled, 3 from the compile cache (nothing to compile)\n") != NULL);
  CHECK(strstr(captured, "halving (margin 10 %): 2 verified variant(s) kept a quick timing (3 samples), 1 timed fully after it\n") != NULL);
  CHECK(strstr(captured, "pruned after compiling (never sent to the GPU): 1\n") != NULL);
  CHECK(strstr(captured, "GPU busy") == NULL); /* compile-only: no GPU to keep busy */
}

int main(void) {
  metrics();
  done_count();
  result_lines();
  summaries();
  printf("progress_lines_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
