"""Matrix multiplication, one Triton program per output.

What you learn: how a Triton kernel is written and launched, how
strides turn an index into an address, and why this plan is far
slower than torch.matmul (`--draw picture.png` draws it). Words:
- a program is one running copy of a kernel. The launch's grid
  says how many start; tl.program_id(0) gives each its number;
- a block is a small tensor inside one program, its size fixed
  when the kernel is compiled;
- a warp is 32 threads. The GPU runs each program on num_warps
  warps, and Triton shares the program's work among them.

The maths. For A (M, K) and B (K, N), C = A @ B is

    C[i, j] = sum over k of A[i, k] * B[k, j]

No element of C needs another, so we launch M * N programs: program p
computes C[p // N, p % N]. A stride is the distance, in elements, to
the next neighbour along a dimension: A[i, k] lives at
a_ptr + i * stride_am + k * stride_ak.

Worked example: A 2x3, B 3x2 and C 2x2, all row-major (each row
right after the one before), so with strides (3, 1), (2, 1), (2, 1).

    A at a_ptr     B at b_ptr     C: program p
    a0 a1 a2       b0 b1          p0 p1
    a3 a4 a5       b2 b3          p2 p3
                   b4 b5

Program 3 computes C[1, 1]. It starts at A[1, 0] and B[0, 1]; each
step moves along A's row by stride_ak = 1 and down B's column by
stride_bk = 2:

    k = 0:   a_ptr + 3 (a3)    b_ptr + 1 (b1)
    k = 1:   a_ptr + 4 (a4)    b_ptr + 3 (b3)
    k = 2:   a_ptr + 5 (a5)    b_ptr + 5 (b5)

It stores a3*b1 + a4*b3 + a5*b5 at c_ptr + 1*2 + 1*1.
"""

import functools
import sys
from pathlib import Path

import torch

# common, the lessons' helper, comes before triton: with no
# GPU, it turns on Triton's interpreter, which runs on the CPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## The simplest kernel: one program, one output
# @triton.jit makes a Python function a kernel, which Triton
# compiles for the GPU at its first launch. A tensor argument
# arrives as a pointer to its first element. tl.load reads at a
# pointer, tl.store writes; pointer + 1 is the next one in memory.
# A `for` over K becomes a loop on the GPU, run by each program.
@triton.jit
def scalar_kernel(
    a_ptr, b_ptr, c_ptr,  # pointers to A[0, 0], B[0, 0], C[0, 0]
    N, K,  # C's columns; the length of each sum
    stride_am, stride_ak,  # A's strides
    stride_bk, stride_bn,  # B's strides
    stride_cm, stride_cn,  # C's strides
):  # fmt: skip
    pid = tl.program_id(0)  # p; 0 names the grid's first axis
    # The grid is exactly M * N programs, one per element of
    # C, so no program lies outside C: no test against M.
    row = pid // N  # the row and the column of C
    col = pid % N  # that this program computes
    # A float32 sum: a float16 running sum would drop small terms.
    acc = tl.zeros((), dtype=tl.float32)  # one number, 0
    for k in range(K):
        # The docstring's addresses: A[row, k] and B[k, col].
        a = tl.load(a_ptr + row * stride_am + k * stride_ak)
        b = tl.load(b_ptr + k * stride_bk + col * stride_bn)
        acc += a.to(tl.float32) * b.to(tl.float32)
    c = acc.to(c_ptr.dtype.element_ty)  # the dtype c_ptr points to
    tl.store(c_ptr + row * stride_cm + col * stride_cn, c)


def scalar(a, b):
    """a @ b by scalar_kernel."""
    assert a.shape[1] == b.shape[0], "K must match"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    # Triton computes offsets in int32, which wrap past 2**31,
    # and this kernel sums in float32: within_limits (in the
    # harness, at the end) refuses such tensors, and float64.
    within_limits(a, b, c)
    # kernel[grid](arguments) starts grid[0] = M * N programs
    # (0 to M * N - 1). num_warps is a launch option,
    # not a kernel argument: how many warps run each program.
    # Triton shares a block's elements among the threads; this
    # kernel has single numbers, not blocks, so all 32 threads
    # compute the same sum, and Triton lets one of them store
    # it. More warps would only repeat the work.
    strides = (*a.stride(), *b.stride(), *c.stride())
    scalar_kernel[(M * N,)](a, b, c, N, K, *strides, num_warps=1)
    return c


reference = torch.matmul  # what every kernel here computes


# ## Is it right?
# Compare with PyTorch's a @ b in float64 (near exact). Each add
# of a float32 sum rounds a little: the error allowed grows with
# K and with the size of what is summed, |A| @ |B|.
def check(fn, a, b, name):
    """Asserts that fn(a, b) is a @ b, up to rounding."""
    common.assert_close_to_float64(fn(a, b), reference, (a, b), terms=a.shape[1], what=name)


