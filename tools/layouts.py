"""`make bench`'s layouts table: lesson 02's `matmul` on the matrix products of a transformer's
MLP block (x @ w1, h @ w2 and the weight gradients x^T @ dh, h^T @ dy), with A and B each
row-major (N) or a transposed view (T), as weight storage and autograd hand them over; GPU time
against `torch.matmul` at the same float32 precision. ODD_SHAPES, the odd and skinny shapes of 02's
own sweep, get a table of their own."""

import math

import common  # before triton: on a CPU it switches the interpreter on
import torch
import triton
from tools import REPO_ROOT, float32_matmul_precision, load_example

# (d, hidden, tokens): GPT-2 widths and larger; 8000 and 6000 tokens are no multiples of 128.
MODELS = [(768, 3072, 8192), (1024, 4096, 2048), (2048, 8192, 16384), (4096, 16384, 4096)]
MODELS += [(1280, 5120, 8000), (1600, 6400, 6000)]
LAYOUTS = {"NN": (False, False), "NT": (False, True), "TN": (True, False), "TT": (True, True)}
DTYPES = [("bfloat16", None), ("float16", None), ("float32", "high"), ("float32", "highest")]
ODD_SHAPES = [(1000, 1001, 999), (128, 4096, 4096), (16, 8192, 8192)]  # (M, N, K)


def products(d, hidden, tokens):  # (M, N, K) of the block's four product shapes (may repeat)
    return [(tokens, hidden, d), (tokens, d, hidden), (d, hidden, tokens), (hidden, d, tokens)]


def gpu_ms(fn):  # as the lessons' GPU time: do_bench's median of a CUDA-graph replay
    return triton.testing.do_bench(common.capture_graph(fn).replay, return_mode="median")


def measure(shapes=None, dtypes=DTYPES):
    """A row per product (M, N, K) in `shapes`, dtype and layout: both times, torch's over ours,
    the kernel picked. shapes: the four MLP blocks' products unless given."""
    shapes = shapes or [shape for model in MODELS for shape in products(*model)]
    op = load_example(REPO_ROOT / "02_matmul_tiled" / "op.py")
    rows = []
    if not common.INTERPRETED:  # a second of matmuls brings the GPU to its sustained clock
        warm_up = torch.randn(4096, 4096, device=common.DEVICE)  # (results/NOTES.md item 28)
        triton.testing.do_bench(lambda: warm_up @ warm_up, warmup=1000, rep=1)
    for dtype_name, precision in dtypes:
        dtype, label = getattr(torch, dtype_name), f"{dtype_name} {precision or ''}".strip()
        with float32_matmul_precision(precision):
            for m, n, k in dict.fromkeys(shapes):
                for layout, (transpose_a, transpose_b) in LAYOUTS.items():
                    a = common.random_matrix(m, k, dtype, transpose_a)
                    b = common.random_matrix(k, n, dtype, transpose_b)
                    torch_ms = gpu_ms(lambda: torch.matmul(a, b))
                    ours = gpu_ms(lambda: op.matmul(a, b))
                    kernel = op.pick(a, b, a.new_empty(m, n))
                    rows.append(
                        dict(case=f"{m}x{n}x{k}", dtype=label, layout=layout, kernel=kernel,
                             torch_ms=torch_ms, matmul_ms=ours, x_torch=torch_ms / ours)
                    )  # fmt: skip
    return rows


def summary(rows):
    """Per dtype and layout: the geometric mean and the least of torch's time over ours."""
    groups = {}
    for row in rows:
        groups.setdefault((row["dtype"], row["layout"]), []).append(row["x_torch"])
    return [
        dict(dtype=dtype, layout=layout, cases=len(ratios),
             geomean=math.exp(sum(map(math.log, ratios)) / len(ratios)), least=min(ratios))
        for (dtype, layout), ratios in groups.items()
    ]  # fmt: skip
