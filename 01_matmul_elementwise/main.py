"""Matrix multiplication, one Triton program per output.

What you learn: how a Triton kernel is written and launched, how
strides turn an index into an address, and why this plan is far
slower than torch.matmul. Two words first:
- a program is one running copy of a kernel. The launch's grid
  says how many start; tl.program_id(0) gives each its number;
- a block is a small tensor inside one program, its size fixed
  when the kernel is compiled (never a CUDA thread block).

The maths. For A (M, K) and B (K, N), C = A @ B is

    C[i, j] = sum over k of A[i, k] * B[k, j]

No element of C needs another, so we launch M * N programs:
program p computes C[p // N, p % N]. A stride is the distance, in
elements, to the next neighbour along a dimension: A[i, k] lives
at a_ptr + i * stride_am + k * stride_ak.

Worked example: A is 2x3 and B 3x2, both row-major (each row
stored right after the one before): A.stride() is (3, 1) and
B.stride() is (2, 1).

    A at a_ptr     B at b_ptr     C: program p
    a0 a1 a2       b0 b1          p0 p1
    a3 a4 a5       b2 b3          p2 p3
                   b4 b5

Program 3 computes C[1, 1]. It starts at A[1, 0] and B[0, 1];
each step moves along A's row by stride_ak = 1 and down B's
column by stride_bk = 2:

    k = 0:   a_ptr + 3 (a3)    b_ptr + 1 (b1)
    k = 1:   a_ptr + 4 (a4)    b_ptr + 3 (b3)
    k = 2:   a_ptr + 5 (a5)    b_ptr + 5 (b5)

It stores a3*b1 + a4*b3 + a5*b5 at c_ptr + 1*2 + 1*1.

A transposed view, such as nn.Linear's W.T, differs only in its
strides. For W 2x3, stored w0 ... w5, B = W.T has strides (1, 3),
and program 3 reads B[:, 1] as w3 w4 w5: the same kernel, no copy.
"""

import sys
from pathlib import Path

import torch

# `import common` finds the lessons' shared helper at the repo's root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Without a GPU, common sets TRITON_INTERPRET=1: Triton then runs
# each program on the CPU. It must come before the first kernel.
import common  # noqa: E402
import tools  # noqa: E402  (main's --draw and --asm)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## The simplest kernel: one program, one output
# @triton.jit makes a Python function a kernel, which Triton
# compiles for the GPU at its first launch. A tensor argument
# arrives as a pointer to its first element. tl.load reads at a
# pointer, tl.store writes. Pointer + 1 is the next element.
@triton.jit
def scalar_kernel(
    a_ptr, b_ptr, c_ptr,  # A[0, 0], B[0, 0], C[0, 0]
    N, K,  # C's columns; the length of each sum
    stride_am, stride_ak,  # A's strides
    stride_bk, stride_bn,  # B's strides
    stride_cm, stride_cn,  # C's strides
):  # fmt: skip
    pid = tl.program_id(0)  # p in the docstring
    row = pid // N  # the element of C
    col = pid % N  # that this program computes
    a_ptr += row * stride_am  # now at A[row, 0]
    b_ptr += col * stride_bn  # now at B[0, col]
    # A float32 sum: in float16 it would lose each product's low bits.
    acc = tl.zeros((), dtype=tl.float32)  # one number, 0
    for _ in range(K):
        a = tl.load(a_ptr).to(tl.float32)
        b = tl.load(b_ptr).to(tl.float32)
        acc += a * b
        a_ptr += stride_ak  # along A's row
        b_ptr += stride_bk  # down B's column
    c = acc.to(c_ptr.dtype.element_ty)  # C's dtype
    tl.store(c_ptr + row * stride_cm + col * stride_cn, c)


def scalar(a, b):
    """a @ b by scalar_kernel."""
    assert a.shape[1] == b.shape[0], "K must match"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    # kernel[grid](arguments): grid (M * N,) starts M * N programs,
    # numbered 0 to M * N - 1. num_warps=1: one warp (32 threads)
    # a program, as one number at a time keeps no more busy.
    strides = (*a.stride(), *b.stride(), *c.stride())
    scalar_kernel[(M * N,)](a, b, c, N, K, *strides, num_warps=1)
    return c


