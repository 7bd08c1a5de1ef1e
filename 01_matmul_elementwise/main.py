"""Matrix multiplication with one Triton program per output element.

What you learn: how strides turn an index into an address, why this plan is far slower than
torch.matmul, and two words:
- a program: one copy of the kernel function. The grid says how many are launched, the GPU runs
  as many at once as fit, and tl.program_id tells each its number. Triton spreads a program's work
  over its threads (num_warps warps, each 32 threads that run in step); you never index a thread;
- a block: a small tensor inside one program, its size fixed at compile time (scalar_kernel works
  on single numbers, vector_k_kernel on blocks). In Triton "block" never means a thread block.

The maths: C = A @ B for A (M, K) and B (K, N) is C[i, j] = sum over k of A[i, k] * B[k, j].
No element needs another, so we launch M * N programs; program p computes C[p // N, p % N]. A
stride is the distance in elements between neighbours along a dimension: A[i, k] lives at a_ptr +
i * stride_am + k * stride_ak.

Worked example: A 2x3 and B 3x2, both row-major (rows stored one after another), so A.stride()
is (stride_am, stride_ak) = (3, 1) and B.stride() is (stride_bk, stride_bn) = (2, 1).

    A at a_ptr     B at b_ptr     C (strides (2, 1)): program p writes C[p // 2, p % 2]
    a0 a1 a2       b0 b1          p0 p1
    a3 a4 a5       b2 b3          p2 p3
                   b4 b5

Program 3 computes C[1, 1]: its loop starts at A[1, 0] and B[0, 1] and moves on by stride_ak = 1
and stride_bk = 2 per step; it stores a3*b1 + a4*b3 + a5*b5 at c_ptr + 1*2 + 1*1 = c_ptr + 3.

    k = 0:  a_ptr + 1*3 + 0*1 = a_ptr + 3 (a3)    b_ptr + 0*2 + 1*1 = b_ptr + 1 (b1)
    k = 1:  a_ptr + 1*3 + 1*1 = a_ptr + 4 (a4)    b_ptr + 1*2 + 1*1 = b_ptr + 3 (b3)
    k = 2:  a_ptr + 1*3 + 2*1 = a_ptr + 5 (a5)    b_ptr + 2*2 + 1*1 = b_ptr + 5 (b5)

A transposed view, such as nn.Linear's W.T, differs only in its strides: for W 2x3 stored w0 ... w5,
B = W.T has strides (1, 3), so program 3 loads B[k, 1] from b_ptr + k*1 + 1*3, that is w3 w4 w5.
The same kernel, nothing copied.

Why it is slow: each program loads a row of A and a column of B, 2K values, for one number of C.
All M * N programs load 2 * M * N * K values, where A and B hold M * K + K * N: each value of A
is loaded N times (once per column of C), each of B M times; at M = N = K = 1024, 2.1 billion
loads (2 * 1024^3) of 2.1 million values (2 * 1024^2). Caches serve most repeats, but two loads per
multiply-add starve a GPU built for many per load. Lesson 02's programs compute tiles of C.
"""

import sys
from pathlib import Path

import torch

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # so that `import common` finds the repository's common/
# common, this repository's timing and checking helper, sets TRITON_INTERPRET=1 without a GPU:
# Triton then runs each program on the CPU, one at a time. It must precede the first @triton.jit.
import common  # noqa: E402
import tools  # noqa: E402  (main's --draw and --asm)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32", "float64")}


