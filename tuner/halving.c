/* halving.c: which quickly timed variants get a full timing (halving.h). */
#include "halving.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int tune_halving_full(double quick_ns, double best_ns, double margin) {
  if (!(quick_ns >= 0)) return 0;
  if (!isfinite(best_ns)) return 1;
  return quick_ns <= best_ns * (1.0 + margin);
}

int tune_halving_batch(const double *quick_ns, int n, double best_ns, double margin, int *full) {
  double best = best_ns;
  for (int i = 0; i < n; ++i)
    if (quick_ns[i] >= 0 && quick_ns[i] < best) best = quick_ns[i];
  int k = 0;
  for (int i = 0; i < n; ++i) k += full[i] = tune_halving_full(quick_ns[i], best, margin);
  return k;
}

void tune_halving_note(char *buf, size_t n, int samples, double margin, const char *prev) {
  char p[1024]; /* prev may be buf itself */
  snprintf(p, sizeof p, "%s", prev ? prev : "");
  prev = p;
  snprintf(buf, n, "%s (%d samples), not a contender (more than %g %% slower than the best)%s%s", TUNE_HALVING_NOTE,
           samples, 100 * margin, *prev ? "; " : "", prev);
}

int tune_halving_is_quick(const char *error_text) {
  return error_text && !strncmp(error_text, TUNE_HALVING_NOTE, strlen(TUNE_HALVING_NOTE));
}

double tune_halving_quick_ms(double measure_ms, int samples, int quick) {
  if (!(measure_ms > 0) || quick <= 0 || samples <= quick) return measure_ms;
  return measure_ms * quick / samples;
}
