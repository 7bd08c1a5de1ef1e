"""Column sums, x.sum(dim=0), as a blocked reduction that stays fast on every matrix shape.

What this lesson teaches:
- Tiling a reduction: a program owns BLOCK_N columns and walks down the rows BLOCK_M at a time,
  adding whole [BLOCK_M, BLOCK_N] tiles into a register accumulator and reducing it to one row only
  once, at the end.
- Three ways to address those tiles: plain pointer arithmetic with masks ("pointer"), block
  pointers with boundary checks ("block_ptr", removed in Triton 3.9), and tensor descriptors
  ("descriptor", backed by Hopper's TMA copy engine, with strict alignment rules).
  02_matmul_tiled explains how block pointers and tensor descriptors differ.
- Filling the GPU when the columns alone cannot: a 1,048,576 x 64 matrix has one block of columns,
  so the rows are split into chunks too. Each chunk writes one row of a [splits, N] float32 buffer
  and a second, tiny kernel adds those rows in a fixed order: deterministic, no atomics.
- Autotuning block sizes, warps and pipeline stages on the GPU, and accumulating fp16/bf16 in fp32.

Run `python 03_blocked_sum/main.py --help` for the flags.
"""

import argparse
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (must come before any @triton.jit: it may switch on the interpreter)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}


# Autotuning. On the GPU the autotuner times each config below on the real input the first time it
# sees a new key and keeps the fastest. The key is what changes the best choice: N (how many column
# blocks there are and whether wide tiles pay), the rows each program walks, and the dtypes (which
# the autotuner adds to the key by itself). Most configs keep BLOCK_M * BLOCK_N / threads at 32 or
# 64 elements per thread: enough loads in flight per thread to hide memory latency, few enough
# registers that the fp32 accumulator does not spill. The one-row tiles suit programs that walk few
# rows: each column's sum stays in one thread from start to end, so the final tl.sum combines
# nothing across threads, and the tiny tile leaves room for many programs per SM (on an H200, 64 x
# 1048576 bf16 took 43 us with 1 x 512 tiles, 55 us with the best taller tile). Each tile is
# tried with STAGES 1 and 2: the loads of the next tile issued early or not (see the pointer
# kernel's loop). Under the interpreter several configs fail (autotuning needs a GPU driver),
# so it gets one fixed config.
def autotune_configs():
    if common.INTERPRETED:
        return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "STAGES": 1}, num_warps=4)]
    shapes = [  # (BLOCK_M, BLOCK_N, num_warps)
        (128, 32, 4), (256, 32, 4),
        (64, 64, 4), (128, 64, 4), (128, 64, 8), (256, 64, 8),
        (32, 128, 4), (64, 128, 4), (128, 128, 8),
        (32, 256, 4), (64, 256, 8),
        (16, 512, 4), (32, 512, 8), (16, 1024, 8),  # short, wide: 64 x 1048576 has 64 rows in all
        (1, 512, 4), (1, 1024, 8),  # one row per step: see above
    ]  # fmt: skip
    return [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "STAGES": stages}, num_warps=warps)
        for bm, bn, warps in shapes
        for stages in (1, 2)
    ]


CONFIGS = autotune_configs()
# A row split always starts on a multiple of the largest BLOCK_M, so no tile ever straddles two
# splits and the only row boundary a kernel checks is M itself (block pointers and descriptors
# check against their shape, which is (M, N)).
ROW_ALIGN = max(config.kwargs["BLOCK_M"] for config in CONFIGS)


