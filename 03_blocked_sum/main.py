"""Column sums, out = x.sum(0): a blocked reduction in Triton, fast on every matrix shape.

You learn the pattern behind Triton's reductions. A program adds whole tiles (the pieces of x it
loads at once) into acc, a 2-D accumulator of a tile's shape, and reduces acc once, after the loop.
Then you make it fast on every shape: tune the tile, split a tall x, and load tiles ahead.

    out[j]       = sum_i x[i, j]        one sum per column of x (M, N)
    grad_x[i, j] = grad_out[j]          d out[j] / d x[i, j] = 1: grad_out on every row

- A kernel runs as many copies as its grid asks for, as many at a time as the GPU has room for.
  Each copy is a program, and tl.program_id(0) tells a program which one it is.
- A block is a small tensor inside a program, like tl.arange(0, 4) = [0, 1, 2, 3]. Its shape is a
  power of two, fixed when Triton compiles the kernel. A tile is a block loaded from x.
- Strides: x[i, j] lies i * stride_m + j * stride_n elements after x[0, 0].

A worked example: x of shape (5, 6), stored row after row, so stride_m = 6 and stride_n = 1.
- Each program owns BLOCK_N = 4 columns: cdiv(6, 4) = 2 programs (cdiv: division rounded up).
- Program 1 owns columns 4 to 7. Each step of its loop loads a tile of BLOCK_M = 2 rows of them.
  The first step reads the elements at these offsets from x[0, 0]:

      rows[:, None] * stride_m + cols[None, :] * stride_n
          = [[0], [1]] * 6 + [[4, 5, 6, 7]] * 1 = [[ 4,  5,  6,  7],
                                                   [10, 11, 12, 13]]

- Columns 6 and 7 are not in x: offsets 6 and 7 hold x[1, 0] and x[1, 1]. The mask cols < N
  switches those loads off: [[4, 5, -, -], [10, 11, -, -]].
- The second step reads rows 2 and 3, the third rows 4 and 5. Row 5 is past the end of x, and
  the mask rows < M switches it off. Masked-off loads take `other`, 0.
- After the loop, acc[0] = [x[0, 4] + x[2, 4] + x[4, 4], x[0, 5] + x[2, 5] + x[4, 5], 0, 0] and
  acc[1] = [x[1, 4] + x[3, 4], x[1, 5] + x[3, 5], 0, 0]. tl.sum(acc, axis=0) adds the two rows
  into 4 sums, and the store's mask cols < N keeps two of them: out[4] and out[5].
`python 03_blocked_sum/main.py --draw picture.png` draws this, recorded from the kernel itself.

Why acc is 2-D. A program runs on num_warps warps, groups of 32 GPU threads that run in step, and
Triton spreads each block over the threads, a few elements each. Adding blocks elementwise needs no
thread to talk to another; a sum across a block does: threads swap values in registers (shfl), then
through shared memory. A 1-D acc, acc += tl.sum(tile, axis=0), would pay that every step; the 2-D
acc pays once, after the loop, where `main.py --asm` finds all its shfl and shared-memory lines.
"""

import functools
import sys
import warnings
from pathlib import Path

import torch

ROOT = str(Path(__file__).resolve().parent.parent)  # the repository, so that `import common` works
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
import common  # noqa: E402  (before triton: without CUDA it turns on Triton's interpreter)
import tools  # noqa: E402  (main's --draw and --asm)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32", "float64")}


