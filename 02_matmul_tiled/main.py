"""Tiled matrix multiplication: C = A @ B on the tensor cores.

What you learn (after lesson 01): how one program computes a
tile of C with tl.dot, on the tensor cores (the GPU's matrix
units); then how such a kernel gets fast, one change a section.

The maths. For A (M, K) and B (K, N):

    C[i, j] = sum over k of A[i, k] * B[k, j]

Cut C into tiles of BLOCK_M x BLOCK_N (BM x BN), one program
each. The program for rows m:m+BM and columns n:n+BN of C runs,
in PyTorch, BK (BLOCK_K) values of k at each step:

    acc = torch.zeros(BM, BN)
    for k in range(0, K, BK):
        acc += A[m:m+BM, k:k+BK] @ B[k:k+BK, n:n+BN]
    C[m:m+BM, n:n+BN] = acc

A loaded tile of A serves BN columns of C, so A is read N / BN
times, not N times as in lesson 01.

Worked example, with tiles of 2 x 2 (on a GPU, tl.dot needs 16
or more a side). A is (3, 4) and B (4, 5), both row-major:
strides (4, 1) and (5, 1). C (3, 5) has cdiv(3, 2) = 2 rows and
cdiv(5, 2) = 3 columns of tiles, numbered row by row. Program 4
takes tile row 4 // 3 = 1, tile column 4 % 3 = 1: rows = [2, 3],
cols = [2, 3]. Its loop takes k = 0, then 2, with ks = [0, 1].
It loads A at the offsets rows[:, None] * 4 + (k + ks)[None, :],
and B at (k + ks)[:, None] * 5 + cols[None, :] (a column plus a
row broadcasts to a grid, as in torch):

    offsets   of A                 of B
    k = 0:    [[ 8,  9], [ -,  -]]   [[ 2,  3], [ 7,  8]]
    k = 2:    [[10, 11], [ -,  -]]   [[12, 13], [17, 18]]

Row 3 is past M = 3 ("-"): the mask rows < M turns its loads off
(they give 0) and its store. So the program stores C[2, 2:4].
"""

import functools
import sys
from pathlib import Path

import torch