# @triton.jit makes the function a kernel, which Triton compiles for the GPU at its first launch:
# Python syntax, not run by Python; a `for` over a value like K becomes a loop on the GPU. A tensor
# argument arrives as a pointer to its first element (ptr.dtype.element_ty is its dtype); tl.load
# and tl.store read and write there. Pointer + 1 is the next element, not the next byte.
@triton.jit
def scalar_kernel(
    a_ptr, b_ptr, c_ptr,  # addresses of A[0, 0], B[0, 0] and C[0, 0]
    N, K,  # N: columns of C, to turn a program number into (row, column); K: dot-product length
    stride_am, stride_ak,  # elements from A[i, k] to A[i + 1, k], and from A[i, k] to A[i, k + 1]
    stride_bk, stride_bn,  # the same for B
    stride_cm, stride_cn,  # and for C
):  # fmt: skip
    # program_id is int32: widen it, so that row * stride_am below, which can pass 2^31, fits.
    pid = tl.program_id(0).to(tl.int64)  # this program's number: p in the docstring
    row, col = pid // N, pid % N  # the element of C this program computes
    # Sum in float32 (float64 for a float64 C): a 16-bit sum would lose each product's low bits.
    # (This `... if ... else ...` on a dtype is settled when the kernel compiles: free at run time.)
    acc_dtype = tl.float64 if c_ptr.dtype.element_ty == tl.float64 else tl.float32
    a_ptr += row * stride_am  # now at A[row, 0]: one pointer, moved along as the loop runs
    b_ptr += col * stride_bn  # B[0, col]
    acc = tl.zeros((), dtype=acc_dtype)  # like torch.zeros(()): one number, in acc_dtype
    for _ in range(K):
        acc += tl.load(a_ptr).to(acc_dtype) * tl.load(b_ptr).to(acc_dtype)
        a_ptr += stride_ak  # one step along the row of A
        b_ptr += stride_bk  # one step down the column of B
    tl.store(c_ptr + row * stride_cm + col * stride_cn, acc.to(c_ptr.dtype.element_ty))


def scalar(a, b, out=None):
    """a @ b with scalar_kernel: one program per element of C, one k per step."""
    m, n, k, c = prepare(a, b, out)  # checks a and b; c: out, or a new torch.empty((m, n))
    # kernel[grid](arguments, launch options): grid (m * n,) launches m * n programs, numbered
    # 0 to m * n - 1. num_warps=1, a launch option: one warp (32 threads that run in step), as a
    # program that works on single numbers gives the other threads nothing to do.
    scalar_kernel[(m * n,)](a, b, c, n, k, *a.stride(), *b.stride(), *c.stride(), num_warps=1)
    return common.write_out(c, out)  # c, or out holding c when out was given


def reference(a, b):  # what matmul_elementwise computes, in PyTorch
    return torch.matmul(a, b)


def random_operand(rows, cols, dtype, transposed=False):  # transposed: the .T of a (cols, rows)
    t = torch.randn((cols, rows) if transposed else (rows, cols), dtype=dtype, device=common.DEVICE)
    return t.T if transposed else t


def check(variants, m, n, k, dtype=torch.float32, transpose_a=False, transpose_b=False):
    """Check each variant (name -> function) against float64; out= starts as NaN, so gaps fail."""
    a = random_operand(m, k, dtype, transpose_a)
    b = random_operand(k, n, dtype, transpose_b)
    expected = reference(a.double(), b.double())
    magnitude = reference(a.double().abs(), b.double().abs())  # rounding allowed grows with it, K
    for name, fn in variants.items():
        out = torch.full((m, n), float("nan"), dtype=dtype, device=common.DEVICE)
        fn(a, b, out=out)
        common.assert_close(out, expected, magnitude, k, f"{name} {m}x{n}x{k} {dtype}")


# ## Faster: BLOCK_K values of k per step (vector_k_kernel)
# What changes is the loop over k. scalar_kernel loads one value of A and one of B, then waits for
# both before it adds; here each step loads BLOCK_K values of each at once, many loads in flight.
# The tool is the block, a small tensor inside one program: tl.arange(0, BLOCK_K) is the block
# 0, 1, ..., BLOCK_K - 1. Arithmetic on blocks is elementwise, as in torch; a block's lanes (its
# elements) are spread over the program's threads: 128 lanes over num_warps = 2 warps (64 threads)
# give each thread 2 neighbours, one 8-byte load in float32 if the row stride divides by 16 (--asm
# shows it). A block's size is fixed when compiling: BLOCK_K is a tl.constexpr, a kernel per value.
# Where stride_ak is 1 (or stride_bk, as in W.T), neighbouring lanes read neighbouring addresses,
# which the GPU fetches together.
@triton.jit
def vector_k_kernel(
    a_ptr, b_ptr, c_ptr, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_K: tl.constexpr,  # values of k per step, a power of 2
):  # fmt: skip
    pid = tl.program_id(0).to(tl.int64)  # as in scalar_kernel
    row, col = pid // N, pid % N
    acc_dtype = tl.float64 if c_ptr.dtype.element_ty == tl.float64 else tl.float32
    offs_k = tl.arange(0, BLOCK_K).to(tl.int64)  # int64: k * stride_ak may pass 2^31 if A is .T
    acc = tl.zeros((BLOCK_K,), dtype=acc_dtype)  # BLOCK_K partial sums, added up once at the end
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k  # the BLOCK_K values of k this step covers
        in_k = k < K  # a mask, a block of booleans: lanes past K load nothing, take other=0.0
        # A pointer plus a block of offsets is a block of pointers; tl.load gives a block of values.
        a = tl.load(a_ptr + row * stride_am + k * stride_ak, mask=in_k, other=0.0)  # A[row, k]
        b = tl.load(b_ptr + k * stride_bk + col * stride_bn, mask=in_k, other=0.0)  # B[k, col]
        acc += a.to(acc_dtype) * b.to(acc_dtype)
    total = tl.sum(acc, axis=0)  # the BLOCK_K partial sums added into one number
    tl.store(c_ptr + row * stride_cm + col * stride_cn, total.to(c_ptr.dtype.element_ty))


