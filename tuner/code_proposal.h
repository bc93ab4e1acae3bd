/* code_proposal.h: code proposals of the LLM hook as variants (docs/llm-hook.md).
 *
 * Owns: splicing a region's proposed text into the recipe's template (a new
 * source text: its own compile key, its own binary), the identity of such a
 * variant (a config hash over the base config, the region and the code; the
 * config's origin is "llm-code:<proposal id>"), and the set of code variants
 * of one recipe run: which problems each was evaluated on and the verdict over
 * all of them, written back to its proposals row. A code variant is verified
 * on every problem of the recipe, not only the one it was proposed for.
 * Must not: validate the code (proposer.c does, before it gets here), compile
 * or measure (the session does, on the normal pool and backend).
 * Memory: the set owns its variants' strings (tune_code_set_free). */
#ifndef TUNE_CODE_PROPOSAL_H
#define TUNE_CODE_PROPOSAL_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "recipe.h"
#include "search.h"
#include "tune_err.h"

#define TUNE_CODE_ORIGIN "llm-code:" /* configs.origin prefix of a code variant */

/* Replace the lines between `// TUNE:REGION region` and the next `// TUNE:END`
 * of template_text by code (a newline is added when it lacks one). The marker
 * lines stay. *out is malloc'd. Returns 0, or -1 with why filled (no such
 * region, no end marker, out of memory). */
int tune_code_splice(const char *template_text, const char *region, const char *code, char **out,
                     char *why, size_t why_n);

/* The same on the template file at path. */
int tune_code_splice_file(const char *path, const char *region, const char *code, char **out,
                          char *why, size_t why_n);

/* Config hash of a code variant: xxh64 over the base config's hash, region and code. */
void tune_code_config_hash(const char *base_hash, const char *region, const char *code, char out[17]);

/* A code proposal's compiled PTX is refused when it could tell the timed launches from the
 * verified one or remember across launches: a module-scope .global variable (state that outlives
 * a launch), or a read of %globaltimer, %clock or %clock64. Returns 1 with the reason in why when
 * refused, 0 when not (ptx NULL: 0). Proposals are adversarial by assumption (docs/llm-hook.md). */
int tune_code_ptx_refused(const char *ptx, size_t ptx_n, char *why, size_t why_n);

typedef struct tune_code_variant {
  int64_t proposal_id;
  char region[64];
  char *code;               /* the region's new text */
  char *source;             /* the template with it spliced in */
  int vi[SEARCH_MAX_PARAMS];/* base config: value index per parameter */
  char hash[17];            /* config hash (tune_code_config_hash) */
  char origin[32];          /* "llm-code:<proposal id>" */
  uint8_t *evaluated;       /* [n_problems] 1: taken for that problem */
  int n_ok, n_compiled, n_failed, n_other; /* results over problems */
  char first_failure[600];  /* "<status> on <problem>: <error excerpt>" */
} tune_code_variant;

typedef struct tune_code_set {
  int n_problems;           /* of the recipe */
  int n, cap;
  tune_code_variant *v;
} tune_code_set;

void tune_code_set_init(tune_code_set *s, int n_problems);
void tune_code_set_free(tune_code_set *s);

/* Is there a variant with this config hash already? */
int tune_code_set_has(const tune_code_set *s, const char *hash);

/* Add a variant (code and source are copied). Returns its index or -1 (no memory). */
int tune_code_set_add(tune_code_set *s, int64_t proposal_id, const char *region, const char *code,
                      const char *source, const int *vi, int n_params, const char *hash);

/* Up to max variants not yet evaluated on problem pi into idx[]; they are
 * marked evaluated. Returns how many. */
int tune_code_set_take(tune_code_set *s, int pi, int *idx, int max);

/* Variants still to evaluate on problem pi. */
int tune_code_set_pending(const tune_code_set *s, int pi);

/* Count one result of variant i on the named problem. */
void tune_code_set_note(tune_code_set *s, int i, const char *problem, const db_result *res);

/* Write each variant's verdict over the problems to its proposals row:
 * rejected with the first failure when any problem failed, else accepted with
 * what was verified. Prints one line per variant unless quiet. */
int tune_code_set_finish(tune_code_set *s, db_conn *db, int quiet, tune_err *err);

#endif
