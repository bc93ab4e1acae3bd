/* db_recorded.c: which device a recorded database speaks for (replay). */
#include <stdio.h>
#include <string.h>

#include "db_int.h"

static void copy_col(sqlite3_stmt *st, int c, char *dst, size_t n) {
  const unsigned char *t = sqlite3_column_text(st, c);
  snprintf(dst, n, "%s", t ? (const char *)t : "");
}

int db_device_recorded(db_conn *db, const char *recipe_name, db_device *dev, tune_err *err) {
  int rc = TUNE_OK, step = 0;
  sqlite3_stmt *st = NULL;
  if (!db || !recipe_name || !dev) return tune_fail(err, TUNE_EINVAL, "db_device_recorded: NULL argument");
  SQL_TRY(db, err, sqlite3_prepare_v2(db->h,
      "SELECT d.kind, d.name, d.arch, d.cc_major, d.cc_minor, d.sm_count, d.sm_clock_khz,"
      " d.mem_clock_khz, d.mem_bus_bits, d.mem_bytes, d.l2_bytes, d.smem_per_block_optin,"
      " d.driver, d.cuda, d.uuid FROM results r JOIN recipes rc ON rc.id = r.recipe_id"
      " JOIN devices d ON d.id = r.device_id WHERE rc.name = ?1 AND d.kind = 'gpu'"
      " ORDER BY r.id DESC LIMIT 1", -1, &st, NULL));
  SQL_TRY(db, err, sqlite3_bind_text(st, 1, recipe_name, -1, SQLITE_STATIC));
  SQL_STEP(db, err, st, step);
  if (step != SQLITE_ROW) {
    rc = tune_fail(err, TUNE_ENOTFOUND, "db: %s: no GPU results for recipe %s", db->path, recipe_name);
    goto fail;
  }
  memset(dev, 0, sizeof *dev);
  int c = 0;
  copy_col(st, c++, dev->kind, sizeof dev->kind);
  copy_col(st, c++, dev->name, sizeof dev->name);
  copy_col(st, c++, dev->arch, sizeof dev->arch);
  dev->cc_major = sqlite3_column_int(st, c++);
  dev->cc_minor = sqlite3_column_int(st, c++);
  dev->sm_count = sqlite3_column_int(st, c++);
  dev->sm_clock_khz = sqlite3_column_int(st, c++);
  dev->mem_clock_khz = sqlite3_column_int(st, c++);
  dev->mem_bus_bits = sqlite3_column_int(st, c++);
  dev->mem_bytes = sqlite3_column_int64(st, c++);
  dev->l2_bytes = sqlite3_column_int(st, c++);
  dev->smem_per_block_optin = sqlite3_column_int(st, c++);
  copy_col(st, c++, dev->driver, sizeof dev->driver);
  copy_col(st, c++, dev->cuda, sizeof dev->cuda);
  copy_col(st, c++, dev->uuid, sizeof dev->uuid);
fail:
  sqlite3_finalize(st);
  return rc;
}
