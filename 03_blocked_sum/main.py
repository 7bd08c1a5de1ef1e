"""Column sums, out = x.sum(0): a blocked reduction in Triton.

What you learn: the pattern behind Triton's reductions. A program
adds whole tiles (the pieces of x it loads at once) into acc, an
accumulator of a tile's shape, and reduces acc once, after its
loop. Then you make it fast on every shape of x: split a tall x
over more programs, load tiles ahead, and tune the tile.

Words from lesson 01: a program is a running copy of a kernel,
numbered by tl.program_id, and programs run in parallel; a
block is a small tensor of fixed shape inside one program; a
stride is the step, in elements, along a dim. Here a tile is
the 2-D block of x that one step of a program's loop loads, and
each program owns BLOCK_N columns of x (its column block).

    out[j]       = sum over i of x[i, j]    one sum per column
    grad_x[i, j] = grad_out[j]              the same on every row

In PyTorch, with x padded with zeros to whole blocks:

    for cols in blocks of BLOCK_N columns:  # a program each
        acc = torch.zeros(BLOCK_M, BLOCK_N)
        for i0 in range(0, M, BLOCK_M):
            acc += x[i0 : i0 + BLOCK_M, cols]
        out[cols] = acc.sum(0)

Worked example: x of shape (5, 6), stored row after row, so
stride_m = 6 and stride_n = 1. Each program owns BLOCK_N = 4
columns: cdiv(6, 4) = 2 programs (cdiv: division rounded up).
Program 1 owns cols = [4, 5, 6, 7] and adds BLOCK_M = 2 rows a
step. Its first step, rows = [0, 1], loads x at these offsets:

    rows[:, None] * 6 + cols[None, :]
        = [[0], [1]] * 6 + [[4, 5, 6, 7]] = [[ 4,  5,  6,  7],
                                             [10, 11, 12, 13]]

Columns 6 and 7 are past x's edge (N = 6), yet in row 0 their
offsets, 6 and 7, lie in memory: they hold x[1, 0] and x[1, 1].
An unmasked load would not crash; it would quietly add the next
row's values. The mask cols < N turns those loads off; rows < M
turns off row 5 in step 2 (counting from 0: rows 4 and 5), as x
has M = 5 rows. A load turned off reads nothing and gives
tl.load's `other`: 0 here, which adds nothing.
`main.py --draw picture.png` draws this, from the kernel itself.
"""

import functools
import sys
from pathlib import Path

import torch

# common (the lessons' helper): with no GPU, it runs Triton on the CPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## Part 1. The simplest kernel: one program per block of columns
# @triton.jit makes a Python function a kernel, compiled for the
# GPU at its first launch. A tensor argument arrives as a pointer
# to its first element; tl.load reads there, tl.store writes.
# acc has a tile's shape: the loop adds whole tiles into it;
# tl.sum reduces it once, after the loop ("Why reduce once").
@triton.jit
def simple_column_sum_kernel(
    x_ptr, out_ptr,  # pointers to x[0, 0] and out[0]
    M, N, stride_m, stride_n,  # x's sizes and strides
    # tl.constexpr: fixed when compiling (a new value compiles anew)
    BLOCK_M: tl.constexpr,  # rows per step, a power of 2
    BLOCK_N: tl.constexpr,  # columns per program, a power of 2
):  # fmt: skip
    # tl.arange(0, n): the block 0, 1, ..., n - 1 (n a power of 2).
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    # A float32 sum: a 16-bit running sum would drop small terms.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in range(0, M, BLOCK_M):  # steps in order, in this program
        rows = i0 + tl.arange(0, BLOCK_M)
        # A (BLOCK_M, BLOCK_N) block, broadcast as in torch:
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        mask = (rows < M)[:, None] & col_mask[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0)  # masked: 0
        acc += tile.to(tl.float32)  # elementwise: no sum yet
    sums = tl.sum(acc, axis=0)  # acc's rows, added once
    # out_ptr.dtype.element_ty: out's dtype, which out_ptr points to.
    tl.store(out_ptr + cols, sums.to(out_ptr.dtype.element_ty), mask=col_mask)


def column_sums_simple(x, kernel=simple_column_sum_kernel):
    """x.sum(0) by simple_column_sum_kernel, or kernel."""
    M, N = x.shape
    # float64 would be summed in float32; Triton's offsets are int32
    # and wrap past 2**31 (elements_spanned: 1 + x's last offset).
    assert x.dtype != torch.float64, "float32 sums: see any_x.py"
    assert common.elements_spanned(x) < 2**31, "int32 offsets: see any_x.py"
    out = torch.empty(N, dtype=x.dtype, device=x.device)
    BLOCK_N = 64  # columns per program
    grid = (triton.cdiv(N, BLOCK_N),)  # a program per block
    # kernel[grid]: grid[0] programs, each on 4 warps of 32 threads.
    kernel[grid](x, out, M, N, *x.stride(), BLOCK_M=16, BLOCK_N=BLOCK_N, num_warps=4)
    return out