# ## Part 1. The simplest kernel: one program per block of columns, a loop down the rows
# @triton.jit compiles the function for the GPU. A tensor argument arrives as a pointer to its
# first element (ptr.dtype.element_ty is its dtype); tl.load and tl.store read and write there.
@triton.jit
def simple_column_sum_kernel(
    x_ptr, out_ptr,  # pointers to x[0, 0] (x: (M, N), any strides) and out[0] (contiguous)
    M, N, stride_m, stride_n,  # x's sizes and strides
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # rows per step, columns per program
):  # fmt: skip
    # A tl.constexpr is a constant compiled into the kernel; block shapes must be. An `if` on a
    # constexpr or a dtype, like the next line's `a if c else b`, is decided at compile time. Add
    # in float32 (float64 for float64 x): a 16-bit running sum would drop small terms as it grows.
    acc_dtype = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    # Arithmetic on blocks is elementwise and broadcasts as in torch.
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    # Offsets in int64 (rows' too, below): row * stride_m can pass 2^31, where int32 wraps around.
    col_offsets = cols.to(tl.int64) * stride_n
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_dtype)
    for i0 in range(0, M, BLOCK_M):  # a loop on the GPU (tl.static_range would unroll it)
        rows = i0 + tl.arange(0, BLOCK_M)
        # A pointer plus a block of offsets is a block of pointers; tl.load gives a block of values.
        offsets = rows.to(tl.int64)[:, None] * stride_m + col_offsets[None, :]
        mask = (rows < M)[:, None] & col_mask[None, :]
        # Masked-off elements load nothing and take `other`: 0 adds nothing to the sum.
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0).to(acc_dtype)
    sums = tl.sum(acc, axis=0)  # the one sum across threads: BLOCK_M rows into one
    tl.store(out_ptr + cols, sums.to(out_ptr.dtype.element_ty), mask=col_mask)


def column_sums_simple(x, out, block_m=16, block_n=64):
    """out[j] = sum_i x[i, j] for x of shape (M, N), written into a contiguous out of shape (N,)."""
    M, N = x.shape
    grid = (triton.cdiv(N, block_n),)  # kernel[grid]: grid[0] programs, one per block_n columns
    simple_column_sum_kernel[grid](x, out, M, N, *x.stride(), BLOCK_M=block_m, BLOCK_N=block_n)


def reference(x):  # the plain PyTorch expression
    return x.sum(0)


def check(x, variants):
    """Checks each of `variants` (name -> function(x, out=)) against reference() in float64, within
    a rounding bound that grows with M and |x|; returns their names. out starts as NaN."""
    expected, magnitude = reference(x.double()), reference(x.double().abs())
    for name in variants:
        out = torch.full((x.shape[1],), float("nan"), dtype=x.dtype, device=x.device)
        with common.uninitialized_memory_is_nan():  # memory a variant allocates starts as NaN too
            variants[name](x, out=out)
        case = f"{name} on x {tuple(x.shape)} {x.dtype}, strides {x.stride()}"
        common.assert_close(out, expected, magnitude, x.shape[0], case)
    return list(variants)


# ## Part 2. column_sum_kernel: the simple kernel with three changes, explained below and marked at
# their lines: (1) a tuned tile; (2) a tall x's rows split over more programs; (3) loading ahead.
# ## Change (1): tuning the tile (the simple kernel's is fixed at 16 x 64)
# The best tile depends on x. A narrow x wants narrow tiles, since in a tile wider than x most
# lanes are masked off and idle. A program with few rows to add wants short tiles.
# - A triton.Config names a tile and num_warps, the number of warps that run the program.
# - @triton.autotune, written on the kernel, times every config on the first call with new values
#   of its `key` arguments, then reuses the fastest. The key here is N and rows_per_split, the
#   rows one program adds up: all M, or a chunk of them once change (2) below splits a tall x.
#   Triton adds the dtypes to the key. A new M tunes again only where it changes rows_per_split.
# A TILES row is (BLOCK_M, BLOCK_N, num_warps, STAGES), STAGES for change (3). Between them, these
# seven hold a config within 1% of the best of 32 on each of 12 timed shapes (results/NOTES.md 41).
TILES = [(256, 32, 4, 1), (128, 32, 4, 2), (64, 64, 4, 2), (256, 64, 8, 2), (32, 128, 4, 2)]
TILES += [(128, 128, 8, 1), (1, 1024, 8, 1)]  # 1 row a step: for a wide x of few rows
if common.INTERPRETED:
    TILES = [(32, 32, 4, 1)]  # the interpreter's timings say nothing about a GPU: one config
