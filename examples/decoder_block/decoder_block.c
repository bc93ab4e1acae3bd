/* decoder_block.c: a transformer decoder block run through libtunert from bundles as a serving
 * engine runs it, checked against a plain fp32 reference on the GPU, with times.
 *
 * 1. Prefill: B prompts of different lengths packed back to back into T token rows (cu_seqlens),
 *    every step one problem at M = T (block.h lists the steps and families); the prompts' K and V
 *    go into a paged KV cache (shuffled block table).
 * 2. Decode: `steps` steps of one new token per sequence. The whole step (norm, GEMMs, the glue
 *    that appends the token's K and V to its page, decode attention over the paged cache) is
 *    captured once in a CUDA graph after one eager run (which loads every module, builds the tensor
 *    maps and cuBLASLt's descriptors), then replayed every step while seq_lens in device memory
 *    grow by one. Step 0's input rows are the prefill's block output at each prompt's last token,
 *    step t + 1's are step t's block output.
 * Every step's outputs (prefill, and each decode step) are poisoned before it runs and compared
 * with the fp32 reference (block.h, reference_phase), which recomputes the step from the same input
 * rows, with attention over its own fp32 K/V history held token-major without pages.
 *
 * What the families compute sets two simplifications, printed too: the MLP is up -> SiLU -> down
 * (no family multiplies two tensors, so a SwiGLU gate is not expressible) and there is no rotary
 * embedding (no family).
 *
 * usage: decoder_block BUNDLE... [--plan] [--arch sm_90a] [--standins] [--device N] [--iters K]
 *                     [--lens L1,L2,...] [--steps N] [--page P]
 *   --plan   choose and print every step's variant, bind the arguments, and stop (no GPU needed;
 *            --arch is the architecture to check binaries against, default sm_90a)
 * The defaults (--lens 3000,37,611,1500,200 --steps 8 --page 16) are tools/bench/decoder_block_torch.py's.
 * exit: 0 every step ran and passed; 1 a check, launch or CUDA call failed; 2 usage; 3 no GPU;
 *       4 the bundles lack a family or a variant for a step (without --standins). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "kernels.h"
#include "tunert.h"

#define TOL_REL_L2 2e-2 /* bf16 activations against the fp32 block: ~1e-3 per rounding, a few in a chain */
#define DEFAULT_LENS "3000,37,611,1500,200"
#define MAX_STEPS 64     /* decode steps whose results are kept for the report */

typedef struct check {
  double rel_l2;
  float max_abs;
  unsigned long long nonfinite;
  int ok;
} check;

static block blk;
static int iters = 20;
static const char *bundle_paths[16];
static tunert_ctx *ctxs[16];
static int n_ctxs;
static check pre_check[N_STEPS], dec_check[MAX_STEPS][N_STEPS];
static double pre_us[N_STEPS], glue_us[N_GLUE], prefill_total_us, decode_eager_us, decode_graph_us;

static const char *bundle_of(const tunert_ctx *c) {
  for (int i = 0; i < n_ctxs; ++i)
    if (ctxs[i] == c) return bundle_paths[i];
  return "?";
}

static const char *kind_of(const steprun *r) {
  if (r->standin) return "STAND-IN";
  return r->p.si.kind ? r->p.si.kind : r->p.si.exact ? "tuned" : "nearest";
}

/* ---- checks --------------------------------------------------------------------------------------------- */

/* Every step's output of phase ph against the reference. */
static int check_phase(int ph, check *out) {
  for (int s = 0; s < N_STEPS; ++s) {
    const int a = step_out(s);
    cmp_result c;
    if (k_compare(blk.b.t[ph][a], DT_BF16, blk.b.r[ph][a], DT_F32, (size_t)act_numel(&blk.sh, ph, a), &c, blk.stream)) return -1;
    check *x = &out[s];
    x->rel_l2 = c.sum_sq_ref > 0 ? sqrt(c.sum_sq_diff / c.sum_sq_ref) : INFINITY;
    x->max_abs = c.max_abs;
    x->nonfinite = c.nonfinite;
    x->ok = c.nonfinite == 0 && x->rel_l2 <= TOL_REL_L2;
  }
  return 0;
}

/* ---- timing --------------------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { T_STEP, T_GLUE, T_PHASE, T_GRAPH };

/* Median of iters runs [us]: a prefill step, a glue kernel, a whole phase (eager launches), or
 * the decode graph's replay. */