def reference(x):  # what every kernel here computes
    return x.sum(0)


# ## Is it right?
# reference() in float64 is near exact. A float32 sum rounds a
# little at each add, so common.assert_close allows each column
# an error that grows with M and with the column's sum of |x|.
def check(fn, x, name):
    """Asserts that fn(x) is x.sum(0), up to rounding."""
    exact = reference(x.double())
    size = reference(x.double().abs())
    out = fn(x)
    assert out.dtype == x.dtype, f"{name}: {out.dtype}"
    common.assert_close(out, exact, size, reduction_length=x.shape[0], what=name)


# ## Why reduce once: the 1-D way, for comparison
# A program runs on num_warps warps of 32 threads: 4 x 32 = 128
# threads in the simple kernel's launch. Triton spreads each
# block's values over them; which thread holds which value is
# the block's layout. In steps:
# - a 16 x 64 tile is 1024 values: 8 held by each thread;
# - acc has the tile's shape, and Triton gives it the same
#   layout, so each thread holds the 8 places of acc that
#   match its 8 values of the tile;
# - so acc += tile is 8 adds that each thread makes alone;
# - tl.sum(acc, axis=0) adds up columns whose values other
#   threads hold: threads pass values to each other, and wait.
# one_d_column_sum_kernel keeps a 1-D acc, so it runs tl.sum on
# every tile, inside its loop. On an H200, for x of 16384 x 8192
# float32, the simple kernel takes 0.50 ms and one_d 0.79 ms.
# `main.py --asm` shows the simple kernel's shfl (shuffle)
# instructions, by which a thread reads a value another thread
# holds: they come once, after its loop.
@triton.jit
def one_d_column_sum_kernel(
    x_ptr, out_ptr, M, N, stride_m, stride_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)  # 1-D
    for i0 in range(0, M, BLOCK_M):
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        mask = (rows < M)[:, None] & (cols < N)[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += tl.sum(tile.to(tl.float32), axis=0)  # each step
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cols < N)


column_sums_one_d = functools.partial(column_sums_simple, kernel=one_d_column_sum_kernel)


