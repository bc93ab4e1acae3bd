/* main.c: the `tune` command line: one table of verbs (commands.h). Only main() may exit. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "argv.h"
#include "commands.h"
#include "compare.h"
#include "compile_server.h"
#include "report.h"
#include "version.h"
#include "worker.h"

static const char *usage_worker =
    "usage: tune worker [--device N]\n"
    "\n"
    "The GPU worker process: tune run starts one per GPU and speaks its protocol\n"
    "(tuner/protocol.h) on the worker's stdin and stdout; not for direct use.\n"
    "\n"
    "  --device N   the CUDA device ordinal to measure on (default 0)\n";

/* `tune worker --device N`: started by tune run (backend_cuda.c), speaks the protocol on stdout. */
static int cmd_worker(int argc, char **argv) {
  int dev = 0;
  tune_argv ap;
  tune_argv_init(&ap, "tune worker", argc, argv);
  while (tune_argv_next(&ap)) {
    if (tune_argv_flag(&ap, "--help") || tune_argv_flag(&ap, "-h")) { fputs(usage_worker, stdout); return 0; }
    if (!tune_argv_int(&ap, "--device", &dev)) tune_argv_unknown(&ap);
  }
  if (ap.failed) { fprintf(stderr, "%s\n", ap.msg); return 2; }
  /* the tuner decides when the worker stops: a signal to the whole process group (Ctrl-C, a
     group SIGTERM) must not kill it mid-measurement, which would record a false crash */
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  int out_fd = dup(1);
  dup2(2, 1); /* stray prints must not corrupt the protocol */
  return tune_worker_main(dev, 0, out_fd);
}

/* `tune compile-server`: started by the compile pool (compile_server.h), one per pool thread. */
static int cmd_compile_server(int argc, char **argv) {
  (void)argv;
  if (argc > 0) {
    fputs("usage: tune compile-server\n\nA compile process of tune's compile pool: it speaks its protocol on stdin\n"
          "and stdout (tuner/compile_server.h); not for direct use.\n", stdout);
    return 2;
  }
  /* like the worker: the tuner ends it by closing its stdin, after its last compile */
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  int out_fd = dup(1);
  dup2(2, 1); /* stray prints must not corrupt the protocol */
  int rc = tune_compile_server_main(0, out_fd);
  close(out_fd);
  return rc;
}

static int cmd_version(int argc, char **argv) {
  if (argc > 0 && strcmp(argv[0], "--help") && strcmp(argv[0], "-h")) {
    fprintf(stderr, "tune version: unexpected argument %s (it takes none)\n", argv[0]);
    return 2;
  }
  puts("tune " TUNE_VERSION);
  return 0;
}

/* The search benchmark is a research tool now, outside the product binary. */
static int cmd_bench_search_moved(int argc, char **argv) {
  fprintf(stderr, "tune: bench-search is its own tool now: build/tools/tune-bench-search RECIPE [options]\n");
  return 2;
}

typedef struct verb {
  const char *name;
  int (*run)(int argc, char **argv); /* the arguments after the verb */
  const char *usage;                 /* its line in `tune --help`; NULL: not listed */
} verb;

static const verb verbs[] = {
    {"run", tune_cmd_run, "run RECIPE          tune the kernels a Lua recipe describes (tune run --help)"},
    {"db", tune_cmd_db, "db best|list|show|export|merge  query or merge results databases (tune db --help)"},
    {"bundle", tune_cmd_bundle, "bundle              export the best variants for libtunert (tune bundle --help)"},
    {"compare", tune_compare_main, "compare RECIPE      tune's best variants against cuBLAS/cuDNN/PyTorch in interleaved\n"
                                   "                      rounds, burst and sustained timing (tune compare --help)"},
    {"report", tune_cmd_report, "report              one HTML page of a database's searches, roofline, peers (tune report --help)"},
    {"worker", cmd_worker, "worker              the GPU worker process (started by tune run; not for direct use)"},
    {"version", cmd_version, "version             print the version"},
    {"--version", cmd_version, NULL},
    {"bench-search", cmd_bench_search_moved, NULL},
    {"compile-server", cmd_compile_server, NULL},
};

static void print_usage(FILE *f) {
  fputs("tune " TUNE_VERSION ": CUDA kernel autotuner\n\nusage: tune <verb> [options]\n\nverbs:\n", f);
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; ++i)
    if (verbs[i].usage) fprintf(f, "  %s\n", verbs[i].usage);
  fputs("\nWithout a GPU, `tune run RECIPE` replays the measurements recorded on a real GPU\n"
        "for that recipe (data/recorded/<recipe>.db) and says so.\n",
        f);
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  /* the compile pool runs NVRTC in copies of this very binary, so the compile key's NVRTC is theirs */
  tune_compile_servers_enable("/proc/self/exe");
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; ++i) {
    if (strcmp(argv[1], verbs[i].name)) continue;
    int rc = verbs[i].run(argc - 2, argv + 2);
    tune_compile_servers_stop();
    return rc;
  }
  fprintf(stderr, "tune: unknown verb '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
