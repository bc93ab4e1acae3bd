/* bundle_yardstick.c: a warning where families that serve one problem on one GPU model were timed
 * under different yardsticks (bundle_yardstick.h). */
#include <stdio.h>
#include <string.h>

#include "bundle_yardstick.h"

/* An entry a choice among families can weigh: tuned on a GPU model, with the problem's dims. */
static int weighable(const bentry *be) {
  return be->kind == BUNDLE_TUNED && be->model >= 0 && json_is_object(be->best->problem_dims);
}

/* The same problem as libtunert matches an exact entry: the same dims (names and values), here
 * compared as the dims objects of the results, on the same GPU model. */
static int same_problem(const bentry *a, const bentry *b) {
  return a->model == b->model && json_equal(a->best->problem_dims, b->best->problem_dims);
}

/* The entries of lead's problem from lead on, one per family (the first), into members; every
 * entry of the problem is marked grouped. Returns how many. */
static int group_of(const bstate *s, int lead, unsigned char *grouped, int *members) {
  int n = 0;
  for (int j = lead; j < s->n_entries; ++j) {
    const bentry *be = &s->ent[j];
    if (grouped[j] || !weighable(be) || !same_problem(&s->ent[lead], be)) continue;
    grouped[j] = 1;
    int seen = 0;
    for (int k = 0; k < n && !seen; ++k) seen = s->ent[members[k]].family == be->family;
    if (!seen && n < BUNDLE_MAX_FAMILIES) members[n++] = j;
  }
  return n;
}

/* Whether every member's winner has a recorded timer and protocol, and all have the same timing
 * mode, timer and protocol. */
static int timed_alike(const bstate *s, const int *members, int n) {
  const db_bundle_best *a = s->ent[members[0]].best;
  for (int k = 0; k < n; ++k) {
    const db_bundle_best *b = s->ent[members[k]].best;
    if (!b->timer[0] || !b->protocol[0] || strcmp(a->timing, b->timing) || strcmp(a->timer, b->timer) ||
        strcmp(a->protocol, b->protocol))
      return 0;
  }
  return 1;
}

/* "burst, cupti, protocol 1", "burst, timer unrecorded, protocol unrecorded". */
static void print_yardstick(const db_bundle_best *b) {
  fprintf(stderr, "%s, %s, protocol %s", b->timing, b->timer[0] ? b->timer : "timer unrecorded",
          b->protocol[0] ? b->protocol : "unrecorded");
}

/* The warning for one problem, on one line of stderr. */
static void print_group(const bstate *s, const int *members, int n) {
  const bentry *lead = &s->ent[members[0]];
  fprintf(stderr, "tune bundle: warning: ");
  for (int k = 0; k < n; ++k)
    fprintf(stderr, "%s%s", k == 0 ? "" : k == n - 1 ? " and " : ", ", s->fam[s->ent[members[k]].family].name);
  fprintf(stderr, " %s serve %s on %s but were timed differently (", n == 2 ? "both" : "all", lead->best->problem,
          s->models[lead->model].name);
  for (int k = 0; k < n; ++k) {
    const bentry *be = &s->ent[members[k]];
    fprintf(stderr, "%s%s", k ? "; " : "", s->fam[be->family].name);
    if (strcmp(be->best->problem, lead->best->problem)) fprintf(stderr, " (as %s)", be->best->problem);
    fprintf(stderr, ": ");
    print_yardstick(be->best);
  }
  fprintf(stderr, "); choosing among families compares their recorded times: re-measure them under one "
                  "protocol (tune compare on each recipe) to trust that choice\n");
}

void bundle_warn_yardsticks(const bstate *s) {
  unsigned char grouped[BUNDLE_MAX_ENTRIES] = {0};
  int members[BUNDLE_MAX_FAMILIES], n_warned = 0;
  for (int i = 0; i < s->n_entries; ++i) {
    if (grouped[i] || !weighable(&s->ent[i])) continue;
    int n = group_of(s, i, grouped, members);
    if (n < 2 || timed_alike(s, members, n)) continue;
    if (n_warned++ < BUNDLE_YARDSTICK_MAX_LINES) print_group(s, members, n);
  }
  if (n_warned > BUNDLE_YARDSTICK_MAX_LINES)
    fprintf(stderr, "tune bundle: warning: %d more problems whose families were timed differently (not listed)\n",
            n_warned - BUNDLE_YARDSTICK_MAX_LINES);
}
