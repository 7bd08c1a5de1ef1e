"""Weighted sum, y = x @ w over the last dim: forward and backward.

You learn to walk x a tile (a 2-D block) at a time with pointers
and masks, to tune the tile, to sum over all rows in a fixed order
and to give kernels to autograd. x (..., D) is flattened to rows r:

    y[r]         = sum over d of x[r, d] * w[d]     a dot per row
    grad_x[r, d] = grad_y[r] * w[d]                 no sum at all
    grad_w[d]    = sum over r of x[r, d] * grad_y[r]

Words from lessons 01 and 03:
- A program is one running copy of a kernel. kernel[grid](args)
  starts grid[0] programs; tl.program_id(0) is each one's number.
- A block is a tensor of fixed shape inside one program; a tile
  is a 2-D block of x.
- A stride is the step, in elements, along a dim.
- tl.load(pointers, mask, other) reads where mask is True and
  gives other, reading nothing, where it is False.

A program owns ROWS_TILE rows of x, row_ids. Its work, in
PyTorch, as if x were padded with zeros to whole tiles:

    acc = torch.zeros(ROWS_TILE, D_TILE)
    for d0 in range(0, D, D_TILE):
        acc += x[row_ids, d0 : d0 + D_TILE] * w[d0 : d0 + D_TILE]
    y[row_ids] = acc.sum(1)

Worked example: x of shape (5, 6), stored row after row, so
x[r, d] lies r * 6 + d elements after x[0, 0]. A program owns
ROWS_TILE = 2 rows and walks them D_TILE = 4 columns a step:
cdiv(5, 2) = 3 programs (cdiv: division rounded up). Program 1
owns rows 2 and 3; its first step loads x at these offsets,
row_ids[:, None] * 6 + cols[None, :], broadcast as in torch:

    [[2], [3]] * 6 + [[0, 1, 2, 3]] = [[12, 13, 14, 15],
                                       [18, 19, 20, 21]]

Its second step takes columns 4 to 7, but x's columns end at
index 5: row 2's column 6 would be offset 2 * 6 + 6 = 18, which
holds x[3, 0], the next row's first value. The mask cols < 6
(other=0) zeros those loads; row_ids < 5 drops program 2's row 5.
`main.py --draw picture.png` draws this, from the kernel itself
(its left half; the right half is Part 3's backward).
"""

import functools
import sys
from pathlib import Path

import torch
from einops import rearrange

# common (the lessons' helper): with no GPU, it runs Triton on the CPU.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


# ## Part 1. The simplest forward: one program per tile of rows
SIMPLE_TILE = dict(ROWS_TILE=16, D_TILE=64)  # for Parts 1, 1b