CONFIGS = [triton.Config(dict(BLOCK_M=m, BLOCK_N=n, STAGES=s), num_warps=w) for m, n, w, s in TILES]


def prune_configs(configs, named_args, **kwargs):
    """The configs worth timing: tiles no wider or taller than N and a chunk's rows (change (2)),
    each rounded up to a power of two. If none is left, the smallest tile."""
    width = triton.next_power_of_2(named_args["N"])
    height = triton.next_power_of_2(named_args["rows_per_split"])
    fit = [c for c in configs if c.kwargs["BLOCK_N"] <= width and c.kwargs["BLOCK_M"] <= height]
    return fit or [min(configs, key=lambda c: c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"])]


# The autotuner's other settings, for both tuned kernels of this lesson:
# - prune_configs_by: prune_configs drops the configs not worth timing before they are timed;
# - cache_results=True: the winner is saved on disk, so the next run of the script skips timing;
# - do_bench: the timer, with 5 ms of warm-up and 20 of timing (its defaults: 25 and 100 ms).
TUNING = dict(prune_configs_by={"early_config_prune": prune_configs}, cache_results=True)
TUNING["do_bench"] = functools.partial(triton.testing.do_bench, warmup=5, rep=20)


# ## Change (2): splitting the rows of a tall, narrow x
# A program runs on one SM (streaming multiprocessor: one of the GPU's cores; an H100 has 132).
# x of 1048576 x 64 has one block of columns, so the simple kernel runs one program. One SM works,
# and it cannot issue loads fast enough to keep memory busy. So:
# - the grid gets a second axis: program (c, s) adds up chunk s of the rows of column block c;
# - it writes its sums into row s of a float32 (float64 for float64 x) buffer of partial sums;
# - a second pass adds up each column of that buffer into out.
# The second pass adds in a fixed order: the same bits on every call. Atomic adds into out would
# land in any order, round differently, and add again whenever the autotuner times the kernel.
# ## Change (3): loading ahead (pipelining)
# A load from memory takes hundreds of cycles. With STAGES > 1 the loop asks for the next STAGES - 1
# tiles before it adds the current one, so that memory is always busy. Triton does this by itself
# only in loops that feed tl.dot, so the configs set STAGES and tl.range(num_stages=STAGES) asks.
# ## column_sum_kernel: the three changes together
@triton.autotune(configs=CONFIGS, key=["N", "rows_per_split"], **TUNING)  # (1)
# do_not_specialize: Triton compiles a separate version when an int argument is 1 or a multiple
# of 16 (it "specializes" on that fact); M only bounds the loop, so one version serves any M.
@triton.jit(do_not_specialize=["M"])
def column_sum_kernel(
    x_ptr, out_ptr, M, N, stride_m, stride_n,  # as in simple_column_sum_kernel; out (splits, N)
    rows_per_split,  # rows in each chunk (a multiple of BLOCK_M for the appendix), or >= M
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,
):  # fmt: skip
    acc_dtype = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    chunk = tl.program_id(1)  # (2) which chunk of rows: 0 where x is not split
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    col_offsets = cols.to(tl.int64) * stride_n
    row_start = chunk * rows_per_split  # (2) the chunk's rows: row_start up to row_stop
    row_stop = tl.minimum(row_start + rows_per_split, M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_dtype)
    for i0 in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):  # (3)
        rows = i0 + tl.arange(0, BLOCK_M)
        offsets = rows.to(tl.int64)[:, None] * stride_m + col_offsets[None, :]
        mask = (rows < row_stop)[:, None] & col_mask[None, :]  # (2) stop at the chunk's end
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0).to(acc_dtype)
    sums = tl.sum(acc, axis=0)  # (2) into row `chunk` of out: the partial sums, or out itself
    tl.store(out_ptr + chunk * N + cols, sums.to(out_ptr.dtype.element_ty), mask=col_mask)


