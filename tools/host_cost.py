"""What an eager call costs the host, what a new shape costs, and 02's matmul beyond large cubes.

Run on a GPU machine from the repository root: `python tools/host_cost.py`. Small shapes make the GPU work a few
microseconds, so a call's time is mostly Python and launch overhead. "wall us": wall time per call over 2000
back-to-back calls (the GPU queue absorbs the kernels); "eager us": common.bench (a lone call on an idle GPU, L2
flushed); "graph us": common.bench_graph (kernels only). "bare launch" is 04's forward kernel launched straight
through Triton (kernel[grid]) with the config the lesson tuned; "common.launch" launches it as the lessons do. Then 04's fwd+bwd taken apart:
autograd.Functions built as weighted_sum builds its own, with PyTorch's ops in place of one launcher or the other, each
with autograd's device threads and without (the backward on the calling thread). Then the wall time of the first call
on shapes not seen before, next to the second call. Last, torch.matmul's time over matmul's on the shapes
of issue 18 (eager and graph), and their geometric means. Uses only the lessons' public names.
"""

import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402

lessons = {path.parent.name[:2]: common.load_example(path) for path in common.example_paths()}
ops = torch.ops.triton_lessons
dev = common.DEVICE


def wall_us(fn, calls=2000):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def fwd_bwd(fn, *inputs, grad):
    leaves = [t.detach().requires_grad_() for t in inputs]
    return lambda: torch.autograd.grad(fn(*leaves), leaves, grad)


a16, b16 = torch.randn(512, 512, device=dev, dtype=torch.float16), torch.randn(512, 512, device=dev, dtype=torch.float16)
a32, b32 = torch.randn(64, 64, device=dev), torch.randn(64, 64, device=dev)
x, w, gy = torch.randn(4096, 512, device=dev), torch.randn(512, device=dev), torch.randn(4096, device=dev)
y = torch.empty(4096, device=dev)
lessons["04"].weighted_sum(x, w)  # tunes 04's forward for this bucket, so that bare_launch has a config
kernel = lessons["04"].forward_pointer_kernel
config = kernel.best_config.all_kwargs()
grid = (triton.cdiv(4096, config["ROWS_TILE"]),)
bare_launch = lambda: kernel.fn[grid](  # noqa: E731
    x, w, y, 4096, 512, ACC_DTYPE=triton.language.float32, **lessons["04"].pointer_args(x), **config)
launched = lambda: common.launch(  # noqa: E731
    kernel.fn, grid, x, w, y, 4096, 512, ACC_DTYPE=triton.language.float32, **lessons["04"].pointer_args(x), **config)
cases = {
    "01 matmul_elementwise 64^3 fp32": lambda: lessons["01"].matmul_elementwise(a32, b32),
    "01 op": lambda: ops.matmul_elementwise(a32, b32),
    "02 matmul 512^3 fp16": lambda: lessons["02"].matmul(a16, b16),
    "02 op": lambda: ops.matmul(a16, b16),
    "02 torch.matmul": lambda: a16 @ b16,
    "03 blocked_sum 4096x512 fp32": lambda: lessons["03"].blocked_sum(x),
    "03 op": lambda: ops.blocked_sum(x),
    "03 torch x.sum(0)": lambda: x.sum(0),
    "04 bare launch of its kernel": bare_launch,
    "04 its kernel via common.launch": launched,
    "04 weighted_sum 4096x512 fp32": lambda: lessons["04"].weighted_sum(x, w),
    "04 op": lambda: ops.weighted_sum(x, w),
    "04 torch x @ w": lambda: x @ w,
    "04 fwd+bwd weighted_sum": fwd_bwd(lessons["04"].weighted_sum, x, w, grad=gy),
    "04 fwd+bwd op": fwd_bwd(ops.weighted_sum, x, w, grad=gy),
    "04 fwd+bwd torch x @ w": fwd_bwd(torch.matmul, x, w, grad=gy),
    "02 fwd+bwd matmul 512^3 fp16": fwd_bwd(lessons["02"].matmul, a16, b16, grad=torch.randn_like(a16)),
    "02 fwd+bwd torch.matmul": fwd_bwd(torch.matmul, a16, b16, grad=torch.randn_like(a16)),
}
print(common.describe_run())
print(f"{'call':34s} {'wall us':>8s} {'eager us':>9s} {'graph us':>9s}")
for name, fn in cases.items():
    graph = common.bench_graph(fn)
    print(f"{name:34s} {wall_us(fn):8.1f} {common.bench(fn) * 1e3:9.1f} {graph * 1e3:9.1f}", flush=True)


def torch_forward(x, weight, style, poison):  # launch_forward's signature, PyTorch's op
    return torch.matmul(x, weight)


def torch_grads(ctx, grad):  # weighted_sum_grads' signature, PyTorch's ops
    x, weight = ctx.saved_tensors
    return grad[:, None] * weight, grad @ x, None, None