def reference(a, b):
    """What every kernel here computes, in PyTorch."""
    return torch.matmul(a, b)


def check(variants, m, n, k, dtype=torch.float32, transpose_a=False, transpose_b=False):
    """Compare each variant (name -> function) with float64."""
    a = random_operand(m, k, dtype, transpose_a)
    b = random_operand(k, n, dtype, transpose_b)
    expected = reference(a.double(), b.double())
    # The rounding allowed grows with |A| @ |B| and with K.
    magnitude = reference(a.double().abs(), b.double().abs())
    for name, fn in variants.items():
        # In here torch.empty fills with NaN: unwritten elements fail.
        with common.uninitialized_memory_is_nan():
            c = fn(a, b)
        common.assert_close(c, expected, magnitude, k, f"{name} {m}x{n}x{k} {dtype}")


def random_operand(rows, cols, dtype, transposed=False):
    """A (rows, cols) input; transposed: a .T view, as W.T is."""
    shape = (cols, rows) if transposed else (rows, cols)
    t = torch.randn(shape, dtype=dtype, device=common.DEVICE)
    return t.T if transposed else t


# ## Faster: BLOCK_K values of k per step
# (1) What changes is the loop over k. scalar_kernel asks for one
# value of A and one of B, waits for both, then asks for the next.
# vector_k_kernel asks for BLOCK_K values of each at once, so many
# loads are on their way together.
#
# The tool is the block: tl.arange(0, BLOCK_K) is the block
# 0, 1, ..., BLOCK_K - 1, and arithmetic on blocks is elementwise,
# as in torch. BLOCK_K is a tl.constexpr, a value fixed when the
# kernel compiles: Triton compiles it once for each value.
# Triton spreads a block's lanes (its elements) over the program's
# threads: 128 lanes over 2 warps (64 threads) give each thread 2
# neighbours, which --asm shows as one 8-byte load.
#
# Two more changes let it take any input:
# (2) int64 offsets: in a large matrix row * stride_am passes 2^31,
#     where an int32 wraps around;
# (3) a float64 C sums in float64.
@triton.jit
def vector_k_kernel(
    a_ptr, b_ptr, c_ptr, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_K: tl.constexpr,  # k values a step, a power of 2
):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)  # (2)
    row = pid // N
    col = pid % N
    # (3) An `if` on a dtype is settled as the kernel compiles.
    c_dtype = c_ptr.dtype.element_ty
    acc_dtype = tl.float64 if c_dtype == tl.float64 else tl.float32
    offs_k = tl.arange(0, BLOCK_K).to(tl.int64)  # (1), (2)
    acc = tl.zeros((BLOCK_K,), dtype=acc_dtype)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k  # the k values of this step
        # A mask, a block of booleans: lanes past K load nothing
        # and take the value 0.
        in_k = k < K
        # A pointer plus a block of offsets is a block of pointers,
        # and tl.load of it gives a block of values.
        a_ptrs = a_ptr + row * stride_am + k * stride_ak
        b_ptrs = b_ptr + k * stride_bk + col * stride_bn
        a = tl.load(a_ptrs, mask=in_k, other=0.0)
        b = tl.load(b_ptrs, mask=in_k, other=0.0)
        acc += a.to(acc_dtype) * b.to(acc_dtype)
    # The BLOCK_K partial sums, added into one number.
    c = tl.sum(acc, axis=0).to(c_dtype)
    tl.store(c_ptr + row * stride_cm + col * stride_cn, c)


# Fixed here, tuned in lesson 02: 128 values of k, 2 warps.
VECTOR_K_LAUNCH = dict(BLOCK_K=128, num_warps=2)


def vector_k(a, b):
    """a @ b by vector_k_kernel."""
    assert a.shape[1] == b.shape[0], "K must match"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    strides = (*a.stride(), *b.stride(), *c.stride())
    grid = (M * N,)
    vector_k_kernel[grid](a, b, c, N, K, *strides, **VECTOR_K_LAUNCH)
    return c


VARIANTS = {"scalar": scalar, "vector_k": vector_k}


