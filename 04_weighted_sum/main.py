"""Weighted sum y = (x * w).sum(-1), forward and backward in Triton, behind torch.autograd.

x has shape [..., D] and w has shape [D]; y has shape [...]. Training needs two gradients, and they
are different kinds of work:

- grad_x[r, d] = grad_y[r] * w[d] is an outer product: every element independent, pure streaming;
- grad_w[d] = sum over rows r of x[r, d] * grad_y[r] is a reduction over ALL rows, which many
  programs share. Each program sums its own rows into one row of a small [programs, D] buffer and
  a second, small kernel adds those rows in a fixed order: deterministic, no atomics.

The same kernels come in three memory-access styles, the variants of this lesson:
"pointer" (plain address arithmetic, runs everywhere), "block_ptr" (tl.make_block_ptr, what the
seed tutorials teach, removed in Triton 3.9) and "descriptor" (tl.make_tensor_descriptor, the API
that replaced block pointers, with alignment rules the wrapper checks; 02_matmul_tiled explains how
the two differ). "torch_function" is the same autograd Function written with PyTorch operations
and a hand-derived backward. weighted_sum() runs the pointer kernels (see ENTRY_STYLE for why).

Forward programs own a tile of rows and walk D in tiles, accumulating in float32 (float64 for
float64 input). Backward launches a few programs per SM that each loop over many row tiles, so the
partial grad_w buffer stays small however tall x is.
"""

import argparse
import sys
from pathlib import Path

import torch
from einops import rearrange

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (switches on the interpreter without CUDA, before any kernel is defined)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}


# ---------------------------------------------------------------------------------------------
# Tile shapes. On a GPU the autotuner times every config that suits D (see _prune_tiles) the first
# time it meets a new D, dtype and alignment, and keeps the fastest; Triton adds the dtypes of the
# tensor arguments to the key by itself. Each tile holds 1024 to 16384 elements: big tiles put many
# bytes in flight per program; small ones need few registers, so that many programs fit on an SM
# at once (on sm_90, 8 x 128 in fp32 takes 48 registers a thread in the backward, so ten programs
# of 4 warps fit on an SM; 128 x 128 takes 214 and leaves room for one). Wide rows get wide D
# tiles (long contiguous reads), narrow rows get more rows per tile.
# The interpreter cannot autotune several configs (no GPU timer): it gets one fixed tile, smaller
# than D in the tests so that the loop over D tiles and its masks are exercised.
# ---------------------------------------------------------------------------------------------
GPU_TILES = (  # (ROWS_TILE, D_TILE, num_warps)
    (128, 32, 4),
    (64, 64, 4),
    (8, 128, 4),
    (16, 128, 4),
    (32, 128, 4),
    (64, 128, 8),
    (128, 128, 8),
    (16, 256, 4),
    (32, 256, 8),
    (4, 512, 4),
    (8, 512, 4),
    (16, 512, 8),
    (4, 1024, 4),
    (8, 1024, 8),
    (16, 1024, 8),
)
# A TMA copy moves a box of at most 256 elements along each dimension, so descriptors stop there.
DESCRIPTOR_MAX_TILE = 256


def _configs(max_tile=None):
    if common.INTERPRETED:
        return [triton.Config({"ROWS_TILE": 16, "D_TILE": 64}, num_warps=4)]
    return [
        triton.Config({"ROWS_TILE": rows, "D_TILE": d}, num_warps=warps)
        for rows, d, warps in GPU_TILES
        if max_tile is None or max(rows, d) <= max_tile
    ]


def _prune_tiles(configs, named_args, **kwargs):
    """Keep the configs whose D tile suits D: no wider than D rounded up to a power of two (a wider
    tile only loads masked lanes), no narrower than 128 when D allows (short reads waste bandwidth)."""
    width = triton.next_power_of_2(named_args["D"])
    fitting = [c for c in configs if min(width, 128) <= c.kwargs["D_TILE"] <= max(width, 32)]
    return fitting or configs


FORWARD_KEY = ["D", "X_ROW_ALIGN", "D_ALIGN"]
BACKWARD_KEY = FORWARD_KEY + ["NEED_GRAD_X", "NEED_GRAD_W"]


def _autotune(key, max_tile=None):
    return triton.autotune(configs=_configs(max_tile), key=key, prune_configs_by={"early_config_prune": _prune_tiles})


