/* bundle_yardstick.c: a warning where families that serve one problem on one GPU model were timed
 * under different yardsticks (bundle_yardstick.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle_yardstick.h"

/* An entry a choice among families can weigh: tuned on a GPU model, with the problem's dims. */
static int weighable(const bentry *be) {
  return be->kind == BUNDLE_TUNED && be->model >= 0 && json_is_object(be->best->problem_dims);
}

/* A weighable entry's problem as libtunert matches an exact entry: its GPU model and its dims
 * (names and values; keys sorted), as one string, so that the entries of a problem sort together. */
typedef struct keyed_entry {
  char *key;
  int idx;
} keyed_entry;

static int by_key_then_index(const void *a, const void *b) {
  const keyed_entry *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* One problem's entries: the first of each family, in entry order. */
typedef struct yard_group {
  int n, members[BUNDLE_MAX_FAMILIES];
} yard_group;

static int by_lead(const void *a, const void *b) {
  const yard_group *x = a, *y = b;
  return (x->members[0] > y->members[0]) - (x->members[0] < y->members[0]);
}

/* The run keys[from..to) (one problem, in entry order) as a group. */
static void group_of(const bstate *s, const keyed_entry *keys, int from, int to, yard_group *g) {
  g->n = 0;
  for (int i = from; i < to; ++i) {
    const bentry *be = &s->ent[keys[i].idx];
    int seen = 0;
    for (int k = 0; k < g->n && !seen; ++k) seen = s->ent[g->members[k]].family == be->family;
    if (!seen && g->n < BUNDLE_MAX_FAMILIES) g->members[g->n++] = keys[i].idx;
  }
}

/* The weighable entries' keys, sorted; NULL (no warning) when memory runs out. */
static keyed_entry *sorted_keys(const bstate *s, int *n_out) {
  keyed_entry *keys = calloc((size_t)s->n_entries + 1, sizeof *keys);
  int n = 0;
  for (int i = 0; keys && i < s->n_entries; ++i) {
    if (!weighable(&s->ent[i])) continue;
    char *dims = json_dumps(s->ent[i].best->problem_dims, JSON_COMPACT | JSON_SORT_KEYS);
    size_t len = dims ? strlen(dims) + 16 : 0;
    char *key = dims ? malloc(len) : NULL;
    if (key) snprintf(key, len, "%d|%s", s->ent[i].model, dims);
    free(dims);
    if (!key) {
      for (int k = 0; k < n; ++k) free(keys[k].key);
      free(keys);
      return NULL;
    }
    keys[n++] = (keyed_entry){key, i};
  }
  if (keys) qsort(keys, (size_t)n, sizeof *keys, by_key_then_index);
  *n_out = n;
  return keys;
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
  int n_keys = 0, n_groups = 0, n_warned = 0;
  keyed_entry *keys = sorted_keys(s, &n_keys);
  yard_group *groups = keys ? malloc(((size_t)n_keys + 1) * sizeof *groups) : NULL;
  for (int i = 0, j; groups && i < n_keys; i = j) {
    for (j = i + 1; j < n_keys && !strcmp(keys[j].key, keys[i].key); ++j) {}
    group_of(s, keys, i, j, &groups[n_groups]);
    if (groups[n_groups].n >= 2 && !timed_alike(s, groups[n_groups].members, groups[n_groups].n)) ++n_groups;
  }
  if (groups) qsort(groups, (size_t)n_groups, sizeof *groups, by_lead); /* the bundle's entry order */
  for (int g = 0; groups && g < n_groups; ++g)
    if (n_warned++ < BUNDLE_YARDSTICK_MAX_LINES) print_group(s, groups[g].members, groups[g].n);
  if (n_warned > BUNDLE_YARDSTICK_MAX_LINES)
    fprintf(stderr, "tune bundle: warning: %d more problems whose families were timed differently (not listed)\n",
            n_warned - BUNDLE_YARDSTICK_MAX_LINES);
  for (int k = 0; k < n_keys; ++k) free(keys[k].key);
  free(keys);
  free(groups);
}
