"""Matrix multiplication, one Triton program per output element.

This lesson shows how a Triton kernel is written and launched, how
strides turn an index into an address, and why this plan is far
slower than torch.matmul. `main.py --draw picture.png` draws which
program computes each element of C. Three terms recur below:
- A program is one running copy of a kernel. The launch's grid sets
  how many start, and tl.program_id(0) gives each one its number.
- A block is a small tensor inside one program. Its size is fixed
  when the kernel is compiled.
- A warp is 32 threads. Each program runs on num_warps warps, and
  Triton divides each block's elements among their threads.

The maths. For A of shape (M, K) and B of shape (K, N), C = A @ B is

    C[i, j] = sum over k of A[i, k] * B[k, j]

No element of C depends on another, so we launch M * N programs, and
program p computes C[p // N, p % N]. A stride is the distance, in
elements, to the next element along one dimension. If a_ptr points
to A[0, 0] and A's strides are stride_am and stride_ak, then A[i, k]
lives at a_ptr + i * stride_am + k * stride_ak.

A worked example. A is 2x3, B is 3x2 and C is 2x2. All three are
row-major, which means each row lies in memory right after the one
before. So their strides are (3, 1), (2, 1) and (2, 1).

    A at a_ptr     B at b_ptr     C: program p
    a0 a1 a2       b0 b1          p0 p1
    a3 a4 a5       b2 b3          p2 p3
                   b4 b5

Program 3 computes C[1, 1]. It starts at A[1, 0] and B[0, 1].
Each step of k moves along A's row by stride_ak = 1 and down B's
column by stride_bk = 2:

    k = 0:   a_ptr + 3 (a3)    b_ptr + 1 (b1)
    k = 1:   a_ptr + 4 (a4)    b_ptr + 3 (b3)
    k = 2:   a_ptr + 5 (a5)    b_ptr + 5 (b5)

It stores a3*b1 + a4*b3 + a5*b5 in C[1, 1], at c_ptr + 1*2 + 1*1.
"""

import functools
import sys
from pathlib import Path

import torch

# common, the lessons' helper, must be imported before triton.
# With no GPU, it turns on Triton's interpreter, which runs on the CPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## The simplest kernel: one program, one output
# @triton.jit turns a Python function into a kernel, which Triton
# compiles for the GPU at its first launch. A tensor argument arrives
# as a pointer to its first element. tl.load reads the value at a
# pointer, and tl.store writes one. pointer + 1 points to the next
# element in memory. Each program runs the `for` over K on the GPU.
@triton.jit
def scalar_kernel(
    a_ptr, b_ptr, c_ptr,  # pointers to A[0, 0], B[0, 0], C[0, 0]
    N, K,  # the number of C's columns, and the length of each sum
    stride_am, stride_ak,  # A's strides
    stride_bk, stride_bn,  # B's strides
    stride_cm, stride_cn,  # C's strides
):  # fmt: skip
    pid = tl.program_id(0)  # p, this program's number along grid axis 0
    # The grid has exactly M * N programs, one per element of C,
    # so row < M always holds, and the kernel needs no test for it.
    row = pid // N  # the row and the column of C
    col = pid % N  # that this program computes
    # Sum in float32, because a float16 running sum would drop small terms.
    acc = tl.zeros((), dtype=tl.float32)  # a single number, starting at 0
    for k in range(K):
        # These are the docstring's addresses of A[row, k] and B[k, col].
        a = tl.load(a_ptr + row * stride_am + k * stride_ak)
        b = tl.load(b_ptr + k * stride_bk + col * stride_bn)
        acc += a.to(tl.float32) * b.to(tl.float32)
    c = acc.to(c_ptr.dtype.element_ty)  # converted to the dtype that c_ptr points to
    tl.store(c_ptr + row * stride_cm + col * stride_cn, c)


def scalar(a, b):
    """a @ b by scalar_kernel."""
    assert a.shape[1] == b.shape[0], "K must match"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    # within_limits (in the harness, at the end) refuses float64,
    # because this kernel sums in float32. It also refuses tensors
    # whose offsets reach 2**31, where Triton's int32 offsets wrap.
    within_limits(a, b, c)
    # kernel[grid](arguments) starts grid[0] = M * N programs,
    # numbered 0 to M * N - 1. num_warps is a launch option, not a
    # kernel argument. It sets how many warps run each program.
    # Triton divides a block's elements among the threads, but this
    # kernel works on single numbers, not blocks. So all 32 threads
    # compute the same sum, and Triton lets one of them store it.
    # More warps would only repeat the work, so the launch uses one.
    strides = (*a.stride(), *b.stride(), *c.stride())
    scalar_kernel[(M * N,)](a, b, c, N, K, *strides, num_warps=1)
    return c