def prune_configs(configs, named_args, max_side=None, **kwargs):
    """Drop tiles much larger than the problem: a 256-wide tile on 64 columns only loads padding.

    max_side: the largest tile side allowed (256 for descriptors: the most one TMA copy moves).
    """
    if max_side is not None:
        configs = [c for c in configs if max(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]) <= max_side]
    n_cap = triton.next_power_of_2(named_args["N"])
    m_cap = triton.next_power_of_2(named_args["rows_per_split"])
    kept = [c for c in configs if c.kwargs["BLOCK_N"] <= n_cap and c.kwargs["BLOCK_M"] <= m_cap]
    # A matrix smaller than every tile still needs one: the smallest.
    return kept or [min(configs, key=lambda c: (c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"], c.num_warps))]


def prune_descriptor_configs(configs, named_args, **kwargs):
    return prune_configs(configs, named_args, max_side=256)


autotuned = triton.autotune(
    configs=CONFIGS, key=["N", "rows_per_split"], prune_configs_by={"early_config_prune": prune_configs}
)
autotuned_descriptor = triton.autotune(
    configs=CONFIGS, key=["N", "rows_per_split"], prune_configs_by={"early_config_prune": prune_descriptor_configs}
)


@autotuned
@triton.jit
def column_sum_pointer_kernel(
    x_ptr,  # pointer to x[0, 0]; x is M x N with any strides
    out_ptr,  # pointer to the [splits, N] result, contiguous (row s holds the sums of split s)
    M,  # rows of x
    N,  # columns of x
    stride_m,  # elements between x[i, j] and x[i + 1, j]
    stride_n,  # elements between x[i, j] and x[i, j + 1]
    rows_per_split,  # rows each program walks: a multiple of BLOCK_M unless there is one split
    ACC_DTYPE: tl.constexpr,  # tl.float32 (tl.float64 for float64 input)
    BLOCK_M: tl.constexpr,  # rows per tile
    BLOCK_N: tl.constexpr,  # columns per tile, and per program
    STAGES: tl.constexpr,  # row tiles in flight per program (see the pointer kernel's loop)
):
    pid_n = tl.program_id(0)  # which block of columns
    pid_s = tl.program_id(1)  # which chunk of rows
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    # int64 before multiplying by a stride: row * stride_m passes 2^31 on matrices of more than
    # 2^31 elements, and the int32 product would wrap to a wrong (or negative) address.
    col_offsets = cols.to(tl.int64) * stride_n
    row_start = pid_s * rows_per_split
    row_stop = tl.minimum(row_start + rows_per_split, M)
    # Accumulate whole tiles with elementwise adds and reduce across rows once, after the loop:
    # a tl.sum per tile would move data between threads on every step. tl.sum and + keep fp16 and
    # bf16 in 16 bits, so the tile is converted to ACC_DTYPE first.
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC_DTYPE)
    # tl.range(..., num_stages=STAGES) software-pipelines the loop: with STAGES > 1 the loads of
    # the next tiles are issued (cp.async copies into shared memory) while this tile is added. A
    # plain range() loop is not pipelined, whatever num_stages the launch or the config says:
    # Triton pipelines on its own only loops that feed tl.dot.
    for row in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):
        rows = row + tl.arange(0, BLOCK_M)
        offsets = rows.to(tl.int64)[:, None] * stride_m + col_offsets[None, :]
        # The mask keeps the last tile inside the matrix; masked lanes read 0, which adds nothing.
        mask = (rows < row_stop)[:, None] & col_mask[None, :]
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC_DTYPE)
    sums = tl.sum(acc, axis=0)
    tl.store(out_ptr + pid_s * N + cols, sums.to(out_ptr.dtype.element_ty), mask=col_mask)


