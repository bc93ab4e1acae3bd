/* tunert_expr_test.c: unit tests of runtime/tunert_expr.c, the bundle
 * expression language: fixed cases (values, types, errors, limits) and a
 * differential test against Lua 5.4 itself on random expressions, since the
 * tuner evaluates the same strings in Lua and the two must agree exactly.
 * Prints "N passed, M failed"; exits nonzero on any failure. */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunert_expr.h"

static int n_pass, n_fail;

#define CHECK(c)                                                                 \
  do {                                                                           \
    if (c) n_pass++;                                                             \
    else { n_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); } \
  } while (0)

static const char *names[] = {"N", "M", "B", "causal", "BLOCK", "flag"};
static tunert_xval env[6];

static void set_env(void) {
  env[0] = tunert_xint(1000);
  env[1] = tunert_xint(-7);
  env[2] = tunert_xint(4);
  env[3] = tunert_xbool(1);
  env[4] = tunert_xint(256);
  env[5] = tunert_xbool(0);
}

/* Evaluate item 0 of text; returns 0 ok. */
static int ev(const char *text, tunert_xval *out, char *msg, size_t n) {
  tunert_expr *e = NULL;
  int rc = tunert_expr_parse(text, names, 6, NULL, &e, msg, n);
  if (rc) return rc;
  rc = tunert_expr_eval(e, 0, env, out, msg, n);
  tunert_expr_free(e, NULL);
  return rc;
}

static void want_int(const char *text, int64_t want, int line) {
  tunert_xval v;
  char msg[512] = "";
  int rc = ev(text, &v, msg, sizeof msg);
  if (rc == 0 && v.t == TUNERT_XINT && v.i == want) { n_pass++; return; }
  n_fail++;
  char b[64] = "";
  if (!rc) tunert_xval_format(&v, b, sizeof b);
  fprintf(stderr, "line %d: '%s': want integer %lld, got %s %s\n", line, text, (long long)want, rc ? "error" : b, msg);
}

static void want_float(const char *text, double want, int line) {
  tunert_xval v;
  char msg[512] = "";
  int rc = ev(text, &v, msg, sizeof msg);
  if (rc == 0 && v.t == TUNERT_XFLOAT && (v.f == want || (isnan(v.f) && isnan(want)))) { n_pass++; return; }
  n_fail++;
  char b[64] = "";
  if (!rc) tunert_xval_format(&v, b, sizeof b);
  fprintf(stderr, "line %d: '%s': want float %.17g, got %s %s\n", line, text, want, rc ? "error" : b, msg);
}

static void want_bool(const char *text, int want, int line) {
  tunert_xval v;
  char msg[512] = "";
  int rc = ev(text, &v, msg, sizeof msg);
  if (rc == 0 && v.t == TUNERT_XBOOL && v.i == want) { n_pass++; return; }
  n_fail++;
  fprintf(stderr, "line %d: '%s': want %s, got %s %s\n", line, text, want ? "true" : "false", rc ? "error" : "other", msg);
}

static void want_error(const char *text, const char *fragment, int line) {
  tunert_xval v;
  char msg[512] = "";
  int rc = ev(text, &v, msg, sizeof msg);
  if (rc == TUNERT_EEXPR && strstr(msg, fragment)) { n_pass++; return; }
  n_fail++;
  fprintf(stderr, "line %d: '%s': want an error with '%s', got rc %d '%s'\n", line, text, fragment, rc, msg);
}

#define INT(t, w) want_int(t, w, __LINE__)
#define FLT(t, w) want_float(t, w, __LINE__)
#define BOOL(t, w) want_bool(t, w, __LINE__)
#define ERR(t, f) want_error(t, f, __LINE__)

