/* lua_limits_test.c: the instruction budget, the memory cap and stop signals of recipe Lua
 * (tuner/lua_limits.h), on chunks run directly. CPU only. */
#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

#include "lua_limits.h"
#include "session.h"

#include "check.h"

/* Run chunk text (named "=t") under lim; returns the pcall status, the message in msg. */
static int run(const tune_lua_limits *lim, const char *text, char *msg, size_t n) {
  lua_State *L = tune_lua_newstate(lim);
  if (!L) return -1;
  luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
  luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
  lua_settop(L, 0);
  int rc = luaL_loadbufferx(L, text, strlen(text), "=t", "t");
  tune_lua_evaluating(L, "while testing");
  if (rc == LUA_OK) rc = tune_lua_pcall(L, 0, 0, 0);
  snprintf(msg, n, "%s", rc == LUA_OK ? "" : lua_tostring(L, -1));
  tune_lua_close(L);
  return rc;
}

static void test_budget(void) {
  tune_lua_limits lim = {.max_instructions = 100000, .max_bytes = 64u << 20};
  char m[512];
  CHECK(run(&lim, "local n = 0\nfor i = 1, 1000 do n = n + i end", m, sizeof m) == LUA_OK);
  CHECK(run(&lim, "local n = 0\nwhile true do\n n = n + 1 end", m, sizeof m) != LUA_OK);
  CHECK(strstr(m, "t:3: instruction budget of 100000 exceeded while testing") == m);
  /* the recipe's own pcall catches the error, but every instruction after it raises again */
  CHECK(run(&lim, "while true do pcall(function() while true do end end) end", m, sizeof m) != LUA_OK);
  CHECK(strstr(m, "instruction budget of 100000 exceeded") != NULL);
  /* the budget is per outermost call: the state is fine after a failure */
  lua_State *L = tune_lua_newstate(&lim);
  luaL_loadstring(L, "while true do end");
  CHECK(tune_lua_pcall(L, 0, 0, 0) != LUA_OK);
  lua_settop(L, 0);
  luaL_loadstring(L, "local n = 0 for i = 1, 10000 do n = n + i end");
  CHECK(tune_lua_pcall(L, 0, 0, 0) == LUA_OK);
  tune_lua_close(L);
}

static void test_memory(void) {
  tune_lua_limits lim = {.max_instructions = 1000000000LL, .max_bytes = 8u << 20};
  char m[512];
  CHECK(run(&lim, "local t = {}\nfor i = 1, 1000 do t[i] = {} end", m, sizeof m) == LUA_OK);
  CHECK(run(&lim, "local t = {}\nwhile true do\n t[#t + 1] = {} end", m, sizeof m) != LUA_OK);
  CHECK(strstr(m, "t:3: memory limit of 8 MiB exceeded while testing") == m);
  /* one huge allocation in a C function: the position is the Lua line that called it */
  CHECK(run(&lim, "local s =\n string.rep('x', 1 << 30)", m, sizeof m) != LUA_OK);
  CHECK(strstr(m, "t:2: memory limit of 8 MiB exceeded") == m);
  /* outside a call nothing is refused: the host may still build what it needs */
  lua_State *L = tune_lua_newstate(&lim);
  lua_createtable(L, 1 << 20, 0);
  CHECK(lua_istable(L, -1));
  tune_lua_close(L);
}

static void test_interrupt(void) {
  tune_lua_limits lim = {.max_instructions = 1000000000000LL, .max_bytes = 64u << 20};
  char m[512];
  tune_interrupted = 2;
  CHECK(run(&lim, "while true do end", m, sizeof m) != LUA_OK);
  CHECK(strstr(m, "t:1: interrupted (signal 2) while testing") == m);
  tune_interrupted = 0;
}

static void test_env(void) {
  tune_lua_limits lim;
  tune_err err;
  tune_err_clear(&err);
  unsetenv(TUNE_LUA_INSTRUCTIONS_ENV);
  unsetenv(TUNE_LUA_MB_ENV);
  CHECK(tune_lua_limits_init(&lim, &err) == TUNE_OK);
  CHECK(lim.max_instructions == TUNE_LUA_DEFAULT_INSTRUCTIONS && lim.max_bytes == (size_t)TUNE_LUA_DEFAULT_MB << 20);
  setenv(TUNE_LUA_INSTRUCTIONS_ENV, "2.5e6", 1);
  setenv(TUNE_LUA_MB_ENV, "32", 1);
  CHECK(tune_lua_limits_init(&lim, &err) == TUNE_OK);
  CHECK(lim.max_instructions == 2500000 && lim.max_bytes == 32u << 20);
  const char *bad[] = {"0", "-5", "1.5", "x", "12abc"};
  for (int i = 0; i < 5; ++i) {
    tune_err_clear(&err);
    setenv(TUNE_LUA_MB_ENV, bad[i], 1);
    CHECK(tune_lua_limits_init(&lim, &err) == TUNE_EINVAL && strstr(err.msg, TUNE_LUA_MB_ENV "=") == err.msg);
  }
  unsetenv(TUNE_LUA_INSTRUCTIONS_ENV);
  unsetenv(TUNE_LUA_MB_ENV);
}

int main(void) {
  test_budget();
  test_memory();
  test_interrupt();
  test_env();
  printf("lua_limits_test: %d passed, %d failed\n", n_pass, n_fail);
  return n_fail != 0;
}