static int time_it(int what, int i, cudaGraphExec_t exec, double *us) {
  cudaEvent_t e0, e1;
  double t[256];
  cudaStream_t st = (cudaStream_t)blk.stream;
  TRY("event", cudaEventCreate(&e0));
  TRY("event", cudaEventCreate(&e1));
  for (int it = 0; it < iters; ++it) {
    TRY("event", cudaEventRecord(e0, st));
    int rc = what == T_STEP ? step_launch(&blk, PH_PREFILL, i)
           : what == T_GLUE ? glue_launch(&blk, i)
           : what == T_PHASE ? phase_launch(&blk, i)
                             : (int)cudaGraphLaunch(exec, st);
    if (rc) { fprintf(stderr, "decoder_block: a timed run failed\n"); return -1; }
    TRY("event", cudaEventRecord(e1, st));
    TRY("run", cudaEventSynchronize(e1));
    float ms;
    TRY("event", cudaEventElapsedTime(&ms, e0, e1));
    t[it] = ms * 1e3;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  qsort(t, (size_t)iters, sizeof t[0], cmp_double);
  *us = t[iters / 2];
  return 0;
}

/* ---- the run -------------------------------------------------------------------------------------------- */

static int prefill(void) {
  if (phase_launch(&blk, PH_PREFILL)) return -1;
  TRY("the prefill on the GPU", cudaStreamSynchronize((cudaStream_t)blk.stream));
  printf("\nreference: the prefill in fp32 (plain kernels of this program) ...\n");
  fflush(stdout);
  if (reference_phase(&blk, PH_PREFILL) || check_phase(PH_PREFILL, pre_check)) return -1;
  return 0;
}

/* Decode step t's inputs: seq_lens (the new token included) and the input rows. */
static int decode_inputs(int t, int32_t *lens) {
  const shape *sh = &blk.sh;
  cudaStream_t st = (cudaStream_t)blk.stream;
  for (int b = 0; b < sh->B; ++b) lens[b] = sh->lens[b] + t + 1;
  TRY("seq_lens", cudaMemcpyAsync(blk.b.seq_lens, lens, sizeof(int32_t) * (size_t)sh->B, cudaMemcpyHostToDevice, st));
  void *x = blk.b.t[PH_DECODE][X];
  if (t == 0) TRY("last prompt rows", k_last_rows(blk.b.t[PH_PREFILL][OUT], x, DT_BF16, blk.b.cu, sh->B, H, st));
  else TRY("next input rows", cudaMemcpyAsync(x, blk.b.t[PH_DECODE][OUT], (size_t)sh->B * H * 2, cudaMemcpyDeviceToDevice, st));
  /* everything the step writes reads NaN until it does */
  for (int a = 0; a < N_ACT; ++a)
    if (a != X && act_numel(sh, PH_DECODE, a))
      TRY("poison", cudaMemsetAsync(blk.b.t[PH_DECODE][a], 0xff, (size_t)act_numel(sh, PH_DECODE, a) * 2, st));
  TRY("decode inputs", cudaStreamSynchronize(st));
  return 0;
}

/* One eager decode step (loads modules, tensor maps, cuBLASLt) then the capture of one step. */
static int capture(cudaGraph_t *graph, cudaGraphExec_t *exec) {
  cudaStream_t st = (cudaStream_t)blk.stream;
  if (phase_launch(&blk, PH_DECODE)) return -1;
  TRY("the eager decode step on the GPU", cudaStreamSynchronize(st));
  TRY("begin capture", cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  int rc = phase_launch(&blk, PH_DECODE);
  int erc = (int)cudaStreamEndCapture(st, graph);
  if (rc) return -1;
  TRY("end capture", erc);
  TRY("instantiate the graph", cudaGraphInstantiate(exec, *graph, 0));
  return 0;
}

static int decode(cudaGraphExec_t *exec_out, size_t *nodes) {
  const shape *sh = &blk.sh;
  int32_t lens[MAX_SEQS];
  cudaGraph_t graph;
  if (decode_inputs(0, lens) || capture(&graph, exec_out)) return -1;  /* the eager run wrote step 0: poisoned again below */
  TRY("graph nodes", cudaGraphGetNodes(graph, NULL, nodes));
  printf("\ndecode: one step captured as a CUDA graph of %zu nodes; replayed for %d steps, each checked against the fp32 "
         "reference\n", *nodes, sh->steps);
  for (int t = 0; t < sh->steps; ++t) {
    if (decode_inputs(t, lens)) return -1;
    TRY("graph replay", cudaGraphLaunch(*exec_out, (cudaStream_t)blk.stream));
    TRY("decode step on the GPU", cudaStreamSynchronize((cudaStream_t)blk.stream));
    if (reference_phase(&blk, PH_DECODE) || check_phase(PH_DECODE, dec_check[t < MAX_STEPS ? t : MAX_STEPS - 1])) return -1;
  }
  cudaGraphDestroy(graph);
  return 0;
}

static int times(cudaGraphExec_t exec) {
  for (int s = 0; s < N_STEPS; ++s)
    if (time_it(T_STEP, s, NULL, &pre_us[s])) return -1;
  int items[N_STEPS + N_GLUE];
  int n = phase_order(&blk, PH_PREFILL, items);
  for (int i = 0; i < n; ++i)
    if (items[i] < 0 && time_it(T_GLUE, -1 - items[i], NULL, &glue_us[-1 - items[i]])) return -1;
  if (time_it(T_PHASE, PH_PREFILL, NULL, &prefill_total_us)) return -1;
  /* the decode step at the last step's lengths: eager launches, then the graph */
  if (time_it(T_PHASE, PH_DECODE, NULL, &decode_eager_us) || time_it(T_GRAPH, 0, exec, &decode_graph_us)) return -1;
  return 0;
}

/* ---- report --------------------------------------------------------------------------------------------- */

/* "M=5348 N=6144 K=4096 b_layout=col": the problem a step asks for, as it is (never chunked). */
static void problem_text(int ph, int s, char *buf, size_t n) {
  plan_req req;
  step_req(&blk.sh, ph, s, &req);
  buf[0] = 0;
  for (int d = 0; d < req.n_dims; ++d) {
    size_t len = strlen(buf);
    if (req.dims[d].enum_value) snprintf(buf + len, n - len, "%s%s=%s", d ? " " : "", req.dims[d].name, req.dims[d].enum_value);
    else snprintf(buf + len, n - len, "%s%s=%lld", d ? " " : "", req.dims[d].name, (long long)req.dims[d].v);
  }
}

static void print_plan(int standins) {
  for (int ph = 0; ph < N_PHASES; ++ph) {
    printf("\nplan, %s (per step: the problem, the family and variant libtunert chose, and why)\n", phase_name(ph));
    for (int s = 0; s < N_STEPS; ++s) {
      steprun *r = &blk.run[ph][s];
      char prob[160];
      problem_text(ph, s, prob, sizeof prob);
      printf("%2d %-28s %s\n   ", s + 1, step_title(s), prob);
      if (!r->p.ok) {
        printf("%s\n     %s\n", standins ? "STAND-IN (plain reference kernel, bf16)" : "NO VARIANT", r->p.why_not);
        continue;
      }
      printf("%s [%s] from %s\n     %s\n     variant %s; %s\n", r->p.family, kind_of(r), bundle_of(r->p.ctx), r->p.how,
             r->p.si.variant, r->p.si.binary);
    }
  }
  if (blk.run[PH_PREFILL][S_ATTN].p.ok)
    printf("\nprefill attention reads q, k, v %s\n",
           blk.dense_qkv ? "from dense copies (its variant reads them with TMA maps of dense rows, a bundle before format 1.6: a split glue kernel runs first)"
                         : "in place from the fused qkv rows (row stride passed)");
}

static int report(size_t nodes) {
  const shape *sh = &blk.sh;
  int n_ok = 0, n_lib = 0;
  printf("\nprefill: %d prompts, %d tokens packed\n", sh->B, sh->T);
  printf("%-3s %-28s %-17s %-9s %11s %10s %9s  %s\n", "", "step", "family", "selection", "time here", "rel-L2", "max abs", "check");
  double sum = 0, sum_glue = 0;
  for (int s = 0; s < N_STEPS; ++s) {
    const steprun *r = &blk.run[PH_PREFILL][s];
    const check *c = &pre_check[s];
    printf("%-3d %-28s %-17s %-9s %8.1f us %10.2e %9.2e  %s%s\n", s + 1, step_title(s), r->standin ? "-" : r->p.family, kind_of(r),
           pre_us[s], c->rel_l2, c->max_abs, c->ok ? "ok" : "MISMATCH", c->nonfinite ? " (non-finite values)" : "");
    sum += pre_us[s];
    n_ok += c->ok;
  }
  int items[N_STEPS + N_GLUE];
  int n = phase_order(&blk, PH_PREFILL, items);
  for (int i = 0; i < n; ++i)
    if (items[i] < 0) {
      printf("%-3s %-28s %-17s %-9s %8.1f us\n", "-", glue_title(-1 - items[i]), "(this program)", "", glue_us[-1 - items[i]]);
      sum_glue += glue_us[-1 - items[i]];
    }
  printf("prefill: %.1f us the whole pass (%.1f us steps + %.1f us glue, each timed alone)\n", prefill_total_us, sum, sum_glue);

  printf("\ndecode: %d sequences, page %d, block table %d pages wide; lengths grow by one per step\n", sh->B, sh->page, sh->max_pages);
  printf("%-5s %-14s %12s %12s %12s %10s  %s\n", "step", "seq_lens[0..]", "attn rel-L2", "out rel-L2", "worst rel-L2", "non-finite",
         "check");
  int dec_ok = 0, dec_n = sh->steps < MAX_STEPS ? sh->steps : MAX_STEPS;
  for (int t = 0; t < dec_n; ++t) {
    double worst = 0;
    unsigned long long nf = 0;
    int ok = 1, worst_s = 0;
    for (int s = 0; s < N_STEPS; ++s) {
      const check *c = &dec_check[t][s];
      if (!(c->rel_l2 <= worst)) worst = c->rel_l2, worst_s = s;
      nf += c->nonfinite;
      ok &= c->ok;
    }
    char lens[32];
    snprintf(lens, sizeof lens, "%d %d%s", sh->lens[0] + t + 1, sh->B > 1 ? sh->lens[1] + t + 1 : 0, sh->B > 2 ? " .." : "");
    printf("%-5d %-14s %12.2e %12.2e %9.2e (%d) %10llu  %s\n", t, lens, dec_check[t][S_ATTN].rel_l2, dec_check[t][S_NORMF].rel_l2,
           worst, worst_s + 1, nf, ok ? "ok" : "MISMATCH");
    dec_ok += ok;
  }
  printf("decode step: %.1f us eager (each step and glue launched from the host), %.1f us graph replay (%zu nodes)\n",
         decode_eager_us, decode_graph_us, nodes);
  for (int ph = 0; ph < N_PHASES; ++ph)
    for (int s = 0; s < N_STEPS; ++s) n_lib += !blk.run[ph][s].standin;
  printf("\nsummary: %d of %d steps through libtunert from the bundle%s; prefill %d of %d steps and decode %d of %d steps within "
         "rel-L2 %.0e of the fp32 reference\n",
         n_lib, 2 * N_STEPS, n_lib < 2 * N_STEPS ? " (the others: plain reference kernels, --standins)" : "", n_ok, N_STEPS, dec_ok,
         dec_n, TOL_REL_L2);
  printf("times: CUDA-event median of %d runs on this GPU\n", iters);
  printf("result: prefill_us=%.1f decode_eager_us=%.1f decode_graph_us=%.1f checks=%s\n", prefill_total_us, decode_eager_us,
         decode_graph_us, n_ok == N_STEPS && dec_ok == dec_n ? "ok" : "FAIL");
  return n_ok == N_STEPS && dec_ok == dec_n ? 0 : 1;
}

/* ---- main ----------------------------------------------------------------------------------------------- */

static void usage(void) {
  fprintf(stderr, "usage: decoder_block BUNDLE... [--plan] [--arch sm_90a] [--standins] [--device N] [--iters K]\n"
                  "                     [--lens L1,L2,... (default " DEFAULT_LENS ")] [--steps N (8)] [--page P (16)]\n");
}

static int parse_lens(const char *s, int *lens) {
  int n = 0;
  while (*s && n < MAX_SEQS) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > 1 << 20) return -1;
    lens[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return *s ? -1 : n;
}

static int open_bundles(int n, int plan_only, int ordinal, const char *arch) {
  tunert_options o;
  tunert_options_init(&o);
  o.device = ordinal;
  if (plan_only) { o.flags |= TUNERT_OPEN_NO_DEVICE; o.arch = arch; }
  for (int i = 0; i < n; ++i) {
    tunert_err e;
    if (tunert_open(bundle_paths[i], &o, &ctxs[n_ctxs], &e)) { fprintf(stderr, "decoder_block: %s\n", e.msg); return -1; }
    tunert_ctx *c = ctxs[n_ctxs++];
    tunert_bundle_info bi = {.struct_size = sizeof bi};
    tunert_bundle_info_get(c, &bi);
    printf("bundle %s: format %d.%d by tune %s, measured on %s, binaries %s, opened in %.2f ms; families:", bundle_paths[i],
           bi.format_major, bi.format_minor, bi.tool_version, bi.device_name, bi.archs, bi.open_ms);
    for (int f = 0; f < tunert_family_count(c); ++f) printf(" %s", tunert_family_name(c, f));
    printf("\n");
  }
  return 0;
}

static int run_on_gpu(int ordinal) {
  int n_dev = 0;
  if (cudaGetDeviceCount(&n_dev) || n_dev <= ordinal || cudaSetDevice(ordinal) || cudaFree(0)) {
    fprintf(stderr, "decoder_block: no usable NVIDIA GPU/driver here (device %d): this program runs kernels (--plan does not)\n",
            ordinal);
    return 3;
  }
  struct cudaDeviceProp prop;
  if (!cudaGetDeviceProperties(&prop, ordinal)) printf("device %d: %s (sm_%d%d)\n", ordinal, prop.name, prop.major, prop.minor);
  cudaStream_t st;
  if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking)) { fprintf(stderr, "decoder_block: cudaStreamCreate failed\n"); return 1; }
  blk.stream = st;
  if (block_alloc(&blk) || block_init_inputs(&blk)) return 1;
  if (block_bind(&blk)) return 4;
  cudaGraphExec_t exec;
  size_t nodes = 0;
  if (prefill() || decode(&exec, &nodes) || times(exec)) return 1;
  return report(nodes);
}