# ## Part 2. split_column_sum_kernel: two changes
# Part 1 holds the lesson's idea; Parts 2 and 3 make it fast.
# The simple kernel is slow on a tall x. The kernel below
# changes it in two ways, each marked at its lines.
#
# (1) Split a tall x over more programs. A program runs on one
# SM (streaming multiprocessor, one of the GPU's cores; an H200
# has 132). For x of 1048576 x 64 the simple kernel starts
# cdiv(64, 64) = 1 program, and one SM has too few loads in
# flight to keep memory busy. So the grid gets
# a second axis. The host cuts x's rows into chunks of
# rows_per_split rows each; program (c, s) adds up column block
# c of chunk s into row s of a buffer, partial. A second pass
# then adds up each column of partial:
#
#     partial[s, cols] = x[rows of chunk s, cols].sum(0)
#     out[cols] = partial[:, cols].sum(0)
#
# It adds them in a fixed order, so every call gives the same
# bits. (Atomic adds into out, from every program at once,
# would land in any order, and round differently each time.)
# The second pass is Part 1's simple kernel, with partial as its
# x: each of its programs adds up the rows of partial in its
# column block. partial holds float32 sums: they are rounded to
# x's dtype only when the second pass stores them.
#
# (2) Load tiles ahead. A load from memory takes hundreds of
# cycles. The loop tl.range(..., num_stages=STAGES) asks for the
# next STAGES - 1 tiles before it adds the current one, so the
# loads and the adds overlap.
@triton.jit
def split_column_sum_kernel(
    x_ptr, out_ptr, M, N, stride_m, stride_n,
    rows_per_split,  # (1) a chunk's rows; >= M if not split
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    STAGES: tl.constexpr,  # (2) tiles in flight
):  # fmt: skip
    chunk = tl.program_id(1)  # (1) which chunk: 0 if x is not split
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    row_start = chunk * rows_per_split  # (1) the chunk's rows
    row_stop = tl.minimum(row_start + rows_per_split, M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):  # (2)
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        # (1) row_stop, not M: only this chunk's rows, so that no
        # row is added by two chunks.
        mask = (rows < row_stop)[:, None] & col_mask[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += tile.to(tl.float32)
    sums = tl.sum(acc, axis=0)
    # (1) Chunk s stores its sums in row s of out_ptr: of partial
    # (contiguous, a row per chunk) if x is split; if it is not,
    # the one chunk, 0, stores into out itself.
    tl.store(out_ptr + chunk * N + cols, sums.to(out_ptr.dtype.element_ty), mask=col_mask)


# ## Part 3. column_sum_kernel: the split kernel, tuned
# The best tile depends on x: in a tile wider than x, most
# values are masked off, and a chunk of few rows wants tiles of
# few rows. A triton.Config is one candidate tile: values of the
# constexprs, and num_warps. A TILES row is (BLOCK_M, BLOCK_N,
# num_warps, STAGES). We timed 32 tiles on 12 shapes and kept
# these 7, each the fastest on at least one shape.
TILES = [(256, 32, 4, 1), (128, 32, 4, 2), (64, 64, 4, 2), (256, 64, 8, 2)]
TILES += [(32, 128, 4, 2), (128, 128, 8, 1), (1, 1024, 8, 1)]  # last: for few rows
if common.INTERPRETED:
    TILES = [(32, 32, 4, 1)]  # the CPU can't time a GPU: one config
CONFIGS = [triton.Config(dict(BLOCK_M=m, BLOCK_N=n, STAGES=s), num_warps=w) for m, n, w, s in TILES]

# triton.autotune(configs, key) wraps a kernel. Its first launch
# with new values of the key's arguments times every config and
# keeps the fastest. The key is N and rows_per_split (the host's
# chunk length, below), not M, which changes with every x: so
# the autotuner tunes seldom. We call autotune, where a kernel
# usually has @triton.autotune(...) above its @triton.jit, to
# keep Part 2's kernel untuned for the "split" variant.
column_sum_kernel = triton.autotune(configs=CONFIGS, key=["N", "rows_per_split"])(
    split_column_sum_kernel
)


# ## On the host: chunks, the launch, the second pass
# The host cuts x into chunks of CHUNK_ROWS = 2048 rows. For x
# of 1048576 x 64 that makes 512 chunks, so 512 programs a
# column block: about 4 for each of an H200's 132 SMs.
# An x of at most 2048 rows is one chunk, of M rounded up to a
# power of 2 rows: so rows_per_split, the autotuner's key, takes
# few values (M = 1000 and 1001 share a tuning, at 1024).
# 2048 is a multiple of every BLOCK_M, so no tile runs past a
# chunk's end (its mask would keep the sums right, but part of
# each such step would be masked off). op.py sizes chunks by
# the GPU instead.
CHUNK_ROWS = 256 if common.INTERPRETED else 2048  # CPU: 256, to split small x


def chunks(M):
    """(splits, rows_per_split) for an x of M rows."""
    rows_per_split = min(CHUNK_ROWS, triton.next_power_of_2(max(M, 1)))
    return triton.cdiv(max(M, 1), rows_per_split), rows_per_split


def column_sums(x, kernel, **tile):
    """x.sum(0) by `kernel` at `tile` (or as tuned), split or not."""
    M, N = x.shape
    # float32 sums and int32 offsets, as in Part 1
    assert x.dtype != torch.float64, "float32 sums: see any_x.py"
    assert common.elements_spanned(x) < 2**31, "int32 offsets: see any_x.py"
    out = torch.empty(N, dtype=x.dtype, device=x.device)
    splits, rows_per_split = chunks(M)
    # CUDA allows at most 65535 programs along the grid's axis 1.
    assert splits <= 65535, "too many chunks: see any_x.py"
    # The autotuner picks BLOCK_N at the launch, so the grid is a
    # function of meta, the picked config: BLOCK_N sets its size.
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), splits)  # noqa: E731
    if splits == 1:  # one chunk: sums go straight into out
        kernel[grid](x, out, M, N, *x.stride(), rows_per_split, **tile)
        return out
    partial = x.new_empty((splits, N), dtype=torch.float32)
    kernel[grid](x, partial, M, N, *x.stride(), rows_per_split, **tile)
    sum_partials(partial, out)
    return out