def mixed(forward, grads):  # fwd+bwd of x, w through an autograd.Function of these two halves
    apply = common.eager_autograd("Mixed", forward, lessons["04"].save_inputs, grads)
    return fwd_bwd(lambda a, b: apply(a, b, "pointer", False), x, w, grad=gy)


halves = {
    "torch x @ w": cases["04 fwd+bwd torch x @ w"],
    "Function: torch fwd, torch bwd": mixed(torch_forward, torch_grads),
    "Function: kernel fwd, torch bwd": mixed(lessons["04"].launch_forward, torch_grads),
    "Function: torch fwd, kernel bwd": mixed(torch_forward, lessons["04"].weighted_sum_grads),
    "weighted_sum": cases["04 fwd+bwd weighted_sum"],
    "launch_backward alone": lambda: lessons["04"].launch_backward(x, w, gy, True, True, False),
}
print(f"\n{'04 fwd+bwd 4096x512 fp32, wall us':34s} {'threads':>8s} {'one thread':>10s}")
for name, fn in halves.items():
    with torch.autograd.set_multithreading_enabled(False):
        one_thread = wall_us(fn)
    print(f"{name:34s} {wall_us(fn):8.1f} {one_thread:10.1f}", flush=True)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=dev, dtype=dtype)


new_shapes = {  # a shape that tunes a bucket, others in the same bucket, new buckets (the last of each lesson: kernels
    # compiled for its dtype and alignment, so that only tuning is left)
    "02 matmul bf16 1000^3": lambda: lessons["02"].matmul(randn(1000, 1000, dtype=torch.bfloat16),
                                                          randn(1000, 1000, dtype=torch.bfloat16)),
    "02 matmul bf16 1001x999x1003": lambda: lessons["02"].matmul(randn(1001, 1003, dtype=torch.bfloat16),
                                                                 randn(1003, 999, dtype=torch.bfloat16)),
    "02 matmul bf16 1536^3": lambda: lessons["02"].matmul(randn(1536, 1536, dtype=torch.bfloat16),
                                                          randn(1536, 1536, dtype=torch.bfloat16)),
    "03 blocked_sum 1000x700": lambda: lessons["03"].blocked_sum(randn(1000, 700)),
    "03 blocked_sum 1000x900": lambda: lessons["03"].blocked_sum(randn(1000, 900)),
    "03 blocked_sum 300000x700": lambda: lessons["03"].blocked_sum(randn(300000, 700)),
    "03 blocked_sum 3000x3000": lambda: lessons["03"].blocked_sum(randn(3000, 3000)),
    "04 fwd+bwd 8192x300": fwd_bwd(lessons["04"].weighted_sum, randn(8192, 300), randn(300), grad=randn(8192)),
    "04 fwd+bwd 8192x400": fwd_bwd(lessons["04"].weighted_sum, randn(8192, 400), randn(400), grad=randn(8192)),
    "04 fwd+bwd 8192x768": fwd_bwd(lessons["04"].weighted_sum, randn(8192, 768), randn(768), grad=randn(8192)),
    "04 fwd+bwd 8192x4000": fwd_bwd(lessons["04"].weighted_sum, randn(8192, 4000), randn(4000), grad=randn(8192)),
    "04 fwd+bwd 16384x2000": fwd_bwd(lessons["04"].weighted_sum, randn(16384, 2000), randn(2000), grad=randn(16384)),
}
print(f"\n{'first call on a new shape':34s} {'first s':>8s} {'next ms':>9s}")
for name, fn in new_shapes.items():
    times = []
    for _ in range(2):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    print(f"{name:34s} {times[0]:8.2f} {times[1] * 1e3:9.1f}", flush=True)

print(f"\n{'matmul MxNxK dtype':26s} {'torch/matmul eager':>18s} {'torch/matmul graph':>18s}")
ratios = {"eager": [], "graph": []}
for m, n, k in [(4096, 4096, 4096), (4000, 4000, 4000), (8192, 8192, 512), (128, 4096, 4096), (16, 8192, 8192),
                (1000, 1001, 999)]:
    for dtype in (torch.float16, torch.bfloat16):
        a, b = randn(m, k, dtype=dtype), randn(k, n, dtype=dtype)
        times = {name: (common.bench(fn), common.bench_graph(fn))
                 for name, fn in (("torch", lambda: a @ b), ("matmul", lambda: lessons["02"].matmul(a, b)))}
        eager, graph = (times["torch"][i] / times["matmul"][i] for i in (0, 1))
        ratios["eager"].append(eager)
        ratios["graph"].append(graph)
        print(f"{m}x{n}x{k} {str(dtype).removeprefix('torch.'):9s}".ljust(26) + f" {eager:18.2f} {graph:18.2f}", flush=True)
for kind, values in ratios.items():
    print(f"geometric mean, {kind}: {math.exp(statistics.mean(map(math.log, values))):.2f}")