static void fixed_cases(void) {
  INT("1 + 2 * 3", 7);
  INT("(1 + 2) * 3", 9);
  INT("N", 1000);
  INT("N // 3", 333);
  INT("-N // 3", -334);           /* floor, not truncation */
  INT("N // -3", -334);
  INT("M % 3", 2);                /* sign of the divisor, as Lua */
  INT("7 % -3", -2);
  INT("-7 % -3", -1);
  INT("N % BLOCK", 1000 % 256);
  INT("(N + BLOCK - 1) // BLOCK", 4);
  INT("min(N, BLOCK, 7)", 7);
  INT("max(3, N)", 1000);
  INT("math.max(3, N)", 1000);
  INT("ceil(N / BLOCK)", 4);      /* float division, integral result back to an integer */
  INT("math.ceil(N / BLOCK)", 4);
  INT("floor(N / BLOCK)", 3);
  INT("floor(7)", 7);
  INT("abs(M)", 7);
  INT("- -3", 3);
  INT("0x10 + 1", 17);
  INT("9223372036854775807 + 1", INT64_MIN); /* wraps like Lua */
  INT("causal and 1 or 2", 1);
  INT("flag and 1 or 2", 2);
  INT("0 and 5 or 6", 5);         /* 0 is true, as in Lua */
  INT("{N, 2, 3}", 1000);
  INT("  ( ( N ) )  ", 1000);
  FLT("B * 2 ^ 0 // 1", 4.0);     /* ^ is float, so the rest is float too */
  FLT("N / 8", 125.0);
  FLT("2 ^ 10", 1024.0);
  FLT("2 ^ -1", 0.5);
  FLT("-2 ^ 2", -4.0);            /* unary minus binds looser than ^ */
  FLT("2 ^ 3 ^ 2", 512.0);        /* right-associative */
  FLT("7.0 // 2", 3.0);
  FLT("-7.5 % 2", 0.5);
  FLT("1e3 + 0.5", 1000.5);
  FLT(".5 * 4", 2.0);
  FLT("sqrt(16)", 4.0);
  FLT("1 / 0", INFINITY);
  FLT("min(1.5, 2)", 1.5);
  FLT("99999999999999999999", 1e20); /* an integer literal that overflows is a float, as in Lua */
  BOOL("N == 1000", 1);
  BOOL("N ~= 1000", 0);
  BOOL("1 == 1.0", 1);
  BOOL("causal == true", 1);
  BOOL("causal == 1", 0);         /* booleans are not numbers */
  BOOL("not causal", 0);
  BOOL("not flag", 1);
  BOOL("not 0", 0);
  BOOL("N % BLOCK == 0 or N < 2048", 1);
  BOOL("N >= 1000 and N <= 1000", 1);
  BOOL("N > 999.5", 1);
  BOOL("true", 1);
  BOOL("false or false", 0);
  ERR("N // 0", "n//0");
  ERR("N % 0", "n%%0");
  ERR("causal + 1", "arithmetic on a boolean");
  ERR("causal < 1", "compare");
  ERR("min(causal, 1)", "boolean");
  ERR("unknown_dim * 2", "unknown name 'unknown_dim'");
  ERR("foo(1)", "unknown function 'foo'");
  ERR("N !== 3", "'~='");
  ERR("N != 3", "'~='");
  ERR("N && 1", "'and'");
  ERR("N ? 1 : 2", "'c and a or b'");
  ERR("N -- comment", "comment");
  ERR("N +", "unexpected end");
  ERR("(N", "')' expected");
  ERR("N)", "unexpected ')'");
  ERR("", "unexpected end");
  ERR("1.2.3", "malformed number");
  ERR("12abc", "malformed number");
  ERR("math.pi", "only calls");
  ERR("math", "'math' must be followed");
  ERR("nil", "unexpected 'nil'");
  ERR("floor(1, 2)", "at most 1");
  ERR("min()", "needs an argument");
  ERR("N .. M", "unexpected '.'");
  ERR("#N", "unexpected '#'");
  ERR("{N, 2", "'}' expected");
  /* lists */
  {
    tunert_expr *e = NULL;
    char msg[256];
    CHECK(tunert_expr_parse("ceil(N / BLOCK), 1, (min(B, 2))", names, 6, NULL, &e, msg, sizeof msg) == 0);
    CHECK(tunert_expr_items(e) == 3);
    tunert_xval v;
    CHECK(tunert_expr_eval(e, 2, env, &v, msg, sizeof msg) == 0 && v.t == TUNERT_XINT && v.i == 2);
    CHECK(tunert_expr_eval(e, 3, env, &v, msg, sizeof msg) == TUNERT_EEXPR);
    CHECK(tunert_expr_eval(e, -1, env, &v, msg, sizeof msg) == TUNERT_EEXPR);
    tunert_expr_free(e, NULL);
    CHECK(tunert_expr_parse("{1, 2, 3,}", names, 6, NULL, &e, msg, sizeof msg) == 0 && tunert_expr_items(e) == 3);
    tunert_expr_free(e, NULL);
  }
  /* limits: deep nesting and long texts are refused, not a stack overflow */
  {
    size_t n = 200000;
    char *deep = malloc(n + 1);
    for (size_t i = 0; i < n / 2; ++i) deep[i] = '(';
    for (size_t i = n / 2; i < n; ++i) deep[i] = ')';
    deep[n] = 0;
    tunert_expr *e = NULL;
    char msg[256];
    CHECK(tunert_expr_parse(deep, names, 6, NULL, &e, msg, sizeof msg) == TUNERT_EEXPR);
    memset(deep, '(', 300);
    strcpy(deep + 300, "1");
    CHECK(tunert_expr_parse(deep, names, 6, NULL, &e, msg, sizeof msg) == TUNERT_EEXPR && strstr(msg, "nested too deeply"));
    for (int i = 0; i < 300; ++i) { deep[2 * i] = '-'; deep[2 * i + 1] = ' '; }
    strcpy(deep + 600, "1");
    CHECK(tunert_expr_parse(deep, names, 6, NULL, &e, msg, sizeof msg) == TUNERT_EEXPR);
    /* long but flat: 1+1+...+1 within the limit works */
    size_t k = 0;
    for (int i = 0; i < 900; ++i) { deep[k++] = '1'; deep[k++] = '+'; }
    deep[k++] = '1';
    deep[k] = 0;
    tunert_xval v;
    CHECK(tunert_expr_parse(deep, names, 6, NULL, &e, msg, sizeof msg) == 0 && tunert_expr_eval(e, 0, env, &v, msg, sizeof msg) == 0 && v.i == 901);
    tunert_expr_free(e, NULL);
    /* a chain too long to evaluate within the recursion bound is refused when parsed */
    k = 0;
    for (int i = 0; i < 5000; ++i) { deep[k++] = '1'; deep[k++] = '+'; }
    deep[k++] = '1';
    deep[k] = 0;
    CHECK(tunert_expr_parse(deep, names, 6, NULL, &e, msg, sizeof msg) == TUNERT_EEXPR && strstr(msg, "nested too deeply"));
    free(deep);
  }
  /* conversions */
  {
    int64_t i;
    tunert_xval f = tunert_xfloat(3.0), g = tunert_xfloat(3.5), b = tunert_xbool(1);
    CHECK(tunert_xval_to_i64(&f, &i) == 0 && i == 3);
    CHECK(tunert_xval_to_i64(&g, &i) == -1);
    CHECK(tunert_xval_to_i64(&b, &i) == 0 && i == 1);
    tunert_xval h = tunert_xfloat(1e30);
    CHECK(tunert_xval_to_i64(&h, &i) == -1);
    char buf[32];
    tunert_xval_format(&f, buf, sizeof buf);
    CHECK(!strcmp(buf, "3.0"));
  }
}