# BLOCK_K, a constexpr, and num_warps, a launch option, fixed here (02 tunes them): 128 k, 2 warps.
VECTOR_K_LAUNCH = dict(BLOCK_K=128, num_warps=2)


def vector_k(a, b, out=None):
    """a @ b with vector_k_kernel: one program per element of C, BLOCK_K values of k per step."""
    m, n, k, c = prepare(a, b, out)
    args = (a, b, c, n, k, *a.stride(), *b.stride(), *c.stride())
    vector_k_kernel[(m * n,)](*args, **VECTOR_K_LAUNCH)
    return common.write_out(c, out)


VARIANTS = {"scalar": scalar, "vector_k": vector_k}


# ## Using it from PyTorch (skip on a first read). First: checking the arguments, and out=
def validate(a, b):
    """Raise TypeError or ValueError naming what is wrong unless a @ b can run; return M, N, K."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"a and b must be tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"a and b must be 2-D, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a is {tuple(a.shape)} and b {tuple(b.shape)}: their K must match")
    if a.dtype != b.dtype or a.dtype not in DTYPES.values():
        raise TypeError(f"a and b must share a dtype of {list(DTYPES)}, got {a.dtype}, {b.dtype}")
    if a.device != b.device or a.device.type != common.DEVICE.type:
        raise ValueError(f"a and b must be on one {common.DEVICE} device: {a.device}, {b.device}")
    if a.shape[0] * b.shape[1] >= 2**31:  # a grid holds at most 2^31 - 1 programs along axis 0
        raise ValueError(f"{a.shape[0] * b.shape[1]:,} outputs: past the 2^31 - 1 of a grid")
    return a.shape[0], b.shape[1], a.shape[1]


def prepare(a, b, out):
    """Validate; return M, N, K and the tensor to write: out or a new one (common.kernel_out)."""
    m, n, k = validate(a, b)
    if out is None and torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):
        raise ValueError("no autograd here and an input requires grad: use matmul_elementwise")
    return m, n, k, common.kernel_out(out, (m, n), a.dtype, a.device, (a, b))


# ### Gradients
# For C = A @ B, dA = dC @ B^T and dB = A^T @ dC: the same product on transposed views, nothing
# copied. The backward calls matmul_elementwise, so create_graph=True records them too.
class MatmulElementwise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return vector_k(a, b)

    @staticmethod
    def backward(ctx, grad_c):
        return gradients(ctx, grad_c, matmul_elementwise)


def gradients(ctx, grad_c, product):
    """dA = dC @ B^T and dB = A^T @ dC through `product`, each None where not needed."""
    a, b = ctx.saved_tensors
    grad_a = product(grad_c, b.T) if ctx.needs_input_grad[0] else None
    grad_b = product(a.T, grad_c) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


def matmul_elementwise(a, b, out=None):
    """a @ b for a (M, K), b (K, N) of one float dtype, any strides: differentiable, or into out."""
    if torch.compiler.is_compiling():  # under torch.compile: the registered op, defined below
        return common.write_out(matmul_elementwise_op(a, b), out)
    wants_grad = getattr(a, "requires_grad", False) or getattr(b, "requires_grad", False)
    if out is None and wants_grad and torch.is_grad_enabled():
        return MatmulElementwise.apply(a, b)
    return vector_k(a, b, out)


# ### The registered op: torch.ops.triton_lessons.matmul_elementwise, for torch.compile
# custom_op makes vector_k an op torch.compile keeps whole (triton_op would look inside at the
# kernel: that fails under the interpreter). register_fake gives the output's shape and dtype
# without running the kernel, raising matmul_elementwise's errors; the backward calls the op.
@torch.library.custom_op("triton_lessons::matmul_elementwise", mutates_args=())
def matmul_elementwise_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return vector_k(a, b)


matmul_elementwise_op.register_fake(lambda a, b: a.new_empty(validate(a, b)[:2]))
matmul_elementwise_op.register_autograd(
    lambda ctx, grad_c: gradients(ctx, grad_c, matmul_elementwise_op),
    setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs),
)


# ## Timing
def benchmark(m, n, k, dtype=torch.float32, b_transposed=True):
    """Rows for (m, k) @ (k, n): variants, matmul_elementwise, vector_k_kernel[grid], torch."""
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    a, b = random_operand(m, k, dtype), random_operand(k, n, dtype, transposed=b_transposed)
    c = torch.empty((m, n), dtype=dtype, device=common.DEVICE)
    args = (a, b, c, n, k, *a.stride(), *b.stride(), *c.stride())
    calls = {name: (lambda fn=fn: fn(a, b)) for name, fn in VARIANTS.items()}
    calls["matmul_elementwise"] = lambda: matmul_elementwise(a, b)
    # The bare launch, with no checks: its gap to vector_k is what the wrapper's Python costs.
    calls["vector_k_kernel[grid]"] = lambda: vector_k_kernel[(m * n,)](*args, **VECTOR_K_LAUNCH)
    calls["torch"] = lambda: torch.matmul(a, b)
    times = {name: common.measure(fn) for name, fn in calls.items()}
    layout = "b=W.T" if b_transposed else "b row-major"
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')} {layout}"
    flops = 2 * m * n * k
    return [
        common.timing_row(case, name, t, times["torch"], common.tflops(flops, t[0]), "TFLOP/s")
        for name, t in times.items()
    ]


# `make bench` on a GPU. Sizes stay moderate: scalar_kernel loads one pair of values at a time.
SWEEP = [dict(m=512, n=512, k=512, dtype="float32"), dict(m=2048, n=2048, k=512, dtype="float32")]
SWEEP += [dict(m=1024, n=1024, k=1024, dtype=dtype) for dtype in ("float32", "bfloat16")]
SWEEP += [dict(m=1024, n=1024, k=1024, dtype="float32", b_transposed=False)]


def explain(m, n, k, dtype, rows):
    """Print the docstring's "why it is slow" for these sizes, with vector_k's read rate."""
    loaded = 2 * m * n * k * dtype.itemsize  # each program loads a row of a and a column of b
    ms = next(r["GPU ms"] for r in rows if r["variant"] == "vector_k")
    print(
        f"\nThe {m * n:,} programs load {loaded:,} bytes, where a and b hold "
        f"{(m * k + k * n) * dtype.itemsize:,}: each value of a is loaded N = {n:,} times, each "
        f"of b M = {m:,} times. vector_k reads {common.gbps(loaded, ms):.3g} GB/s, mostly cached."
    )


def main(argv=None):
    parser = tools.lesson_parser(sys.modules[__name__])  # also --draw, --asm: tools/
    size = 16 if common.INTERPRETED else 1024  # the interpreter runs programs one at a time
    parser.add_argument("--m", type=int, default=size, help="rows of a and of the output")
    parser.add_argument("--n", type=int, default=size, help="columns of b and of the output")
    parser.add_argument("--k", type=int, default=size, help="columns of a, rows of b")
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="of a, b and output")
    parser.add_argument("--b-row-major", action="store_true", help="time a (K, N) b, not W.T")
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 0:
        parser.error("--m, --n and --k must not be negative")
    dtype, b_transposed = DTYPES[args.dtype], not args.b_row_major
    print(common.describe_run())
    check(VARIANTS, args.m, args.n, args.k, dtype, transpose_b=b_transposed)
    print(f"check passed: {', '.join(VARIANTS)} match float64 at {args.m}x{args.n}x{args.k}\n")
    rows = benchmark(args.m, args.n, args.k, dtype, b_transposed)
    common.print_table(rows, common.TIMING_COLUMNS)
    explain(args.m, args.n, args.k, dtype, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
