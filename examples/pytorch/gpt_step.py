#!/usr/bin/env python3
"""A single-GPU training step with no communication at all, and a launch-rate loop.

What `cco run`'s default policy costs where no collective runs (docs/results). Run it plainly and
under `cco run`, alternating processes (`scripts/gpu.sh window b c` does):

    python3 examples/pytorch/gpt_step.py --mode eager --steps 30
    cco run -- python3 examples/pytorch/gpt_step.py --mode eager --steps 30
    cco run --policy off -- python3 examples/pytorch/gpt_step.py --mode launch-rate

Modes:
    eager        GPT-style model (bf16 autocast, AdamW), forward + backward + step
    compile      the same under torch.compile
    graphs       forward + backward captured with torch.cuda.make_graphed_callables
    launch-rate  one elementwise kernel launched N times from Python (microseconds per launch)

The last line is
    result: mode=... median_step_ms=... p10_ms=... p90_ms=... loss_checksum=sha256:... param_checksum=...
(or median_us_per_launch for launch-rate). With the same arguments the checksums must be identical
whatever ccoverlap does, unless a control documented to change rounding (sm-target) is on.
"""
import argparse
import hashlib
import os
import statistics
import struct
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# The transformer block and the exact float text of the DDP program (same folder): one model.
from ddp_gpt import Block, fhex  # noqa: E402


class GPT(nn.Module):
    def __init__(self, vocab, d, layers, heads, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Parameter(torch.randn(seq, d) * 0.01)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).triu(1)[None, None])

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe[:t]
        for blk in self.blocks:
            x = blk(x, self.mask)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def launch_rate(args):
    x = torch.ones(args.numel, device="cuda")
    for _ in range(2000):
        x.mul_(1.0)
    torch.cuda.synchronize()
    per = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for _ in range(args.launches):
            x.mul_(1.0)
        torch.cuda.synchronize()
        per.append((time.perf_counter() - t0) / args.launches * 1e6)
    per.sort()
    print(f"result: mode=launch-rate launches={args.launches} repeats={args.repeats} "
          f"median_us_per_launch={statistics.median(per):.3f} min_us={per[0]:.3f} max_us={per[-1]:.3f} "
          f"checksum={fhex(float(x.sum()))}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["eager", "compile", "graphs", "launch-rate"], default="eager")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--launches", type=int, default=100000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--numel", type=int, default=1024, help="launch-rate: elements per launch")
    ap.add_argument("--mark-steps", action="store_true",
                    help="mark each step with ccoverlap.step() (python/ccoverlap on PYTHONPATH)")
    ap.add_argument("--nvtx-steps", action="store_true",
                    help="wrap each step in an NVTX range 'train_step' (cco run --step-nvtx)")
    args = ap.parse_args()
    torch.cuda.set_device(0)
    if args.mode == "launch-rate":
        return launch_rate(args)
    dev = torch.device("cuda", 0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(1234)
    model = GPT(args.vocab, args.d_model, args.layers, args.heads, args.seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0, foreach=True,
                            capturable=False)
    gen = torch.Generator(device="cpu").manual_seed(1000)
    total = args.warmup + args.steps
    data = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=gen) for _ in range(total)]

    def fwd_bwd(tokens, targets):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, targets)
        loss.backward()
        return loss.detach()

    step_fn = fwd_bwd
    if args.mode == "compile":
        step_fn = torch.compile(fwd_bwd)
    elif args.mode == "graphs":
        # Static inputs; the whole forward + backward replays as one graph.
        static_tok = torch.zeros(args.batch, args.seq, dtype=torch.long, device=dev)
        static_tgt = torch.zeros(args.batch, args.seq, dtype=torch.long, device=dev)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                opt.zero_grad(set_to_none=False)
                fwd_bwd(static_tok, static_tgt)
        torch.cuda.current_stream().wait_stream(s)
        opt.zero_grad(set_to_none=False)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_loss = fwd_bwd(static_tok, static_tgt)
        # The warm-up above changed no weights (no optimizer step), so every mode starts alike.

        def step_fn(tokens, targets):  # noqa: F811
            static_tok.copy_(tokens)
            static_tgt.copy_(targets)
            g.replay()
            return static_loss.clone()

    losses, times = [], []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    mark = None
    if args.mark_steps:
        import ccoverlap
        mark = ccoverlap.step
    for step in range(total):
        chunk = data[step].to(dev)
        tokens, targets = chunk[:, :-1].contiguous(), chunk[:, 1:].contiguous()
        torch.cuda.synchronize()
        if mark:
            mark()
        if args.nvtx_steps:
            torch.cuda.nvtx.range_push("train_step")
        start.record()
        loss = step_fn(tokens, targets)
        opt.step()
        if args.mode == "graphs":
            opt.zero_grad(set_to_none=False)
        else:
            opt.zero_grad(set_to_none=True)
        end.record()
        if args.nvtx_steps:
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        losses.append(float(loss))
        if step >= args.warmup:
            times.append(start.elapsed_time(end))
    h = hashlib.sha256()
    for v in losses:
        h.update(struct.pack("<d", v))
    psum = sum(float(p.detach().double().sum()) for p in model.parameters())
    times.sort()
    print(f"result: mode={args.mode} median_step_ms={statistics.median(times):.3f} "
          f"p10_ms={times[int(0.1 * (len(times) - 1))]:.3f} p90_ms={times[int(0.9 * (len(times) - 1))]:.3f} "
          f"loss_checksum=sha256:{h.hexdigest()[:16]} param_checksum={fhex(psum)} "
          f"final_loss={losses[-1]:.6f} steps={args.steps} layers={args.layers} d_model={args.d_model} "
          f"batch={args.batch} seq={args.seq} torch={torch.__version__}", flush=True)


if __name__ == "__main__":
    main()
