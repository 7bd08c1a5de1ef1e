"""Column sums, out = x.sum(0): a blocked reduction in Triton.

Lesson 01 defined these words. A program is a running copy of
a kernel, numbered by tl.program_id. Programs run in
parallel. Each runs on num_warps warps, which are groups of
32 threads. A block is a small tensor of fixed shape inside
one program. Its values are spread over the program's
threads. A stride is the step, in elements, from one index to
the next along a dim. New here: a tile is the 2-D block of x
that one step of a program's loop loads.

This lesson teaches the pattern behind Triton's reductions.
Each program owns BLOCK_N columns of x. It adds whole tiles of
x into a 2-D accumulator, acc, and reduces acc to one row only
once, after its loop. Part 2 makes this fast on every shape
of x: it splits a tall x over more programs, loads tiles
ahead, and lets Triton pick the tile. Models need column sums:
the gradient of a bias, for one, is grad_y.sum(0).

For x of shape (M, N), out has N values:

    out[j]       = sum over i of x[i, j]    one sum per column
    grad_x[i, j] = grad_out[j]              its gradient

In PyTorch, with x padded with zeros to whole tiles:

    for cols in groups of BLOCK_N columns:  # one program per group
        acc = torch.zeros(BLOCK_M, BLOCK_N)
        for i0 in range(0, M, BLOCK_M):     # one step per tile
            acc += x[i0 : i0 + BLOCK_M, cols]
        out[cols] = acc.sum(0)

For example, take x of shape (5, 6), stored row by row. Then
x[i, j] lies i * 6 + j elements after x[0, 0], so the strides
are stride_m = 6 and stride_n = 1. With BLOCK_N = 4, there are
cdiv(6, 4) = 2 programs (cdiv rounds division up). Program 1
owns cols = [4, 5, 6, 7]. With BLOCK_M = 2, its steps take rows
[0, 1], [2, 3] and [4, 5]. Its first step loads x at offsets:

    rows[:, None] * 6 + cols[None, :]
        = [[0], [1]] * 6 + [[4, 5, 6, 7]] = [[ 4,  5,  6,  7],
                                             [10, 11, 12, 13]]

But x's last column is 5, so cols 6 and 7 are not in x. Without
a mask, this step would load offsets 6, 7, 12 and 13. They hold
x[1, 0], x[1, 1], x[2, 0] and x[2, 1], which belong to other
columns. And the last step's row 5 lies past x's end. The
kernel masks off both: those loads give `other`, here 0.
`main.py --draw picture.png` draws this from the kernel itself.
"""

import functools
import sys
from pathlib import Path

import torch

# Import common, the lessons' helper, before triton. With no
# GPU, it sets TRITON_INTERPRET=1, which triton reads on import.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## Part 1. The simplest kernel: one program per BLOCK_N columns
# @triton.jit makes a Python function a kernel, compiled for the
# GPU at its first launch. A tensor argument arrives as a pointer
# to its first element. tl.load and tl.store read and write there.
@triton.jit
def simple_column_sum_kernel(
    x_ptr, out_ptr,  # pointers to x[0, 0] and out[0]
    M, N, stride_m, stride_n,  # x's sizes and strides
    # tl.constexpr marks a compile-time constant. Block shapes
    # must be constants. Each new value triggers a recompile.
    BLOCK_M: tl.constexpr,  # rows per step, a power of 2
    BLOCK_N: tl.constexpr,  # columns per program, a power of 2
):  # fmt: skip
    # tl.arange(0, n) is the block 0, 1, ..., n - 1. n must be a power of 2.
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N  # False where cols runs past x's edge
    # acc holds float32 sums, because 16-bit sums drop small terms.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in range(0, M, BLOCK_M):  # one program's steps run in series
        rows = i0 + tl.arange(0, BLOCK_M)
        # This broadcasts, as in torch, to (BLOCK_M, BLOCK_N).
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        mask = (rows < M)[:, None] & col_mask[None, :]
        # Where mask is False, tl.load reads nothing and gives `other`.
        # x_ptr + offsets is a block of pointers, one per value.
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += tile.to(tl.float32)  # an elementwise add, with no tl.sum
    sums = tl.sum(acc, axis=0)  # acc's rows are added up here, once
    # out_ptr.dtype.element_ty is the dtype that out_ptr points to.
    tl.store(out_ptr + cols, sums.to(out_ptr.dtype.element_ty), mask=col_mask)


