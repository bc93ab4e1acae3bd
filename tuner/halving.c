/* halving.c: which quickly timed variants get a full timing (halving.h). */
#include "halving.h"

#include <math.h>

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