# common, the lessons' helper: with no GPU, Triton runs on CPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton, which it configures)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## Part 1. The simplest tiled kernel: one program per C tile
# tl.dot(a, b, acc) returns acc + a @ b, on the tensor cores,
# adding in float32 (Part 2's (precision) says how it rounds).
@triton.jit
def simple_matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # pointers to A[0, 0], B[0, 0], C[0, 0]
    M, N, K,  # C is M x N; each sum has K terms
    stride_am, stride_ak,  # A's strides: next row, next column
    stride_bk, stride_bn, stride_cm, stride_cn,  # B's, C's
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # C's tile
    BLOCK_K: tl.constexpr,  # how many k each loop step takes
):  # fmt: skip
    # This program's tile, tiles numbered row by row.
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        # The worked example's offsets, and masks for the edges.
        a_offsets = rows[:, None] * stride_am + (k + ks)[None, :] * stride_ak
        b_offsets = (k + ks)[:, None] * stride_bk + cols[None, :] * stride_bn
        a_mask = (rows[:, None] < M) & ((k + ks)[None, :] < K)
        b_mask = ((k + ks)[:, None] < K) & (cols[None, :] < N)
        a = tl.load(a_ptr + a_offsets, mask=a_mask, other=0.0)
        b = tl.load(b_ptr + b_offsets, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc)
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    # acc is float32; c_ptr.dtype.element_ty is C's dtype.
    tl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def matmul_simple(a, b):
    """a @ b by simple_matmul_kernel, in 64 x 64 tiles of C."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    assert a.dtype != torch.float64, "acc is float32: no float64"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    # Offsets are int32, as tl.arange is: keep them under 2^31.
    big = max(common.elements_spanned(t) for t in (a, b, c))
    assert big < 2**31, "int32 offsets: use Part 2's int64 kernel"
    # The CPU interpreter's bf16 tl.dot is wrong: use float32 there.
    a, b = common.dot_inputs(a, b)
    grid = (triton.cdiv(M, 64) * triton.cdiv(N, 64),)  # one per tile
    strides = (*a.stride(), *b.stride(), *c.stride())
    simple_matmul_kernel[grid](a, b, c, M, N, K, *strides, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    return c


reference = torch.matmul  # what every kernel here computes


def check(fn, a, b, what):
    """Test harness: C = fn(a, b) and the backward's two
    products (see Gradients) vs float64; outputs start as NaN."""
    grad_c = torch.randn(a.shape[0], b.shape[1], device=a.device).to(a.dtype)
    with common.uninitialized_memory_is_nan():
        got = [fn(a, b), fn(grad_c, b.T), fn(a.T, grad_c)]
    # Rounding grows with a sum's length: K for C, N for grad_a, M for grad_b.
    terms, names = (a.shape[1], b.shape[1], a.shape[0]), ("C", "grad_a", "grad_b")
    # TF32 can move a product by 2^-10 of it: allow twice that.
    tf32 = 2.0**-9 if a.dtype == torch.float32 else 0.0
    common.assert_outputs_close(got, (a, b), grad_c, reference, terms, names, what, tf32)


# ## Gradients
# For a loss L of C = A @ B, the chain rule gives
#     grad_a = grad_c @ B^T        grad_b = A^T @ grad_c
# b.T is a view: b's memory, its strides swapped. The kernels
# take any strides, so the backward is two more launches of the
# forward's kernel, as check() runs them. After Part 2, the
# Function hands them to autograd.


# ## Part 2. matmul_kernel: the simple kernel, six changes
# A section each, then the kernel, each change marked.
# persistent.py, beside this file, is Part 3: five more changes
# that reach cuBLAS's speed on an H100. Read it after this one.
#
# ### (group) Grouped program order
# The GPU runs programs a wave at a time: as many as fit on its
# SMs (streaming multiprocessors, its cores), roughly in order
# of their ids. When two programs of a wave read the same tile,
# the second read comes from the L2 cache (on-chip memory that
# keeps recent reads), not from the GPU's main memory.
#
# A strip of A is the BLOCK_M rows that one row of C's tiles
# reads; a strip of B, the BLOCK_N columns of a tile column.
# In row-major order a wave computes whole rows of C's tiles:
# it reads few strips of A, but every strip of B. Grouped
# order walks GROUP_M tile rows down, then a column right.
#
# Below, a wave of 4 programs reads 1 strip of A and 4 of B in
# row-major order (5 strips); in grouped order, 2 and 2 (4).
# The saving grows with the grid: on the 9 x 9 grid of
# picture.png (beside this file), GROUP_M = 3: a wave of 9 reads
# 10 strips row-major and 6 grouped. Were K 9 tiles long, as
# in Triton's tutorial 03, that is its 90 tiles against 54.
#
#     row-major:   0  1  2  3      grouped,      0  2  4  6
#                  4  5  6  7      GROUP_M = 2:  1  3  5  7
#                  8  9 10 11                    8 10 12 14
#                 12 13 14 15                    9 11 13 15
#
# benchmark() times the tuned kernel with GROUP_M = 1 too, which
# is row-major order: its row "tuned, row-major order".
#
# A @triton.jit function may call another: Triton inlines it.
@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(tile row, tile column) of program pid in grouped order."""
    tiles_per_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    group, in_group = pid // tiles_per_group, pid % tiles_per_group
    first_row = group * GROUP_M
    # in_group % group_rows walks down the group's rows, and
    # in_group // group_rows moves a column right when they run
    # out. The last group may have fewer rows.
    group_rows = min(tl.cdiv(M, BLOCK_M) - first_row, GROUP_M)
    row = first_row + in_group % group_rows
    # In the grouped diagram above, pid 5: row 1, column 2.
    return row, in_group // group_rows