reference = torch.matmul  # what every kernel here computes


# ## Is it right?
# check compares the result with PyTorch's a @ b in float64, which
# is nearly exact. Each addition in a float32 sum rounds a little,
# so the error allowed grows with K, the number of terms. It also
# grows with the sum of the terms' absolute values, |A| @ |B|.
def check(fn, a, b, name):
    """Asserts that fn(a, b) is a @ b, up to rounding."""
    common.assert_close_to_float64(fn(a, b), reference, (a, b), terms=a.shape[1], what=name)


# ## Faster: BLOCK_K values of k per step
# Only the loop over k changes. scalar_kernel asks for one value of
# A and one of B, waits for both, and then asks for the next pair.
# vector_k_kernel asks for BLOCK_K values of each at once, so many
# loads are on their way together. So k becomes a block of values.
#
# The tool for this is the block. tl.arange(0, BLOCK_K) is the block
# 0, 1, ..., BLOCK_K - 1, and arithmetic on blocks is elementwise,
# as in torch. BLOCK_K is a tl.constexpr, a value fixed at compile
# time, so Triton compiles one kernel for each value it is given.
# A mask, which is a block of booleans, stops the loads past K.
# picture.png shows K = 10 in steps of 4. The sum stays a block of
# partial sums, and tl.sum adds them up once, after the loop.
@triton.jit
def vector_k_kernel(
    a_ptr, b_ptr, c_ptr, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_K: tl.constexpr,  # values of k per step, a power of 2 as tl.arange needs
):  # fmt: skip
    pid = tl.program_id(0)
    row = pid // N
    col = pid % N
    offs_k = tl.arange(0, BLOCK_K)  # 0, 1, ..., BLOCK_K - 1
    acc = tl.zeros((BLOCK_K,), dtype=tl.float32)  # BLOCK_K partial sums
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k  # this step's BLOCK_K values of k
        in_k = k < K  # the mask. Where it is False, load nothing and use 0.
        # A pointer plus a block of offsets is a block of pointers,
        # and tl.load of it gives a block of values.
        a_ptrs = a_ptr + row * stride_am + k * stride_ak
        b_ptrs = b_ptr + k * stride_bk + col * stride_bn
        a = tl.load(a_ptrs, mask=in_k, other=0.0)
        b = tl.load(b_ptrs, mask=in_k, other=0.0)
        acc += a.to(tl.float32) * b.to(tl.float32)
    c = tl.sum(acc, axis=0).to(c_ptr.dtype.element_ty)  # the partial sums, added once
    tl.store(c_ptr + row * stride_cm + col * stride_cn, c)


# Triton spreads the 128 values of a block over 2 warps of 32
# threads, so each thread holds 2. Lesson 02 tunes such numbers.
VECTOR_K_LAUNCH = dict(BLOCK_K=128, num_warps=2)


def vector_k(a, b):
    """a @ b by vector_k_kernel."""
    assert a.shape[1] == b.shape[0], "K must match"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    within_limits(a, b, c)  # the same checks as in scalar
    strides = (*a.stride(), *b.stride(), *c.stride())
    vector_k_kernel[(M * N,)](a, b, c, N, K, *strides, **VECTOR_K_LAUNCH)
    return c


VARIANTS = {"scalar": scalar, "vector_k": vector_k}


# ## Transposed views, and gradients
# A transposed view, such as nn.Linear's W.T, differs only in its
# strides. W of shape (2, 3) has strides (3, 1), and W.T has (1, 3).
# The kernels take any strides, so they read such a view without a
# copy. The gradients of C = A @ B are dA = dC @ B.T and
# dB = A.T @ dC. Each is the same product again, on transposed views.
class MatmulElementwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return vector_k(a, b)

    # This backward launches kernels, which autograd does not record,
    # so autograd cannot differentiate it. once_differentiable makes
    # a request for a second derivative raise an error.
    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_c):
        a, b = ctx.saved_tensors
        grad_a = vector_k(grad_c, b.T)
        grad_b = vector_k(a.T, grad_c)
        return grad_a, grad_b


