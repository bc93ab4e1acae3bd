#!/usr/bin/env python3
"""analysis.py DIR: per problem, the committed kernel's best (old1, old2: before and after) against
the changed kernel's best at each setting of the three knobs (new), from DIR/{old1,new,old2}.db
(this folder's *.db.xz unpacked: xz -dk *.db.xz). old/new > 1: the change is faster."""
import sqlite3, json, collections, sys
def load(p):
    db=sqlite3.connect(p); out=collections.defaultdict(list)
    for r,pn,pj,med,regs,sp in db.execute("select r.name,p.name,c.params_json,x.median_ns,x.registers,x.spill_stores from results x join recipes r on r.id=x.recipe_id join problems p on p.id=x.problem_id join configs c on c.id=x.config_id where x.status='ok'"):
        out[(r,pn)].append((med,json.loads(pj),regs,sp))
    return out
d=sys.argv[1]
o1,n,o2=load(d+"/old1.db"),load(d+"/new.db"),load(d+"/old2.db")
for k in sorted(n):
    b1=min(o1[k],key=lambda x:x[0]); b2=min(o2[k],key=lambda x:x[0])
    old=min(b1[0],b2[0])
    print(f"== {k[0].split('.')[-1]} {k[1][:40]} old {b1[0]/1e3:.2f}/{b2[0]/1e3:.2f}")
    # new, same knobs as old best
    grp=collections.defaultdict(list)
    for m,p,r,s in n[k]:
        grp[(p['QK_CHAINS'],p['RESCALE_SKIP'],p['MIN_BLOCKS'])].append((m,p,r,s))
    for g in sorted(grp):
        m,p,r,s=min(grp[g],key=lambda x:x[0])
        cfg="S%d N%d W%d st%d R%d"%(p['SPLITS'],p['BLOCK_N'],p['WARPS'],p['STAGES'],p['KV_RING'])
        print(f"   qk{g[0]} rs{g[1]} mb{g[2]}: {m/1e3:7.2f}  old/new {old/m:.3f}  {cfg} regs {r} spill {s}")