# ### (int64) Offsets past 2^31
# An int32 offset wraps around past 2^31, as rows * stride_am
# does in an A of more than 2^31 elements. So this kernel turns
# rows, cols and ks into int64 first: its offsets are int64.
#
# ### (step) Pointers that step along K
# The simple kernel computes every offset again at each step.
# In int64 that costs more instructions. So this kernel
# computes the pointers for k = 0 once, then moves them
# BLOCK_K columns along at each step:
#
#     a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] ...
#     for k in range(0, K, BLOCK_K):
#         ...  # load, tl.dot
#         a_ptrs += BLOCK_K * stride_ak
#
# The mask on k then reads ks < K - k: the same test as the
# simple kernel's k + ks < K, for pointers already at column k.
#
# ### (precision) Float32 and float64
# TF32 is a format with float32's range but 10 bits of
# mantissa: faster on tensor cores, slightly less exact.
# The simple kernel always rounds float32 inputs to TF32.
# PyTorch does so only where set_float32_matmul_precision
# allows it. The constexpr INPUT_PRECISION passes PyTorch's
# choice to tl.dot: "tf32" rounds, "ieee" does not. For
# float64 inputs (and so a float64 C), acc is float64 and
# tl.dot adds in float64.
def input_precision(dtype):
    """tl.dot's input_precision for dtype, as torch.matmul's."""
    tf32 = torch.get_float32_matmul_precision() != "highest"
    return "tf32" if dtype == torch.float32 and tf32 else "ieee"


# ### (epilogue) Bias and GELU, fused into the store
# The epilogue is the code after the K loop, which writes C.
# A model's layer computes GELU(A @ B + bias). In PyTorch, the
# matmul writes P = A @ B + bias to memory; then a second
# kernel reads P back and writes GELU(P). Here the kernel adds
# the bias and applies GELU to acc, in registers, and writes C
# once: one pass over memory fewer.
#
# GELU(P) = P * Φ(P), where Φ is the normal distribution's
# CDF. GPT-2 approximates Φ(P) by (1 + tanh(z)) / 2, where
# z = √(2/π) (P + 0.044715 P^3); and (1 + tanh(z)) / 2 equals
# sigmoid(2z), which the kernel computes, with y = 2z.
@triton.jit
def add_bias(acc, bias_ptr, cols, N):
    """acc + bias[cols] on every row; acc if bias_ptr is None."""
    # Triton compiles a separate version of the kernel for a
    # None argument. So `bias_ptr is not None` is known while
    # compiling: the `if` is decided then, and costs nothing.
    if bias_ptr is not None:
        bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0)
        acc += bias.to(acc.dtype)[None, :]
    return acc


@triton.jit
def activate(acc, ACTIVATION: tl.constexpr):  # None, "gelu_tanh"
    if ACTIVATION == "gelu_tanh":
        # y = 2z; 1.5957... is 2√(2/π)
        y = 1.5957691216057308 * (acc + 0.044715 * acc * acc * acc)
        acc = acc * tl.sigmoid(y)
    return acc


# ### (tune) Autotuning the tile
# The best tile depends on the sizes and the dtype. Large
# tiles load less per multiply-add; small ones give every SM a
# program. A triton.Config holds a tile and two launch options:
# - num_warps: the program's threads, in warps of 32;
# - num_stages: how many K steps are in flight at once. The
#   loads of the next steps fill shared memory (the SM's small
#   fast memory) while the tensor cores multiply this one.
TILES = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps
    (128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 256, 32, 4, 8),
    (256, 128, 32, 3, 8), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
    (128, 64, 32, 4, 4), (64, 256, 32, 4, 4), (64, 64, 32, 3, 4),
    (64, 64, 128, 4, 4), (16, 64, 256, 3, 4),  # 16 rows: a small M
]  # fmt: skip
if common.INTERPRETED:  # it times nothing: one config is enough
    TILES = [(64, 64, 32, 1, 4)]
CONFIGS = [
    triton.Config(dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, GROUP_M=8), num_stages=s, num_warps=w)
    for m, n, k, s, w in TILES
]


# @triton.autotune(configs=CONFIGS, key=["M", "N", "K"]) on a
# kernel times every config the first time the key's arguments
# take new values, and keeps the fastest config for them. The
# autotuner adds the inputs' dtypes to the key itself.
@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])  # (tune)
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    bias_ptr,  # (epilogue): None for no bias
    M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
    stride_cm, stride_cn,
    INPUT_PRECISION: tl.constexpr,  # (precision)
    ACTIVATION: tl.constexpr,  # (epilogue)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,  # (group)
):  # fmt: skip
    c_dtype = c_ptr.dtype.element_ty
    acc_dtype = tl.float64 if c_dtype == tl.float64 else tl.float32  # (precision)
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K).to(tl.int64)  # (int64): all three
    # (step) the pointers for k = 0
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_dtype)
    for k in range(0, K, BLOCK_K):  # (step) masks: ks < K - k
        a_mask = (rows[:, None] < M) & (ks[None, :] < K - k)
        b_mask = (ks[:, None] < K - k) & (cols[None, :] < N)
        a = tl.load(a_ptrs, mask=a_mask, other=0.0)
        b = tl.load(b_ptrs, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=acc_dtype)
        # (step) The step is an int64 too. For A = x.T, a
        # transposed view, stride_ak is M: 64 * M passes 2^31
        # once M reaches 2^25.
        a_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_ak
        b_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_bk
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    acc = add_bias(acc, bias_ptr, cols, N)  # (epilogue)
    c = activate(acc, ACTIVATION).to(c_dtype)
    tl.store(c_ptr + c_offsets, c, mask=c_mask)


