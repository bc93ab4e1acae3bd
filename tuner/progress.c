/* progress.c: the lines `tune run` prints while it tunes (progress.h). */
#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "halving.h"

double tune_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

void tune_print_metrics(double ns, const tune_problem_setup *s, char *buf, size_t n) {
  size_t len = 0;
  if (ns >= 1e6) len += (size_t)snprintf(buf, n, "%9.3f ms", ns / 1e6);
  else len += (size_t)snprintf(buf, n, "%9.2f us", ns / 1e3);
  if (s->bytes > 0) len += (size_t)snprintf(buf + len, n - len, " %8.1f GB/s", s->bytes / ns);
  if (s->flops > 0) snprintf(buf + len, n - len, " %7.1f TFLOP/s", s->flops / ns / 1e3);
}

long long tune_progress_done(long long budget, size_t n_points, long long evaluated, long long resumed,
                             size_t *limit) {
  *limit = budget > 0 && (size_t)budget < n_points ? (size_t)budget : n_points;
  return evaluated + (*limit < n_points ? 0 : resumed);
}

void tune_progress_init(tune_progress *pg, int quiet, long long budget, size_t n_points,
                        const tune_problem_setup *setup) {
  pg->tty = isatty(1);
  pg->quiet = quiet;
  pg->n_width = snprintf(NULL, 0, "%zu", n_points);
  pg->t_start = tune_now_s();
  pg->budget = budget;
  pg->n_points = n_points;
  pg->setup = setup;
}

void tune_progress_problem(const char *recipe, const tune_problem *p, size_t n_points, const tune_rejections *rej,
                           const char *backend, int quiet, int n_sweep) {
  printf("\n== %s / %s %s: %zu configs", recipe, p->name, p->dims_json, n_points);
  if (rej->n) printf(" (%zu more rejected by the recipe)", rej->n);
  printf(", backend %s\n", backend);
  for (int i = 0; !quiet && i < rej->n_reasons; ++i) printf("  rejected %zu: %s\n", rej->count[i], rej->reason[i]);
  if (!quiet && rej->n_other) printf("  rejected %zu for other reasons\n", rej->n_other);
  if (n_sweep) printf("verifying %d code proposal(s) made for other problems\n", n_sweep);
}

/* Done/total, ETA, best so far, failures: on a terminal one line redrawn in place (no
 * newline, erased before the next output); elsewhere (plain) a "progress:" line of its own. */
static void progress_bar(long long done, long long measured, size_t total, double elapsed, double best_ns,
                         const tune_problem_setup *s, const tune_run_stats *st, int plain) {
  int width = 24, fill = total ? (int)(width * (double)done / (double)total) : 0;
  char bar[32];
  for (int i = 0; i < width; ++i) bar[i] = i < fill ? '#' : '.';
  bar[width] = 0;
  /* the rate of this run's measurements (resumed results cost nothing) */
  double eta = measured > 0 && (size_t)done < total ? elapsed / (double)measured * (double)(total - (size_t)done) : 0;
  char best[96] = "none yet";
  if (isfinite(best_ns)) tune_print_metrics(best_ns, s, best, sizeof best);
  if (plain) printf("progress: %lld/%zu  ETA %dm%02ds  best %s", done, total, (int)eta / 60, (int)eta % 60, best);
  else printf("[%s] %lld/%zu  ETA %dm%02ds  best %s", bar, done, total, (int)eta / 60, (int)eta % 60, best);
  int fails = 0;
  for (int k = 0; k < DB_STATUS_COUNT; ++k)
    if (k != DB_OK && k != DB_SKIPPED && st->n_status[k]) {
      printf("%s%d %s", fails++ ? ", " : "  | ", st->n_status[k], db_status_name((db_status)k));
    }
  if (plain) printf("\n");
}

/* What a result line says after the label: figures, what compiled, or the error's first line. */
static void result_text(const tune_progress *pg, const db_result *res, unsigned dyn_shared, int quick_only,
                        char *line, size_t n) {
  line[0] = 0;
  if (res->status == DB_OK) {
    tune_print_metrics(res->median_ns, pg->setup, line, n);
    if (quick_only) snprintf(line + strlen(line), n - strlen(line), "  (quick: %d samples, not a contender)", res->samples);
  } else if (res->status == DB_SKIPPED && !strcmp(res->error_text, DB_REASON_COMPILE_ONLY)) {
    snprintf(line, n, "%d registers, %d B static smem, %u B dynamic, %d B stack, %d B spilled",
             res->registers, res->shared_bytes, dyn_shared, res->local_bytes,
             (res->spill_stores > 0 ? res->spill_stores : 0) + (res->spill_loads > 0 ? res->spill_loads : 0));
  } else {
    const char *t = res->error_text;
    snprintf(line, n, "%.*s", (int)(strcspn(t, "\n") > 100 ? 100 : strcspn(t, "\n")), t);
  }
}