/* ---- differential test against Lua ------------------------------------------------------------ */

typedef struct rng { uint64_t s; } rng;
static uint64_t next(rng *r) { r->s ^= r->s << 13; r->s ^= r->s >> 7; r->s ^= r->s << 17; return r->s; }
static int pick(rng *r, int n) { return (int)(next(r) % (uint64_t)n); }

static void gen(rng *r, char *buf, size_t n, int depth) {
  if (n < 8) { snprintf(buf, n, "1"); return; }
  static const char *atoms[] = {"N", "M", "B", "BLOCK", "causal", "flag", "0", "1", "2", "3", "7", "-5", "128", "1000",
                                "0.5", "2.5", "1e2", "true", "false", "0x1f"};
  static const char *bin[] = {"+", "-", "*", "/", "//", "%", "^", "==", "~=", "<", "<=", ">", ">=", "and", "or"};
  static const char *fn1[] = {"floor", "ceil", "abs", "math.floor", "math.ceil"};
  static const char *fn2[] = {"min", "max", "math.min", "math.max"};
  if (depth <= 0 || pick(r, 4) == 0) { snprintf(buf, n, "%s", atoms[pick(r, 20)]); return; }
  char a[1024], b[1024];
  switch (pick(r, 6)) {
  case 0: gen(r, a, sizeof a, depth - 1); snprintf(buf, n, "(%s)", a); break;
  case 1: gen(r, a, sizeof a, depth - 1); snprintf(buf, n, "%s %s", pick(r, 2) ? "not" : "-", a); break;
  case 2: gen(r, a, sizeof a, depth - 1); snprintf(buf, n, "%s(%s)", fn1[pick(r, 5)], a); break;
  case 3:
    gen(r, a, sizeof a, depth - 1); gen(r, b, sizeof b, depth - 1);
    snprintf(buf, n, "%s(%s, %s)", fn2[pick(r, 4)], a, b);
    break;
  default:
    gen(r, a, sizeof a, depth - 1); gen(r, b, sizeof b, depth - 1);
    snprintf(buf, n, "%s %s %s", a, bin[pick(r, 15)], b);
  }
}

