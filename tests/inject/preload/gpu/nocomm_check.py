#!/usr/bin/env python3
"""The measuring configuration nocomm on real GPUs and real NCCL (run by scripts/gpu.sh multi G n).

Under `cco run --compare off,nocomm -- torchrun --nproc-per-node G nocomm_check.py OUTDIR`, every
rank runs STEPS steps of four collectives (all-reduce in place, all-gather, reduce-scatter,
broadcast from rank 0), reads after each the configuration in force (the preload library's
cco_config_index: 0 off, 1 nocomm) and checks the output against what that configuration defines:
off, NCCL's answer; nocomm, the rank's own data (src/core/steps/nocomm.hpp: all-reduce its input,
every all-gather slot its input, reduce-scatter its own slot, broadcast zeros off the root). Rank 1
sleeps SKEW seconds at the start of every step: with nocomm's one all-reduce per step the ranks
still start each step together (from the second: the first starts as each process comes up);
without it rank 0 would run ahead through nocomm steps. Each rank
writes OUTDIR/rank<R>.json; `nocomm_check.py --check OUTDIR` checks them all and exits 1 on any
failure, printing one line per finding.
"""
import ctypes
import json
import os
import sys
import time

STEPS, SKEW, N = 40, 0.1, 1 << 16


def run(outdir):
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    index = getattr(ctypes.CDLL(None), "cco_config_index", None)
    cfg = (lambda: int(index())) if index else (lambda: -1)
    steps = []
    for k in range(STEPS):
        torch.cuda.synchronize()
        t0 = time.time()
        if rank == 1:
            time.sleep(SKEW)
        me = float(rank + 1)
        rec = {"step": k, "start": t0, "checks": []}

        def check(name, got, off, nocomm):
            c = cfg()
            want = off if c == 0 else nocomm
            ok = bool(torch.equal(got, want))
            rec["checks"].append({"what": name, "config": c, "ok": ok,
                                  "got": got.flatten()[:2].tolist(), "want": want.flatten()[:2].tolist()})

        x = torch.full((N,), me, device=dev)
        dist.all_reduce(x)
        check("all_reduce", x, torch.full_like(x, world * (world + 1) / 2), torch.full_like(x, me))
        g = torch.full((world * N,), -7.0, device=dev)
        dist.all_gather_into_tensor(g, torch.full((N,), me, device=dev))
        slots = torch.arange(1, world + 1, device=dev, dtype=torch.float32).repeat_interleave(N)
        check("all_gather", g, slots, torch.full_like(g, me))
        src = torch.arange(world * N, device=dev, dtype=torch.float32) + 1000 * rank
        r = torch.full((N,), -7.0, device=dev)
        dist.reduce_scatter_tensor(r, src)
        mine = torch.arange(rank * N, (rank + 1) * N, device=dev, dtype=torch.float32)
        check("reduce_scatter", r, world * mine + 1000 * world * (world - 1) / 2, mine + 1000 * rank)
        b = torch.full((N,), me, device=dev)
        dist.broadcast(b, src=0)
        check("broadcast", b, torch.ones_like(b), torch.ones_like(b) if rank == 0 else torch.zeros_like(b))
        torch.cuda.synchronize()
        steps.append(rec)
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, "world": world, "steps": steps}, f)
    dist.destroy_process_group()


def check(outdir):
    ranks = []
    for name in sorted(os.listdir(outdir)):
        if name.startswith("rank") and name.endswith(".json"):
            with open(os.path.join(outdir, name)) as f:
                ranks.append(json.load(f))
    bad = []
    if len(ranks) < 2 or len(ranks) != ranks[0]["world"]:
        bad.append(f"{len(ranks)} rank files, not one per rank")
    configs = [[c["config"] for s in r["steps"] for c in s["checks"]] for r in ranks]
    if any(c != configs[0] for c in configs):
        bad.append("the ranks ran different configurations at the same collective")
    nocomm = sum(1 for c in configs[0] if c == 1) if configs else 0
    if nocomm < 24 or -1 in configs[0]:
        bad.append(f"{nocomm} collectives ran under nocomm (expected a rotation; -1: no preload library)")
    for r in ranks:
        for s in r["steps"]:
            for c in s["checks"]:
                if not c["ok"]:
                    bad.append(f"rank {r['rank']} step {s['step']} {c['what']} under config {c['config']}: "
                               f"got {c['got']}, want {c['want']}")
    lead = 0.0
    if len(ranks) >= 2:
        # From the second step: the first starts when each process is up, before any collective.
        for a, b in zip(ranks[0]["steps"][1:], ranks[1]["steps"][1:]):
            lead = max(lead, abs(a["start"] - b["start"]))
        if lead > SKEW / 2:
            bad.append(f"the ranks drifted apart: step starts up to {lead * 1000:.0f} ms apart")
    for line in bad[:20]:
        print("FAIL:", line)
    print(f"nocomm check: {len(ranks)} ranks, {nocomm} collectives under nocomm of {len(configs[0]) if configs else 0}, "
          f"largest start difference {lead * 1000:.1f} ms: {'FAILED' if bad else 'passed'}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    if len(sys.argv) != 2:
        sys.exit("usage: nocomm_check.py OUTDIR | --check OUTDIR")
    run(sys.argv[1])