# ## Change (2), its host side: how many chunks, and the launch
PROGRAMS_PER_SM = 4  # more made the chunks shorter and the second pass larger: slower
ROW_ALIGN = max(config.kwargs["BLOCK_M"] for config in CONFIGS)  # the tallest tile


@functools.lru_cache(maxsize=1024)  # asked on every call; the answer never changes
def plan_splits(M, N, device=common.DEVICE):
    """(splits, rows_per_split): how many chunks of rows, and how many rows a chunk may hold. E.g.
    1048576 x 64 on an H100: 528 programs wanted, 1986 rows each, rounded up to 2048: 512 splits."""
    on_gpu = device.type == "cuda"
    sms = torch.cuda.get_device_properties(device).multi_processor_count if on_gpu else 1
    wanted = PROGRAMS_PER_SM * sms  # on the CPU 4, so that the tests split small matrices
    column_blocks = triton.cdiv(max(N, 1), 128)  # the autotuner picks BLOCK_N later: assume 128
    too_short = M <= ROW_ALIGN  # no more than one tile of rows
    enough_programs = 2 * column_blocks >= wanted  # column blocks alone give >= half of `wanted`
    if too_short or enough_programs:
        # One chunk of all M rows. rows_per_split is in the autotuner's key, so round it up to a
        # power of two: then an M of 1000 and one of 1001 share one tuning.
        return 1, triton.next_power_of_2(max(M, 1))
    rows = triton.cdiv(M, triton.cdiv(wanted, column_blocks))
    # Whole tiles: the block-pointer kernel (appendix) cannot stop a tile at a chunk's end.
    rows_per_split = triton.cdiv(rows, ROW_ALIGN) * ROW_ALIGN
    return triton.cdiv(M, rows_per_split), rows_per_split


def column_sums(x, out, kernel=column_sum_kernel):
    """out = x.sum(0) through `kernel` (any strides), then the second pass where the rows split."""
    M, N = x.shape
    splits, rows_per_split = plan_splits(M, N, x.device)
    # The number of programs depends on BLOCK_N, which the autotuner picks, so grid is a function:
    # Triton calls it with the chosen config's values (meta, a dict) before it launches.
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), splits)  # noqa: E731
    if splits == 1:  # one chunk writes its sums straight into out, in x's dtype
        kernel[grid](x, out, M, N, *x.stride(), rows_per_split)
        return
    partial = x.new_empty((splits, N), dtype=torch.promote_types(x.dtype, torch.float32))
    kernel[grid](x, partial, M, N, *x.stride(), rows_per_split)  # float32 (float64) partial sums
    sum_partials(partial, out)