# ## Gradients: a torch.autograd.Function
# For C = A @ B the chain rule gives dA = dC @ B.T and
# dB = A.T @ dC: the same product on transposed views, which the
# kernel reads through their strides, with no copy.
class MatmulElementwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return vector_k(a, b)

    @staticmethod
    # The kernels record no graph, so a second derivative raises.
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_c):
        a, b = ctx.saved_tensors
        grad_a = vector_k(grad_c, b.T)
        grad_b = vector_k(a.T, grad_c)
        return grad_a, grad_b


# ## Timing
DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32")}


def benchmark(m, n, k, dtype="float32", b_transposed=True):
    """Time each variant, vector_k_kernel launched bare, and
    torch.matmul: rows of common.TIMING_COLUMNS."""
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    a = random_operand(m, k, dtype)
    b = random_operand(k, n, dtype, b_transposed)
    c = torch.empty((m, n), dtype=dtype, device=common.DEVICE)
    strides = (*a.stride(), *b.stride(), *c.stride())
    calls = {
        "scalar": lambda: scalar(a, b),
        "vector_k": lambda: vector_k(a, b),
        # The launch alone: its gap to vector_k is what the
        # wrapper's Python costs.
        "vector_k_kernel[grid]": lambda: vector_k_kernel[(m * n,)](
            a, b, c, n, k, *strides, **VECTOR_K_LAUNCH
        ),
        "torch": lambda: torch.matmul(a, b),
    }
    times = {name: common.measure(fn) for name, fn in calls.items()}
    layout = "b=W.T" if b_transposed else "b row-major"
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')} {layout}"
    tflops = {name: common.tflops(2 * m * n * k, t[0]) for name, t in times.items()}
    return [
        common.timing_row(case, name, t, times["torch"], tflops[name], "TFLOP/s")
        for name, t in times.items()
    ]


# `make bench`'s cases, on a GPU. Sizes stay moderate:
# scalar_kernel loads one pair of values at a time.
SWEEP = [
    dict(m=512, n=512, k=512, dtype="float32"),
    dict(m=2048, n=2048, k=512, dtype="float32"),
    dict(m=1024, n=1024, k=1024, dtype="float32"),
    dict(m=1024, n=1024, k=1024, dtype="bfloat16"),
    dict(m=1024, n=1024, k=1024, dtype="float32", b_transposed=False),
]


def explain(m, n, k, dtype, rows):
    """Print why it is slow: each program loads 2K values for one
    number of C, so each value of A is loaded N times."""
    loaded = 2 * m * n * k * dtype.itemsize  # a row and a column each
    held = (m * k + k * n) * dtype.itemsize  # what a and b hold
    ms = next(r["GPU ms"] for r in rows if r["variant"] == "vector_k")
    print(f"\nThe {m * n:,} programs load {loaded:,} bytes; a and b hold")
    print(f"{held:,}: each value of a is loaded N = {n:,} times, each of b")
    print(f"M = {m:,} times. vector_k reads {common.gbps(loaded, ms):.3g} GB/s.")


def main(argv=None):
    # tools adds --draw and --asm (see the README).
    parser = tools.lesson_parser(sys.modules[__name__])
    # The interpreter runs one program at a time: small sizes.
    size = 16 if common.INTERPRETED else 1024
    add = parser.add_argument
    add("--m", type=int, default=size, help="rows of a and c")
    add("--n", type=int, default=size, help="columns of b and c")
    add("--k", type=int, default=size, help="columns of a, rows of b")
    add("--dtype", choices=DTYPES, default="float32", help="of a, b, c")
    add("--b-row-major", action="store_true", help="time a (K, N) b, not W.T")
    args = parser.parse_args(argv)
    m, n, k = args.m, args.n, args.k
    if min(m, n, k) < 0:
        parser.error("--m, --n and --k must not be negative")
    dtype, b_transposed = DTYPES[args.dtype], not args.b_row_major
    print(common.describe_run())
    check(VARIANTS, m, n, k, dtype, transpose_b=b_transposed)
    print(f"check passed: {', '.join(VARIANTS)} match float64 at {m}x{n}x{k}\n")
    rows = benchmark(m, n, k, dtype, b_transposed)
    common.print_table(rows, common.TIMING_COLUMNS)
    explain(m, n, k, dtype, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