# ## Why both are far behind torch.matmul
# Each program loads 2 * K values to compute one number of C. So
# each value of A is loaded N times, and each value of B is loaded
# M times. At M = N = K = 1024, that is 2.1 billion loads of 2.1
# million values. Caches serve the repeated loads, but each load
# still costs an instruction and a wait for its value. In lesson 02,
# each program computes a tile of C, which is a block of its
# elements, and loads each value once per tile.


# ## The harness: checks, timing (skip it on a first read)
def within_limits(a, b, c):
    """Refuses float64, since the sums are float32, and tensors whose
    offsets reach 2^31, where int32 offsets would wrap."""
    assert a.dtype != torch.float64, "float32 sums: see any_x.py"
    big = max(common.elements_spanned(t) for t in (a, b, c))
    assert big < 2**31, "int32 offsets: see any_x.py"


def check_variants(variants, m, n, k, dtype=torch.float32, transpose_a=False, transpose_b=False):
    """Runs check() on each variant, with fresh operands. Inside the
    `with`, torch.empty fills with NaN, so an unwritten element shows."""
    a = common.random_matrix(m, k, dtype, transpose_a)
    b = common.random_matrix(k, n, dtype, transpose_b)
    for name, fn in variants.items():
        with common.uninitialized_memory_is_nan():
            check(fn, a, b, f"{name} {m}x{n}x{k} {dtype}")


def check_gradients(m, n, k, dtype=torch.float32):
    """Runs check() on the dA and dB that MatmulElementwise computes."""
    a = common.random_matrix(m, k, dtype).requires_grad_()
    b = common.random_matrix(k, n, dtype, True).requires_grad_()
    grad_c = common.random_matrix(m, n, dtype)
    MatmulElementwise.apply(a, b).backward(grad_c)
    check(lambda *_: a.grad, grad_c, b.detach().T, "dA")
    check(lambda *_: b.grad, a.detach().T, grad_c, "dB")


DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32")}


def benchmark(m, n, k, dtype="float32", b_transposed=True):
    """Times each variant, torch.matmul, and a bare kernel launch."""
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    a = common.random_matrix(m, k, dtype)
    b = common.random_matrix(k, n, dtype, b_transposed)
    c = torch.empty((m, n), dtype=dtype, device=common.DEVICE)
    args = (a, b, c, n, k, *a.stride(), *b.stride(), *c.stride())
    calls = {name: functools.partial(fn, a, b) for name, fn in VARIANTS.items()}
    launch = vector_k_kernel[(m * n,)]  # the launch alone, without the wrapper
    calls["vector_k_kernel[grid]"] = lambda: launch(*args, **VECTOR_K_LAUNCH)
    calls["torch"] = functools.partial(torch.matmul, a, b)
    layout = "b=W.T" if b_transposed else "b row-major"
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')} {layout}"
    tflops = functools.partial(common.tflops, 2 * m * n * k)
    return common.timing_rows(case, calls, tflops, "TFLOP/s")


SWEEP = [dict(m=512, n=512, k=512), dict(m=2048, n=2048, k=512)]  # the cases make bench times
SWEEP += [dict(m=1024, n=1024, k=1024, dtype=t) for t in ("float32", "bfloat16")]
SWEEP += [dict(m=1024, n=1024, k=1024, b_transposed=False)]


def main(argv=None):
    import tools  # adds --draw and --asm (see the README)

    parser = tools.lesson_parser(sys.modules[__name__])
    size = 16 if common.INTERPRETED else 1024  # the interpreter is slow
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
    a = torch.arange(6.0, device=common.DEVICE)
    a, b = a.view(2, 3), a.view(3, 2)  # the docstring's A and B
    print(f"scalar(A, B) = {scalar(a, b).tolist()} = A @ B = {(a @ b).tolist()}")
    check_variants(VARIANTS, m, n, k, dtype, transpose_b=b_transposed)
    check_gradients(m, n, k, dtype)
    print(f"check passed: both variants and dA, dB at {m}x{n}x{k}\n")
    rows = benchmark(m, n, k, dtype, b_transposed)
    common.print_table(rows, common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
