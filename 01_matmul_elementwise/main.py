"""Matrix multiplication with one Triton program per output element.

out = a @ b for a of shape (M, K) and b of shape (K, N). Every output element out[i, j] is the
dot product of row i of a with column j of b, and nothing else needs it, so we launch M * N
programs and give each one its own (i, j). This first lesson is about the mental model:

- a program id is an output coordinate: program p computes out[p // N, p % N];
- strides map an index to an address: a[i, k] lives at a_ptr + i * a.stride(0) + k * a.stride(1),
  which is why a transposed view (b = W.T) needs no copy, only other strides;
- a mask switches off the loads that would run past the end of a row;
- each program sums into a private accumulator, in float32 (float64 for float64 inputs).

Two kernels: "scalar" walks k one element at a time, "vector_k" loads BLOCK_K elements of the row
and of the column per step. Both are far slower than torch.matmul, and main() counts the bytes to
show why: lesson 02 fixes that by letting one program compute a whole tile of the output.
"""

import argparse
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
    stride_bk, stride_bn,  # the same for b
    stride_om, stride_on,  # the same for out
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 inputs
):
    # One program per output element, numbered along the rows of out. A 1-D grid holds up to
    # 2^31 - 1 programs; a 2-D grid (M, N) would stop at N = 65535 on CUDA. The id becomes int64
    # so that row * stride cannot overflow in tensors of more than 2^31 elements.
    pid = tl.program_id(0).to(tl.int64)
    row = pid // N
    col = pid % N
    a_ptrs = a_ptr + row * stride_am  # a[row, 0]
    b_ptrs = b_ptr + col * stride_bn  # b[0, col]
    # This program's own accumulator: no other program reads or writes it.
    acc = tl.zeros((), dtype=ACC_DTYPE)
    for _ in range(K):
        # fp16 and bf16 products are exact in float32; the sum is where precision would be lost.
        acc += tl.load(a_ptrs).to(ACC_DTYPE) * tl.load(b_ptrs).to(ACC_DTYPE)
        a_ptrs += stride_ak  # one step right along the row of a
        b_ptrs += stride_bk  # one step down the column of b
    tl.store(out_ptr + row * stride_om + col * stride_on, acc.to(out_ptr.dtype.element_ty))


# On a GPU the autotuner times every config the first time it meets a key (the sizes, and the
# strides along k that decide whether a row or column is contiguous) and keeps the fastest. A
# program computes one number, so one or two warps suffice: on an H200 four warps were slower,
# each thread holding too few elements and fewer programs fitting on a multiprocessor. The
# interpreter cannot time configs (it has no GPU): it gets one.
if common.INTERPRETED:
    VECTOR_K_CONFIGS = [triton.Config({"BLOCK_K": 32}, num_warps=1)]
else:
    VECTOR_K_CONFIGS = [
        triton.Config({"BLOCK_K": block_k}, num_warps=warps) for block_k in (64, 128, 256) for warps in (1, 2)
    ]


