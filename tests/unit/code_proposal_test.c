/* code_proposal_test.c: the static refusal of a code proposal's PTX (tune_code_ptx_refused). */
#include <string.h>

#include "check.h"
#include "code_proposal.h"

static int refused(const char *ptx, const char *want) {
  char why[256] = "";
  int r = tune_code_ptx_refused(ptx, strlen(ptx), why, sizeof why);
  return r && strstr(why, want) != NULL;
}

int main(void) {
  char why[256];
  const char *clean =
      ".version 8.8\n.target sm_90a\n.address_size 64\n"
      ".visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\t.reg .b32 %r<4>;\n"
      "\t.shared .align 4 .b8 buf[128];\n\tld.global.u32 %r1, [%rd1];\n\tst.global.u32 [%rd2], %r1;\n\tret;\n}\n";
  CHECK(tune_code_ptx_refused(clean, strlen(clean), why, sizeof why) == 0); /* global loads and stores are fine */
  CHECK(refused(".version 8.8\n.visible .global .align 4 .u32 calls;\n.visible .entry k()\n{\n\tret;\n}\n", ".global variable"));
  CHECK(refused(".version 8.8\n.global .align 8 .b8 cache[64];\n", ".global variable"));
  CHECK(refused(".visible .entry k()\n{\n\tmov.u64 %rd1, %globaltimer;\n\tret;\n}\n", "%globaltimer"));
  CHECK(refused(".visible .entry k()\n{\n\tmov.u64 %rd1, %clock64;\n\tret;\n}\n", "%clock64"));
  CHECK(refused(".visible .entry k()\n{\n\tmov.u32 %r1, %clock;\n\tret;\n}\n", "%clock"));
  CHECK(tune_code_ptx_refused(NULL, 0, why, sizeof why) == 0);
  printf("code_proposal_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