int main(int argc, char **argv) {
  int n_bundles = 0, ordinal = 0, plan_only = 0, standins = 0, steps = 8, page = 16, lens[MAX_SEQS];
  int B = parse_lens(DEFAULT_LENS, lens);
  const char *arch = "sm_90a";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) ordinal = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = atoi(argv[++i]);
      if (iters < 1 || iters > 256) { usage(); return 2; }
    } else if (!strcmp(argv[i], "--lens") && i + 1 < argc) {
      if ((B = parse_lens(argv[++i], lens)) < 1) { usage(); return 2; }
    } else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--page") && i + 1 < argc) page = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--arch") && i + 1 < argc) arch = argv[++i];
    else if (!strcmp(argv[i], "--plan")) plan_only = 1;
    else if (!strcmp(argv[i], "--standins")) standins = 1;
    else if (argv[i][0] != '-' && n_bundles < 16) bundle_paths[n_bundles++] = argv[i];
    else { usage(); return 2; }
  }
  char why[256];
  if (!n_bundles) { usage(); return 2; }
  if (shape_init(&blk.sh, lens, B, steps, page, why, sizeof why)) { fprintf(stderr, "decoder_block: %s\n", why); return 2; }

  int code = 0;
  printf("decoder block through libtunert, as a serving engine runs it (%s)\n", plan_only ? "plan only" : "run");
  if (open_bundles(n_bundles, plan_only, ordinal, arch)) { code = 4; goto done; }
  const shape *sh = &blk.sh;
  printf("model: hidden %d (%d query heads x %d, %d KV heads), MLP %d\n", H, HQ, D, HKV, I);
  printf("prefill: %d prompts of", sh->B);
  for (int b = 0; b < sh->B; ++b) printf(" %d", sh->lens[b]);
  printf(" tokens packed into T = %d rows (causal within each); then %d decode steps of the %d sequences over a paged KV cache "
         "(page %d, %d pages of %d per sequence, shuffled)\n",
         sh->T, sh->steps, sh->B, sh->page, sh->max_pages, sh->page);
  printf("MLP: up -> SiLU(u * scale + bias) -> down (the elementwise family computes silu(x * scale + bias); "
         "no family multiplies two tensors, so a SwiGLU gate is not expressible); no rotary embedding (no family)\n");

  int missing = block_plan(&blk, ctxs, n_ctxs, standins);
  print_plan(standins);
  if (missing && !standins) {
    fprintf(stderr, "decoder_block: the bundles cannot run %d of the %d steps (NO VARIANT above): make the bundle with those "
                    "families (tune run, then tune bundle --recipe ...), or pass --standins to run them with the plain "
                    "reference kernel\n", missing, 2 * N_STEPS);
    code = 4;
    goto done;
  }
  if (plan_only) { /* bind with null pointers: checks names, dtypes and sizes */
    if (block_bind(&blk)) code = 4;
    else printf("\nplan ok: every step of the prefill and the decode step %s, one problem each (no chunking); arguments bound by "
                "name with matching dtypes and sizes\n", missing ? "has a variant or a stand-in" : "has a variant");
    goto done;
  }
  code = run_on_gpu(ordinal);
done:
  for (int i = 0; i < n_ctxs; ++i) tunert_close(ctxs[i]);
  return code;
}