def column_sums_simple(x, kernel=simple_column_sum_kernel):
    """Computes x.sum(0) with `kernel`, Part 1's kernel by default."""
    M, N = x.shape
    within_limits(x)  # in the harness: refuses float64 or a huge x
    out = torch.empty(N, dtype=x.dtype, device=x.device)
    BLOCK_M, BLOCK_N = 16, 64  # a tile of 16 x 64
    grid = (triton.cdiv(N, BLOCK_N),)  # one program per 64 columns
    # kernel[grid] starts grid[0] programs, each on 4 warps.
    kernel[grid](x, out, M, N, *x.stride(), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4)
    return out


def reference(x):  # what every kernel here computes
    return x.sum(0)


# ## Is it right?
# check() compares fn(x) with reference() computed in float64.
# It allows for the rounding of float32 sums of M terms.
def check(fn, x, name):
    common.assert_close_to_float64(fn(x), reference, (x,), terms=x.shape[0], what=name)


# ## Try it: Part 1's kernel on the docstring's x (main() runs it)
def run_docstring_example():
    x = torch.arange(30.0, device=common.DEVICE).reshape(5, 6)
    out = torch.empty(6, device=x.device)
    simple_column_sum_kernel[(2,)](x, out, M=5, N=6, stride_m=6, stride_n=1, BLOCK_M=2, BLOCK_N=4)
    print(f"the docstring's example: {out.tolist()} = {x.sum(0).tolist()}")  # 60.0, ..., 85.0


# ## Part 2. column_sum_kernel: Part 1's plus changes (1), (2), (3)
# main() checks and times each step, at Part 1's 16 x 64
# tile: "split" is (1) and "split_ahead" is (1)+(2). "tuned",
# all three, lets the autotuner pick the tile.
#
# ### (1) Split a tall x over more programs
# A program runs on one SM (streaming multiprocessor), one of
# an H200's 132 cores. For x of 1048576 x 64, Part 1 starts
# cdiv(64, 64) = 1 program. A load from memory takes hundreds
# of cycles, so memory is busy only while many loads are in
# flight, from many programs. One SM alone cannot keep it
# busy. Even for x of 16384 x 8192, Part 1's 128 programs are
# about one per SM, and that is too few. So the grid gets a
# second axis. The host cuts x's rows into chunks of
# rows_per_chunk rows. Program (c, s), the one with
# tl.program_id(0) = c and tl.program_id(1) = s, owns the
# columns of Part 1's program c, but it adds only the rows of
# chunk s. It stores their sums into row s of a float32
# buffer, partial. A second pass then adds up partial's rows.
# For M = 12 in 3 chunks of 4 rows (picture.png, top right):
#
#     partial[0] = x[0:4].sum(0)
#     partial[1] = x[4:8].sum(0)
#     partial[2] = x[8:12].sum(0)
#     out = partial[0] + partial[1] + partial[2]
#
# The second pass is Part 1's simple kernel, with partial as
# its x. Its fixed order gives the same bits on every call.
# Atomic adds (tl.atomic_add) into out would land in a new
# order each time, and so round differently.
#
# ### (2) Load tiles ahead
# In Part 1, a warp asks for a tile and waits for it before
# it adds it. Part 2 loops with tl.range(..., num_stages=STAGES).
# It works like range(), but it lets each warp ask for the
# next STAGES - 1 tiles before it adds the current one.
# STAGES = 1 loads nothing ahead, and STAGES = 2 keeps one
# tile on its way. Triton's matmul tutorial sets num_stages
# in a triton.Config instead. Per tl.range's documentation,
# that kernel-wide one pipelines only loads that feed tl.dot.
#
# ### (3) Let Triton pick the tile
# No single tile is best for every x. Times in microseconds
# (us) on an H200, float32 x, replayed from a CUDA graph (no
# Python between launches); torch is x.sum(0):
#
#     x           simple  split  split_ahead  tuned  torch
#     1048576x64   26500     92          101     78    164
#     16384x8192     490    137          140    134    140
#
# (1) gives most of the gain. (2) costs 2 to 10% at this
# tile, but pays at taller ones: at 64 x 64, the tall x
# takes 77 us with it and 128 us without. Which tile is best
# depends on x, so let Triton time several and pick.
#
# A triton.Config is one candidate: values for the kernel's
# constexprs and for num_warps. A row of TILES is (BLOCK_M,
# BLOCK_N, STAGES, num_warps). Each of these 7 was the fastest
# on some shape, of 32 configs that tools/tile_sweep.py timed.
TILES = [(256, 32, 1, 4), (128, 32, 2, 4), (64, 64, 2, 4), (256, 64, 2, 8)]
TILES += [(32, 128, 2, 4), (128, 128, 1, 8), (1, 1024, 1, 8)]  # the last for an x of few rows
TILES = [(32, 32, 1, 4)] if common.INTERPRETED else TILES  # a CPU cannot time a GPU
CONFIGS = [triton.Config(dict(BLOCK_M=m, BLOCK_N=n, STAGES=s), num_warps=w) for m, n, s, w in TILES]


