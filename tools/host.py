"""`make bench`'s host table: what one eager call of each op.py entry costs the host, in a plain
loop of calls, against the bare `kernel[grid](...)` launches of the kernels it runs and PyTorch's
op for the job. A small size each, so that the GPU waits for the host, not the other way round.

The bare launches are the entry's own: the first call records each launch it makes (the kernel,
grid and arguments, through common.traceable, which every op.py launches through), and the bare
call replays them, arguments made ahead. "launched" replays them as the entry launches them, through
common/launch.py's Launcher, which skips the work kernel[grid] repeats each call. So "entry /
bare" compares the whole call with its kernels' plain launches, and "entry" - "launched" is what
the entry adds: checking its inputs, allocating its output, picking a kernel, and autograd where
it records."""

import contextlib

import common
import torch
from tools import REPO_ROOT, load_example


class Recorder:
    """common.traceable's stand-in while a call is recorded: launches as the entry does, and
    keeps each launch with the kernel itself, which the bare call launches as kernel[grid]."""

    def __init__(self, launches, traceable):
        self.launches, self.traceable = launches, traceable

    def __call__(self, kernel, in_op, kind=None):
        return RecordingLauncher(kernel, self.traceable(kernel, in_op, kind), self.launches)


class RecordingLauncher:  # what the Recorder hands out: [grid](...) records, then launches
    def __init__(self, kernel, launched, launches):
        self.kernel, self.launched, self.launches = kernel, launched, launches

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launches.append((self.kernel, self.launched, grid, args, kwargs))
            return self.launched[grid](*args, **kwargs)

        return launch


@contextlib.contextmanager
def recording(launches):
    traceable = common.traceable
    common.traceable = Recorder(launches, traceable)
    try:
        yield
    finally:
        common.traceable = traceable


def replays(fn):
    """(bare, launched, launches): two calls that make the launches fn() makes, arguments made
    ahead. bare launches each as kernel[grid](*args); launched as the entry does, through
    common.traceable (on a GPU, common/launch.py's Launcher)."""
    launches = []
    with recording(launches):
        fn()

    def bare():
        for kernel, _, grid, args, kwargs in launches:
            kernel[grid](*args, **kwargs)

    def launched():
        for _, launcher, grid, args, kwargs in launches:
            launcher[grid](*args, **kwargs)

    return bare, launched, len(launches)


def cases():
    """(entry, size, the entry's call, PyTorch's call), each called with no arguments."""
    ops = {n: load_example(REPO_ROOT / n / "op.py") for n in ("01_matmul_elementwise",
           "02_matmul_tiled", "03_blocked_sum", "04_weighted_sum")}  # fmt: skip
    op1, op2, op3, op4 = ops.values()
    bf16 = dict(dtype=torch.bfloat16, device=common.DEVICE)
    a, b = torch.randn(64, 64, **bf16), torch.randn(64, 64, **bf16)
    yield "01 matmul_elementwise", "64x64x64", lambda: op1.matmul_elementwise(a, b), lambda: a @ b
    for m in (64, 512):
        a, b = torch.randn(m, 256, **bf16), torch.randn(256, 256, **bf16)
        kernel = op2.pick(a, b, a.new_empty(m, 256))
        call = lambda a=a, b=b: op2.matmul(a, b)  # noqa: E731
        yield f"02 matmul ({kernel})", f"{m}x256x256", call, lambda a=a, b=b: a @ b
    for rows in (64, 4096):
        x = torch.randn(rows, 512, **bf16)
        yield "03 blocked_sum", f"{rows}x512", lambda x=x: op3.blocked_sum(x), lambda x=x: x.sum(0)
    x, w = torch.randn(4096, 512, **bf16), torch.randn(512, **bf16)
    grad_y = torch.randn(4096, **bf16)
    yield "04 weighted_sum", "4096x512", lambda: op4.weighted_sum(x, w), lambda: x @ w
    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
    both = lambda: op4.weighted_sum(x, w).backward(grad_y)  # noqa: E731
    yield "04 forward + backward", "4096x512", both, lambda: (x @ w).backward(grad_y)


def measure():
    rows = []
    for entry, size, call, torch_call in cases():
        bare, launched, launches = replays(call)
        timed = dict(entry=call, bare=bare, launched=launched, torch=torch_call)
        # us a call: the median over 15 rounds of a loop of 200 calls, the rows' rounds in turn
        us = common.host_us_each(timed, calls=200, rounds=15)
        rows.append({
            "entry": entry, "size": size, "launches": launches,
            "entry us": us["entry"], "bare us": us["bare"], "launched us": us["launched"],
            "entry / bare": us["entry"] / us["bare"],
            "torch us": us["torch"], "x torch": us["torch"] / us["entry"],  # as the lessons' tables
        })  # fmt: skip
    return rows