@triton.autotune(configs=VECTOR_K_CONFIGS, key=["M", "N", "K", "stride_ak", "stride_bk"])
@triton.jit
def vector_k_kernel(
    a_ptr,  # pointer to a[0, 0]; a has shape (M, K)
    b_ptr,  # pointer to b[0, 0]; b has shape (K, N)
    out_ptr,  # pointer to out[0, 0]; out has shape (M, N)
    M,  # rows of out (only a key for the autotuner)
    N,  # columns of out: turns a program id into a (row, column) pair
    K,  # length of every dot product; 0 gives zeros
    stride_am, stride_ak,  # elements between a[i, k] and a[i + 1, k], and a[i, k + 1]
    stride_bk, stride_bn,  # the same for b
    stride_om, stride_on,  # the same for out
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 inputs
    BLOCK_K: tl.constexpr,  # elements of the row and of the column loaded per step (a power of 2)
):
    pid = tl.program_id(0).to(tl.int64)
    row = pid // N
    col = pid % N
    # int64 offsets: k * stride_ak passes 2^31 in a transposed view of a large matrix.
    offs_k = tl.arange(0, BLOCK_K).to(tl.int64)
    # Each step asks for BLOCK_K values of the row and of the column at once, where "scalar" asks
    # for one and waits: many loads in flight, and neighbouring threads read neighbouring addresses.
    # BLOCK_K partial sums, added together once at the end: one reduction across the threads per
    # program instead of one per step.
    acc = tl.zeros((BLOCK_K,), dtype=ACC_DTYPE)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        # The last step may reach past K: the mask switches those lanes off and `other=0.0`
        # makes them add nothing. Without it they would read whatever lies beyond the row.
        in_row = k < K
        a = tl.load(a_ptr + row * stride_am + k * stride_ak, mask=in_row, other=0.0)
        b = tl.load(b_ptr + k * stride_bk + col * stride_bn, mask=in_row, other=0.0)
        # Widen before multiplying: tl.sum and `+` keep fp16/bf16 in fp16/bf16 otherwise.
        acc += a.to(ACC_DTYPE) * b.to(ACC_DTYPE)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row * stride_om + col * stride_on, total.to(out_ptr.dtype.element_ty))