# @triton.autotune(configs, key) wraps the kernel. A launch
# with new values of the key's arguments first times every
# config, and keeps the fastest for those values. The key is
# not M, which a model varies: each new M would time all 7
# again. The host rounds rows_per_chunk up to a power of 2,
# so M = 1000 and 1001 share one tuning.
@triton.autotune(configs=CONFIGS, key=["N", "rows_per_chunk"])  # (3)
@triton.jit
def column_sum_kernel(
    x_ptr, dest_ptr,  # (1) dest is partial, or out if x is one chunk
    M, N, stride_m, stride_n,
    rows_per_chunk,  # (1) how many rows a chunk has (at least M if x is one chunk)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    STAGES: tl.constexpr,  # (2) the number of tiles in flight
):  # fmt: skip
    chunk = tl.program_id(1)  # (1) this program's chunk (0 if x is one chunk)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    row_start = chunk * rows_per_chunk  # (1) the chunk's first row
    row_stop = tl.minimum(row_start + rows_per_chunk, M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):  # (2)
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        # (1) The mask uses row_stop, not M, so no row is added by two chunks.
        mask = (rows < row_stop)[:, None] & col_mask[None, :]
        tile = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        acc += tile.to(tl.float32)
    sums = tl.sum(acc, axis=0)
    # (1) dest is out, or partial: a contiguous float32 buffer
    # of shape (n_chunks, N), whose row s starts s * N elements in.
    tl.store(dest_ptr + chunk * N + cols, sums.to(dest_ptr.dtype.element_ty), mask=col_mask)


# ### Part 2 on the host: the chunks, the launch, the second pass
# The host cuts x into chunks of CHUNK_ROWS = 2048 rows. An x
# of 1048576 x 64 makes 512 chunks, and with BLOCK_N = 64 that
# is about 4 programs per SM. An x of at most 2048 rows is one
# chunk, whose rows_per_chunk is M rounded up to a power of 2.
CHUNK_ROWS = 256 if common.INTERPRETED else 2048  # 256 on a CPU, to split a small x


def chunks(M):
    """Returns (n_chunks, rows_per_chunk) for an x of M rows."""
    rows = max(M, 1)  # an empty x is one chunk, which stores 0s
    rows_per_chunk = min(CHUNK_ROWS, triton.next_power_of_2(rows))
    return triton.cdiv(rows, rows_per_chunk), rows_per_chunk


def column_sums(x, tile=None, kernel=column_sum_kernel):
    """Computes x.sum(0) with Part 2's kernel (or block_ptr.py's).
    The autotuner picks the tile, or `tile` (a dict) fixes it."""
    M, N = x.shape
    within_limits(x)  # Part 1's two limits (the assert below adds a third)
    out = torch.empty(N, dtype=x.dtype, device=x.device)
    n_chunks, rows_per_chunk = chunks(M)
    # CUDA allows at most 65535 programs along grid axis 1.
    assert n_chunks <= 65535, "too many chunks: see any_x.py"
    # The autotuner passes BLOCK_M, BLOCK_N, STAGES and num_warps.
    # The grid depends on BLOCK_N, so grid is a function of them.
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), n_chunks)  # noqa: E731
    # A single chunk stores its sums into out. More chunks store into partial.
    dest = out if n_chunks == 1 else x.new_empty((n_chunks, N), dtype=torch.float32)
    args = (x, dest, M, N, *x.stride(), rows_per_chunk)
    if tile is None:  # the autotuner picks the tile
        kernel[grid](*args)
    else:  # kernel.fn is the kernel without its autotuner
        kernel.fn[grid](*args, **tile)
    if n_chunks > 1:  # the second pass adds up the rows of partial
        sum_partials(dest, out)
    return out


