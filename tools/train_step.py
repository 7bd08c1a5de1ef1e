"""`make bench`'s training-step table: one MLP block with an attention-pooling head, trained on the
lessons' ops (02's `matmul` with its fused bias and GELU, 04's `weighted_sum`) and on PyTorch's
(`torch.addmm` then `gelu`, `y @ score`) from the same weights and batches. A step is the forward,
the loss, the backward and an AdamW step, eager or under torch.compile. Two times a step:
- wall: WINDOW steps in a row over WINDOW, the least of STEPS / WINDOW such windows (the least, as
  timeit does: other work on the host only adds time). The two models take turns, a window each,
  so that both meet the same host: where the GPU waits for the host's Python, that host's speed,
  which varied by up to 2 times between processes on the lent machines (results/NOTES.md 66, 83),
  sets the time;
- GPU: the step's kernels' durations, summed, as torch.profiler records them over PROFILED steps:
  the step with no gaps between kernels (one stream: none overlap), steady between runs."""

import copy
import time

import torch

import common
from tools import REPO_ROOT, float32_matmul_precision, load_example

SEQ, STEPS, WINDOW, WARMUP = 512, 40, 5, 5  # tokens a sequence; timed steps, in windows; untimed
PROFILED = 5  # steps whose kernels torch.profiler times
LR = 1e-4  # AdamW's rate: at 1e-3 the two models' losses drifted apart (results/NOTES.md 61)
# (d, hidden, tokens, dtype, torch.compile mode or None for eager); float32 runs under TF32.
CASES = [(768, 3072, 8192, "bfloat16", mode) for mode in (None, "default", "reduce-overhead")]
CASES += [(768, 3072, 32768, "bfloat16", mode) for mode in (None, "default")]
CASES += [(2048, 8192, 8192, "bfloat16", mode) for mode in (None, "default")]
CASES += [(768, 3072, 8192, "float32", None)]


class Block(torch.nn.Module):
    """x (batch, seq, d) -> (batch, d): y = x + gelu(x @ w1 + b1) @ w2 + b2 (GELU in GPT-2's tanh
    form), then y's rows averaged with the weights softmax(y @ score) over the sequence.
    `linear(a, w, bias, activation)` and `weighted_sum(y, score)` are the ops under test."""

    def __init__(self, d, hidden, linear, weighted_sum):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(d, hidden) / d**0.5)
        self.b1 = torch.nn.Parameter(torch.zeros(hidden))
        self.w2 = torch.nn.Parameter(torch.randn(hidden, d) / hidden**0.5)
        self.b2 = torch.nn.Parameter(torch.zeros(d))
        self.score = torch.nn.Parameter(torch.randn(d) / d**0.5)
        self.linear, self.weighted_sum = linear, weighted_sum

    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1])
        h = self.linear(rows, self.w1, self.b1, "gelu_tanh")
        y = x + self.linear(h, self.w2, self.b2, None).view_as(x)
        attention = torch.softmax(self.weighted_sum(y, self.score).float(), dim=-1).to(y.dtype)
        return (attention.unsqueeze(-1) * y).sum(1)


def models(d, hidden, dtype):
    """(ours, PyTorch's): two Blocks with the same weights, on the lessons' ops and on torch's."""
    op02 = load_example(REPO_ROOT / "02_matmul_tiled" / "op.py")
    op04 = load_example(REPO_ROOT / "04_weighted_sum" / "op.py")

    def linear(a, w, bias, activation):  # 02's matmul, with its fused bias and activation
        return op02.matmul(a, w, bias=bias, activation=activation)

    with torch.random.fork_rng():  # the same weights on every run, the caller's RNG untouched
        torch.manual_seed(0)
        ours = Block(d, hidden, linear, op04.weighted_sum)
    theirs = copy.deepcopy(ours)
    theirs.linear, theirs.weighted_sum = torch_linear, torch.matmul
    return [m.to(device=common.DEVICE, dtype=dtype) for m in (ours, theirs)]


