/* tunert_models.c: the GPU models of a bundle (format 1.5) and which of them the device is.
 *
 * A bundle made from the results of several GPU models holds one entry per model for a problem
 * they both tuned. At open the device's model is named (options.device_name, else the driver's
 * name of the opened device, else TUNERT_DEVICE_NAME) and every entry gets a tier: its own model
 * first, another model of the same arch next, another arch last. tunert_select.c ranks by tier
 * before anything else, so a winner measured on another GPU serves only where the device's own
 * model has no entry that serves the problem. Fixed at open: selections never disagree. */
#define _GNU_SOURCE /* strcasestr */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tunert_int.h"

/* The model called name: the one of that name (case-insensitive), else the only one whose name
 * contains it; -1 with the reason in note otherwise. */
static int model_named(const tunert_ctx *ctx, const char *name, char *note, size_t n) {
  int found = -1, n_found = 0;
  for (int i = 0; i < ctx->n_models; ++i)
    if (!strcasecmp(ctx->models[i].name, name)) return i;
  for (int i = 0; i < ctx->n_models; ++i)
    if (strcasestr(ctx->models[i].name, name)) { found = i; ++n_found; }
  if (n_found == 1) return found;
  snprintf(note, n, n_found ? "'%.100s' names several of the bundle's GPU models" : "the bundle has no entry tuned on '%.100s'", name);
  return -1;
}

/* The device's compute capability: the device's or options.arch, else that of the model it is. */
static int here_arch(const tunert_ctx *ctx, int *major, int *minor) {
  if (ctx->dev_known) { *major = ctx->dev_major; *minor = ctx->dev_minor; return 1; }
  if (ctx->model_here >= 0 && ctx->models[ctx->model_here].major >= 0) {
    *major = ctx->models[ctx->model_here].major;
    *minor = ctx->models[ctx->model_here].minor;
    return 1;
  }
  return 0;
}

/* Entries of a family for a problem an earlier entry (of another model) already has. */
static void mark_repeats(rt_family *f) {
  for (int j = 0; j < f->n_entries; ++j) {
    rt_entry *e = &f->entries[j];
    for (int k = 0; k < j && !e->repeat && e->kind != RT_FALLBACK; ++k)
      e->repeat = f->entries[k].kind != RT_FALLBACK && f->entries[k].model != e->model &&
                  !memcmp(f->entries[k].dims, e->dims, sizeof(int64_t) * (size_t)f->n_dims);
  }
}

int rt_models_rank(tunert_ctx *ctx, const char *name, tunert_err *err) {
  const char *why = "options.device_name";
  if (!name || !*name) { name = ctx->dev_name[0] ? ctx->dev_name : NULL; why = "the driver"; }
  if (!name || !*name) { name = getenv("TUNERT_DEVICE_NAME"); why = "TUNERT_DEVICE_NAME"; }
  ctx->model_here = -1;
  ctx->model_note[0] = 0;
  if (name && *name) {
    if (!(ctx->here_name = rt_strdup(&ctx->arena, name))) return rt_fail(err, TUNERT_ENOMEM, "tunert_open: out of memory");
    char note[200];
    ctx->model_here = model_named(ctx, name, note, sizeof note);
    if (ctx->model_here < 0) snprintf(ctx->model_note, sizeof ctx->model_note, "%s (%s)", note, why);
  } else
    snprintf(ctx->model_note, sizeof ctx->model_note, "the GPU model is unknown (no driver: name it with options.device_name "
             "or TUNERT_DEVICE_NAME)");
  int maj = -1, min = -1, arch_known = here_arch(ctx, &maj, &min);
  for (int i = 0; i < ctx->n_models; ++i) {
    rt_model *m = &ctx->models[i];
    m->n_problems = 0;
    if (i == ctx->model_here) m->tier = TUNERT_MODEL_THIS;
    else if (!arch_known || m->major < 0 || (m->major == maj && m->minor == min)) m->tier = TUNERT_MODEL_SAME_ARCH;
    else m->tier = TUNERT_MODEL_OTHER_ARCH;
  }
  for (int i = 0; i < ctx->n_families; ++i) {
    rt_family *f = &ctx->families[i];
    for (int j = 0; j < f->n_entries; ++j) {
      rt_entry *e = &f->entries[j];
      e->tier = e->model >= 0 ? ctx->models[e->model].tier : TUNERT_MODEL_THIS;
      if (e->model >= 0 && e->kind != RT_FALLBACK) ctx->models[e->model].n_problems++;
    }
    if (ctx->n_models > 1) mark_repeats(f);
  }
  /* expressions' sm_count: the device's, else the model's it is, else the bundle's first */
  int model_sms = ctx->model_here >= 0 ? ctx->models[ctx->model_here].sm_count : 0;
  ctx->sm_count = ctx->dev_sm_count > 0 ? ctx->dev_sm_count : model_sms > 0 ? model_sms : ctx->meta_sm_count;
  return 0;
}

void rt_model_note(const tunert_ctx *ctx, const rt_entry *e, char *buf, size_t n) {
  buf[0] = 0;
  if (e->model < 0 || e->tier == TUNERT_MODEL_THIS) return;
  const rt_model *m = &ctx->models[e->model];
  if (ctx->model_here < 0) {
    if (ctx->n_models > 1)
      snprintf(buf, n, "; tuned on %s%s: %s, so the entries of every GPU model of %s rank alike", m->name,
               e->tier == TUNERT_MODEL_OTHER_ARCH ? " (another arch)" : "", ctx->model_note,
               ctx->dev_known ? "its arch" : "the bundle");
    return;
  }
  const char *here = ctx->models[ctx->model_here].name;
  if (e->tier == TUNERT_MODEL_SAME_ARCH)
    snprintf(buf, n, "; tuned on %s, another GPU model of the same arch (%s) as this %s: no entry of %s serves it", m->name,
             m->arch, here, here);
  else
    snprintf(buf, n, "; tuned on %s (%s), a GPU model of another arch than this %s: no entry of a model of its arch serves it",
             m->name, m->arch, here);
}

TUNERT_API int tunert_model_count(const tunert_ctx *ctx) { return ctx ? ctx->n_models : 0; }

TUNERT_API int tunert_model_info_get(const tunert_ctx *ctx, int i, tunert_model_info *info) {
  if (!ctx || !info || info->struct_size < sizeof(uint32_t) || i < 0 || i >= ctx->n_models) return TUNERT_EINVAL;
  const rt_model *m = &ctx->models[i];
  tunert_model_info full;
  memset(&full, 0, sizeof full);
  full.struct_size = info->struct_size;
  full.name = m->name;
  full.arch = m->arch ? m->arch : "";
  full.sm_count = m->sm_count;
  full.n_problems = m->n_problems;
  full.tier = m->tier;
  memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
  return TUNERT_OK;
}