@triton.jit
def simple_forward_kernel(
    x_ptr, w_ptr, y_ptr,  # tensors arrive as pointers: to x[0, 0], w[0], y[0]
    rows, D, stride_row, stride_col,  # x's sizes, strides
    # tl.constexpr: a compile-time constant. Block shapes must
    # be constants; each new value compiles the kernel anew.
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    # tl.arange(0, n): the block 0 to n - 1 (n a power of 2)
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    # acc: a tile of float32 sums (16-bit sums would lose bits).
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    for d0 in range(0, D, D_TILE):  # D_TILE columns a step
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D
        # A (ROWS_TILE, D_TILE) block of offsets (broadcast):
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        mask = row_mask[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        # w must be contiguous: w[d] at w_ptr + d (see the Function).
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        acc += x.to(tl.float32) * w.to(tl.float32)[None, :]
    # Why a 2-D acc: a program runs on num_warps warps (groups of
    # 32 threads), and each thread holds a few of acc's values.
    # acc += ... is work each thread does alone; tl.sum makes
    # threads swap values and wait, so it runs once, here.
    y = tl.sum(acc, axis=1)  # each row's sum, once
    # .dtype.element_ty: the dtype of what y_ptr points to.
    tl.store(y_ptr + row_ids, y.to(y_ptr.dtype.element_ty), mask=row_mask)


def forward_simple(x2d, weight):
    """x2d @ weight for x2d (rows, D), by simple_forward_kernel."""
    rows, D = x2d.shape
    within_limits(x2d)  # int32 offsets would wrap past 2**31
    y = torch.empty(rows, dtype=x2d.dtype, device=x2d.device)
    grid = (triton.cdiv(rows, SIMPLE_TILE["ROWS_TILE"]),)  # per 16 rows
    args = (x2d, weight, y, rows, D, *x2d.stride())
    simple_forward_kernel[grid](*args, **SIMPLE_TILE, num_warps=4)
    return y


def reference(x, w, grad_y):  # y, grad_x, grad_w, as above
    return x @ w, grad_y[:, None] * w, grad_y @ x


# ## Is it right?
# check() computes reference() in float64 and allows for our
# float32 sums' rounding, which grows with the terms each adds:
# D for y, 1 for grad_x (a product alone), rows for grad_w.
def check(got, x, w, grad_y, name):
    """Asserts got = (y, grad_x, grad_w) is reference()'s."""
    terms = (x.shape[1], 1, x.shape[0])
    case = f"on x {tuple(x.shape)} {x.dtype}"
    what = tuple(f"{name} {out} {case}" for out in ("y", "grad_x", "grad_w"))
    common.assert_close_to_float64(got, reference, (x, w, grad_y), terms, what)


# ## Try it: the docstring's example
# main() runs this first: x[r, d] = 6r + d and w all ones, so y
# holds x's row sums, [15.0, 51.0, ..., 159.0]. The launch's
# ints are rows 5, D 6, and x's strides 6 and 1.
def run_docstring_example():
    x = torch.arange(30.0, device=common.DEVICE).reshape(5, 6)
    y, ones = torch.empty(5, device=x.device), torch.ones(6, device=x.device)
    simple_forward_kernel[(3,)](x, ones, y, 5, 6, 6, 1, ROWS_TILE=2, D_TILE=4)
    print(f"the docstring's example: {y.tolist()} = {x.sum(1).tolist()}")


# ## Part 1b. The simplest backward: a partial row per program
# Each element of grad_x is one product: no sum. grad_w[d]
# sums over every row, but a program sees only its own rows.
# So program p adds up its rows' share into row p of
# partial, a float32 buffer. A second pass, PyTorch's
# partial.sum(0), adds up partial's rows:
#
#     partial[p, d] = sum over p's rows r of x[r, d] * grad_y[r]
#     grad_w[d]     = sum over p of partial[p, d]
#
# Why not add into grad_w from every program at once (atomic
# adds)? They would land in a different order on each run, and
# round differently: grad_w's bits would change run to run.
@triton.jit
def simple_backward_kernel(
    x_ptr, w_ptr, grad_y_ptr,  # grad_y[r] at grad_y_ptr + r
    grad_x_ptr,  # grad_x[0, 0]; grad_x is a contiguous (rows, D)
    partial_ptr,  # a contiguous (programs, D) buffer
    rows, D, stride_row, stride_col,  # x's, as before
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    p = tl.program_id(0)
    row_ids = p * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0)
    grad_y = grad_y.to(tl.float32)
    partial_row = partial_ptr + p * D  # partial[p, 0]
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < D
        mask = row_mask[:, None] & col_mask[None, :]
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        # grad_x in float32, rounded to its dtype at the store
        grad_x = grad_y[:, None] * w.to(tl.float32)[None, :]
        # grad_x is contiguous: grad_x[r, d] lies at r * D + d.
        out = row_ids[:, None] * D + cols[None, :]
        tl.store(grad_x_ptr + out, grad_x.to(grad_x_ptr.dtype.element_ty), mask=mask)
        # This tile's share of grad_w, summed over the
        # program's rows. tl.sum must run every step here:
        # each step visits new columns. Part 3 walks each
        # program down the rows instead, and sums once, at the end.
        share = tl.sum(x.to(tl.float32) * grad_y[:, None], axis=0)
        tl.store(partial_row + cols, share, mask=col_mask)


def backward_simple(x2d, weight, grad_y):
    """(grad_x, grad_w) of y = x2d @ weight, given grad_y."""
    rows, D = x2d.shape
    within_limits(x2d)  # int32 offsets, into x and grad_x
    programs = triton.cdiv(rows, SIMPLE_TILE["ROWS_TILE"])
    grad_x = torch.empty((rows, D), dtype=x2d.dtype, device=x2d.device)
    partial = torch.empty((programs, D), dtype=torch.float32, device=x2d.device)
    args = (x2d, weight, grad_y, grad_x, partial, rows, D, *x2d.stride())
    simple_backward_kernel[(programs,)](*args, **SIMPLE_TILE, num_warps=4)
    grad_w = partial.sum(0).to(weight.dtype)  # second pass
    return grad_x, grad_w


# ## Part 2. forward_kernel: the simple forward, tuned
# Part 2 makes one change, marked (tune) where the code has it.
# (tune) The best tile depends on D. Wide rows want wide
# tiles (memory is read fastest in long runs); narrow rows want
# many rows in a tile. A triton.Config is one candidate
# launch: the tile's constexprs, and num_warps. A TILES entry
# is (ROWS_TILE, D_TILE, num_warps); we kept nine of many timed.
TILES = [(128, 32, 4), (64, 64, 4), (8, 128, 4), (32, 128, 4)]
TILES += [(128, 128, 8), (16, 256, 4), (8, 512, 4), (4, 1024, 4), (16, 1024, 8)]
if common.INTERPRETED:
    TILES = [(16, 64, 4)]  # no GPU to time: one config
CONFIGS = [triton.Config({"ROWS_TILE": r, "D_TILE": d}, num_warps=w) for r, d, w in TILES]

# triton.autotune(configs, key) wraps a kernel. Its first
# launch with a new D times every config, and keeps the
# fastest for that D; a new number of rows reuses the pick.
# Written as a decorator, it goes above @triton.jit:
#     @triton.autotune(configs=CONFIGS, key=["D"])
# The kernel is Part 1's, unchanged: only its tile is tuned.
forward_kernel = triton.autotune(configs=CONFIGS, key=["D"])(simple_forward_kernel)  # (tune)


def forward_tuned(x2d, weight):
    """x2d @ weight by forward_kernel, with the tuned tile."""
    rows, D = x2d.shape
    within_limits(x2d)  # int32 offsets, as in Part 1
    y = torch.empty(rows, dtype=x2d.dtype, device=x2d.device)
    # The programs depend on the tuned ROWS_TILE, so the grid
    # is a function of meta: the picked config's values.
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    # No tile or num_warps here: the autotuner passes its pick's.
    forward_kernel[grid](x2d, weight, y, rows, D, *x2d.stride())
    return y


# ## Part 3. backward_kernel: the simple backward, changed
# Part 1b's partial has a row for every 16 rows of x. For x of
# 1048576 x 128 float32, that is 65536 rows (32 MiB), written
# by the kernel and read again by partial.sum(0). And the
# kernel runs tl.sum at every step. Part 3 makes two changes,
# each tagged where the code has it:
# - (split) gives partial P rows, however many rows x has, and
#   runs tl.sum once a program;
# - (tune) picks the tile from CONFIGS, as forward_kernel does.
#
# (split) changes what a program owns, and the grid:
#              grid axis 0   grid axis 1   a program walks
#   Part 1b    row tile p    (none)        across D
#   Part 3     D tile t      p, 0 to P-1   down row tiles
#                                          p, p + P, p + 2P, ...
# D tile t is the D_TILE columns from t * D_TILE. Walking down,
# a program adds x * grad_y into a 2-D acc for the same columns
# at every step, so, as in the forward, tl.sum runs once, at the
# end. In both parts, p is the row of partial that a program
# writes. In PyTorch, where cols are D tile t's columns and
# rows(i) are row tile i's rows:
#     acc = torch.zeros(ROWS_TILE, D_TILE)
#     for i in range(p, row_tiles, P):
#         acc += x[rows(i), cols] * grad_y[rows(i), None]
#     partial[p, cols] = acc.sum(0)
# For x of 10 x 8 (as in picture.png's right half): two D tiles
# of 4 columns, 5 row tiles of 2 rows, P = 2:
#     program (0, 0): columns 0-3, row tiles 0, 2, 4 -> partial[0]
#     program (0, 1): columns 0-3, row tiles 1, 3    -> partial[1]
#     programs (1, 0) and (1, 1): the same for columns 4-7
# The host picks P (below): 1056 for D = 128 on an H200. So
# partial has 1056 rows there, not 65536.


@triton.autotune(configs=CONFIGS, key=["D"])  # (tune)
@triton.jit
def backward_kernel(
    x_ptr, w_ptr, grad_y_ptr, grad_x_ptr, partial_ptr,
    rows, D, stride_row, stride_col,  # all as before
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # (tune)
):  # fmt: skip
    t, p = tl.program_id(0), tl.program_id(1)  # (split)
    P = tl.num_programs(1)  # (split) grid axis 1's size
    cols = t * D_TILE + tl.arange(0, D_TILE)
    col_mask = cols < D
    # (split) A program keeps one D tile: w loads just once.
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    for row_tile in range(p, tl.cdiv(rows, ROWS_TILE), P):  # (split)
        row_ids = row_tile * ROWS_TILE + tl.arange(0, ROWS_TILE)
        row_mask = row_ids < rows
        mask = row_mask[:, None] & col_mask[None, :]
        grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(tl.float32)
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        # Load x before storing grad_x, as Part 1b does too: the
        # compiler cannot tell that x and grad_x are different
        # memory, so a load written after the store would wait
        # for the store to finish (18% slower, measured).
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        grad_x = grad_y[:, None] * w[None, :]
        # grad_x is contiguous: its rows lie D apart.
        out = row_ids[:, None] * D + cols[None, :]
        tl.store(grad_x_ptr + out, grad_x.to(grad_x_ptr.dtype.element_ty), mask=mask)
        acc += x.to(tl.float32) * grad_y[:, None]
    # (split) Every program stores its row of partial, zeros if
    # its loop ran no row tile (P can exceed the row tiles of a
    # small x): an unwritten row would hold garbage.
    sums = tl.sum(acc, axis=0)
    tl.store(partial_ptr + p * D + cols, sums, mask=col_mask)


# ### Picking P, on the host (tuning: skim it on a first read)
# About 8 programs per SM keep a GPU's SMs (streaming
# multiprocessors, its cores; an H200 has 132) busy: while some
# wait for memory, others compute. So P shares 8 * SMs programs
# among the D tiles: 1056 at D = 128, one D tile. The host makes
# partial (P rows) before the launch, but the autotuner picks
# D_TILE only during it, so the host counts D tiles as if
# D_TILE were 128. P is at least SMs, since the autotuner may
# pick a wider tile and so fewer D tiles; and at most rows.
# A wrong count costs speed, never correctness. In all:
#     P = min(rows, max(SMs, cdiv(8 * SMs, cdiv(D, 128))))
PROGRAMS_PER_SM, D_TILE_GUESS = 8, 128


def programs_down(rows, D, device):
    """P: the programs down each D tile, by the rule above."""
    sms = common.sm_count(device) if device.type == "cuda" else 1
    d_tiles = triton.cdiv(D, D_TILE_GUESS)
    P = max(sms, triton.cdiv(PROGRAMS_PER_SM * sms, d_tiles))
    return min(P, rows)  # at most a program per row


def backward_tuned(x2d, weight, grad_y):
    """(grad_x, grad_w) by backward_kernel, then partial.sum(0)."""
    rows, D = x2d.shape
    within_limits(x2d)  # int32 offsets, as in Part 1b
    P = programs_down(rows, D, x2d.device)
    grad_x = torch.empty((rows, D), dtype=x2d.dtype, device=x2d.device)
    partial = torch.empty((P, D), dtype=torch.float32, device=x2d.device)
    grid = lambda meta: (triton.cdiv(D, meta["D_TILE"]), P)  # noqa: E731
    args = (x2d, weight, grad_y, grad_x, partial, rows, D, *x2d.stride())
    backward_kernel[grid](*args)
    grad_w = partial.sum(0).to(weight.dtype)  # as in Part 1b
    return grad_x, grad_w


# ### What the changes bought
#     H200, x of 1048576 x 128        float32    bfloat16
#     backward_simple (Part 1b)       0.354 ms   0.453 ms
#     backward_tuned (Part 3)         0.279 ms   0.159 ms
#     torch: autograd of x @ w        0.470 ms   0.340 ms
# These are the kernels' times alone: the timing replays a
# recording of the launches (a CUDA graph), without Python. A
# plain Python loop of calls took the same, within 1%.
# Where the time goes, by PyTorch's profiler:
# - partial.sum(0) takes 68 us in backward_simple, and 7 in
#   backward_tuned, since partial has 1056 rows, not 65536;
# - simple_backward_kernel takes 280 us in float32, moving
#   about 1.1 GB: 94% of a plain copy's speed. In bfloat16 it
#   moves half that, yet takes 377 us: memory is not what holds
#   it back, but the work of each step (most likely its tl.sum).
#   backward_kernel, with one tl.sum a program, takes 266 us in
#   float32 and 142 us in bfloat16.


# ## The Function: autograd launches the kernels
# A torch.autograd.Function pairs a forward with its backward.
# forward launches Part 2's kernel, through forward_tuned, and
# saves x and w; when autograd needs the gradients, backward
# launches Part 3's. A model calls WeightedSum.apply(x, w).
class WeightedSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        assert x.shape[-1] == weight.shape[0], "x (..., D) needs w of shape (D,)"
        weight = weight.contiguous()  # the kernels read w_ptr + d
        ctx.save_for_backward(x, weight)
        # x (..., D) as rows: a view if x's strides allow, else a copy
        x2d = rearrange(x, "... d -> (...) d")
        y = forward_tuned(x2d, weight)
        return y.reshape(x.shape[:-1])

    # Autograd cannot see into a kernel, so it cannot take a
    # second derivative through this backward: asking raises.
    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y):
        x, weight = ctx.saved_tensors
        x2d = rearrange(x, "... d -> (...) d")
        # The kernels read grad_y[r] at grad_y_ptr + r. For a
        # loss y.sum(), autograd hands grad_y as a single 1 expanded
        # to y's shape (stride 0): copy it to a plain tensor.
        grad_y = grad_y.reshape(-1).contiguous()
        grad_x, grad_w = backward_tuned(x2d, weight, grad_y)
        # A gradient per input of forward: x's, then w's.
        return grad_x.reshape(x.shape), grad_w


# Next: exercises.py, to practise; then wide.py, Part 4
# (optional), the kernels op.py runs: 16-byte loads, float64, a
# huge x, fewer compiles, the second pass as a kernel.


# What main() checks and times: pairs of wrappers.
VARIANTS = {"simple": (forward_simple, backward_simple), "tuned": (forward_tuned, backward_tuned)}


# ## The harness: checks, timing (skip it on a first read)
def within_limits(x2d):
    """Refuses an x whose offsets, or those of grad_x (x's shape,
    contiguous), reach 2^31: the kernels compute offsets in int32,
    which would wrap to wrong addresses (wide.py lifts this)."""
    assert max(common.elements_spanned(x2d), x2d.numel()) < 2**31, "int32 offsets: see wide.py"


def check_variants(x, variants):
    """check() on each variant, fresh w and grad_y; its outputs start as NaN."""
    w = torch.randn(x.shape[1], dtype=x.dtype, device=x.device)
    grad_y = torch.randn(x.shape[0], dtype=x.dtype, device=x.device)
    for name, (forward, backward) in variants.items():
        with common.uninitialized_memory_is_nan():
            got = (forward(x, w), *backward(x, w, grad_y))
        check(got, x, w, grad_y, name)
    return list(variants)


DTYPES = {name: getattr(torch, name) for name in ("float16", "bfloat16", "float32", "float64")}
SHAPES = [(65536, 1024), (16384, 4096), (65536, 1000), (1048576, 128)]
SWEEP = [dict(rows=r, dim=d, dtype=t) for t in ("float32", "bfloat16") for r, d in SHAPES]


def benchmark(rows, dim, dtype="float32", module=sys.modules[__name__]):
    """Times torch, module.VARIANTS and a bare launch: fwd, bwd."""
    kw = dict(dtype=DTYPES.get(dtype, dtype), device=common.DEVICE)
    x, w = torch.randn(rows, dim, **kw), torch.randn(dim, **kw)
    grad_y = torch.randn(rows, **kw)
    fwd = {"torch": lambda: x @ w}
    variants, (name, kernel, hints) = module.VARIANTS, module.bare(x)
    fwd |= {name: functools.partial(f, x, w) for name, (f, _) in variants.items()}
    args = (x, w, torch.empty(rows, **kw), rows, dim, *x.stride())
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    fwd[f"{name}[grid] bare"] = lambda: kernel[grid](*args, **hints)
    # Each backward alone: ours by its wrapper, torch's by autograd.
    bwd = {"torch": common.backward_call(torch.matmul, (x, w), grad_y)}
    bwd |= {n: functools.partial(b, x, w, grad_y) for n, (_, b) in variants.items()}
    # Elements moved: x, w, y; x, grad_y, w, grad_x, grad_w.
    moved = {"fwd": (rows + 1) * dim + rows, "bwd": 2 * (rows + 1) * dim + rows}
    case = f"{rows}x{dim} {str(x.dtype).removeprefix('torch.')}"
    results, ceiling = [], common.copy_ceiling_gbps()
    for step, calls in (("fwd", fwd), ("bwd", bwd)):
        gbps = functools.partial(common.gbps, moved[step] * x.element_size())
        results += common.timing_rows(case, calls, gbps, "GB/s", ceiling, f" {step}")
    return results


def bare(x):  # the kernel benchmark() launches bare: name, it, hints
    return "forward_kernel", forward_kernel, {}


def main(argv=None, module=sys.modules[__name__]):
    """Checks and times `module`'s variants (this file's, or wide.py's)."""
    import tools  # adds --draw and --asm (see the README)

    parser = tools.lesson_parser(module)
    rows, dim = (1000, 100) if common.INTERPRETED else (65536, 1024)
    add = parser.add_argument
    add("--rows", type=int, default=rows, help="rows of x")
    add("--dim", type=int, default=dim, help="D, the length of a row")
    add("--dtype", choices=list(DTYPES), default="float32", help="of x and w")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.dim < 0:  # no rows: nothing to tune on
        parser.error("--rows must be >= 1 and --dim >= 0")
    print(common.describe_run())
    run_docstring_example()
    x = torch.randn(args.rows, args.dim, dtype=DTYPES[args.dtype], device=common.DEVICE)
    checked = check_variants(x, module.VARIANTS)
    print(f"check passed: y, grad_x and grad_w of {', '.join(checked)}")
    # The Function, as a model calls it: y.sum() gives grad_x = w.
    x = torch.randn(2, 3, 4, device=common.DEVICE, requires_grad=True)
    w = torch.randn(4, device=common.DEVICE)
    WeightedSum.apply(x, w).sum().backward()
    exact = torch.equal(x.grad, w.expand(2, 3, 4))
    print(f"WeightedSum.apply(x, w).sum().backward(): x.grad is w: {exact}\n")
    rows = benchmark(args.rows, args.dim, args.dtype, module)
    common.print_table(rows, common.TIMING_COLUMNS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