def sum_partials(partial, out, kernel=simple_column_sum_kernel, **more):
    """out[j] = partial[:, j].sum(), in a fixed order: Part 1's
    kernel reads partial as its x, of P rows. (any_x.py passes
    its own kernel, with the extra arguments it needs in more.)"""
    P, N = partial.shape
    # A tile: block_m rows by block_n columns. block_m is P
    # rounded up to a power of 2, at most 256, so that few steps
    # cover P; block_n = 4096 // block_m, kept within 16 to 256.
    # We picked about 4096 values a tile, so that each of the 128
    # threads of 4 warps (Triton's default) holds 32 of them.
    block_m = min(triton.next_power_of_2(P), 256)
    block_n = max(16, min(256, 4096 // block_m))
    grid = (triton.cdiv(N, block_n),)
    tile = dict(BLOCK_M=block_m, BLOCK_N=block_n)
    kernel[grid](partial, out, P, N, *partial.stride(), **tile, **more)


# The variants: "split" runs Part 2's kernel at one tile (try
# STAGES=1 there: what does (2) buy?), "tuned" Part 3's.
SPLIT_TILE = dict(BLOCK_M=64, BLOCK_N=64, STAGES=2, num_warps=4)
column_sums_split = functools.partial(column_sums, kernel=split_column_sum_kernel, **SPLIT_TILE)
column_sums_tuned = functools.partial(column_sums, kernel=column_sum_kernel)


# ## Gradients: a torch.autograd.Function
# grad_x[i, j] = grad_out[j] needs no kernel: grad_out.expand(M, N)
# is a view. expand is a torch op, which autograd records like
# any other: so second derivatives work too.
class BlockedSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x_shape = x.shape
        return column_sums(x, column_sum_kernel)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.expand(ctx.x_shape)


VARIANTS = {"simple": column_sums_simple, "one_d": column_sums_one_d}
VARIANTS |= {"split": column_sums_split, "tuned": column_sums_tuned}
# Beside this file: any_x.py, Part 4 (optional), the kernel
# op.py runs (any dtype, any size, any M); block_ptr.py, an
# appendix, the loop with block pointers (older tutorials).


# ## The harness: checks, timing (skip it on a first read)
def check_variants(x, variants):
    """check() on each variant; torch.empty gives NaN in the `with`."""
    for name, fn in variants.items():
        case = f"{name} on x {tuple(x.shape)} {x.dtype}, strides {x.stride()}"
        with common.uninitialized_memory_is_nan():
            check(fn, x, case)
    return list(variants)


DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32")}
SHAPES = [(16384, 8192), (2048, 65536), (1048576, 64), (64, 1048576)]
SWEEP = [dict(rows=m, cols=n, dtype=t) for t in ("float32", "bfloat16") for m, n in SHAPES]


def benchmark(rows, cols, dtype="float32", module=sys.modules[__name__]):
    """Times torch, module.VARIANTS, and column_sum_kernel bare."""
    x = torch.randn(rows, cols, dtype=DTYPES.get(dtype, dtype), device=common.DEVICE)
    calls = {"torch": functools.partial(x.sum, 0)}
    calls |= {name: functools.partial(fn, x) for name, fn in module.VARIANTS.items()}
    splits, rows_per_split = chunks(rows)
    out = x.new_empty((splits, cols), dtype=x.dtype if splits == 1 else torch.float32)
    grid = lambda meta: (triton.cdiv(cols, meta["BLOCK_N"]), splits)  # noqa: E731
    args = (x, out, rows, cols, *x.stride(), rows_per_split)
    calls["column_sum_kernel[grid] bare"] = lambda: column_sum_kernel[grid](*args)
    times = {name: common.measure(call) for name, call in calls.items()}
    case = f"{rows}x{cols} {str(x.dtype).removeprefix('torch.')}"
    nbytes = (rows * cols + cols) * x.element_size()  # x read, out written
    ceiling = common.copy_ceiling_gbps()
    return [
        common.timing_row(case, name, t, times["torch"], common.gbps(nbytes, t[0]), "GB/s", ceiling)
        for name, t in times.items()
    ]


def main(argv=None, module=sys.modules[__name__]):
    """Checks and times module.VARIANTS (this file, or one beside)."""
    import tools  # adds --draw and --asm (see the README)

    parser = tools.lesson_parser(module)
    rows, cols = (1000, 96) if common.INTERPRETED else (16384, 8192)
    add = parser.add_argument
    add("--rows", type=int, default=rows, help="M, the rows summed away")
    add("--cols", type=int, default=cols, help="N, the columns kept")
    add("--dtype", choices=list(DTYPES), default="float32", help="of x")
    args = parser.parse_args(argv)
    if args.rows < 0 or args.cols < 0:
        parser.error("--rows and --cols must be >= 0")
    print(common.describe_run())
    # The docstring's example: x (5, 6), 2 programs of 4 columns
    x = torch.arange(30.0, device=common.DEVICE).reshape(5, 6)
    out = torch.empty(6, device=x.device)
    simple_column_sum_kernel[(2,)](x, out, 5, 6, 6, 1, BLOCK_M=2, BLOCK_N=4)
    print(f"the docstring's example: {out.tolist()} = {x.sum(0).tolist()}")
    for name, reason in getattr(module, "UNAVAILABLE", {}).items():
        print(f"variant {name!r} left out: {reason}")
    x = torch.randn(args.rows, args.cols, dtype=DTYPES[args.dtype], device=common.DEVICE)
    checked = check_variants(x, module.VARIANTS)
    x.requires_grad_()
    BlockedSum.apply(x).sum().backward()  # grad_x: ones, from expand
    assert torch.equal(x.grad, torch.ones_like(x))
    print(f"check passed: {', '.join(checked)} and the gradient match\n")
    table = benchmark(args.rows, args.cols, args.dtype, module)
    common.print_table(table, common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
