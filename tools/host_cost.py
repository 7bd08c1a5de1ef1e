"""What an eager call costs the host: each entry function, its registered op and PyTorch's op, on small shapes.

Run on a GPU machine from the repository root: `python tools/host_cost.py`. Small shapes make the GPU work
a few microseconds, so the time per call is mostly Python and launch overhead. "wall us" is the wall
time per call over 2000 back-to-back calls (the GPU queue absorbs the kernels); "eager us" is
common.bench (a lone call on an idle GPU, L2 flushed), "graph us" common.bench_graph (kernels only). Uses only the
lessons' public names.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402

import torch  # noqa: E402

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
cases = {
    "01 matmul_elementwise 64^3 fp32": lambda: lessons["01"].matmul_elementwise(a32, b32),
    "01 op": lambda: ops.matmul_elementwise(a32, b32),
    "02 matmul 512^3 fp16": lambda: lessons["02"].matmul(a16, b16),
    "02 op": lambda: ops.matmul(a16, b16),
    "02 torch.matmul": lambda: a16 @ b16,
    "03 blocked_sum 4096x512 fp32": lambda: lessons["03"].blocked_sum(x),
    "03 op": lambda: ops.blocked_sum(x),
    "03 torch x.sum(0)": lambda: x.sum(0),
    "04 weighted_sum 4096x512 fp32": lambda: lessons["04"].weighted_sum(x, w),
    "04 op": lambda: ops.weighted_sum(x, w),
    "04 torch x @ w": lambda: x @ w,
    "04 fwd+bwd weighted_sum": fwd_bwd(lessons["04"].weighted_sum, x, w, grad=gy),
    "04 fwd+bwd torch x @ w": fwd_bwd(torch.matmul, x, w, grad=gy),
    "02 fwd+bwd matmul 512^3 fp16": fwd_bwd(lessons["02"].matmul, a16, b16, grad=torch.randn_like(a16)),
    "02 fwd+bwd torch.matmul": fwd_bwd(torch.matmul, a16, b16, grad=torch.randn_like(a16)),
}
print(common.describe_run())
print(f"{'call':34s} {'wall us':>8s} {'eager us':>9s} {'graph us':>9s}")
for name, fn in cases.items():
    graph = common.bench_graph(fn)
    print(f"{name:34s} {wall_us(fn):8.1f} {common.bench(fn) * 1e3:9.1f} {graph * 1e3:9.1f}", flush=True)