/* Evaluate text in Lua the way tune does (a chunk "return (text)" with the names in _ENV). */
static int lua_eval(lua_State *L, const char *text, tunert_xval *out) {
  char chunk[8192];
  snprintf(chunk, sizeof chunk, "local min, max, floor, ceil, abs, sqrt = math.min, math.max, math.floor, math.ceil, math.abs, math.sqrt\n"
                                "return (%s)", text);
  if (luaL_loadstring(L, chunk) != LUA_OK) { lua_pop(L, 1); return -2; }
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) { lua_pop(L, 1); return -1; }
  int rc = 0;
  if (lua_type(L, -1) == LUA_TBOOLEAN) *out = tunert_xbool(lua_toboolean(L, -1));
  else if (lua_isinteger(L, -1)) *out = tunert_xint(lua_tointeger(L, -1));
  else if (lua_type(L, -1) == LUA_TNUMBER) *out = tunert_xfloat(lua_tonumber(L, -1));
  else rc = -3;
  lua_pop(L, 1);
  return rc;
}

static void differential(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  for (int i = 0; i < 6; ++i) {
    if (env[i].t == TUNERT_XBOOL) lua_pushboolean(L, (int)env[i].i);
    else lua_pushinteger(L, env[i].i);
    lua_setglobal(L, names[i]);
  }
  rng r = {0x9e3779b97f4a7c15ull};
  int agree = 0, both_fail = 0, disagree = 0;
  for (int it = 0; it < 20000; ++it) {
    char text[4096];
    gen(&r, text, sizeof text, 1 + pick(&r, 5));
    tunert_xval a, b;
    char msg[512];
    int rc_c = ev(text, &a, msg, sizeof msg);
    int rc_l = lua_eval(L, text, &b);
    if (rc_l == -2) continue; /* not a Lua expression (cannot happen with this grammar) */
    if (rc_c && rc_l) { both_fail++; continue; }
    int same = !rc_c && !rc_l && a.t == b.t &&
               (a.t == TUNERT_XFLOAT ? (a.f == b.f || (isnan(a.f) && isnan(b.f))) : a.i == b.i);
    if (same) { agree++; continue; }
    if (++disagree <= 10) {
      char x[64] = "error", y[64] = "error";
      if (!rc_c) tunert_xval_format(&a, x, sizeof x);
      if (!rc_l) tunert_xval_format(&b, y, sizeof y);
      fprintf(stderr, "differs from Lua: '%s': tunert %s (%s), Lua %s\n", text, x, rc_c ? msg : "", y);
    }
  }
  lua_close(L);
  printf("differential vs Lua 5.4: %d agree, %d error in both, %d differ\n", agree, both_fail, disagree);
  CHECK(disagree == 0);
  CHECK(agree > 10000);
}

/* The allocator is used for the one allocation, and a failing one is ENOMEM. */
static size_t allocs, frees;
static int fail_next;
static void *t_alloc(void *ud, size_t n) { (void)ud; if (fail_next) return NULL; allocs++; return malloc(n); }
static void t_free(void *ud, void *p, size_t n) { (void)ud; (void)n; frees++; free(p); }

static void allocator_cases(void) {
  tunert_allocator al = {t_alloc, t_free, NULL};
  tunert_expr *e = NULL;
  char msg[128];
  CHECK(tunert_expr_parse("N + 1", names, 6, &al, &e, msg, sizeof msg) == 0 && allocs == 1);
  tunert_expr_free(e, &al);
  CHECK(frees == 1);
  CHECK(tunert_expr_parse("N + ", names, 6, &al, &e, msg, sizeof msg) == TUNERT_EEXPR && e == NULL && frees == 2);
  fail_next = 1;
  CHECK(tunert_expr_parse("N + 1", names, 6, &al, &e, msg, sizeof msg) == TUNERT_ENOMEM && e == NULL);
  fail_next = 0;
}

int main(void) {
  set_env();
  fixed_cases();
  differential();
  allocator_cases();
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