def _validate(a, b, out):
    """Raise TypeError/ValueError unless a @ b can run here; return (M, N, K)."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"a and b must be tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"a and b must be 2-D, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"inner dimensions differ: a is {tuple(a.shape)} and b is {tuple(b.shape)} "
            f"(a's {a.shape[1]} columns must equal b's {b.shape[0]} rows)"
        )
    if a.dtype != b.dtype:
        raise TypeError(f"a and b must have one dtype, got {a.dtype} and {b.dtype}")
    if a.dtype not in DTYPES.values():
        raise TypeError(f"dtype {a.dtype} is not supported; use one of {', '.join(DTYPES)}")
    if a.device != b.device:
        raise ValueError(f"a and b must be on one device, got {a.device} and {b.device}")
    if a.device.type != common.DEVICE.type:
        raise ValueError(f"tensors must be on {common.DEVICE.type} here, got {a.device}")
    m, k = a.shape
    n = b.shape[1]
    if m * n > 2**31 - 1:
        raise ValueError(
            f"a {tuple(a.shape)} @ b {tuple(b.shape)} has {m * n:,} outputs, past the 2^31 - 1 programs of a grid"
        )
    if out is not None:
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"out must be a tensor, got {type(out).__name__}")
        if out.shape != (m, n) or out.dtype != a.dtype or out.device != a.device:
            raise ValueError(
                f"out must be {(m, n)} {a.dtype} on {a.device}, got {tuple(out.shape)} {out.dtype} on {out.device}"
            )
    return m, n, k


def _prepare(a, b, out):
    """Validate; return (M, N, K), the output tensor and the accumulator dtype."""
    m, n, k = _validate(a, b, out)
    if out is None:
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
    acc_dtype = tl.float64 if a.dtype == torch.float64 else tl.float32
    return m, n, k, out, acc_dtype


def scalar(a, b, out=None):
    """a @ b, one program per output element, one k per step: the seed's v1 with a 1-D grid,
    int64 offsets, the output's strides and dtype, and one warp a program.

    out: optional (M, N) tensor to write into, any strides (check() passes one full of NaN).
    """
    m, n, k, out, acc_dtype = _prepare(a, b, out)
    if m * n > 0:  # no output element, no program: a grid of 0 programs is an error
        # A scalar program does the work of one thread: one warp carries it, and the fewer
        # warps a program holds, the more programs fit on a multiprocessor at once (on an H200
        # at 1024^3, 9.5 ms with one warp against 37 ms with Triton's default of four).
        scalar_kernel[(m * n,)](
            a, b, out, n, k, *a.stride(), *b.stride(), *out.stride(), ACC_DTYPE=acc_dtype, num_warps=1
        )
    return out


def vector_k(a, b, out=None):
    """a @ b, one program per output element, BLOCK_K values of k per step (autotuned on a GPU)."""
    m, n, k, out, acc_dtype = _prepare(a, b, out)
    if m * n > 0:
        vector_k_kernel[(m * n,)](a, b, out, m, n, k, *a.stride(), *b.stride(), *out.stride(), ACC_DTYPE=acc_dtype)
    return out


VARIANTS = {"scalar": scalar, "vector_k": vector_k}
UNAVAILABLE = {}  # both kernels use plain pointer arithmetic, which every Triton runs


def matmul_elementwise(a, b, out=None):
    """a @ b for a (M, K) and b (K, N) of one float dtype, any strides; returns (M, N) in that dtype.

    Uses "vector_k", which takes every valid input: empty outputs launch nothing and K = 0 gives
    zeros. For real work use torch.matmul or the tiled kernels of lesson 02.
    """
    return vector_k(a, b, out)


def reference(a, b):
    """What matmul_elementwise computes, in PyTorch."""
    return torch.matmul(a, b)


def random_operand(rows, cols, dtype, transposed=False, step=1):
    """torch.randn of shape (rows, cols), laid out in memory as asked, never copied into place.

    transposed: the .T view of a row-major (cols, rows) tensor, as W.T is in out = H @ W.T.
    step: every step-th column of a tensor step times wider, so rows are not contiguous.
    """
    if transposed:
        return random_operand(cols, rows, dtype, step=step).T
    return torch.randn(rows, cols * step, dtype=dtype, device=common.DEVICE)[:, ::step]


def check(m, n, k, dtype=torch.float32, transpose_a=False, transpose_b=False, step=1, variants=None):
    """Run each variant (default: all) on fresh random (m, k) @ (k, n) and compare with float64.

    Every output starts as NaN, so an element a kernel forgets to write fails the check.
    """
    a = random_operand(m, k, dtype, transpose_a, step)
    b = random_operand(k, n, dtype, transpose_b, step)
    expected = reference(a.double(), b.double())
    magnitude = reference(a.double().abs(), b.double().abs())
    for name in variants or VARIANTS:
        out = torch.full((m, n), float("nan"), dtype=dtype, device=common.DEVICE)
        got = VARIANTS[name](a, b, out=out)
        common.assert_close(got, expected, magnitude, k, f"{name} {m}x{n}x{k} {dtype}")


def benchmark(m, n, k, dtype=torch.float32, b_transposed=True):
    """Time every variant and torch.matmul on a (m, k) @ (k, n); return result rows.

    b_transposed: b is W.T for a row-major W of shape (n, k), as in the seed, so every column of b
    is contiguous in memory; False makes b row-major (k, n), where a column is n elements apart.
    """
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    a = random_operand(m, k, dtype)
    b = random_operand(k, n, dtype, transposed=b_transposed)
    flops = 2 * m * n * k  # one multiply and one add per (i, j, k)
    case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')} {'b=W.T' if b_transposed else 'b row-major'}"
    torch_ms = common.bench(lambda: reference(a, b))
    rows = []
    for name, fn in [*VARIANTS.items(), ("torch", reference)]:
        ms = torch_ms if name == "torch" else common.bench(lambda fn=fn: fn(a, b))
        rows.append(
            {
                "case": case,
                "variant": name,
                "ms": ms,
                "throughput": common.tflops(flops, ms),
                "unit": "TFLOP/s",
                "% of ceiling": None,  # no ceiling fits: the loads come from caches, not from DRAM
                "x torch": torch_ms / ms,
            }
        )
    return rows


# `make bench` on the GPU. The scalar kernel is slow: every case stays well under a second a call.
SWEEP = [
    {"m": 512, "n": 512, "k": 512, "dtype": "float32"},
    {"m": 1024, "n": 1024, "k": 1024, "dtype": "float32"},
    {"m": 1024, "n": 1024, "k": 1024, "dtype": "float32", "b_transposed": False},
    {"m": 2048, "n": 2048, "k": 512, "dtype": "float32"},
    {"m": 1024, "n": 1024, "k": 1024, "dtype": "bfloat16"},
]


def show_seed_case():
    """The seed's example: O = H @ W.T for W (2, 4) and H (3, 4), W.T passed as a view."""
    w = torch.randn(2, 4, device=common.DEVICE)
    h = torch.randn(3, 4, device=common.DEVICE)
    print(f"O = H @ W.T for W (2x4) and H (3x4) is matmul_elementwise(H, W.T); W.T is a view, strides {w.T.stride()}")
    print(matmul_elementwise(h, w.T).cpu())
    print("torch: H @ W.T")
    print(reference(h, w.T).cpu())


