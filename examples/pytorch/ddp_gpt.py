#!/usr/bin/env python3
"""DDP training of a GPT-style model with random weights and random tokens (no downloads).

Run with torchrun, plainly or under `cco run`:
    torchrun --nproc-per-node 2 examples/pytorch/ddp_gpt.py --steps 15
    cco run --policy shape+priority:model -- torchrun --nproc-per-node 2 examples/pytorch/ddp_gpt.py

Rank 0 prints one line per step and a final line:
    result: mode=ddp median_step_ms=... loss_checksum=sha256:... param_checksum=...
The checksums cover every step's loss (exact float bits) and the final weights: with the same
arguments they must be identical whatever ccoverlap does (it never changes results).

Everything is deterministic: fixed seeds, torch.use_deterministic_algorithms, no index-based
backward (token embedding and loss use one-hot matmuls and products), attention written out as
matmul + softmax. Modes:
    ddp           DistributedDataParallel (gradient all-reduce overlapped with backward)
    compute-only  the same steps without gradient all-reduce (model.no_sync())
    comm-only     only the all-reduces DDP would do (25 MB buckets of the gradient size)
    fsdp          FSDP2 (fully_shard per block and on the whole model): all-gathers before
                  forward and backward of each block, reduce-scatters of its gradients
With --pair-nosync (mode ddp), the timed steps alternate A B B A between the DDP step and the same
step under no_sync(), in one process, and the final line gives what gradient sync costs a step,
paired, with its 95% sign-test interval (the program's own measure of the price of
communication, to set beside `cco run --compare off,nocomm`):
    pairs: n=... sync_ms=... nosync_ms=... price_ms=... lo_ms=... hi_ms=...
"""
import argparse
import contextlib
import faulthandler
import hashlib
import math
import os
import signal
import statistics
import struct
import time

# Deterministic cuBLAS: must be set before CUDA starts.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def one_hot(idx, n, dtype):
    # scatter_ into a tensor that needs no gradient: one write per row, deterministic.
    return torch.zeros(*idx.shape, n, dtype=dtype, device=idx.device).scatter_(-1, idx.unsqueeze(-1), 1.0)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        att = att.masked_fill(mask[:, :, :t, :t], float("-inf"))
        att = torch.softmax(att.float(), dim=-1).to(q.dtype)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return x


class GPT(nn.Module):
    def __init__(self, vocab, d, layers, heads, seq):
        super().__init__()
        self.vocab = vocab
        self.wte = nn.Parameter(torch.randn(vocab, d) * 0.02)
        self.wpe = nn.Parameter(torch.randn(seq, d) * 0.01)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).triu(1)[None, None])

    def forward(self, tokens, targets):
        b, t = tokens.shape
        # One-hot matmuls instead of embedding lookups: their backward is a GEMM, deterministic.
        x = one_hot(tokens, self.vocab, torch.bfloat16) @ self.wte + self.wpe[:t]
        for blk in self.blocks:
            x = blk(x, self.mask)
        logits = self.ln_f(x) @ self.wte.t()  # tied output head
        logp = torch.log_softmax(logits.float(), dim=-1)
        return -(logp * one_hot(targets, self.vocab, torch.float32)).sum(-1).mean()


def fhex(x):
    return float(x).hex()


def pairs_line(paired):
    """The paired differences (sync - no_sync) of complete pairs: median and the 95% sign-test
    interval (order statistics d[k], d[n-1-k], k the largest with P(Binom(n, 1/2) <= k - 1) <= 2.5%)."""
    full = [p for p in paired.values() if True in p and False in p]
    d = sorted(p[True] - p[False] for p in full)
    n = len(d)
    if n == 0:
        return "pairs: n=0"
    k, cdf = 0, 0.0
    while k < n:
        cdf += math.comb(n, k) / 2 ** n
        if cdf > 0.025:
            break
        k += 1
    lo, hi = (d[k], d[n - 1 - k]) if n >= 6 else (float("nan"), float("nan"))
    return (f"pairs: n={n} sync_ms={statistics.median(p[True] for p in full):.3f} "
            f"nosync_ms={statistics.median(p[False] for p in full):.3f} "
            f"price_ms={statistics.median(d):.3f} lo_ms={lo:.3f} hi_ms={hi:.3f}")


