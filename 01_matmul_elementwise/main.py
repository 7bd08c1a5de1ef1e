"""Matrix multiplication with one Triton program per output element.

C = A @ B for A (M, K) and B (K, N): C[i, j] = sum over k of A[i, k] * B[k, j], a dot product that
no other element needs, so we launch M * N programs and give each its own (i, j). The mental model:

- a program id is an output coordinate: program p computes C[p // N, p % N];
- strides map an index to an address: A[i, k] lives at a_ptr + i * A.stride(0) + k * A.stride(1),
  which is why a transposed view (B = W.T) needs no copy, only other strides;
- a mask switches off the loads that would run past the end of a row;
- each program sums into a private accumulator, in float32 (float64 for float64 inputs).

The gradient is two more such products, dA = dC @ B^T and dB = A^T @ dC, on views with swapped
strides: the backward runs the same kernel, copying nothing. "scalar" walks k one element at a time,
"vector_k" BLOCK_K elements per step. Both are far slower than torch.matmul; explain() counts the bytes
to show why, and lesson 02 lets one program compute a whole tile of the output instead.
"""

import argparse
import functools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (switches on the interpreter without CUDA, before any kernel is defined)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}


@triton.jit
def scalar_kernel(
    a_ptr,  # pointer to a[0, 0]; a has shape (M, K)
    b_ptr,  # pointer to b[0, 0]; b has shape (K, N)
    out_ptr,  # pointer to out[0, 0]; out has shape (M, N)
    N,  # columns of out: turns a program id into a (row, column) pair
    K,  # length of every dot product; 0 gives zeros
    stride_am, stride_ak,  # elements between a[i, k] and a[i + 1, k], and a[i, k + 1]
    stride_bk, stride_bn, stride_om, stride_on,  # the same for b, and for out
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 inputs
):
    # One program per output element, numbered along the rows of out: a 1-D grid holds 2^31 - 1 of
    # them where a 2-D grid (M, N) stops at N = 65535 on CUDA. int64: row * stride may pass 2^31.
    pid = tl.program_id(0).to(tl.int64)
    row, col = pid // N, pid % N  # this program's output element
    a_ptrs = a_ptr + row * stride_am  # a[row, 0]
    b_ptrs = b_ptr + col * stride_bn  # b[0, col]
    acc = tl.zeros((), dtype=ACC_DTYPE)  # this program's own: no other program reads or writes it
    for _ in range(K):
        # fp16 and bf16 products are exact in float32; the sum is where precision would be lost.
        acc += tl.load(a_ptrs).to(ACC_DTYPE) * tl.load(b_ptrs).to(ACC_DTYPE)
        a_ptrs += stride_ak  # one step right along the row of a
        b_ptrs += stride_bk  # one step down the column of b
    tl.store(out_ptr + row * stride_om + col * stride_on, acc.to(out_ptr.dtype.element_ty))