# ---------------------------------------------------------------------------------------------
# Forward kernels: y[r] = sum_d x[r, d] * w[d]. One program owns ROWS_TILE rows and walks D in
# steps of D_TILE. It keeps a [ROWS_TILE, D_TILE] accumulator and reduces it across D only once at
# the end, so the loop body is loads and multiply-adds with no cross-thread shuffles.
# The three kernels take the same arguments, so one launcher serves them all.
#
# Wide loads need the compiler to know two things about a row: that it starts on a 16-byte
# boundary, and that the mask `cols < D` is the same for every element of a 16-byte chunk.
# Triton knows neither when D is not a multiple of 16 (it specialises integer arguments on that
# divisibility only), and then it loads and stores one element at a time: on an H200 the bf16
# backward at D = 1000 took 305 us instead of 87 for this alone. So the host passes the alignment it can
# prove (X_ROW_ALIGN, D_ALIGN: powers of two dividing the row stride and D), and the kernels write
# the stride and D as (value // ALIGN) * ALIGN: the same numbers, with the divisibility visible.
# ---------------------------------------------------------------------------------------------
@_autotune(FORWARD_KEY)
@triton.jit
def forward_pointer_kernel(
    x_ptr,  # pointer to x[0, 0]; x has shape (rows, D) and any strides
    w_ptr,  # pointer to w[0]; w has shape (D,), contiguous
    y_ptr,  # pointer to y[0]; y has shape (rows,), contiguous
    rows, D,  # problem size
    stride_x_row, stride_x_col,  # elements between x[r, d] and x[r + 1, d], and x[r, d + 1]
    X_ROW_ALIGN: tl.constexpr,  # a power of two dividing stride_x_row (wide loads)
    D_ALIGN: tl.constexpr,  # a power of two dividing D (a mask that is constant over wide loads)
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 input
    ROWS_TILE: tl.constexpr,  # rows per program (a power of two, from the autotuner)
    D_TILE: tl.constexpr,  # columns per loop step (a power of two, from the autotuner)
):
    row_ids = tl.program_id(0) * ROWS_TILE + tl.arange(0, ROWS_TILE)
    row_mask = row_ids < rows
    # int64 before multiplying by the stride: past 2^31 elements row * stride overflows int32.
    # The stride and D written with their alignment visible (see above the kernels): wide loads.
    row_starts = row_ids.to(tl.int64) * ((stride_x_row // X_ROW_ALIGN) * X_ROW_ALIGN)
    aligned_D = (D // D_ALIGN) * D_ALIGN
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        col_mask = cols < aligned_D
        # The last row tile and the last D tile stick out of x: masked lanes load 0 and add nothing.
        x = tl.load(
            x_ptr + row_starts[:, None] + cols.to(tl.int64)[None, :] * stride_x_col,
            mask=row_mask[:, None] & col_mask[None, :],
            other=0.0,
        )
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        # Widen before multiplying: fp16/bf16 products are exact in float32, and tl.sum would
        # otherwise add in fp16/bf16.
        acc += x.to(ACC_DTYPE) * w.to(ACC_DTYPE)[None, :]
    tl.store(y_ptr + row_ids, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=row_mask)


@_autotune(FORWARD_KEY)
@triton.jit
def forward_block_ptr_kernel(
    x_ptr,  # pointer to x[0, 0]; x has shape (rows, D) and any strides
    w_ptr,  # pointer to w[0]; w has shape (D,), contiguous
    y_ptr,  # pointer to y[0]; y has shape (rows,), contiguous
    rows, D,  # problem size
    stride_x_row, stride_x_col,  # elements between x[r, d] and x[r + 1, d], and x[r, d + 1]
    X_ROW_ALIGN: tl.constexpr, D_ALIGN: tl.constexpr,  # unused: a block pointer checks bounds itself
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 input
    ROWS_TILE: tl.constexpr,  # rows per program
    D_TILE: tl.constexpr,  # columns per loop step
):
    row0 = tl.program_id(0) * ROWS_TILE
    # A block pointer describes the whole tensor (shape, strides) plus one tile of it (offsets,
    # block_shape); tl.advance moves the tile. order=(1, 0) lists the dims from fastest-varying to
    # slowest: D is the contiguous one in the usual layout (a hint; other strides still work).
    x_block = tl.make_block_ptr(
        x_ptr, shape=(rows, D), strides=(stride_x_row, stride_x_col),
        offsets=(row0, 0), block_shape=(ROWS_TILE, D_TILE), order=(1, 0),
    )
    w_block = tl.make_block_ptr(w_ptr, shape=(D,), strides=(1,), offsets=(0,), block_shape=(D_TILE,), order=(0,))
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for _ in range(0, D, D_TILE):
        # boundary_check names the dims that may stick out of the tensor; those lanes read 0.
        x = tl.load(x_block, boundary_check=(0, 1), padding_option="zero")
        w = tl.load(w_block, boundary_check=(0,), padding_option="zero")
        acc += x.to(ACC_DTYPE) * w.to(ACC_DTYPE)[None, :]
        x_block = tl.advance(x_block, (0, D_TILE))
        w_block = tl.advance(w_block, (D_TILE,))
    y_block = tl.make_block_ptr(y_ptr, shape=(rows,), strides=(1,), offsets=(row0,), block_shape=(ROWS_TILE,), order=(0,))
    tl.store(y_block, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), boundary_check=(0,))


@_autotune(FORWARD_KEY, max_tile=DESCRIPTOR_MAX_TILE)
@triton.jit
def forward_descriptor_kernel(
    x_ptr,  # pointer to x[0, 0]; 16-byte aligned, row stride a multiple of 16 bytes, unit column stride
    w_ptr,  # pointer to w[0]; w has shape (D,), contiguous
    y_ptr,  # pointer to y[0]; y has shape (rows,), contiguous
    rows, D,  # problem size
    stride_x_row, stride_x_col,  # x's strides in elements; stride_x_col is 1 (the wrapper checks)
    X_ROW_ALIGN: tl.constexpr, D_ALIGN: tl.constexpr,  # unused: the TMA unit checks bounds itself
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 input
    ROWS_TILE: tl.constexpr,  # rows per program
    D_TILE: tl.constexpr,  # columns per loop step
):
    row0 = tl.program_id(0) * ROWS_TILE
    # A tensor descriptor names the whole 2-D tensor once; each load names a tile by its corner.
    # On Hopper the TMA unit copies the tile to shared memory and fills the part outside the
    # tensor with zeros, so no masks are written here. Its rules: 16-byte aligned base and row
    # stride, last stride 1 (the literal 1 below). Break them and an H200 returns wrong sums
    # without an error, which is why the wrapper checks them before launching.
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[rows, D], strides=[stride_x_row, 1], block_shape=[ROWS_TILE, D_TILE])
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        x = x_desc.load([row0, d0])
        w = tl.load(w_ptr + cols, mask=cols < D, other=0.0)
        acc += x.to(ACC_DTYPE) * w.to(ACC_DTYPE)[None, :]
    row_ids = row0 + tl.arange(0, ROWS_TILE)
    tl.store(y_ptr + row_ids, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=row_ids < rows)


# ---------------------------------------------------------------------------------------------
# Backward kernels. The grid is (D tiles, programs): each program owns one D tile and, with a fixed
# number of programs per D tile (a few per SM), visits row tiles pid, pid + programs,
# pid + 2 * programs, ... For each row tile it
#   - writes grad_x = grad_y[:, None] * w[None, :] (if NEED_GRAD_X),
#   - adds x * grad_y[:, None] into a [ROWS_TILE, D_TILE] accumulator (if NEED_GRAD_W),
# then reduces the accumulator over its rows into row `pid` of partial_grad_w. x is read once and
# grad_x written once; grad_y is re-read per D tile, rows * D / D_TILE small reads (L2 catches most).
# Programs left without a row tile still write zeros, so every row of the buffer is defined.
# Because the number of programs per D tile does not grow with the rows, neither does the buffer.
# ---------------------------------------------------------------------------------------------
@_autotune(BACKWARD_KEY)
@triton.jit
def backward_pointer_kernel(
    x_ptr,  # pointer to x[0, 0]; x has shape (rows, D) and any strides
    w_ptr,  # pointer to w[0]; w has shape (D,), contiguous
    grad_y_ptr,  # pointer to grad_y[0]; shape (rows,), stride stride_grad_y (0 when broadcast)
    grad_x_ptr,  # pointer to grad_x[0, 0]; a fresh contiguous (rows, D) tensor
    partial_ptr,  # pointer to partial_grad_w[0, 0]; shape (programs, D), contiguous, ACC_DTYPE
    rows, D,  # problem size
    stride_x_row, stride_x_col,  # elements between x[r, d] and x[r + 1, d], and x[r, d + 1]
    stride_grad_y,  # elements between grad_y[r] and grad_y[r + 1]
    X_ROW_ALIGN: tl.constexpr,  # a power of two dividing stride_x_row (wide loads)
    D_ALIGN: tl.constexpr,  # a power of two dividing D, grad_x's row stride (wide stores)
    NEED_GRAD_X: tl.constexpr,  # write grad_x (autograd's ctx.needs_input_grad[0])
    NEED_GRAD_W: tl.constexpr,  # write partial_grad_w (ctx.needs_input_grad[1])
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 input
    ROWS_TILE: tl.constexpr,  # rows per step
    D_TILE: tl.constexpr,  # columns per D tile
):
    d0 = tl.program_id(0) * D_TILE
    pid = tl.program_id(1)
    programs = tl.num_programs(1)
    aligned_D = (D // D_ALIGN) * D_ALIGN  # D, with its alignment visible (see the forward kernels)
    cols = d0 + tl.arange(0, D_TILE)
    col_mask = cols < aligned_D
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(ACC_DTYPE)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for tile in range(pid, tl.cdiv(rows, ROWS_TILE), programs):
        row_ids = (tile * ROWS_TILE + tl.arange(0, ROWS_TILE)).to(tl.int64)
        row_mask = row_ids < rows
        mask = row_mask[:, None] & col_mask[None, :]
        # Both loads come before the store. Written the other way round, the compiler must keep
        # the x load behind the grad_x store (it cannot prove the two never overlap), and the store
        # waits for grad_y: two memory round trips per step instead of one (on an H200 this kernel
        # took 161 us instead of 137 on 65536x1024 fp32, and 100 instead of 75 in bf16).
        if NEED_GRAD_W:
            x_starts = row_ids * ((stride_x_row // X_ROW_ALIGN) * X_ROW_ALIGN)
            x = tl.load(x_ptr + x_starts[:, None] + cols.to(tl.int64)[None, :] * stride_x_col, mask=mask, other=0.0)
        grad_y = tl.load(grad_y_ptr + row_ids * stride_grad_y, mask=row_mask, other=0.0).to(ACC_DTYPE)
        if NEED_GRAD_X:
            # The product is rounded once, into grad_x's dtype, as PyTorch rounds it.
            grad_x_starts = row_ids * aligned_D  # grad_x is contiguous: its row stride is D
            tl.store(
                grad_x_ptr + grad_x_starts[:, None] + cols[None, :],
                (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty),
                mask=mask,
            )
        if NEED_GRAD_W:
            acc += x.to(ACC_DTYPE) * grad_y[:, None]
    if NEED_GRAD_W:
        tl.store(partial_ptr + pid.to(tl.int64) * D + cols, tl.sum(acc, axis=0), mask=col_mask)


@_autotune(BACKWARD_KEY)
@triton.jit
def backward_block_ptr_kernel(
    x_ptr,  # pointer to x[0, 0]; x has shape (rows, D) and any strides
    w_ptr,  # pointer to w[0]; w has shape (D,), contiguous
    grad_y_ptr,  # pointer to grad_y[0]; shape (rows,), stride stride_grad_y (0 when broadcast)
    grad_x_ptr,  # pointer to grad_x[0, 0]; a fresh contiguous (rows, D) tensor
    partial_ptr,  # pointer to partial_grad_w[0, 0]; shape (programs, D), contiguous, ACC_DTYPE
    rows, D,  # problem size
    stride_x_row, stride_x_col,  # elements between x[r, d] and x[r + 1, d], and x[r, d + 1]
    stride_grad_y,  # elements between grad_y[r] and grad_y[r + 1]
    X_ROW_ALIGN: tl.constexpr, D_ALIGN: tl.constexpr,  # unused: block pointers check bounds themselves
    NEED_GRAD_X: tl.constexpr,  # write grad_x
    NEED_GRAD_W: tl.constexpr,  # write partial_grad_w
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 input
    ROWS_TILE: tl.constexpr,  # rows per step
    D_TILE: tl.constexpr,  # columns per D tile
):
    d0 = tl.program_id(0) * D_TILE
    pid = tl.program_id(1)
    programs = tl.num_programs(1)
    w_block = tl.make_block_ptr(w_ptr, shape=(D,), strides=(1,), offsets=(d0,), block_shape=(D_TILE,), order=(0,))
    w = tl.load(w_block, boundary_check=(0,), padding_option="zero").to(ACC_DTYPE)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for tile in range(pid, tl.cdiv(rows, ROWS_TILE), programs):
        row0 = tile * ROWS_TILE
        # Each row tile is a jump, not a step, so a new block pointer per tile is simplest.
        grad_y_block = tl.make_block_ptr(
            grad_y_ptr, shape=(rows,), strides=(stride_grad_y,), offsets=(row0,), block_shape=(ROWS_TILE,), order=(0,),
        )
        if NEED_GRAD_W:  # loads before the store, as in the pointer kernel
            x_block = tl.make_block_ptr(
                x_ptr, shape=(rows, D), strides=(stride_x_row, stride_x_col),
                offsets=(row0, d0), block_shape=(ROWS_TILE, D_TILE), order=(1, 0),
            )
            x = tl.load(x_block, boundary_check=(0, 1), padding_option="zero")
        grad_y = tl.load(grad_y_block, boundary_check=(0,), padding_option="zero").to(ACC_DTYPE)
        if NEED_GRAD_X:
            grad_x_block = tl.make_block_ptr(
                grad_x_ptr, shape=(rows, D), strides=(D, 1),
                offsets=(row0, d0), block_shape=(ROWS_TILE, D_TILE), order=(1, 0),
            )
            tl.store(grad_x_block, (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty), boundary_check=(0, 1))
        if NEED_GRAD_W:
            acc += x.to(ACC_DTYPE) * grad_y[:, None]
    if NEED_GRAD_W:
        partial_block = tl.make_block_ptr(
            partial_ptr, shape=(programs, D), strides=(D, 1), offsets=(pid, d0), block_shape=(1, D_TILE), order=(1, 0),
        )
        tl.store(partial_block, tl.sum(acc, axis=0, keep_dims=True), boundary_check=(1,))


@_autotune(BACKWARD_KEY, max_tile=DESCRIPTOR_MAX_TILE)
@triton.jit
def backward_descriptor_kernel(
    x_ptr,  # pointer to x[0, 0]; 16-byte aligned, row stride a multiple of 16 bytes, unit column stride
    w_ptr,  # pointer to w[0]; w has shape (D,), contiguous
    grad_y_ptr,  # pointer to grad_y[0]; shape (rows,), stride stride_grad_y (0 when broadcast)
    grad_x_ptr,  # pointer to grad_x[0, 0]; fresh contiguous (rows, D), D * element size a multiple of 16
    partial_ptr,  # pointer to partial_grad_w[0, 0]; shape (programs, D), contiguous, ACC_DTYPE
    rows, D,  # problem size
    stride_x_row, stride_x_col,  # x's strides in elements; stride_x_col is 1 (the wrapper checks)
    stride_grad_y,  # elements between grad_y[r] and grad_y[r + 1]
    X_ROW_ALIGN: tl.constexpr, D_ALIGN: tl.constexpr,  # unused: the TMA unit checks bounds itself
    NEED_GRAD_X: tl.constexpr,  # write grad_x
    NEED_GRAD_W: tl.constexpr,  # write partial_grad_w
    ACC_DTYPE: tl.constexpr,  # tl.float32, or tl.float64 for float64 input
    ROWS_TILE: tl.constexpr,  # rows per step
    D_TILE: tl.constexpr,  # columns per D tile
):
    d0 = tl.program_id(0) * D_TILE
    pid = tl.program_id(1)
    programs = tl.num_programs(1)
    # Descriptors read x and write grad_x; a store through a descriptor drops the part of the
    # tile outside the tensor, so the last row tile and D tile need no mask either.
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[rows, D], strides=[stride_x_row, 1], block_shape=[ROWS_TILE, D_TILE])
    grad_x_desc = tl.make_tensor_descriptor(grad_x_ptr, shape=[rows, D], strides=[D, 1], block_shape=[ROWS_TILE, D_TILE])
    cols = d0 + tl.arange(0, D_TILE)
    col_mask = cols < D
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(ACC_DTYPE)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=ACC_DTYPE)
    for tile in range(pid, tl.cdiv(rows, ROWS_TILE), programs):
        row_ids = (tile * ROWS_TILE + tl.arange(0, ROWS_TILE)).to(tl.int64)
        if NEED_GRAD_W:  # loads before the store, as in the pointer kernel
            x = x_desc.load([tile * ROWS_TILE, d0])
        grad_y = tl.load(grad_y_ptr + row_ids * stride_grad_y, mask=row_ids < rows, other=0.0).to(ACC_DTYPE)
        if NEED_GRAD_X:
            grad_x_desc.store([tile * ROWS_TILE, d0], (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty))
        if NEED_GRAD_W:
            acc += x.to(ACC_DTYPE) * grad_y[:, None]
    if NEED_GRAD_W:
        tl.store(partial_ptr + pid.to(tl.int64) * D + cols, tl.sum(acc, axis=0), mask=col_mask)


@triton.jit
def sum_partials_kernel(
    partial_ptr,  # pointer to partial_grad_w[0, 0]; shape (programs, D), contiguous, float32 or float64
    grad_w_ptr,  # pointer to grad_w[0]; shape (D,), in w's dtype
    programs, D,  # shape of the partial buffer
    BLOCK_P: tl.constexpr,  # partial rows added per step
    BLOCK_D: tl.constexpr,  # columns per program
):
    # The second pass of grad_w: column sums of the partial buffer, each column added in the same
    # order on every call, so the result is bitwise repeatable. The buffer is small (at most a few
    # hundred rows) and was just written, so it mostly comes from L2. torch.sum(dim=0) would do
    # the same job, but on an H200 it added 10 to 20 us to the backward; this kernel adds 3 to 6.
    cols = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    col_mask = cols < D
    acc = tl.zeros((BLOCK_P, BLOCK_D), dtype=partial_ptr.dtype.element_ty)
    for p0 in range(0, programs, BLOCK_P):
        rows = p0 + tl.arange(0, BLOCK_P)
        mask = (rows < programs)[:, None] & col_mask[None, :]
        acc += tl.load(partial_ptr + rows.to(tl.int64)[:, None] * D + cols[None, :], mask=mask, other=0.0)
    tl.store(grad_w_ptr + cols, tl.sum(acc, axis=0).to(grad_w_ptr.dtype.element_ty), mask=col_mask)


FORWARD_KERNELS = {"pointer": forward_pointer_kernel, "block_ptr": forward_block_ptr_kernel, "descriptor": forward_descriptor_kernel}
BACKWARD_KERNELS = {"pointer": backward_pointer_kernel, "block_ptr": backward_block_ptr_kernel, "descriptor": backward_descriptor_kernel}

# How many backward programs share the rows of one D tile. About BACKWARD_PROGRAMS_PER_SM per SM
# in all keeps loads in flight everywhere, counting D tiles of PLANNING_D_TILE columns (the
# autotuner's tile is not known before the launch), and at least one per SM per D tile. Fewer
# programs per D tile means fewer rows in the partial grad_w buffer, which the second pass reads.
# On an H200, 8 per SM with the small tiles above ran the 1048576 x 128 backward 2 to 4% faster
# than 4 per SM, and the other shapes within 1% (results/NOTES.md, item 26).
BACKWARD_PROGRAMS_PER_SM = 8
PLANNING_D_TILE = 128
# The second pass adds up to SUM_PARTIALS_MAX_ROWS rows of the partial buffer per step, in tiles
# of SUM_PARTIALS_TILE elements (at least 16 columns wide). On an H200 a tile as tall as the
# buffer (one step) took 1 to 3 us off every backward against 128 rows a step.
SUM_PARTIALS_MAX_ROWS = 1024
SUM_PARTIALS_TILE = 4096
# The interpreter runs programs one after another; three programs make each loop over several
# row tiles and leave some programs with one tile more than others.
INTERPRETER_BACKWARD_PROGRAMS = 3


# ---------------------------------------------------------------------------------------------
# Launch wrappers
# ---------------------------------------------------------------------------------------------
def _alignment(stride, element_size):
    """The largest power of two, up to 16 bytes' worth of elements, that divides `stride`."""
    align = 16 // element_size
    while align > 1 and stride % align:
        align //= 2
    return max(align, 1)


def _acc_dtype(dtype):
    return tl.float64 if dtype == torch.float64 else tl.float32


def descriptor_problem(x2d):
    """Why the descriptor kernels cannot take this (rows, D) input, or None when they can.

    x must obey the tensor-descriptor rules, and so must grad_x, which backward allocates
    contiguous: its row stride D must be a multiple of 16 bytes too. An empty input launches no
    kernel, so no rule applies to it.
    """
    if x2d.numel() == 0:
        return None
    reason = common.descriptor_unsupported(x2d)
    if reason is None and x2d.shape[1] * x2d.element_size() % 16:
        reason = f"grad_x's row of {x2d.shape[1]} elements is {x2d.shape[1] * x2d.element_size()} bytes, not a multiple of 16"
    return reason


def _check_style(style, x2d):
    if style not in FORWARD_KERNELS:
        raise ValueError(f"unknown style {style!r}; expected one of {sorted(FORWARD_KERNELS)}")
    if style in UNAVAILABLE:
        raise ValueError(f"the {style!r} kernels cannot run here: {UNAVAILABLE[style]}")
    if style == "descriptor":
        reason = descriptor_problem(x2d)
        if reason is not None:
            raise ValueError(f"the 'descriptor' variant cannot take x of shape {tuple(x2d.shape)}: {reason}")


def forward(x2d, weight, y, style):
    """Launch the forward kernel of `style`: y[r] = sum_d x2d[r, d] * weight[d]."""
    rows, D = x2d.shape
    if style == "descriptor":
        common.set_descriptor_allocator()
    grid = lambda meta: (triton.cdiv(rows, meta["ROWS_TILE"]),)  # noqa: E731
    FORWARD_KERNELS[style][grid](
        x2d, weight, y, rows, D, x2d.stride(0), x2d.stride(1),
        X_ROW_ALIGN=_alignment(x2d.stride(0), x2d.element_size()), D_ALIGN=_alignment(D, x2d.element_size()),
        ACC_DTYPE=_acc_dtype(x2d.dtype),
    )


def backward_programs(rows, D):
    """How many programs the backward kernels launch per D tile (see BACKWARD_PROGRAMS_PER_SM)."""
    if common.INTERPRETED:
        wanted = INTERPRETER_BACKWARD_PROGRAMS
    else:
        sms = common.multiprocessor_count(common.DEVICE)
        wanted = max(sms, triton.cdiv(BACKWARD_PROGRAMS_PER_SM * sms, triton.cdiv(D, PLANNING_D_TILE)))
    smallest_rows_tile = min(c.kwargs["ROWS_TILE"] for c in _configs())
    return max(1, min(wanted, triton.cdiv(rows, smallest_rows_tile)))


def backward(x2d, weight, grad_y, style, need_grad_x, need_grad_w, poison=False):
    """Launch the backward kernel of `style`; return (grad_x or None, grad_w or None).

    grad_w is the sum of the partial buffer's rows, added by sum_partials_kernel in a fixed order,
    so the bits repeat from call to call; no atomics anywhere.
    """
    rows, D = x2d.shape
    programs = backward_programs(rows, D)
    acc_dtype = torch.float64 if x2d.dtype == torch.float64 else torch.float32
    grad_x = _new_tensor((rows, D), x2d, poison) if need_grad_x else None
    partial = _new_tensor((programs, D), x2d, poison, dtype=acc_dtype) if need_grad_w else None
    if style == "descriptor":
        common.set_descriptor_allocator()
    # A tensor argument the kernel never touches (its NEED_ flag is off) can be any tensor.
    grid = lambda meta: (triton.cdiv(D, meta["D_TILE"]), programs)  # noqa: E731
    BACKWARD_KERNELS[style][grid](
        x2d, weight, grad_y, grad_x if need_grad_x else x2d, partial if need_grad_w else x2d,
        rows, D, x2d.stride(0), x2d.stride(1), grad_y.stride(0),
        X_ROW_ALIGN=_alignment(x2d.stride(0), x2d.element_size()), D_ALIGN=_alignment(D, x2d.element_size()),
        NEED_GRAD_X=need_grad_x, NEED_GRAD_W=need_grad_w, ACC_DTYPE=_acc_dtype(x2d.dtype),
    )
    if not need_grad_w:
        return grad_x, None
    grad_w = _new_tensor((D,), x2d, poison)
    sum_partials(partial, grad_w)
    return grad_x, grad_w


def sum_partials(partial, grad_w):
    """Launch the second pass: grad_w[d] = the sum of partial[:, d], always in the same order."""
    programs, D = partial.shape
    # One [BLOCK_P, BLOCK_D] tile per step, as tall as the buffer allows: few steps, since this
    # pass is short and its time goes in latency, not bandwidth.
    block_p = min(triton.next_power_of_2(programs), SUM_PARTIALS_MAX_ROWS)
    block_d = max(16, SUM_PARTIALS_TILE // block_p)
    sum_partials_kernel[(triton.cdiv(D, block_d),)](partial, grad_w, programs, D, BLOCK_P=block_p, BLOCK_D=block_d)


def _new_tensor(shape, like, poison, dtype=None):
    """An output buffer: uninitialised normally, all NaN when check() wants to see every element written."""
    dtype = dtype or like.dtype
    if poison:
        return torch.full(shape, float("nan"), dtype=dtype, device=like.device)
    return torch.empty(shape, dtype=dtype, device=like.device)


def _validate(x, weight):
    """Raise TypeError/ValueError unless weighted_sum(x, weight) can run here."""
    for name, t in (("x", x), ("weight", weight)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    for name, t in (("x", x), ("weight", weight)):
        if t.dtype not in DTYPES.values():
            raise TypeError(f"{name} is {t.dtype}; expected a floating-point dtype: {', '.join(DTYPES)}")
    if x.dtype != weight.dtype:
        raise TypeError(f"x is {x.dtype} but weight is {weight.dtype}; give both the same dtype")
    if weight.dim() != 1:
        raise ValueError(f"weight must be 1-D with shape (D,), got shape {tuple(weight.shape)}")
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension, shape (..., D); got a 0-d tensor")
    if x.shape[-1] != weight.shape[0]:
        raise ValueError(
            f"x has shape {tuple(x.shape)} (D = {x.shape[-1]}) but weight has shape {tuple(weight.shape)}: "
            "x's last dimension must equal weight's length"
        )
    if x.device != weight.device:
        raise ValueError(f"x is on {x.device} but weight is on {weight.device}; put both on one device")
    if x.device.type != common.DEVICE.type:
        raise ValueError(f"x and weight are on {x.device}, but the kernels here run on {common.DEVICE.type}")


def _flatten(x):
    # Any number of leading dims becomes one. A view when the leading dims can merge (contiguous
    # input, or a 2-D view of any strides); otherwise einops copies x once, and the kernels
    # read that copy. Backward reuses the same 2-D tensor, so it is never copied twice.
    return rearrange(x, "... d -> (...) d")


# ---------------------------------------------------------------------------------------------
# Autograd Functions
# ---------------------------------------------------------------------------------------------
class WeightedSum(torch.autograd.Function):
    """y = (x * weight).sum(-1) through the Triton kernels of one memory-access style.

    style: "pointer", "block_ptr" or "descriptor".
    poison: fill every output with NaN before the kernels write it (check() uses this).
    """

    @staticmethod
    def forward(ctx, x, weight, style, poison):
        x2d = _flatten(x)
        weight = weight.contiguous()  # the kernels step through w with stride 1; D elements to copy at most
        _check_style(style, x2d)
        rows, D = x2d.shape
        y = _new_tensor((rows,), x2d, poison)
        if rows and D:
            forward(x2d, weight, y, style)
        else:
            y.zero_()  # a sum over D = 0 terms is 0; with no rows there is nothing to write
        ctx.save_for_backward(x2d, weight)
        ctx.style, ctx.poison, ctx.x_shape = style, poison, x.shape
        return y.reshape(x.shape[:-1])

    @staticmethod
    def backward(ctx, grad_y):
        x2d, weight = ctx.saved_tensors
        need_grad_x, need_grad_w = ctx.needs_input_grad[:2]
        rows, D = x2d.shape
        if rows and D:
            # reshape keeps a broadcast grad_y (stride 0, from y.sum().backward()) as a view.
            grad_x, grad_w = backward(x2d, weight, grad_y.reshape(-1), ctx.style, need_grad_x, need_grad_w, ctx.poison)
        else:
            grad_x = torch.zeros_like(x2d) if need_grad_x else None
            grad_w = torch.zeros_like(weight) if need_grad_w else None
        if grad_x is not None:
            grad_x = grad_x.reshape(ctx.x_shape)
        return grad_x, grad_w, None, None


class WeightedSumTorch(torch.autograd.Function):
    """The same operation with PyTorch operations only and a hand-derived backward.

    y[...] = sum_d x[..., d] * w[d], so
      dL/dx[..., d] = dL/dy[...] * w[d]              (an outer product)
      dL/dw[d]      = sum over ... of x[..., d] * dL/dy[...]   (a reduction over every leading dim)
    Matrix-vector products do the sums: they accumulate fp16/bf16 in float32, like the kernels.
    """

    @staticmethod
    def forward(ctx, x, weight, poison):
        y = _new_tensor(x.shape[:-1], x, poison)
        torch.matmul(x, weight, out=y)
        ctx.save_for_backward(x, weight)
        ctx.poison = poison
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, weight = ctx.saved_tensors
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = _new_tensor(x.shape, x, ctx.poison)
            torch.mul(grad_y.unsqueeze(-1), weight, out=grad_x)
        if ctx.needs_input_grad[1]:
            grad_w = _new_tensor(weight.shape, weight, ctx.poison)
            # Contract grad_y with x over all of grad_y's dims, the leading dims of x.
            torch.tensordot(grad_y, x, dims=grad_y.dim(), out=grad_w)
        return grad_x, grad_w, None


# ---------------------------------------------------------------------------------------------
# Entry function and variants
# ---------------------------------------------------------------------------------------------
# The entry function's kernels. Measured on an H200 (Triton 3.6, `make bench`, 2026-11-20), the
# pointer kernels matched the block-pointer ones and beat the descriptor ones on every benchmark
# shape, forward and backward (65536x1024 float32: 0.072 against 0.077 ms forward, 0.162 against
# 0.169 ms backward), and they take every layout and every Triton version.
ENTRY_STYLE = "pointer"


def weighted_sum(x, weight):
    """(x * weight).sum(-1) for x of shape (..., D) and weight of shape (D,), differentiable.

    Returns shape x.shape[:-1] in x's dtype. Runs the ENTRY_STYLE kernels, which take any layout.
    """
    _validate(x, weight)
    return WeightedSum.apply(x, weight, ENTRY_STYLE, False)


def _triton_variant(style):
    def run(x, weight, poison=False):
        _validate(x, weight)
        return WeightedSum.apply(x, weight, style, poison)

    run.__name__ = f"weighted_sum_{style}"
    run.__doc__ = f"weighted_sum through the {style!r} kernels; poison=True fills outputs with NaN first."
    return run


def weighted_sum_torch(x, weight, poison=False):
    """weighted_sum through WeightedSumTorch (PyTorch operations, hand-written backward)."""
    _validate(x, weight)
    return WeightedSumTorch.apply(x, weight, poison)


UNAVAILABLE = {}
_block_ptr_reason = common.block_pointers_unavailable()
if _block_ptr_reason is not None:
    UNAVAILABLE["block_ptr"] = _block_ptr_reason

VARIANTS = {style: _triton_variant(style) for style in FORWARD_KERNELS if style not in UNAVAILABLE}
VARIANTS["torch_function"] = weighted_sum_torch


def reference(x, weight):
    """The plain PyTorch expression."""
    return (x * weight).sum(-1)


# ---------------------------------------------------------------------------------------------
# Check
# ---------------------------------------------------------------------------------------------
LAYOUTS = ("contiguous", "transposed", "sliced")


def make_input(rows, d, dtype, layout="contiguous", batch=()):
    """Random x of shape (*batch, rows, d) in one of LAYOUTS.

    "transposed": the last two dims swapped, so x's column stride is `rows`, not 1.
    "sliced": columns 1..d of a wider tensor, so rows are d + 3 apart and x starts one element in
    (neither the row stride nor the base address is 16-byte aligned).
    """
    kwargs = {"dtype": dtype, "device": common.DEVICE}
    if layout == "contiguous":
        return torch.randn(*batch, rows, d, **kwargs)
    if layout == "transposed":
        return torch.randn(*batch, d, rows, **kwargs).transpose(-1, -2)
    if layout == "sliced":
        return torch.randn(*batch, rows, d + 3, **kwargs)[..., 1 : d + 1]
    raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")


def check(rows, d, dtype=torch.float32, layout="contiguous", batch=(), variants=None):
    """Forward and backward of every variant against float64, on x of shape (*batch, rows, d).

    Outputs start as NaN, so an element no program writes fails. A variant that refuses the input
    (the descriptor on an unaligned layout) must raise ValueError and is skipped. Returns the
    names of the variants checked; raises AssertionError naming the worst element otherwise.
    """
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    x = make_input(rows, d, dtype, layout, batch)
    weight = torch.randn(d, dtype=dtype, device=common.DEVICE)
    grad_y = torch.randn(x.shape[:-1], dtype=dtype, device=common.DEVICE)
    total_rows = grad_y.numel()
    lead = tuple(range(x.dim() - 1))

    x64, w64, g64 = x.double(), weight.double(), grad_y.double()
    expected_y = (x64 * w64).sum(-1)
    magnitude_y = (x64.abs() * w64.abs()).sum(-1)
    # grad_x is one product rounded once, so the right answer is the float64 product rounded into
    # the dtype. Comparing with that rounded value also covers float16 products below 2^-14, whose
    # (subnormal) rounding error no relative bound can describe.
    exact_gx = g64[..., None] * w64
    expected_gx, magnitude_gx = exact_gx.to(dtype).double(), exact_gx.abs()
    expected_gw = (x64 * g64[..., None]).sum(lead)
    magnitude_gw = (x64.abs() * g64.abs()[..., None]).sum(lead)

    case = f"x {tuple(x.shape)} {layout} {dtype}"
    checked = []
    for name in variants or VARIANTS:
        fn = VARIANTS[name]
        x_in = x.detach().requires_grad_()
        w_in = weight.detach().requires_grad_()
        if name == "descriptor" and descriptor_problem(_flatten(x)) is not None:
            try:
                fn(x_in, w_in, poison=True)
            except ValueError:
                continue
            raise AssertionError(f"descriptor accepted {case}, which breaks the descriptor rules")
        y = fn(x_in, w_in, poison=True)
        grad_x, grad_w = torch.autograd.grad(y, (x_in, w_in), grad_y)
        for what, got in (("y", y), ("grad_x", grad_x), ("grad_w", grad_w)):
            if got.dtype != dtype:
                raise AssertionError(f"{name} {what} on {case}: dtype {got.dtype}, expected {dtype}")
        common.assert_close(y, expected_y, magnitude_y, d, f"{name} forward on {case}")
        common.assert_close(grad_x, expected_gx, magnitude_gx, 1, f"{name} grad_x on {case}")
        common.assert_close(grad_w, expected_gw, magnitude_gw, total_rows, f"{name} grad_w on {case}")
        checked.append(name)
    return checked


# ---------------------------------------------------------------------------------------------
# Benchmark
# ---------------------------------------------------------------------------------------------
BENCH_SHAPES = ((65536, 1024), (16384, 4096), (65536, 1000), (1048576, 128))
SWEEP = [dict(rows=rows, dim=dim, dtype=dtype) for dtype in ("float32", "bfloat16") for rows, dim in BENCH_SHAPES]


def benchmark(rows, dim, dtype="float32"):
    """Forward and backward time of every variant and of PyTorch on x of shape (rows, dim).

    Forward moves x and w in and y out: (rows * dim + dim + rows) elements.
    Backward reads x, grad_y and w and writes grad_x and grad_w: (2 * rows * dim + rows + 2 * dim).
    The partial grad_w buffer is not counted: it is the kernels' own overhead.
    """
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    name = str(dtype).removeprefix("torch.")
    x = torch.randn(rows, dim, dtype=dtype, device=common.DEVICE)
    weight = torch.randn(dim, dtype=dtype, device=common.DEVICE)
    grad_y = torch.randn(rows, dtype=dtype, device=common.DEVICE)
    x_leaf, w_leaf = x.detach().requires_grad_(), weight.detach().requires_grad_()
    size = x.element_size()
    forward_bytes = (rows * dim + dim + rows) * size
    backward_bytes = (2 * rows * dim + rows + 2 * dim) * size
    ceiling = common.copy_ceiling_gbps()

    def time_backward(fn):
        graph = {}  # the forward runs inside bench's setup, on the stream the backward is timed on

        def forward():
            graph["y"] = fn(x_leaf, w_leaf)

        return common.bench(
            lambda: torch.autograd.grad(graph["y"], (x_leaf, w_leaf), grad_y, retain_graph=True), setup=forward
        )

    timings = [("torch fwd", common.bench(lambda: reference(x, weight)), forward_bytes)]
    timings.append(("torch bwd", time_backward(reference), backward_bytes))
    torch_ms = {"fwd": timings[0][1], "bwd": timings[1][1]}
    for variant, fn in VARIANTS.items():
        if variant == "descriptor" and descriptor_problem(x) is not None:
            continue
        timings.append((f"{variant} fwd", common.bench(lambda: fn(x, weight)), forward_bytes))
        timings.append((f"{variant} bwd", time_backward(fn), backward_bytes))

    results = []
    for variant, ms, nbytes in timings:
        throughput = common.gbps(nbytes, ms)
        results.append({
            "case": f"{rows}x{dim} {name}",
            "variant": variant,
            "ms": ms,
            "throughput": throughput,
            "unit": "GB/s",
            "% of ceiling": 100 * throughput / ceiling,
            "x torch": torch_ms[variant.split()[-1]] / ms,
        })
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Weighted sum (x * w).sum(-1) in Triton, forward and backward: check every variant "
        "against float64, then time them against PyTorch.",
    )
    default_rows, default_dim = (65536, 1024) if not common.INTERPRETED else (1000, 100)
    parser.add_argument("--rows", type=int, default=default_rows, help=f"rows of x (default {default_rows})")
    parser.add_argument("--dim", type=int, default=default_dim, help=f"D, the length of each row (default {default_dim})")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="dtype of x and w (default float32)")
    args = parser.parse_args(argv)
    if args.rows < 0 or args.dim < 1:
        parser.error("--rows must be >= 0 and --dim >= 1")

    print(common.describe_run())
    for variant, reason in UNAVAILABLE.items():
        print(f"variant {variant!r} left out: {reason}")
    checked = check(args.rows, args.dim, args.dtype)
    print(f"check passed at {args.rows}x{args.dim} {args.dtype}: forward, grad_x and grad_w of {', '.join(checked)} "
          "match a float64 reference")
    x = torch.empty(args.rows, args.dim, dtype=DTYPES[args.dtype], device=common.DEVICE)
    print(f"weighted_sum runs the {ENTRY_STYLE!r} kernels")
    if problem := descriptor_problem(x):
        print(f"(the descriptor variant cannot take it: {problem})")
    print()
    common.print_table(benchmark(args.rows, args.dim, args.dtype), common.RESULT_COLUMNS)
    print()
    print("GB/s counts the bytes each pass must move (forward: x, w, y; backward: x, grad_y, w in and grad_x, "
          "grad_w out) over the median time; '% of ceiling' compares it with a device-to-device copy measured "
          "in this run, the most a memory-bound kernel can reach. 'x torch' is PyTorch's time over the variant's: "
          "the plain expression for forward, autograd through it for backward, which materialises x * grad_y "
          "before summing it and so moves more bytes than the kernels.")
    if common.INTERPRETED:
        print("Under the interpreter these times measure Python running the kernels, not a GPU.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