def tile_grid(M, N):
    """A tuned launch's grid: a function of meta, the picked
    config's values by name, such as meta["BLOCK_M"]."""
    return lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)


def matmul_tuned(a, b, bias=None, activation=None):
    """a @ b by matmul_kernel, + bias and activated if asked."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    a, b = common.dot_inputs(a, b)  # on a CPU: bfloat16 as float32
    strides = (*a.stride(), *b.stride(), *c.stride())
    matmul_kernel[tile_grid(M, N)](
        a, b, c, bias, M, N, K, *strides,
        INPUT_PRECISION=input_precision(c.dtype), ACTIVATION=activation,
    )  # fmt: skip
    return c


def check_epilogue(a, b):
    """matmul_tuned(a, b, bias, "gelu_tanh") against PyTorch's
    GELU(a @ b + bias) in float64 (GELU's slope stays under
    1.2, so it grows a rounding error by 1.2 at most)."""
    bias = torch.randn(b.shape[1], device=a.device).to(a.dtype)
    a64, b64, bias64 = a.double(), b.double(), bias.double()
    p = a64 @ b64 + bias64
    expected = torch.nn.functional.gelu(p, approximate="tanh")
    magnitude = 1.2 * (a64.abs() @ b64.abs() + bias64.abs())
    tf32 = 2.0**-9 if input_precision(a.dtype) == "tf32" else 0.0
    with common.uninitialized_memory_is_nan():
        c = matmul_tuned(a, b, bias, "gelu_tanh")
    what = "tuned + bias + GELU"
    common.assert_close(c, expected, magnitude, a.shape[1], what, tf32)


# ## The Function: autograd launches the kernels
# A torch.autograd.Function pairs a forward with its backward.
# forward launches matmul_kernel, through matmul_tuned, and
# saves a and b; when autograd needs the gradients, backward
# launches it twice more, on the views that Gradients names.
# A model calls Matmul.apply(a, b).
class Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return matmul_tuned(a, b)

    # Autograd cannot see inside a kernel, so it cannot take a
    # second derivative through this backward: asking raises.
    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_c):
        a, b = ctx.saved_tensors
        # needs_input_grad: which inputs autograd wants a
        # gradient for; None stands for one not wanted.
        grad_a = matmul_tuned(grad_c, b.T) if ctx.needs_input_grad[0] else None
        grad_b = matmul_tuned(a.T, grad_c) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


VARIANTS = {  # what check() and benchmark() run: the wrappers
    "simple": matmul_simple,
    "tuned": matmul_tuned,
}


# ## Timing (the harness: skip it on a first read)
DTYPES = {n: getattr(torch, n) for n in ("float16", "bfloat16", "float32", "float64")}


def variants_for(a, b):
    """The VARIANTS that take a @ b: all but simple for float64."""
    simple_takes = a.dtype != torch.float64  # its acc is float32
    return {n: f for n, f in VARIANTS.items() if simple_takes or n != "simple"}


def benchmark(m, n, k, dtype="float16", module=sys.modules[__name__]):
    """GPU, host time and TFLOP/s of each variant, a bare launch:
    of this file's variants_for, or persistent.py's."""
    dtype = DTYPES.get(dtype, dtype)
    a, b = common.random_matrix(m, k, dtype), common.random_matrix(k, n, dtype)
    variants = module.variants_for(a, b)
    calls = {name: functools.partial(f, a, b) for name, f in variants.items()}
    # A bare launch: the kernel alone, its arguments made ahead,
    # to time it without the wrapper's Python.
    c, precision, grid = a.new_empty((m, n)), input_precision(dtype), tile_grid(m, n)
    args = (a, b, c, None, m, n, k, *a.stride(), *b.stride(), *c.stride())
    named = dict(INPUT_PRECISION=precision, ACTIVATION=None)
    calls["matmul_kernel[grid] bare"] = lambda: matmul_kernel[grid](*args, **named)

    def row_major():  # the tuned pick, (group) undone
        kw = {**matmul_kernel.best_config.all_kwargs(), **named}
        matmul_kernel.fn[grid](*args, **{**kw, "GROUP_M": 1})

    calls["tuned, row-major order"] = row_major
    calls["torch"] = functools.partial(reference, a, b)
    if not common.INTERPRETED:  # warm the GPU to its steady clock
        triton.testing.do_bench(calls["torch"], warmup=1000, rep=1)
    times = {name: common.measure(call) for name, call in calls.items()}
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')}"
    case += f" {precision}" if dtype == torch.float32 else ""
    flops = 2 * m * n * k  # a multiply and an add per term
    return [
        common.timing_row(case, name, t, times["torch"], common.tflops(flops, t[0]), "TFLOP/s")
        for name, t in times.items()
    ]


# `make bench`: cubes (float32 in TF32), and shapes where we
# once found a bug or a slow case. A case's "precision" is
# torch's float32 matmul precision, which make bench sets.
CUBES = [(n, d) for n in (4096, 8192) for d in ("float16", "bfloat16", "float32")]
SWEEP = [dict(m=n, n=n, k=n, dtype=d, precision="high") for n, d in CUBES]
SHAPES = [(4000,) * 3, (8192, 8192, 512), (128, 4096, 4096), (16, 8192, 8192), (1000, 1001, 999)]
SWEEP += [dict(m=m, n=n, k=k, dtype=d) for d in ("float16", "bfloat16") for m, n, k in SHAPES]


def main(argv=None, module=sys.modules[__name__]):
    """Checks and times the variants of `module`: this file, or
    persistent.py, which passes itself."""
    import tools  # adds --draw and --asm (see the README)

    parser = tools.lesson_parser(module)
    size = 256 if common.INTERPRETED else 4096  # (interpreter: slow)
    add = parser.add_argument
    add("--m", type=int, default=size, help="rows of A and C")
    add("--n", type=int, default=size, help="columns of B and C")
    add("--k", type=int, default=size, help="columns of A, rows of B")
    add("--dtype", choices=list(DTYPES), default="float16", help="of A, B and C")
    precision, about = torch.get_float32_matmul_precision(), "float32's matmul precision"
    add("--precision", choices=["highest", "high", "medium"], default=precision, help=about)
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 0:
        parser.error("sizes must be 0 or more")
    torch.set_float32_matmul_precision(args.precision)
    print(common.describe_run())
    a = torch.randn(100, 70, device=common.DEVICE)
    b = torch.randn(70, 50, device=common.DEVICE)
    largest = (matmul_simple(a, b) - a @ b).abs().max().item()
    # On a GPU, tl.dot rounds float32 to TF32: about 1e-2 here.
    print(f"matmul_simple(a, b) - a @ b, 100x70 @ 70x50 float32: at most {largest:.1e}")
    dtype, shape = DTYPES[args.dtype], f"{args.m}x{args.n}x{args.k}"
    a, b = common.random_matrix(args.m, args.k, dtype), common.random_matrix(args.k, args.n, dtype)
    for name, fn in (variants := module.variants_for(a, b)).items():
        check(fn, a, b, f"{name} {shape} {args.dtype}")
    print(f"check {shape} {args.dtype}: {', '.join(variants)} match float64")
    check_epilogue(a, b)
    print(f"check {shape} {args.dtype}: tuned + bias + GELU match float64")
    # The Function, as a model calls it: autograd runs its
    # backward, which launches matmul_kernel on b.T.
    grad_c = common.random_matrix(args.m, args.n, dtype)
    Matmul.apply(a.requires_grad_(), b).backward(grad_c)
    largest = (a.grad - grad_c @ b.T).abs().max().item()
    print(f"Matmul.apply(a, b).backward(grad_c): a.grad - grad_c @ b.T: at most {largest:.1e}\n")
    table = benchmark(args.m, args.n, args.k, dtype, module)
    common.print_table(table, common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