def torch_linear(a, w, bias, activation):  # PyTorch's best: bias fused into cuBLAS, then GELU
    y = torch.addmm(bias, a, w)
    return y if activation is None else torch.nn.functional.gelu(y, approximate="tanh")


def batches(d, tokens, dtype, count=4, seed=0):  # (x, target) pairs, the same on every call
    generator = torch.Generator().manual_seed(seed)
    shapes = ((tokens // SEQ, SEQ, d), (tokens // SEQ, d))
    return [
        tuple(torch.randn(s, generator=generator).to(common.DEVICE, dtype) for s in shapes)
        for _ in range(count)
    ]


def trainer(model, mode=None):
    """step(x, target) -> loss: one AdamW step of `model`, eager or compiled in `mode`."""
    forward = model if mode is None else torch.compile(model, mode=mode)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, foreach=True)

    def step(x, target):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(forward(x).float(), target.float())
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def train(ours, theirs, data, count):
    """(losses, least ms a step) of each step function: `count` steps after WARMUP more, timed in
    windows of WINDOW steps; the two take turns, a window each, and go first in turn."""
    functions, losses, windows = (ours, theirs), ([], []), ([], [])
    for step in functions:
        for i in range(WARMUP):
            step(*data[i % len(data)])
    for first in range(0, count, WINDOW):
        window = range(first, min(first + WINDOW, count))
        for s in (0, 1) if first // WINDOW % 2 == 0 else (1, 0):
            synchronize()
            start = time.perf_counter()
            losses[s].extend(functions[s](*data[i % len(data)]) for i in window)
            synchronize()
            windows[s].append((time.perf_counter() - start) / len(window) * 1e3)
    return [([loss.item() for loss in ls], min(ws)) for ls, ws in zip(losses, windows)]


def gpu_ms(step, data):
    """The GPU time of a step in ms: its kernels' durations (copies included), as torch.profiler
    records them over PROFILED steps, summed, per step; None without CUDA."""
    if common.INTERPRETED:
        return None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        for i in range(PROFILED):
            step(*data[i % len(data)])
        synchronize()
    on_gpu = [e for e in profile.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sum(e.time_range.elapsed_us() for e in on_gpu) / PROFILED / 1e3


def synchronize():
    if not common.INTERPRETED:
        torch.cuda.synchronize()


def measure(cases=CASES, steps=STEPS):
    """A row per case: ms per step of both models, wall and GPU, torch's over ours, and the
    largest gap between their losses, step by step, over PyTorch's first loss (both start from the
    same weights and see the same batches; the loss falls as the model learns the batches)."""
    rows = []
    for d, hidden, tokens, dtype_name, mode in cases:
        dtype = getattr(torch, dtype_name)
        precision = "high" if dtype == torch.float32 else None  # float32: TF32 on both sides
        with float32_matmul_precision(precision):
            if mode:
                torch.compiler.reset()  # fresh compiles: dynamo keeps only a few per function
            data = batches(d, tokens, dtype)
            ours, theirs = (trainer(model, mode) for model in models(d, hidden, dtype))
            (our_losses, our_ms), (torch_losses, torch_ms) = train(ours, theirs, data, steps)
            our_gpu, torch_gpu = gpu_ms(ours, data), gpu_ms(theirs, data)
        gap = max(abs(a - b) for a, b in zip(our_losses, torch_losses)) / torch_losses[0]
        rows.append(
            dict(model=f"{d}-{hidden}", tokens=tokens, dtype=dtype_name, mode=mode or "eager",
                 torch_ms=torch_ms, ours_ms=our_ms, x_torch=torch_ms / our_ms,
                 torch_gpu_ms=torch_gpu, ours_gpu_ms=our_gpu,
                 x_torch_gpu=torch_gpu / our_gpu if our_gpu else None, loss_gap=gap)
        )  # fmt: skip
    return rows
