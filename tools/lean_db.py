#!/usr/bin/env python3
"""lean_db.py: make a recorded database fit for data/recorded/ (and for the device tool's 16 MiB
file limit): copy SRC to DST, drop the compile cache (cubins; every result keeps its registers,
shared memory and spills), leave WAL mode, VACUUM. The measurements are not touched.

usage: lean_db.py SRC DST
"""
import shutil
import sqlite3
import sys

src, dst = sys.argv[1], sys.argv[2]
s = sqlite3.connect(src)
s.execute("PRAGMA wal_checkpoint(TRUNCATE)")
d = sqlite3.connect(dst)
s.backup(d)
s.close()
d.execute("DELETE FROM binaries")
d.commit()
d.execute("PRAGMA journal_mode=DELETE")
d.execute("VACUUM")
n = d.execute("SELECT count(*) FROM results").fetchone()[0]
d.close()
print(f"{dst}: {n} results, compile cache dropped")