def sum_partials(partial, out):
    """Sets out[j] = partial[:, j].sum(), in a fixed order, with Part 1's kernel."""
    P, N = partial.shape
    # A tile of about 4096 values: up to 256 rows, 16 or more columns.
    block_m = min(triton.next_power_of_2(P), 256)
    block_n = max(16, min(256, 4096 // block_m))
    grid = (triton.cdiv(N, block_n),)
    args = (partial, out, P, N, *partial.stride())
    simple_column_sum_kernel[grid](*args, BLOCK_M=block_m, BLOCK_N=block_n)


# ## Why reduce once (optional): the 1-D way, for comparison
# Why is acc 2-D? one_d_column_sum_kernel, below, is what a
# PyTorch programmer might write first: a 1-D acc, and tl.sum
# on each tile inside the loop. It gives the same sums, up to
# rounding, but for x of 16384 x 8192 float32 on an H200 it
# takes 0.77 ms, where the simple kernel takes 0.49 ms. So
# keep a reduction such as tl.sum out of the loop.
#
# Why, in short: Triton spreads a tile over all 4 warps
# (picture.png's lower half shows how). acc += tile adds
# values that each thread holds itself. A sum down a column
# needs values from all 4 warps. They trade them through
# shared memory, a small memory on the SM, and wait for each
# other. one_d does this at every step, and the simple kernel
# once. (`main.py --asm` counts the waits, bar.sync, per loop.)
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
        acc += tl.sum(tile.to(tl.float32), axis=0)  # at each step
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cols < N)


column_sums_one_d = functools.partial(column_sums_simple, kernel=one_d_column_sum_kernel)


# ## Gradients: a torch.autograd.Function
# grad_x[i, j] = grad_out[j] needs no kernel. It is the view
# grad_out.expand(M, N), which autograd can differentiate too.
class BlockedSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x_shape = x.shape
        return column_sums(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.expand(ctx.x_shape)


SPLIT = dict(BLOCK_M=16, BLOCK_N=64, STAGES=1)  # (1) alone
VARIANTS = {
    "simple": column_sums_simple,
    "split": functools.partial(column_sums, tile=SPLIT),  # (1)
    "split_ahead": functools.partial(column_sums, tile=SPLIT | dict(STAGES=2)),  # (1)+(2)
    "tuned": column_sums,  # (1)+(2)+(3)
    "one_d": column_sums_one_d,
}
# To read next, if you like: any_x.py (Part 3, whose kernel op.py runs) and block_ptr.py.


# ## The harness: checks and timing (skip it on a first read)
def check_variants(x, variants):
    """Runs check() on each variant. Each output starts as NaN."""
    for name, fn in variants.items():
        case = f"{name} on x {tuple(x.shape)} {x.dtype}, strides {x.stride()}"
        with common.uninitialized_memory_is_nan():
            check(fn, x, case)
    return list(variants)


def within_limits(x):
    """Refuses an x that the kernels here cannot sum right: a
    float64 x (their sums are float32), or one past 2**31
    elements (their int32 offsets wrap). any_x.py lifts both."""
    assert x.dtype != torch.float64, "float32 sums: see any_x.py"
    assert common.elements_spanned(x) < 2**31, "int32 offsets: see any_x.py"


DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32")}
SHAPES = [(16384, 8192), (2048, 65536), (1048576, 64), (64, 1048576)]
SWEEP = [dict(rows=m, cols=n, dtype=t) for t in ("float32", "bfloat16") for m, n in SHAPES]


def benchmark(rows, cols, dtype="float32", module=sys.modules[__name__]):
    """Times torch, module.VARIANTS and a bare column_sum_kernel."""
    x = torch.randn(rows, cols, dtype=DTYPES.get(dtype, dtype), device=common.DEVICE)
    calls = {"torch": functools.partial(x.sum, 0)}
    calls |= {name: functools.partial(fn, x) for name, fn in module.VARIANTS.items()}
    n_chunks, rows_per_chunk = chunks(rows)
    out = x.new_empty((n_chunks, cols), dtype=x.dtype if n_chunks == 1 else torch.float32)
    grid = lambda meta: (triton.cdiv(cols, meta["BLOCK_N"]), n_chunks)  # noqa: E731
    args = (x, out, rows, cols, *x.stride(), rows_per_chunk)
    calls["column_sum_kernel[grid] bare"] = lambda: column_sum_kernel[grid](*args)
    case = f"{rows}x{cols} {str(x.dtype).removeprefix('torch.')}"
    gbps = functools.partial(common.gbps, (rows * cols + cols) * x.element_size())
    return common.timing_rows(case, calls, gbps, "GB/s", common.copy_ceiling_gbps())


def main(argv=None, module=sys.modules[__name__]):
    """Checks and times module.VARIANTS, of this file or of a file beside it."""
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
    run_docstring_example()
    x = torch.randn(args.rows, args.cols, dtype=DTYPES[args.dtype], device=common.DEVICE)
    checked = check_variants(x, module.VARIANTS)
    BlockedSum.apply(x.requires_grad_()).sum().backward()  # grad_x should be all ones
    assert torch.equal(x.grad, torch.ones_like(x))
    print(f"check passed: {', '.join(checked)} and the gradient match\n")
    common.print_table(benchmark(args.rows, args.cols, args.dtype, module), common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