# ## Faster: BLOCK_K values of k per step
# The change is the loop over k. scalar_kernel asks for one value
# of A and one of B, waits for both, then asks for the next pair.
# vector_k_kernel asks for BLOCK_K values of each at once, so many
# loads are on their way together: k becomes a block of k values.
#
# The tool is the block. tl.arange(0, BLOCK_K) is the block
# 0, 1, ..., BLOCK_K - 1, and arithmetic on blocks is elementwise,
# as in torch. BLOCK_K is a tl.constexpr: a value fixed at compile
# time, so Triton compiles one kernel for each value it is given.
# A mask, a block of booleans, stops the loads past K (picture.png
# shows K = 10 in steps of 4). The sum stays a block of partial sums
# until tl.sum adds them up, once, after the loop.
@triton.jit
def vector_k_kernel(
    a_ptr, b_ptr, c_ptr, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_K: tl.constexpr,  # k per step: tl.arange needs a power of 2
):  # fmt: skip
    pid = tl.program_id(0)
    row = pid // N
    col = pid % N
    offs_k = tl.arange(0, BLOCK_K)  # 0, 1, ..., BLOCK_K - 1
    acc = tl.zeros((BLOCK_K,), dtype=tl.float32)  # partial sums
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k  # the BLOCK_K values of k this step
        in_k = k < K  # where False, load nothing and take 0
        # A pointer plus a block of offsets is a block of pointers,
        # and tl.load of it gives a block of values.
        a_ptrs = a_ptr + row * stride_am + k * stride_ak
        b_ptrs = b_ptr + k * stride_bk + col * stride_bn
        a = tl.load(a_ptrs, mask=in_k, other=0.0)
        b = tl.load(b_ptrs, mask=in_k, other=0.0)
        acc += a.to(tl.float32) * b.to(tl.float32)
    c = tl.sum(acc, axis=0).to(c_ptr.dtype.element_ty)  # added once
    tl.store(c_ptr + row * stride_cm + col * stride_cn, c)


# Triton spreads the 128 values of a block over 2 warps of 32
# threads: 2 values a thread. Lesson 02 tunes such numbers.
VECTOR_K_LAUNCH = dict(BLOCK_K=128, num_warps=2)


def vector_k(a, b):
    """a @ b by vector_k_kernel."""
    assert a.shape[1] == b.shape[0], "K must match"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    within_limits(a, b, c)  # the same guards as scalar's
    strides = (*a.stride(), *b.stride(), *c.stride())
    vector_k_kernel[(M * N,)](a, b, c, N, K, *strides, **VECTOR_K_LAUNCH)
    return c


VARIANTS = {"scalar": scalar, "vector_k": vector_k}


# ## Transposed views, and gradients
# A transposed view, such as nn.Linear's W.T, differs only in its
# strides: W (2, 3) has strides (3, 1) and W.T strides (1, 3).
# The kernels take any strides: the same kernel, no copy.
# So the gradients of C = A @ B, dA = dC @ B.T and dB = A.T @ dC,
# are the same product again, on transposed views.
class MatmulElementwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return vector_k(a, b)

    # This backward launches kernels, which autograd does not
    # record, so it has no derivative: once_differentiable makes
    # a request for a second derivative raise an error.
    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_c):
        a, b = ctx.saved_tensors
        grad_a = vector_k(grad_c, b.T)
        grad_b = vector_k(a.T, grad_c)
        return grad_a, grad_b


# ## Why both are far behind torch.matmul
# Each program loads 2K values for one number of C: each value of A
# is loaded N times, each of B M times. At M = N = K = 1024 that is
# 2.1 billion loads of 2.1 million values. Caches serve the repeats,
# but every load is an instruction and a wait. Lesson 02's programs
# compute tiles of C and load each value once per tile.


# ## The harness: checks, timing (skip it on a first read)
def within_limits(a, b, c):
    """Refuses float64 (the sums are float32) and tensors whose
    offsets reach 2^31 (int32 offsets would wrap)."""
    assert a.dtype != torch.float64, "float32 sums: see any_x.py"
    big = max(common.elements_spanned(t) for t in (a, b, c))
    assert big < 2**31, "int32 offsets: see any_x.py"


def check_variants(variants, m, n, k, dtype=torch.float32, transpose_a=False, transpose_b=False):
    """check() on each variant, fresh operands; torch.empty gives NaN inside the `with`."""
    a = common.random_matrix(m, k, dtype, transpose_a)
    b = common.random_matrix(k, n, dtype, transpose_b)
    for name, fn in variants.items():
        with common.uninitialized_memory_is_nan():
            check(fn, a, b, f"{name} {m}x{n}x{k} {dtype}")


def check_gradients(m, n, k, dtype=torch.float32):
    """check() on MatmulElementwise's dA and dB."""
    a = common.random_matrix(m, k, dtype).requires_grad_()
    b = common.random_matrix(k, n, dtype, True).requires_grad_()
    grad_c = common.random_matrix(m, n, dtype)
    MatmulElementwise.apply(a, b).backward(grad_c)
    check(lambda *_: a.grad, grad_c, b.detach().T, "dA")
    check(lambda *_: b.grad, a.detach().T, grad_c, "dB")


DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32")}


def benchmark(m, n, k, dtype="float32", b_transposed=True):
    """Time each variant, torch.matmul, and a bare launch."""
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    a = common.random_matrix(m, k, dtype)
    b = common.random_matrix(k, n, dtype, b_transposed)
    c = torch.empty((m, n), dtype=dtype, device=common.DEVICE)
    args = (a, b, c, n, k, *a.stride(), *b.stride(), *c.stride())
    calls = {name: functools.partial(fn, a, b) for name, fn in VARIANTS.items()}
    launch = vector_k_kernel[(m * n,)]  # the launch alone, no wrapper
    calls["vector_k_kernel[grid]"] = lambda: launch(*args, **VECTOR_K_LAUNCH)
    calls["torch"] = functools.partial(torch.matmul, a, b)
    layout = "b=W.T" if b_transposed else "b row-major"
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')} {layout}"
    tflops = functools.partial(common.tflops, 2 * m * n * k)
    return common.timing_rows(case, calls, tflops, "TFLOP/s")


SWEEP = [dict(m=512, n=512, k=512), dict(m=2048, n=2048, k=512)]  # make bench's
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
