#!/usr/bin/env python3
"""recordings_status.py [TUNE]: which recordings under data/recorded/ still replay as the current source.

A recording answers replays with the measurements of the recipe source it was made with; after a
code edit of the recipe or its template (comments do not count: source_hash.h) replay adds "note:
recorded with another version ..." and `tune bundle` refuses the recording without
--allow-source-change. This replays every recipe file on every database under data/recorded/ (budget 1,
into a scratch database; no GPU needed; a file whose recipes a database lacks stops at once) and
prints one line per (recording, recipe): current, another version with both hashes, or a recipe no
file defines any more. TUNE: the tune binary (default build/tune). Exit status 0; 2 when tune cannot run.
"""
import pathlib
import re
import sqlite3
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
TUNE = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build" / "tune")
REPLAYING = re.compile(r"^replaying (\S+) from (.+):$")
NOTE = re.compile(r"note: recorded with another version .*\(source (\w+), now (\w+)\)")


def replay(recipe_file, device=None):
    """{(recording path, recipe): None (current) or (recorded hash, current hash)} of one replay."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [TUNE, "run", str(recipe_file), "--root", str(ROOT), "--budget", "1", "--quiet", "--db", tmp + "/x.db"]
        if device:
            cmd += ["--device", "replay:" + str(device)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            sys.exit(f"recordings_status: {' '.join(cmd)}: {e}")
    found, current = {}, None
    for line in out.splitlines():
        m = REPLAYING.match(line)
        if m:
            current = (str(pathlib.Path(m.group(2)).resolve().relative_to(ROOT)), m.group(1))
            found[current] = None
            continue
        n = NOTE.search(line)
        if n and current:
            found[current] = (n.group(1), n.group(2))
    return found


def recipes_in(db):
    """The recipes the recording holds GPU results of."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        return {r[0] for r in con.execute("""select distinct rc.name from results r join recipes rc on rc.id = r.recipe_id
                                                 join devices d on d.id = r.device_id where d.kind = 'gpu'""")}
    except sqlite3.Error:
        return set()


def main():
    files = sorted(p for p in (ROOT / "recipes").rglob("*.lua") if "shared" not in p.parts)
    status = {}
    for db in sorted((ROOT / "data" / "recorded").rglob("*.db")):
        names = recipes_in(db)
        rel = str(db.relative_to(ROOT))
        for f in files:  # a file none of whose recipes the database holds fails at once
            for (rec, name), st in replay(f, db).items():
                if rec == rel and name in names:
                    status[(rec, name)] = st
        for name in sorted(names - {n for (r, n) in status if r == rel}):
            status[(rel, name)] = "no recipe file defines it any more"
    for (rec, name), st in sorted(status.items()):
        text = "current" if st is None else st if isinstance(st, str) else f"another version (recorded {st[0]}, now {st[1]})"
        print(f"{rec}  {name}  {text}")


if __name__ == "__main__":
    main()