@autotuned
@triton.jit
def column_sum_block_ptr_kernel(
    x_ptr,  # pointer to x[0, 0]; x is M x N with any strides
    out_ptr,  # pointer to the [splits, N] result, contiguous
    M,  # rows of x
    N,  # columns of x
    stride_m,  # elements between x[i, j] and x[i + 1, j]
    stride_n,  # elements between x[i, j] and x[i, j + 1]
    rows_per_split,  # rows each program walks: a multiple of BLOCK_M unless there is one split
    ACC_DTYPE: tl.constexpr,  # tl.float32 (tl.float64 for float64 input)
    BLOCK_M: tl.constexpr,  # rows per tile
    BLOCK_N: tl.constexpr,  # columns per tile, and per program
    STAGES: tl.constexpr,  # row tiles in flight per program (see the pointer kernel's loop)
):
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    row_start = pid_s * rows_per_split
    row_stop = tl.minimum(row_start + rows_per_split, M)
    # A block pointer carries the matrix shape and strides, so Triton builds the addresses (in
    # int64) and the masks: boundary_check=(0, 1) zero-fills rows past M and columns past N.
    # order=(1, 0) says dim 1 is the contiguous one in the usual row-major layout.
    tile_ptr = tl.make_block_ptr(
        base=x_ptr,
        shape=(M, N),
        strides=(stride_m, stride_n),
        offsets=(row_start, pid_n * BLOCK_N),
        block_shape=(BLOCK_M, BLOCK_N),
        order=(1, 0),
    )
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC_DTYPE)
    for _ in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):
        acc += tl.load(tile_ptr, boundary_check=(0, 1), padding_option="zero").to(ACC_DTYPE)
        tile_ptr = tl.advance(tile_ptr, (BLOCK_M, 0))
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    sums = tl.sum(acc, axis=0)
    tl.store(out_ptr + pid_s * N + cols, sums.to(out_ptr.dtype.element_ty), mask=cols < N)