def sum_partials(partial, out):
    """The second pass, out[j] = sum of partial[:, j] in a fixed order: the simple kernel, with
    tiles of up to 256 rows and 4096 elements (it waits on memory: few, large loads)."""
    block_m = min(triton.next_power_of_2(partial.shape[0]), 256)
    column_sums_simple(partial, out, block_m, max(16, min(256, 4096 // block_m)))


# ## From here on PyTorch around the kernels, not Triton (skip on a first read). Autograd first:
# grad_x[i, j] = grad_out[j] needs no kernel: grad_out.expand(M, N) repeats it on every row, a view,
# no copy. With create_graph=True (second derivatives) autograd records expand like any torch op.
class BlockedSum(torch.autograd.Function):
    @staticmethod
    def forward(x, style):
        return blocked_sum(x, style=style)  # autograd runs forward with gradients off

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.x_shape = inputs[0].shape

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.expand(ctx.x_shape), None


def blocked_sum(x, out=None, style="pointer"):
    """x.sum(0) for a 2-D float x of any strides, in x's dtype (16-bit x adds in float32):
    differentiable and compilable, or written into out. `style` picks the kernels (FORWARDS)."""
    N = validate(x, style)
    if torch.compiler.is_compiling():  # torch.compile records the op and never sees the launch
        return common.write_out(blocked_sum_op(x, style), out)
    if out is None and torch.is_grad_enabled() and x.requires_grad:
        return BlockedSum.apply(x, style)
    result = common.kernel_out(out, (N,), x.dtype, x.device, (x,))  # a new one if out overlaps x
    if not result.is_contiguous():  # the kernels write N sums side by side: then copy into out
        result = x.new_empty(N)
    if x.numel() == 0:
        result.zero_()  # a sum of no rows is 0
    else:
        FORWARDS[style](x, result)
    return common.write_out(result, out)  # out, if given, with its version bumped


def validate(x, style="pointer"):
    """N, or TypeError or ValueError naming the problem where blocked_sum cannot run."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in DTYPES.values():
        raise TypeError(f"x is {x.dtype}; expected one of {', '.join(DTYPES)}")
    if x.dim() != 2:
        raise ValueError(f"x has shape {tuple(x.shape)}: expected a 2-D (M, N) matrix")
    if x.device.type != common.DEVICE.type:
        raise ValueError(f"x is on {x.device}: it must be on {common.DEVICE.type}")
    if style not in FORWARDS:
        why = UNAVAILABLE.get(style, f"not one of {list(FORWARDS)}")
        raise ValueError(f"style {style!r}: {why}")
    return x.shape[1]  # N, the length of the output


# ## The registered op, for torch.compile
# Under torch.compile blocked_sum calls this op, one opaque node (triton_op would trace the launch,
# which fails interpreted). Its fake, run to learn the output's shape without a kernel, validates.
@torch.library.custom_op("triton_lessons::blocked_sum", mutates_args=())
def blocked_sum_op(x: torch.Tensor, style: str = "pointer") -> torch.Tensor:
    with torch.no_grad():  # the op's autograd is the one registered below
        return blocked_sum(x, style=style)


blocked_sum_op.register_fake(lambda x, style="pointer": x.new_empty(validate(x, style)))
blocked_sum_op.register_autograd(BlockedSum.backward, setup_context=BlockedSum.setup_context)


# ## Appendix: block pointers, the older way to load a tile (skip on a first read)
# Older tutorials load tiles through block pointers. Triton 3.7 deprecated them and
# 3.9 removed them (tensor descriptors replace them: lesson 02), so this style runs only where
# block_ptr_problem() finds that they work. A block pointer describes x once (shape, strides, the
# tile's place and shape), and Triton computes every element's address itself, in int64.
@triton.autotune(configs=CONFIGS, key=["N", "rows_per_split"], **TUNING)
@triton.jit(do_not_specialize=["M"])
def column_sum_block_ptr_kernel(
    x_ptr, out_ptr, M, N, stride_m, stride_n, rows_per_split,  # all as in column_sum_kernel
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,
):  # fmt: skip
    acc_dtype = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    chunk, col_start = tl.program_id(1), tl.program_id(0) * BLOCK_N
    row_start = chunk * rows_per_split
    row_stop = tl.minimum(row_start + rows_per_split, M)
    tile = tl.make_block_ptr(
        x_ptr, (M, N), (stride_m, stride_n), (row_start, col_start), (BLOCK_M, BLOCK_N), (1, 0)
    )  # shape, strides, offsets of the first tile, its shape; (1, 0): columns vary fastest
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_dtype)
    for _ in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):
        # boundary_check: rows past M (dim 0) and columns past N (dim 1) read as 0
        acc += tl.load(tile, boundary_check=(0, 1), padding_option="zero").to(acc_dtype)
        tile = tl.advance(tile, (BLOCK_M, 0))  # the next tile: BLOCK_M rows down
    cols = col_start + tl.arange(0, BLOCK_N)
    sums = tl.sum(acc, axis=0)
    tl.store(out_ptr + chunk * N + cols, sums.to(out_ptr.dtype.element_ty), mask=cols < N)


def column_sums_block_ptr(x, out):
    with warnings.catch_warnings():  # Triton 3.7 and 3.8 warn that block pointers are deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", ".*make_block_ptr is deprecated")
        column_sums(x, out, column_sum_block_ptr_kernel)


def block_ptr_problem():
    """Why block pointers do not run here, or None; found by trying, since versions mislead."""
    try:
        x = torch.arange(60.0, device=common.DEVICE).reshape(20, 3)  # not randn: RNG untouched
        check(x, {"block_ptr": column_sums_block_ptr})
    except Exception as exc:  # any failure, wrong sums included, means "do not use them here"
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"tl.make_block_ptr does not run on triton {triton.__version__}: {first_line[:120]}"
    return None


BLOCK_PTR_PROBLEM = block_ptr_problem()  # None where block pointers work
UNAVAILABLE = {"block_ptr": BLOCK_PTR_PROBLEM} if BLOCK_PTR_PROBLEM else {}  # style -> why not
FORWARDS = {"simple": column_sums_simple, "pointer": column_sums}  # style -> its launcher
if not UNAVAILABLE:
    FORWARDS["block_ptr"] = column_sums_block_ptr
VARIANTS = {style: lambda x, out=None, s=style: blocked_sum(x, out, s) for style in FORWARDS}


# ## Benchmark and command line
SHAPES = ((16384, 8192), (2048, 65536), (1048576, 64), (64, 1048576))  # (rows, cols)
SWEEP = [dict(rows=m, cols=n, dtype=dtype) for dtype in ("float32", "bfloat16") for m, n in SHAPES]


def benchmark(rows, cols, dtype="float32"):
    """GPU and host time of x.sum(0) through each variant, the entry, a bare launch of its first
    kernel (a split x also runs the second) and torch; GB/s of x read once and the sums written."""
    x = torch.randn(rows, cols, dtype=DTYPES.get(dtype, dtype), device=common.DEVICE)
    calls = {"torch": lambda: x.sum(0)}
    calls |= {name: lambda fn=fn: fn(x) for name, fn in VARIANTS.items()}
    calls["blocked_sum"] = lambda: blocked_sum(x)
    splits, rows_per_split = plan_splits(rows, cols, x.device)
    dtype = x.dtype if splits == 1 else torch.promote_types(x.dtype, torch.float32)
    out = x.new_empty((splits, cols), dtype=dtype)  # the sums, or partial sums
    grid = lambda meta: (triton.cdiv(cols, meta["BLOCK_N"]), splits)  # noqa: E731
    args = (x, out, rows, cols, *x.stride(), rows_per_split)
    calls["column_sum_kernel[grid] bare"] = lambda: column_sum_kernel[grid](*args)
    case = f"{rows}x{cols} {str(x.dtype).removeprefix('torch.')}"
    nbytes, ceiling = (rows * cols + cols) * x.element_size(), common.copy_ceiling_gbps()
    times = {name: common.measure(call) for name, call in calls.items()}  # torch's first
    return [
        common.timing_row(case, name, t, times["torch"], common.gbps(nbytes, t[0]), "GB/s", ceiling)
        for name, t in times.items()
    ]


def main(argv=None):
    parser = tools.lesson_parser(sys.modules[__name__])  # also --draw, --asm: tools/
    default_rows, default_cols = (1000, 96) if common.INTERPRETED else (16384, 8192)
    parser.add_argument("--rows", type=int, default=default_rows, help="M, the rows summed away")
    parser.add_argument("--cols", type=int, default=default_cols, help="N, the columns kept")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="of x")
    args = parser.parse_args(argv)
    if args.rows < 0 or args.cols < 0:
        parser.error(f"--rows and --cols must be >= 0, got {args.rows} and {args.cols}")
    print(common.describe_run())
    for name, reason in UNAVAILABLE.items():
        print(f"variant {name!r} left out: {reason}")
    x = torch.randn(args.rows, args.cols, dtype=DTYPES[args.dtype], device=common.DEVICE)
    print(f"check passed: {', '.join(check(x, VARIANTS))} match float64\n")
    common.print_table(benchmark(args.rows, args.cols, args.dtype), common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