void tune_progress_result(const tune_progress *pg, const db_result *res, const char *label, unsigned dyn_shared,
                          int quick_only, long long evaluated, long long resumed, double best,
                          const tune_run_stats *st) {
  char line[256];
  result_text(pg, res, dyn_shared, quick_only, line, sizeof line);
  if (pg->tty) printf("\r\033[K"); /* erase the progress bar */
  size_t limit;
  long long done = tune_progress_done(pg->budget, pg->n_points, evaluated, resumed, &limit);
  int compiled_only = res->status == DB_SKIPPED && !strcmp(res->error_text, DB_REASON_COMPILE_ONLY);
  if (!pg->quiet) /* stored as skipped (not timed), shown as what it is */
    printf("[%*lld/%zu] %-13s %s %s\n", pg->n_width, done, limit, compiled_only ? "compiled" : db_status_name(res->status),
           label, line);
  if (pg->tty) progress_bar(done, evaluated, limit, tune_now_s() - pg->t_start, best, pg->setup, st, 0);
  else if (!pg->quiet && limit >= 20 && done % (long long)((limit + 9) / 10) == 0) /* every ~10 % */
    progress_bar(done, evaluated, limit, tune_now_s() - pg->t_start, best, pg->setup, st, 1);
  fflush(stdout);
}

void tune_progress_problem_end(const tune_progress *pg, const char *problem, int sweep, double best,
                               const char *best_label) {
  if (pg->tty) printf("\r\033[K");
  if (sweep) return; /* no search here: nothing to report as this problem's best */
  if (isfinite(best)) {
    char m[128];
    tune_print_metrics(best, pg->setup, m, sizeof m);
    printf("best for %s: %s  %s\n", problem, best_label, m);
  } else printf("no verified result for %s\n", problem);
}

/* The GPU's kernel time beside the busy line, where the worker reported it (protocol.h
 * "kernel_ns" says what it counts): a part of "measure" and "selection rounds", which are the
 * worker's wall time. Nothing is printed where no reply carried it: no made-up zero. */
static void print_kernels(const tune_kernel_time *k, double wall) {
  if (!k->n_reported) return;
  printf("  kernels on the GPU: %.3f s (%.1f %% of wall): the variants' own kernels (verification, warm-up, timed"
         " and check launches) as the worker's CUPTI timer recorded them", k->ns / 1e9, 100.0 * k->ns / 1e9 / wall);
  if (k->n_reported < k->n_replies)
    printf("; %d of %d measures reported it (crashes, timeouts and workers without CUPTI report none)", k->n_reported,
           k->n_replies);
  printf("\n");
}

/* Where the wall time went: the share spent in the backend's measure (the
 * GPU's work: verify and time), the search's and the selection rounds', against
 * waiting for compiles (the pool runs while variants compiled before are
 * measured), setting problems up (the reference compiled, inputs and reference
 * outputs made) and everything else. */
static void print_busy(const tune_run_stats *st, double wall, const tune_backend *be, const char *strategy) {
  if (st->pruned) printf("pruned after compiling (never sent to the GPU): %d\n", st->pruned);
  if (!be || wall <= 0 || !strncmp(be->name, "replay:", 7)) return; /* replay: no GPU to keep busy */
  double busy = st->t_measure + st->t_select;
  printf("GPU busy: %.1f %% of %.1f s wall (measure %.1f s, selection rounds %.1f s, waiting for compiles %.1f s,"
         " problem setup %.1f s, other %.1f s; strategy %s, backend %s)\n",
         100.0 * busy / wall, wall, st->t_measure, st->t_select, st->t_compile, st->t_setup,
         wall - busy - st->t_compile - st->t_setup, strategy, be->name);
  print_kernels(&st->kernels, wall);
}

void tune_progress_recipe(const char *recipe, const tune_run_stats *st, double halving, double wall,
                          const tune_backend *be, const char *strategy) {
  printf("\n%s: %d results", recipe, st->total + st->resumed); /* the statuses below count both */
  /* a compile-only variant is stored as skipped (not timed) but shown as what happened to it */
  for (int s = 0; s < DB_STATUS_COUNT; ++s) {
    int n = st->n_status[s] - (s == DB_SKIPPED ? st->compile_only : 0);
    if (n > 0) printf(", %d %s", n, db_status_name((db_status)s));
  }
  if (st->compile_only) printf(", %d compiled (compile-only, not timed)", st->compile_only);
  printf("; %d resumed from the database\n", st->resumed);
  printf("compile: %d compiled, %d from the compile cache%s\n", st->compiled, st->cached,
         st->compiled == 0 && st->cached > 0 ? " (nothing to compile)" : "");
  if (st->wgmma_serialized)
    printf("warning: ptxas serialized the wgmma of %d variant(s), e.g. %s: each waits for the one before "
           "(\"Potential Performance Loss\" in the compile log, `tune db show ID`), a loss no resource count shows\n",
           st->wgmma_serialized, st->wgmma_example);
  if (st->guessed)
    printf("compiled ahead: %d of the strategy's proposals were compiled while earlier ones were measured\n", st->guessed);
  if (st->quick_only || st->quick_full)
    printf("halving (margin %g %%): %d verified variant(s) kept a quick timing (%d samples), %d timed fully after it\n",
           100 * halving, st->quick_only, TUNE_HALVING_QUICK_SAMPLES, st->quick_full);
  print_busy(st, wall, be, strategy);
}