@autotuned_descriptor
@triton.jit
def column_sum_descriptor_kernel(
    x_ptr,  # pointer to x[0, 0]: 16-byte aligned; x row-major with a row stride of 16-byte multiples
    out_ptr,  # pointer to the [splits, N] result, contiguous
    M,  # rows of x
    N,  # columns of x
    stride_m,  # elements between x[i, j] and x[i + 1, j] (the column stride must be 1)
    rows_per_split,  # rows each program walks: a multiple of BLOCK_M unless there is one split
    ACC_DTYPE: tl.constexpr,  # tl.float32 (tl.float64 for float64 input)
    BLOCK_M: tl.constexpr,  # rows per tile
    BLOCK_N: tl.constexpr,  # columns per tile, and per program
    STAGES: tl.constexpr,  # row tiles in flight per program (see the pointer kernel's loop)
):
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    row_start = pid_s * rows_per_split
    row_stop = tl.minimum(row_start + rows_per_split, M)
    # On Hopper a descriptor load is one TMA copy of a whole tile into shared memory; STAGES > 1
    # keeps several such copies in flight while earlier tiles are added up.
    # Tiles reaching past the shape come back zero-filled. The hardware needs the alignment the
    # wrapper checks: it does not check it itself and would return wrong sums.
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride_m, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC_DTYPE)
    for row in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):
        acc += x_desc.load([row, pid_n * BLOCK_N]).to(ACC_DTYPE)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    sums = tl.sum(acc, axis=0)
    tl.store(out_ptr + pid_s * N + cols, sums.to(out_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def sum_partials_kernel(
    partial_ptr,  # pointer to the [splits, N] partial sums, contiguous, fp32 (fp64 for fp64 input)
    out_ptr,  # pointer to the [N] output, in x's dtype
    splits,  # rows of the partial buffer
    N,  # columns
    BLOCK_S: tl.constexpr,  # partial rows per tile
    BLOCK_N: tl.constexpr,  # columns per program
):
    # The second pass. It always adds the same partials in the same order (fixed tiles, no
    # atomics), so equal inputs give bit-equal outputs. splits * N stays far below 2^31 (there are
    # only splits when N is small), so int32 offsets are safe here.
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.zeros([BLOCK_S, BLOCK_N], dtype=partial_ptr.dtype.element_ty)
    for start in range(0, splits, BLOCK_S):
        rows = start + tl.arange(0, BLOCK_S)
        mask = (rows < splits)[:, None] & col_mask[None, :]
        acc += tl.load(partial_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=col_mask)


# ---------------------------------------------------------------------------------------------
# Launch wrappers
# ---------------------------------------------------------------------------------------------

# How many programs the first pass should have at least. A memory-bound kernel needs many loads in
# flight on every multiprocessor, and with several programs per SM an uneven last wave costs less.
# More is not better: on an H200, planning for 8 or 16 made every shape that splits slower, by 0.5
# to 33% (results/NOTES.md, item 29).
PROGRAMS_PER_SM = 4
# Under the interpreter programs run one at a time, so parallelism buys nothing; a few splits still
# exercise the two-pass path on small test matrices.
INTERPRETER_PROGRAMS = 4
# Splits are planned for 128-column tiles; the autotuner may choose other widths and times each
# choice with the split that goes with it, so its pick is the fastest of what it really runs.
PLANNING_BLOCK_N = 128


def plan_splits(m, n, device=None):
    """How many row chunks to split an m x n column sum into: (splits, rows_per_split, reason).

    One program per block of columns is enough when there are many columns (64 x 1048576 gives
    8192 programs). A tall, skinny matrix gives too few (1048576 x 64: one program, one SM busy of
    132), so the rows are cut into chunks until there are about PROGRAMS_PER_SM programs per SM.
    Matrices whose column blocks already give half that many are left whole.
    Chunks start on multiples of ROW_ALIGN rows, so no tile crosses two chunks.
    """
    device = torch.device(device) if device is not None else common.DEVICE
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return _plan_splits(m, n, device.type, device.index)


@functools.lru_cache(maxsize=1024)  # the wrappers ask on every call; the answer never changes
def _plan_splits(m, n, device_type, device_index):
    if device_type == "cuda":
        sms = common.multiprocessor_count(device_index)
        wanted = PROGRAMS_PER_SM * sms
        why = f"{PROGRAMS_PER_SM} programs per SM x {sms} SMs"
    else:
        wanted = INTERPRETER_PROGRAMS
        why = "a fixed number on the CPU, where programs run one at a time"
    column_blocks = triton.cdiv(max(n, 1), PLANNING_BLOCK_N)
    # Half the wanted count is enough not to split: the autotuner can still pick narrower tiles,
    # and on an H200 a second pass cost more than it gained there (2048 x 65536: 95% of the copy
    # ceiling in one pass, 91% in two).
    enough_columns = 2 * column_blocks >= wanted
    if m <= ROW_ALIGN or enough_columns:
        reason = (
            f"splits=1: {column_blocks} blocks of {PLANNING_BLOCK_N} columns"
            + (f" make at least half of the {wanted} programs wanted ({why})" if enough_columns else "")
            + (f"; {m} rows fit in one chunk of {ROW_ALIGN}" if m <= ROW_ALIGN else "")
        )
        return 1, max(m, 1), reason
    rows_per_split = triton.cdiv(triton.cdiv(m, triton.cdiv(wanted, column_blocks)), ROW_ALIGN) * ROW_ALIGN
    splits = triton.cdiv(m, rows_per_split)
    reason = (
        f"splits={splits}: {column_blocks} block(s) of {PLANNING_BLOCK_N} columns are fewer than the {wanted} "
        f"programs wanted ({why}), so each program sums {rows_per_split} of the {m} rows into a "
        f"[{splits}, {n}] buffer and a second pass adds its rows"
    )
    return splits, rows_per_split, reason


def _validate(x, out):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"blocked_sum expects a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in DTYPES.values():
        raise TypeError(f"blocked_sum supports float16, bfloat16, float32 and float64, got {x.dtype}")
    if x.dim() != 2:
        raise ValueError(f"blocked_sum expects a 2-D tensor, got shape {tuple(x.shape)}")
    if x.device.type != common.DEVICE.type:
        raise ValueError(f"x is on {x.device}, expected a {common.DEVICE.type} tensor")
    if out is not None:
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
        if out.shape != (x.shape[1],) or out.dtype != x.dtype or out.device != x.device or not out.is_contiguous():
            raise ValueError(
                f"out must be a contiguous {x.dtype} tensor of shape ({x.shape[1]},) on {x.device}, "
                f"got {out.dtype} {tuple(out.shape)} on {out.device}"
            )


def _column_sums(launch, x, out, poison):
    """Allocate, split and launch: `launch(target, rows_per_split, grid, acc_dtype)` runs the first pass.

    poison: fill the partial buffer with NaN first (check() does, together with a NaN-filled
    `out`), so that a partial sum no program wrote shows up in the result.
    """
    m, n = x.shape
    out = torch.empty(n, dtype=x.dtype, device=x.device) if out is None else out
    if n == 0:
        return out
    if m == 0:
        return out.zero_()  # the sum of no rows
    splits, rows_per_split, _ = plan_splits(m, n, x.device)
    # float64 input keeps float64 all the way; fp16/bf16/fp32 add in fp32.
    acc_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    if splits == 1:
        target = out  # one chunk: the first pass writes the answer in x's dtype directly
    elif poison:
        target = torch.full((splits, n), float("nan"), dtype=acc_dtype, device=x.device)
    else:
        target = torch.empty((splits, n), dtype=acc_dtype, device=x.device)

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK_N"]), splits)

    launch(target, rows_per_split, grid, tl.float64 if acc_dtype == torch.float64 else tl.float32)
    if splits > 1:
        # One tile of up to 4096 partials per program, tall enough to cover every split at once:
        # this pass is short, and its time goes in latency, not bandwidth.
        block_s = min(triton.next_power_of_2(splits), 256)
        block_n = max(16, min(256, 4096 // block_s))
        sum_partials_kernel[(triton.cdiv(n, block_n),)](target, out, splits, n, BLOCK_S=block_s, BLOCK_N=block_n)
    return out


def blocked_sum_pointer(x, out=None, poison=False):
    """x.sum(dim=0) through pointer arithmetic: takes any strides."""
    _validate(x, out)

    def launch(target, rows_per_split, grid, acc_dtype):
        column_sum_pointer_kernel[grid](
            x, target, x.shape[0], x.shape[1], x.stride(0), x.stride(1), rows_per_split, ACC_DTYPE=acc_dtype
        )

    return _column_sums(launch, x, out, poison)


def blocked_sum_block_ptr(x, out=None, poison=False):
    """x.sum(dim=0) through block pointers: takes any strides, needs a Triton that has them."""
    _validate(x, out)
    reason = common.block_pointers_unavailable()
    if reason is not None:
        raise ValueError(f"the block_ptr variant cannot run: {reason}")

    def launch(target, rows_per_split, grid, acc_dtype):
        column_sum_block_ptr_kernel[grid](
            x, target, x.shape[0], x.shape[1], x.stride(0), x.stride(1), rows_per_split, ACC_DTYPE=acc_dtype
        )

    return _column_sums(launch, x, out, poison)


def descriptor_refusal(x):
    """Why the descriptor variant cannot take x (None when it can). Empty input always works."""
    if x.numel() == 0:
        return None
    return common.descriptor_unsupported(x)


def blocked_sum_descriptor(x, out=None, poison=False):
    """x.sum(dim=0) through a tensor descriptor: needs a row-major, 16-byte aligned x."""
    _validate(x, out)
    reason = descriptor_refusal(x)
    if reason is not None:
        raise ValueError(
            f"the descriptor variant cannot take x of shape {tuple(x.shape)}, strides {x.stride()}, {x.dtype}: {reason}"
        )

    def launch(target, rows_per_split, grid, acc_dtype):
        common.set_descriptor_allocator()  # in-kernel descriptors need scratch memory on the GPU
        column_sum_descriptor_kernel[grid](
            x, target, x.shape[0], x.shape[1], x.stride(0), rows_per_split, ACC_DTYPE=acc_dtype
        )

    return _column_sums(launch, x, out, poison)


VARIANTS = {"pointer": blocked_sum_pointer}
UNAVAILABLE = {}
if common.block_pointers_unavailable() is None:
    VARIANTS["block_ptr"] = blocked_sum_block_ptr
else:
    UNAVAILABLE["block_ptr"] = common.block_pointers_unavailable()
VARIANTS["descriptor"] = blocked_sum_descriptor

# The KERNELS behind each variant, for printing the autotuner's choice.
KERNELS = {
    "pointer": column_sum_pointer_kernel,
    "block_ptr": column_sum_block_ptr_kernel,
    "descriptor": column_sum_descriptor_kernel,
}


def pick_variant(x):
    """The variant blocked_sum uses for x, and why.

    Plain pointers, always. Timed on an H200 without launch overhead (CUDA graphs), the three
    variants ran within a few percent of each other: every byte is read once, so the TMA unit
    behind a descriptor has nothing to reuse, while an in-kernel descriptor costs a scratch
    allocation and more host time per launch. Pointers also take any strides and run on every
    Triton (block pointers are gone from 3.9).
    """
    refusal = descriptor_refusal(x)
    if refusal is None:
        return "pointer", "it ran as fast as a descriptor on an H200, with less launch overhead"
    return "pointer", f"takes any strides; a descriptor could not ({refusal})"


def blocked_sum(x, out=None, poison=False):
    """x.sum(dim=0) for a 2-D floating-point x, in x's dtype (fp16/bf16/fp32 add in fp32).

    out: optional contiguous [N] tensor of x's dtype to write into.
    poison: fill the internal partial-sum buffer with NaN first (for checks; costs a fill).
    """
    _validate(x, out)
    name, _ = pick_variant(x)
    return VARIANTS[name](x, out=out, poison=poison)


def reference(x, out=None):
    """What blocked_sum computes, in PyTorch."""
    result = x.sum(dim=0)
    return result if out is None else out.copy_(result)


# ---------------------------------------------------------------------------------------------
# Correctness
# ---------------------------------------------------------------------------------------------

LAYOUTS = ("contiguous", "transposed", "sliced", "every_other_row")


def make_input(m, n, dtype, layout="contiguous"):
    """A fresh random m x n matrix laid out as named.

    contiguous: row-major. transposed: the .t() view of an n x m matrix (column stride 1, row stride
    not). sliced: columns 1..n of an m x (n + 3) matrix (base and row stride unaligned).
    every_other_row: rows 0, 2, 4, ... of a 2m x n matrix (row stride 2n).
    """
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    device = common.DEVICE
    if layout == "contiguous":
        return torch.randn(m, n, dtype=dtype, device=device)
    if layout == "transposed":
        return torch.randn(n, m, dtype=dtype, device=device).t()
    if layout == "sliced":
        return torch.randn(m, n + 3, dtype=dtype, device=device)[:, 1 : n + 1]
    if layout == "every_other_row":
        return torch.randn(2 * m, n, dtype=dtype, device=device)[::2]
    raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")


def check(m, n, dtype=torch.float32, layout="contiguous", variants=None):
    """Check blocked_sum and every variant (or the names in `variants`) against a float64 reference.

    Returns the names checked. A descriptor given input it cannot take is skipped here (its
    ValueError is a test of its own).
    """
    x = make_input(m, n, dtype, layout)
    expected = x.double().sum(dim=0)
    magnitude = x.double().abs().sum(dim=0)
    names = ["blocked_sum", *VARIANTS] if variants is None else list(variants)
    checked = []
    for name in names:
        fn = blocked_sum if name == "blocked_sum" else VARIANTS[name]
        if name == "descriptor" and descriptor_refusal(x) is not None:
            continue
        out = torch.full((n,), float("nan"), dtype=x.dtype, device=x.device)
        result = fn(x, out=out, poison=True)
        common.assert_close(result, expected, magnitude, reduction_length=m, what=f"{name} {m}x{n} {x.dtype} {layout}")
        checked.append(name)
    return checked


# ---------------------------------------------------------------------------------------------
# Performance
# ---------------------------------------------------------------------------------------------

SWEEP = [
    {"rows": rows, "cols": cols, "dtype": dtype}
    for dtype in ("float32", "bfloat16")
    for rows, cols in ((16384, 8192), (2048, 65536), (1048576, 64), (64, 1048576))
]


def benchmark(rows, cols, dtype="float32"):
    """Time every variant and torch.sum(dim=0) on one contiguous matrix; one result row each."""
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    x = torch.randn(rows, cols, dtype=dtype, device=common.DEVICE)
    case = f"{rows}x{cols} {str(dtype).removeprefix('torch.')}"
    # Bytes that must move: read x once, write one row of sums. The partial buffer of the split
    # path is extra traffic the kernel pays for (at most a few hundred KB, kept in L2).
    nbytes = (rows * cols + cols) * x.element_size()
    ceiling = common.copy_ceiling_gbps()
    torch_ms = common.bench(lambda: x.sum(dim=0))
    timings = [("torch", torch_ms)]
    for name, fn in VARIANTS.items():
        if name == "descriptor" and descriptor_refusal(x) is not None:
            continue
        timings.append((name, common.bench(lambda fn=fn: fn(x))))
    rows_out = []
    for name, ms in timings:
        throughput = common.gbps(nbytes, ms)
        rows_out.append(
            {
                "case": case,
                "variant": name,
                "ms": ms,
                "throughput": throughput,
                "unit": "GB/s",
                "% of ceiling": 100 * throughput / ceiling,
                "x torch": torch_ms / ms,
            }
        )
    return rows_out


def main(argv=None):
    on_cpu = common.INTERPRETED
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000 if on_cpu else 16384, help="M, the rows summed away")
    parser.add_argument("--cols", type=int, default=96 if on_cpu else 8192, help="N, the columns kept")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="element type of x")
    args = parser.parse_args(argv)
    if args.rows < 0 or args.cols < 0:
        parser.error(f"--rows and --cols must be >= 0, got {args.rows} and {args.cols}")

    print(common.describe_run())
    for name, why in UNAVAILABLE.items():
        print(f"variant {name!r} left out: {why}")
    splits, _, reason = plan_splits(args.rows, args.cols)
    print(f"row split for {args.rows}x{args.cols}: {reason}")
    # pick_variant looks only at the layout, so an uninitialised matrix of that layout will do.
    name, why = pick_variant(torch.empty(args.rows, args.cols, dtype=DTYPES[args.dtype], device=common.DEVICE))
    print(f"blocked_sum picks {name!r}: {why}")

    checked = check(args.rows, args.cols, args.dtype)
    print(f"check passed at {args.rows}x{args.cols} {args.dtype}: {', '.join(checked)}")
    rows = benchmark(args.rows, args.cols, args.dtype)
    print()
    common.print_table(rows, common.RESULT_COLUMNS)
    print()
    if not on_cpu:
        for name in VARIANTS:
            config = KERNELS[name].best_config
            print(f"autotuned {name}: {config}")
        print()
    print(
        "GB/s counts the bytes that must move (x read once, the sums written once); '% of ceiling' "
        "compares that with a device-to-device copy measured in this run, the most a memory-bound "
        "kernel can reach. 'x torch' above 1 means faster than torch.sum(dim=0)."
    )
    if splits > 1:
        print(
            f"This shape runs in two passes: {splits} row chunks write partial sums, then a second "
            "kernel adds them in a fixed order, so the result does not change from run to run."
        )
    if on_cpu:
        print("Under the interpreter the times measure NumPy emulation; run on a GPU for real numbers.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