def validate(a, b):
    """Raise TypeError/ValueError unless a @ b can run here; return (M, N, K)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"a and b must be tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"a and b must be 2-D, a (M, K) and b (K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in DTYPES.values():
        raise TypeError(f"a and b must have one dtype of {', '.join(DTYPES)}, got {a.dtype} and {b.dtype}")
    if a.device != b.device or a.device.type != common.DEVICE.type:
        raise ValueError(f"a and b must be on one device, {common.DEVICE.type} here, got {a.device} and {b.device}")
    (m, k), n = a.shape, b.shape[1]
    if m * n > 2**31 - 1:
        raise ValueError(f"{m * n:,} outputs is past the 2^31 - 1 programs of a grid")
    return m, n, k


def prepare(a, b, out):
    """Validate; return (M, N, K), the tensor the kernel writes and the accumulator dtype."""
    m, n, k = validate(a, b)
    if out is None and torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):  # else check_out says
        raise ValueError("the variants have no autograd and an input requires grad: call matmul_elementwise")
    # check_out raises on a bad out and is True when out overlaps a or b, still being read: write elsewhere, copy after.
    overlaps = out is not None and common.check_out(out, (m, n), a.dtype, a.device, (a, b))
    c = torch.empty((m, n), dtype=a.dtype, device=a.device) if out is None or overlaps else out
    return m, n, k, c, (tl.float64 if a.dtype == torch.float64 else tl.float32)


def scalar(a, b, out=None):
    """a @ b, one program per output element, one k per step; out: (M, N), any strides."""
    m, n, k, c, acc_dtype = prepare(a, b, out)
    if m * n > 0:  # no output element, no program: a grid of 0 programs is an error
        # num_warps=1: a program does the work of one thread, so one warp, the smallest launch unit, is enough.
        scalar_kernel[(m * n,)](a, b, c, n, k, *a.stride(), *b.stride(), *c.stride(), ACC_DTYPE=acc_dtype, num_warps=1)
    return c if out is None or out is c else out.copy_(c)


def reference(a, b):
    """What matmul_elementwise computes, in PyTorch."""
    return torch.matmul(a, b)


def random_operand(rows, cols, dtype, transposed=False, step=1):
    """torch.randn (rows, cols) with column stride step; transposed, the .T of a (cols, rows): row stride step."""
    if transposed:
        return random_operand(cols, rows, dtype, step=step).T
    return torch.randn(rows, cols * step, dtype=dtype, device=common.DEVICE)[:, ::step]


def check(m, n, k, dtype=torch.float32, transpose_a=False, transpose_b=False, step=1, variants=None):
    """Each variant (default: all) against float64 on fresh random (m, k) @ (k, n), out starting as NaN."""
    a, b = random_operand(m, k, dtype, transpose_a, step), random_operand(k, n, dtype, transpose_b, step)
    expected, magnitude = reference(a.double(), b.double()), reference(a.double().abs(), b.double().abs())
    for name in variants or VARIANTS:
        out = torch.full((m, n), float("nan"), dtype=dtype, device=common.DEVICE)
        common.assert_close(VARIANTS[name](a, b, out=out), expected, magnitude, k, f"{name} {m}x{n}x{k} {dtype}")


# ## vector_k: BLOCK_K elements of k per step
# "scalar" loads one value of the row and one of the column, then waits; this kernel loads BLOCK_K
# of each at once: many loads in flight, neighbouring threads reading neighbouring addresses. On a GPU
# the autotuner picks a config per key (N, K, and the k-strides that say whether a row or column
# is contiguous); one or two warps, since a program computes one number. The interpreter gets one.
VECTOR_K_CONFIGS = ([triton.Config({"BLOCK_K": 32}, num_warps=1)] if common.INTERPRETED else
                    [triton.Config({"BLOCK_K": bk}, num_warps=w) for bk in (64, 128, 256) for w in (1, 2)])


@triton.autotune(configs=VECTOR_K_CONFIGS, key=["N", "K", "stride_ak", "stride_bk"], **common.TUNING)
@triton.jit
def vector_k_kernel(
    a_ptr, b_ptr, out_ptr,  # a[0, 0], b[0, 0] and out[0, 0], as in scalar_kernel
    N, K,  # columns of out (a program id gives (row, column)); length of every dot product
    stride_am, stride_ak,  # elements between a[i, k] and a[i + 1, k], and a[i, k + 1]
    stride_bk, stride_bn, stride_om, stride_on,  # the same for b, and for out
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 inputs
    BLOCK_K: tl.constexpr,  # elements of the row and of the column loaded per step (a power of 2)
):
    pid = tl.program_id(0).to(tl.int64)
    row, col = pid // N, pid % N  # this program's output element
    offs_k = tl.arange(0, BLOCK_K).to(tl.int64)  # int64: k * stride_ak passes 2^31 in a large transposed a
    acc = tl.zeros((BLOCK_K,), dtype=ACC_DTYPE)  # BLOCK_K partial sums: one reduction at the end, not per step
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        in_k = k < K  # the last step may reach past K: masked lanes load nothing and add other=0.0
        a = tl.load(a_ptr + row * stride_am + k * stride_ak, mask=in_k, other=0.0)
        b = tl.load(b_ptr + k * stride_bk + col * stride_bn, mask=in_k, other=0.0)
        acc += a.to(ACC_DTYPE) * b.to(ACC_DTYPE)  # widen first: fp16/bf16 would otherwise sum in fp16/bf16
    tl.store(out_ptr + row * stride_om + col * stride_on, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty))


def vector_k(a, b, out=None):
    """a @ b, one program per output element, BLOCK_K values of k per step (autotuned on a GPU)."""
    m, n, k, c, acc_dtype = prepare(a, b, out)
    if m * n > 0:  # tuned once per bucket: N, K to powers of two, whether k is contiguous, the dtype
        bucket = (common.next_power_of_2(n), common.next_power_of_2(k), a.stride(1) == 1, b.stride(0) == 1, a.dtype)
        common.launch_tuned(vector_k_kernel, (m * n,), bucket, a, b, c, n, k, *a.stride(), *b.stride(), *c.stride(),
                            ACC_DTYPE=acc_dtype)
    return c if out is None or out is c else out.copy_(c)


VARIANTS = {"scalar": scalar, "vector_k": vector_k}


# ## A PyTorch op, with gradients
# custom_op registers vector_k as torch.ops.triton_lessons.matmul_elementwise. Its fake (shape and dtype only) lets
# torch.compile trace around the kernel; a triton_op would trace the kernel itself, which fails under the CPU
# interpreter. The backward is the product again on transposed views (no copies), so second derivatives work.
@torch.library.custom_op("triton_lessons::matmul_elementwise", mutates_args=())
def matmul_elementwise_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return vector_k(a, b)


matmul_elementwise_op.register_fake(lambda a, b: a.new_empty(validate(a, b)[:2]))


def matmul_elementwise_backward(ctx, grad, mm=None):  # mm: the op in the op's backward, which torch.compile records
    a, b = ctx.saved_tensors
    grad_a = (mm or matmul_elementwise)(grad, b.T) if ctx.needs_input_grad[0] else None  # dA = dC @ B^T
    grad_b = (mm or matmul_elementwise)(a.T, grad) if ctx.needs_input_grad[1] else None  # dB = A^T @ dC
    return grad_a, grad_b


save_inputs = lambda ctx, inputs, output: ctx.save_for_backward(*inputs)  # noqa: E731
matmul_elementwise_op.register_autograd(functools.partial(matmul_elementwise_backward, mm=matmul_elementwise_op),
                                        setup_context=save_inputs)
matmul_elementwise_autograd = common.eager_autograd("matmul_elementwise", vector_k, save_inputs, matmul_elementwise_backward)

def matmul_elementwise(a, b, out=None):
    """a @ b for a (M, K) and b (K, N) of one float dtype, any strides; returns (M, N) in that dtype. Compiling: the
    op. Eager with gradients: its backward in an autograd.Function (no dispatcher cost). Else a plain launch, out= too."""
    wants_grad = torch.is_grad_enabled() and (getattr(a, "requires_grad", False) or getattr(b, "requires_grad", False))
    if out is None and (wants_grad or torch.compiler.is_compiling()):
        validate(a, b)  # so that bad input gets this lesson's errors, not the dispatcher's
        return matmul_elementwise_op(a, b) if torch.compiler.is_compiling() else matmul_elementwise_autograd(a, b)
    return vector_k(a, b, out)


def benchmark(m, n, k, dtype=torch.float32, b_transposed=True):
    """Result rows for the variants and torch.matmul on (m, k) @ (k, n), b = W.T or row-major (k, n).
    No memory ceiling applies, since most loads hit caches, as explain() shows."""
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    a, b = random_operand(m, k, dtype), random_operand(k, n, dtype, transposed=b_transposed)
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')} {'b=W.T' if b_transposed else 'b row-major'}"
    times = {name: (common.bench(lambda fn=fn: fn(a, b)), common.bench_graph(lambda fn=fn: fn(a, b)))
             for name, fn in [*VARIANTS.items(), ("torch", reference)]}
    return [common.result_row(case, name, ms, graph_ms, common.tflops(2 * m * n * k, ms), "TFLOP/s", times["torch"][0])
            for name, (ms, graph_ms) in times.items()]


# `make bench` on the GPU. Sizes stay moderate because "scalar" loads one pair of values at a time, then waits.
SWEEP = [{"m": 512, "n": 512, "k": 512, "dtype": "float32"}, {"m": 1024, "n": 1024, "k": 1024, "dtype": "float32"},
         {"m": 1024, "n": 1024, "k": 1024, "dtype": "float32", "b_transposed": False},
         {"m": 2048, "n": 2048, "k": 512, "dtype": "float32"}, {"m": 1024, "n": 1024, "k": 1024, "dtype": "bfloat16"}]


def explain(m, n, k, dtype, results):
    """Print the bytes the programs load against those a and b store, and the best variant's rate."""
    size = torch.empty((), dtype=dtype).element_size()
    loaded_bytes, stored_bytes = 2 * m * n * k * size, (m * k + k * n) * size  # each program: a row and a column
    best = max((r for r in results if r["variant"] != "torch"), key=lambda r: r["throughput"])
    print(f"\nEach of the {m * n:,} programs loads a row of a and a column of b: {loaded_bytes:,} bytes in all, "
          f"where a and b hold {stored_bytes:,}, for 2 flops per pair ({1 / size:.2g} flop per byte). Every value of "
          f"a is loaded N = {n:,} times and every value of b M = {m:,} times. {best['variant']} takes them in at "
          f"{common.gbps(loaded_bytes, best['eager ms']):.3g} GB/s, {1 / best['x torch']:.3g}x slower than "
          "torch.matmul; lesson 02 gives each program a tile of outputs.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for flag, text in ("--m", "rows of a and out"), ("--n", "columns of b and out"), ("--k", "columns of a, rows of b"):
        parser.add_argument(flag, type=int, default=16 if common.INTERPRETED else 1024, help=text)
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="element type of a, b and out")
    parser.add_argument("--b-row-major", action="store_true", help="time a row-major b (K, N) instead of W.T")
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 0:
        parser.error("--m, --n and --k must not be negative")
    dtype, b_transposed = DTYPES[args.dtype], not args.b_row_major
    print(common.describe_run())
    w, h = (torch.randn(rows, 4, dtype=dtype, device=common.DEVICE) for rows in (2, 3))  # the H @ W.T example
    print(f"O = H @ W.T, the outputs of a layer with inputs H (3x4) and weights W (2x4), {args.dtype}, is "
          f"matmul_elementwise(H, W.T), W.T a view with strides {w.T.stride()}:\n{matmul_elementwise(h, w.T).cpu()}")
    check(args.m, args.n, args.k, dtype, transpose_b=b_transposed)
    print(f"\ncheck passed: {', '.join(VARIANTS)} match float64 at {args.m}x{args.n}x{args.k} {args.dtype}\n")
    results = benchmark(args.m, args.n, args.k, dtype, b_transposed)
    common.print_table(results, common.RESULT_COLUMNS)
    explain(args.m, args.n, args.k, dtype, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