def _in_bytes(count):
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count} bytes"


def explain(m, n, k, dtype, b_transposed, rows):
    """A few sentences on where the time goes, with this run's numbers."""
    size = torch.empty((), dtype=dtype).element_size()
    loaded = 2 * m * n * k * size  # every program loads a row of a and a column of b
    held = (m * k + k * n) * size  # what a and b hold
    flops = 2 * m * n * k
    print(
        f"\nEach of the {m * n:,} programs loads a row of a and a column of b, 2 * K = {2 * k:,} elements, "
        f"and does 2 flops per pair of them: {flops / max(loaded, 1):.2g} flop per byte. Together they load "
        f"{_in_bytes(loaded)} although a and b hold {_in_bytes(held)}: every value of a is loaded N = {n:,} times "
        f"and every value of b M = {m:,} times."
    )
    if common.INTERPRETED:
        print("Here the interpreter runs the programs one after another in Python: run on a GPU to see the real costs.")
        return
    best = max((row for row in rows if row["variant"] != "torch"), key=lambda row: row["throughput"])
    bandwidth = common.gbps(loaded, best["ms"])
    dram = common.copy_ceiling_gbps()
    if bandwidth > dram:
        where = ", so most loads must hit the caches"
    elif not b_transposed:
        where = (
            f", because a column of a row-major b is {n:,} elements apart: each of its values costs a memory "
            f"transaction of its own for {size} useful bytes (drop --b-row-major to compare)"
        )
    else:
        where = ""
    print(
        f"{best['variant']} takes in {bandwidth / 1e3:.3g} TB/s, {bandwidth / dram:.2g}x what a device-to-device "
        f"copy gets from DRAM{where}; it runs at a {1 / best['x torch']:.3g}x slowdown against torch.matmul. "
        "A program that computes a tile of the output loads each value once for the whole tile: that is lesson 02."
    )


def main(argv=None):
    default = 16 if common.INTERPRETED else 1024
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=int, default=default, help=f"rows of a and out (default {default})")
    parser.add_argument("--n", type=int, default=default, help=f"columns of b and out (default {default})")
    parser.add_argument("--k", type=int, default=default, help=f"columns of a, rows of b (default {default})")
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="element type (default float32)")
    parser.add_argument(
        "--b-row-major",
        action="store_true",
        help="time a row-major b (K, N) instead of the seed's W.T, whose columns are contiguous",
    )
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 0:
        parser.error("--m, --n and --k must not be negative")
    dtype = DTYPES[args.dtype]
    b_transposed = not args.b_row_major

    print(common.describe_run())
    for name, why in UNAVAILABLE.items():
        print(f"variant {name} left out: {why}")
    show_seed_case()
    check(args.m, args.n, args.k, dtype, transpose_b=b_transposed)
    size = f"{args.m}x{args.n}x{args.k} {args.dtype}"
    print(f"\ncheck passed: {', '.join(VARIANTS)} match a float64 reference at {size}\n")
    rows = benchmark(args.m, args.n, args.k, dtype, b_transposed)
    common.print_table(rows, common.RESULT_COLUMNS)
    explain(args.m, args.n, args.k, dtype, b_transposed, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