def main():
    # SIGUSR1 prints every thread's Python stack (scripts/gpu.sh multi G h: a run that stopped).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--d-model", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    ap.add_argument("--steps", type=int, default=15, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (also checksummed)")
    ap.add_argument("--mode", choices=["ddp", "compute-only", "comm-only", "fsdp"], default="ddp")
    ap.add_argument("--bucket-mb", type=float, default=None,
                    help="DDP bucket_cap_mb (default: not passed, PyTorch's 25; `cco run --framework "
                         "ddp.bucket_mb=N` can then set it)")
    ap.add_argument("--pair-nosync", action="store_true",
                    help="(ddp) timed steps alternate A B B A with the same step under no_sync()")
    ap.add_argument("--nvtx-steps", action="store_true",
                    help="wrap each step in an NVTX range 'train_step' (cco run --step-nvtx)")
    ap.add_argument("--profile", metavar="DIR", default=None,
                    help="trace every step with torch.profiler (CPU and CUDA), one trace per rank "
                         "into DIR at the end (trace_RANK.json.gz, for cco report); not with cco "
                         "run --trace (one CUPTI client per process)")
    ap.add_argument("--backend", choices=["nccl", "gloo"], default="nccl",
                    help="gloo: ranks may share a GPU (traces and tools checked on one GPU; the "
                         "gradients then travel through the host, so no NCCL kernel runs; "
                         "checked with --mode ddp)")
    args = ap.parse_args()
    if args.profile and os.environ.get("CCO_TRACE"):
        ap.error("--profile with cco run --trace: one CUPTI client per process; use one of them")

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    if args.backend == "gloo":
        local %= torch.cuda.device_count()
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    # A first kernel before the first collective: a tracer that starts at the first launch or
    # collective (cco run --trace) is then running before NCCL's first NVTX call, so NVTX
    # ranges (--nvtx-steps) reach it. Changes no answer.
    torch.ones(1, device=dev)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    torch.manual_seed(1234)  # same initial weights on every rank (DDP broadcasts rank 0's anyway)
    model = GPT(args.vocab, args.d_model, args.layers, args.heads, args.seq).to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    gen = torch.Generator(device="cpu").manual_seed(1000 + rank)
    total = args.warmup + args.steps
    data = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=gen) for _ in range(total)]

    net = None
    if args.mode == "comm-only":
        bucket = max(1, int((args.bucket_mb or 25.0) * 1024 * 1024 / 4))
        sizes = [min(bucket, nparams - i) for i in range(0, nparams, bucket)]
        bufs = [torch.ones(n, device=dev) for n in sizes]
    elif args.mode == "fsdp":
        from torch.distributed.fsdp import fully_shard
        for blk in model.blocks:
            fully_shard(blk)
        net = fully_shard(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0, foreach=True)
    else:
        # compute-only uses the same wrapper under no_sync(), so both run the same kernels.
        own = {} if args.bucket_mb is None else {"bucket_cap_mb": args.bucket_mb}
        net = nn.parallel.DistributedDataParallel(model, device_ids=[local], broadcast_buffers=False, **own)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0, foreach=True)

    if rank == 0:
        print(f"# ddp_gpt: mode={args.mode} backend={args.backend} params={nparams / 1e6:.1f}M world={world} batch={args.batch} "
              f"seq={args.seq} layers={args.layers} d_model={args.d_model} steps={args.steps} "
              f"warmup={args.warmup} torch={torch.__version__} nccl={'.'.join(map(str, torch.cuda.nccl.version()))} "
              f"TORCH_NCCL_HIGH_PRIORITY={os.environ.get('TORCH_NCCL_HIGH_PRIORITY', '')} "
              f"LD_PRELOAD={os.environ.get('LD_PRELOAD', '')} CCO_POLICY={os.environ.get('CCO_POLICY', '')}"
              + (f" ddp_bucket_view={net.gradient_as_bucket_view} ddp_bucket_bytes={net.bucket_bytes_cap}"
                 if hasattr(net, "bucket_bytes_cap") else ""),
              flush=True)

    if args.pair_nosync and args.mode != "ddp":
        ap.error("--pair-nosync needs --mode ddp")

    def synced(step):  # A B B A over the timed steps: the same on every rank
        if not args.pair_nosync or step < args.warmup:
            return True
        i = step - args.warmup
        return (i % 2 == 0) == ((i // 2) % 2 == 0)

    losses, times, paired = [], [], {}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    prof = None
    if args.profile:
        from torch.profiler import ProfilerActivity, profile, record_function
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    for step in range(total):
        # ProfilerStep#N (a profile without a schedule records none): the steps cco report finds.
        mark = record_function(f"ProfilerStep#{step}") if prof is not None else contextlib.nullcontext()
        mark.__enter__()
        dist.barrier()
        torch.cuda.synchronize()
        if args.nvtx_steps:
            torch.cuda.nvtx.range_push("train_step")
        start.record()
        if args.mode == "comm-only":
            works = [dist.all_reduce(b, async_op=True) for b in bufs]
            for w in works:
                w.wait()
            loss = torch.zeros((), device=dev)
        else:
            chunk = data[step].to(dev, non_blocking=True)
            tokens, targets = chunk[:, :-1], chunk[:, 1:]
            with torch.autocast("cuda", dtype=torch.bfloat16):
                if args.mode == "compute-only" or not synced(step):
                    with net.no_sync():
                        loss = net(tokens, targets)
                        loss.backward()
                else:
                    loss = net(tokens, targets)
                    loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        end.record()
        if args.nvtx_steps:
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        ms = torch.tensor([start.elapsed_time(end)], device=dev)
        dist.all_reduce(ms, op=dist.ReduceOp.MAX)  # a step is as slow as its slowest rank
        # Every rank's loss, in rank order: the checksum covers all of them.
        all_loss = [torch.zeros((), device=dev) for _ in range(world)]
        dist.all_gather(all_loss, loss.detach().float())
        vals = [x.item() for x in all_loss]
        losses.append(vals)
        if step >= args.warmup:
            times.append(ms.item())
            if args.pair_nosync:
                paired.setdefault((step - args.warmup) // 2, {})[synced(step)] = ms.item()
        if rank == 0:
            print(f"step {step:3d} loss {vals[0]:.6f} ({fhex(vals[0])}) step_ms {ms.item():.3f}"
                  f"{'' if step >= args.warmup else ' (warmup)'}", flush=True)
        mark.__exit__(None, None, None)
    if prof is not None:
        prof.__exit__(None, None, None)
        os.makedirs(args.profile, exist_ok=True)
        prof.export_chrome_trace(os.path.join(args.profile, f"trace_{rank}.json.gz"))

    h = hashlib.sha256()
    for vals in losses:
        for v in vals:
            h.update(struct.pack("<d", v))
    if args.mode == "comm-only":
        psum = sum(float(b.double().sum()) for b in bufs)
    else:
        # FSDP's parameters are DTensors: the whole tensor, gathered, on every rank.
        psum = sum(float((p.full_tensor() if hasattr(p, "full_tensor") else p).detach().double().sum())
                   for p in model.parameters())
    times.sort()
    med = statistics.median(times)
    p10 = times[max(0, int(0.1 * (len(times) - 1)))]
    p90 = times[int(0.9 * (len(times) - 1))]
    if rank == 0 and args.pair_nosync:
        print(pairs_line(paired), flush=True)
    if rank == 0:
        print(f"result: mode={args.mode} median_step_ms={med:.3f} p10_ms={p10:.3f} p90_ms={p90:.3f} "
              f"loss_checksum=sha256:{h.hexdigest()[:16]} param_checksum={fhex(psum)} "
              f"final_loss={losses[-1][0]:.6f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
