"""`make bench`'s training-step table: one MLP block with an attention-pooling head, trained on the
lessons' ops (02's `matmul` with its fused bias and GELU, 04's `weighted_sum`) and on PyTorch's
(`torch.addmm` then `gelu`, `y @ score`)
from the same weights and batches. A step is the forward, the loss, the backward and an AdamW
step; its time is the wall time of WINDOW steps in a row over WINDOW, the least of STEPS / WINDOW
such windows after warm-up (so the host's Python counts where the GPU waits for it; the least, as
timeit does, since other work on the host only ever adds time), eager or under torch.compile."""

import copy
import time

import torch

import common
from tools import REPO_ROOT, float32_matmul_precision, load_example

SEQ, STEPS, WINDOW, WARMUP = 512, 40, 5, 5  # tokens a sequence; timed steps, in windows; untimed
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
    lesson02 = load_example(REPO_ROOT / "02_matmul_tiled" / "main.py")
    lesson04 = load_example(REPO_ROOT / "04_weighted_sum" / "main.py")

    def linear(a, w, bias, activation):  # 02's matmul, with its fused bias and activation
        return lesson02.matmul(a, w, bias=bias, activation=activation)

    with torch.random.fork_rng():  # the same weights on every run, the caller's RNG untouched
        torch.manual_seed(0)
        ours = Block(d, hidden, linear, lesson04.weighted_sum)
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


def train(model, data, steps, mode=None):
    """(losses, ms per step) of `steps` AdamW steps on the batches in turn, after WARMUP more."""
    if mode:
        torch.compiler.reset()  # a fresh compile: dynamo keeps only a few per function
    forward = model if mode is None else torch.compile(model, mode=mode)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, foreach=True)

    def step(x, target):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(forward(x).float(), target.float())
        loss.backward()
        optimizer.step()
        return loss.detach()

    for i in range(WARMUP):
        step(*data[i % len(data)])
    losses, windows = [], []
    for first in range(0, steps, WINDOW):
        synchronize()
        start = time.perf_counter()
        losses += [step(*data[i % len(data)]) for i in range(first, min(first + WINDOW, steps))]
        synchronize()
        windows.append((time.perf_counter() - start) / (len(losses) - first) * 1e3)
    return [loss.item() for loss in losses], min(windows)


def synchronize():
    if not common.INTERPRETED:
        torch.cuda.synchronize()


def measure(cases=CASES, steps=STEPS):
    """A row per case: ms per step of both models, torch's over ours, and the largest gap between
    their losses, step by step, over PyTorch's first loss (both start from the same weights and
    see the same batches; the loss falls as the model learns the few batches by heart)."""
    rows = []
    for d, hidden, tokens, dtype_name, mode in cases:
        dtype = getattr(torch, dtype_name)
        precision = "high" if dtype == torch.float32 else None  # float32: TF32 on both sides
        with float32_matmul_precision(precision):
            ours, theirs = models(d, hidden, dtype)
            data = batches(d, tokens, dtype)
            our_losses, our_ms = train(ours, data, steps, mode)
            torch_losses, torch_ms = train(theirs, data, steps, mode)
        gap = max(abs(a - b) for a, b in zip(our_losses, torch_losses)) / torch_losses[0]
        rows.append(
            dict(model=f"{d}-{hidden}", tokens=tokens, dtype=dtype_name, mode=mode or "eager",
                 torch_ms=torch_ms, ours_ms=our_ms, x_torch=torch_ms / our_ms, loss_gap=gap)
        )  # fmt: skip
    return rows
