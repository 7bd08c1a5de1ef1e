"""Column sums, out = x.sum(dim=0), as a blocked reduction that stays fast on every matrix shape.

The maths: for an M x N matrix x, out[j] = sum_i x[i, j]. A program owns BLOCK_N columns and walks
down the rows BLOCK_M at a time, adding whole tiles elementwise and reducing across rows once:

    acc = zeros([BLOCK_M, BLOCK_N])
    for row in range(0, M, BLOCK_M):
        acc += x[row : row + BLOCK_M, cols]     # elementwise: no data moves between threads
    out[cols] = acc.sum(axis=0)                 # one reduction, at the end

fp16 and bf16 tiles are widened to fp32 before they are added (a 16-bit running sum drops small
terms once it grows); float64 stays float64. When the blocks of 128 columns alone give fewer than
half the programs wanted (4 per SM: 528 on 132 SMs; 1,048,576 x 64 has 1 block, 16384 x 8192 has 64),
the rows are split into chunks: chunk s writes row s of a [splits, N] buffer, and a second kernel
adds that buffer's rows in a fixed order (same input, same bits: no atomics). The gradient:
d out[j] / d x[i, j] = 1, so grad_x[i, j] = grad_out[j], grad_out broadcast over the rows.

Then the same tiles through block pointers and tensor descriptors, and blocked_sum as a PyTorch op.
"""

import argparse
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (before any kernel is defined: it may switch on the interpreter)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64}

# ---- 1. The pointer kernel: one program per (block of columns, chunk of rows) ---------------

@triton.jit(do_not_specialize=["M"])  # M only bounds loops and masks: no compile per row count (rows_per_split is)
def column_sum_kernel(
    x_ptr,  # pointer to x[0, 0]; x is M x N with any strides
    out_ptr,  # pointer to the [splits, N] result, contiguous (row s: the sums of chunk s)
    M,  # rows of x
    N,  # columns of x
    stride_m,  # elements between x[i, j] and x[i + 1, j]
    stride_n,  # elements between x[i, j] and x[i, j + 1]
    rows_per_split,  # rows each program walks (all M unless the rows are split: section 2)
    ACC_DTYPE: tl.constexpr,  # tl.float32 (tl.float64 for float64 input)
    BLOCK_M: tl.constexpr,  # rows per tile
    BLOCK_N: tl.constexpr,  # columns per tile, and per program
    STAGES: tl.constexpr,  # row tiles whose loads are in flight at once
):
    chunk = tl.program_id(1)  # which chunk of rows (section 2): this program sums rows_per_split of them
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    # int64 before multiplying by a stride: past 2^31 elements an int32 product wraps around.
    col_offsets = cols.to(tl.int64) * stride_n
    row_start = chunk * rows_per_split
    row_stop = tl.minimum(row_start + rows_per_split, M)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC_DTYPE)
    # tl.range(num_stages=STAGES) pipelines the loop: with STAGES > 1 the next tile's loads are
    # issued while this one is added. Triton pipelines a plain range() only when it feeds tl.dot.
    for row in tl.range(row_start, row_stop, BLOCK_M, num_stages=STAGES):
        rows = row + tl.arange(0, BLOCK_M)
        offsets = rows.to(tl.int64)[:, None] * stride_m + col_offsets[None, :]
        mask = (rows < row_stop)[:, None] & col_mask[None, :]  # masked lanes read 0, which adds nothing
        # tl.sum and + keep fp16/bf16 in 16 bits, so widen the tile first.
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC_DTYPE)
    tl.store(out_ptr + chunk * N + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=col_mask)

# Autotuning: on the GPU the first call in a bucket (N, rows per program, both rounded up to powers of two, and the
# dtype: common.launch_tuned) times every config. Most tiles hold 32 to 64 elements per thread: enough loads in flight
# to hide memory latency, few enough registers not to spill. In one-row tiles each column's sum stays in one thread
# (results/NOTES.md item 24). On each of 12 shapes these seven hold one config within 1% of the best of the 32 there
# were (item 41): fewer to compile and time in a new bucket. The interpreter cannot autotune: one config there.
TILES = [  # (BLOCK_M, BLOCK_N, num_warps, STAGES); the last: one row, wide, for matrices of few rows
    (256, 32, 4, 1), (128, 32, 4, 2), (64, 64, 4, 2), (256, 64, 8, 2), (32, 128, 4, 2), (128, 128, 8, 1), (1, 1024, 8, 1),
]  # fmt: skip
CONFIGS = [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "STAGES": s}, num_warps=w) for m, n, w, s in TILES]
if common.INTERPRETED:
    CONFIGS = [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "STAGES": 1}, num_warps=4)]

def prune_configs(configs, named_args, max_side=None, **kwargs):
    """Drop tiles larger than the problem (they load padding) or over max_side; keep at least the smallest."""
    if max_side is not None:
        configs = [c for c in configs if max(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]) <= max_side]
    n_cap, m_cap = common.next_power_of_2(named_args["N"]), common.next_power_of_2(named_args["rows_per_split"])
    kept = [c for c in configs if c.kwargs["BLOCK_N"] <= n_cap and c.kwargs["BLOCK_M"] <= m_cap]
    return kept or [min(configs, key=lambda c: (c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"], c.num_warps))]

def autotuned(max_side=None):
    """The autotuner as a decorator, keyed on N and the rows per program (Triton adds the dtypes)."""
    prune = {"early_config_prune": functools.partial(prune_configs, max_side=max_side)}
    return triton.autotune(CONFIGS, key=["N", "rows_per_split"], prune_configs_by=prune, **common.TUNING)

column_sum_kernel = autotuned()(column_sum_kernel)  # as if decorated; done here so the kernel reads first

def validate(x, name="blocked_sum", differentiable=True):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} expects a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in DTYPES.values():
        raise TypeError(f"{name} supports float16, bfloat16, float32 and float64, got {x.dtype}")
    if x.dim() != 2:
        raise ValueError(f"{name} expects a 2-D tensor, got shape {tuple(x.shape)}")
    if x.device.type != common.DEVICE.type:
        raise ValueError(f"{name}: x is on {x.device}, expected a {common.DEVICE.type} tensor")
    if not differentiable and x.requires_grad and torch.is_grad_enabled():
        raise ValueError(f"{name} is not differentiable and x requires grad: call blocked_sum for gradients")

def column_sums(kernel, x, strides, out=None, poison=False):
    """x.sum(0) with `kernel` as the first pass, given the strides of x it takes."""
    m, n = x.shape
    # check_out raises on a bad out; True: out overlaps x, which kernels still read. They write a contiguous row.
    if out is not None and (common.check_out(out, (n,), x.dtype, x.device, (x,)) or not out.is_contiguous()):
        return out.copy_(column_sums(kernel, x, strides, None, poison))
    out = torch.empty(n, dtype=x.dtype, device=x.device) if out is None else out
    if m == 0 or n == 0:
        return out.zero_()  # the sum of no rows is 0
    splits, rows_per_split, _ = plan_splits(m, n, x.device)  # 1 unless columns give too few programs: section 2
    keep_float64 = x.dtype == torch.float64  # float64 adds in float64; fp16, bf16 and fp32 add in fp32
    # One chunk writes the answer in x's dtype directly; several write partial sums.
    partials = out if splits == 1 else x.new_empty(splits, n, dtype=x.dtype if keep_float64 else torch.float32)
    if poison:  # NaN first, so that an element no program writes shows in the result
        partials.fill_(float("nan"))
    common.launch_tuned(kernel, lambda meta: (common.cdiv(n, meta["BLOCK_N"]), splits), (  # tuned once per bucket:
        common.next_power_of_2(n), common.next_power_of_2(rows_per_split), x.dtype), x, partials, m, n, *strides,
        rows_per_split, ACC_DTYPE=tl.float64 if keep_float64 else tl.float32)
    if splits > 1:
        # The second pass (section 2): tiles of up to 4096 partials, BLOCK_S <= 256 chunks tall (the loop
        # takes any more) and the rest in columns: few, large loads, as this short pass waits on latency.
        block_s = min(common.next_power_of_2(splits), 256)
        block_n = max(16, min(256, 4096 // block_s))
        common.launch(sum_partials_kernel, (common.cdiv(n, block_n),), partials, out, splits, n, BLOCK_S=block_s, BLOCK_N=block_n)
    return out

def blocked_sum(x, out=None):
    """The lesson's entry point: x.sum(dim=0) for a 2-D floating-point x, in x's dtype (fp16/bf16 add in
    fp32); differentiable. out: an [N] tensor of x's dtype to write into, without gradients (as PyTorch's
    out=). Runs the pointer kernels: any strides, every Triton, and the one-row tiles short, wide x need."""
    validate(x)
    if out is None and (torch.compiler.is_compiling() or (x.requires_grad and torch.is_grad_enabled())):
        # Compiling: the op (section 4). Eager with a gradient: the op's backward without the dispatcher's cost.
        return blocked_sum_op(x) if torch.compiler.is_compiling() else blocked_sum_autograd(x)
    return column_sums(column_sum_kernel, x, x.stride(), out)  # eager, no grad: the cheapest path

def blocked_sum_pointer(x, out=None, poison=False):
    """x.sum(dim=0) through pointer arithmetic, for any strides. poison: NaN-fill buffers first."""
    validate(x, "blocked_sum_pointer", differentiable=False)
    return column_sums(column_sum_kernel, x, x.stride(), out, poison)

def reference(x):
    return x.sum(dim=0)  # what blocked_sum computes, in PyTorch

LAYOUTS = {  # name -> (m, n, dtype) -> a random m x n matrix laid out that way
    "contiguous": lambda m, n, dtype: torch.randn(m, n, dtype=dtype, device=common.DEVICE),
    "transposed": lambda m, n, dtype: torch.randn(n, m, dtype=dtype, device=common.DEVICE).t(),  # column stride m
    "sliced": lambda m, n, dtype: torch.randn(m, n + 3, dtype=dtype, device=common.DEVICE)[:, 1 : n + 1],  # unaligned
    "every_other_row": lambda m, n, dtype: torch.randn(2 * m, n, dtype=dtype, device=common.DEVICE)[::2],
}

def check(m, n, dtype=torch.float32, layout="contiguous", variants=None):
    """Check blocked_sum and the variants (all, or those named) against float64, writing into NaN.
    Returns the names checked; the descriptor is left out where x breaks its rules (section 3)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {list(LAYOUTS)}")
    x = LAYOUTS[layout](m, n, DTYPES.get(dtype, dtype))
    expected, magnitude = reference(x.double()), reference(x.double().abs())
    checked = []
    for name in variants or ["blocked_sum", *VARIANTS]:
        out = torch.full((n,), float("nan"), dtype=x.dtype, device=x.device)
        if name == "descriptor" and descriptor_problem(x) is not None:
            continue  # its ValueError is tested on its own
        result = blocked_sum(x, out=out) if name == "blocked_sum" else VARIANTS[name](x, out=out, poison=True)
        common.assert_close(result, expected, magnitude, reduction_length=m, what=f"{name} {m}x{n} {x.dtype} {layout}")
        checked.append(name)
    return checked

# ---- 2. Splitting rows: enough programs when the column blocks are too few -------------------
# A memory-bound kernel needs many loads in flight on every SM, and with several programs per SM an
# uneven last wave costs less; 4, as more give shorter chunks and a bigger second pass (results/NOTES.md
# item 29). The interpreter runs programs one at a time: its few splits only exercise the two passes.
# Splits are planned for 128-column tiles; chunks start on multiples of the tallest tile, so none
# straddles two and the only row boundary left is M (block pointers and descriptors check (M, N)).
PROGRAMS_PER_SM, INTERPRETER_PROGRAMS, PLANNING_BLOCK_N = 4, 4, 128
ROW_ALIGN = max(config.kwargs["BLOCK_M"] for config in CONFIGS)

@functools.lru_cache(maxsize=1024)  # asked on every call; the answer never changes
def plan_splits(m, n, device=common.DEVICE):
    """(splits, rows_per_split, reason): chunks until there are about PROGRAMS_PER_SM programs per SM.
    Half as many column blocks is enough: narrower tiles make up the rest, cheaper than a second pass."""
    sms = common.multiprocessor_count(device) if device.type == "cuda" else None
    wanted = PROGRAMS_PER_SM * sms if sms else INTERPRETER_PROGRAMS
    wanted_from = f"{PROGRAMS_PER_SM} per SM x {sms} SMs" if sms else "fixed on the CPU"
    column_blocks = common.cdiv(max(n, 1), PLANNING_BLOCK_N)
    if m <= ROW_ALIGN or 2 * column_blocks >= wanted:
        splits, rows_per_split = 1, max(m, 1)
    else:
        rows_per_split = common.cdiv(common.cdiv(m, common.cdiv(wanted, column_blocks)), ROW_ALIGN) * ROW_ALIGN
        splits = common.cdiv(m, rows_per_split)
    return splits, rows_per_split, (
        f"splits={splits}: {column_blocks} block(s) of {PLANNING_BLOCK_N} columns for the {wanted} programs wanted "
        f"({wanted_from}); each program sums {rows_per_split} of the {m} rows (chunks are multiples of {ROW_ALIGN} rows)"
        + (f" into a [{splits}, {n}] buffer, and a second pass adds its rows" if splits > 1 else ""))

@triton.jit
def sum_partials_kernel(
    partial_ptr,  # pointer to the [splits, N] partial sums, contiguous, fp32 (fp64 for fp64 input)
    out_ptr,  # pointer to the [N] output, contiguous, in x's dtype
    splits,  # rows of the partial buffer
    N,  # columns
    BLOCK_S: tl.constexpr,  # partial rows per tile
    BLOCK_N: tl.constexpr,  # columns per program
):
    # Fixed tiles in a fixed order: equal inputs give equal bits. Splits exist only when N is
    # small, so splits * N stays far below 2^31 and int32 offsets are safe.
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_S, BLOCK_N], dtype=partial_ptr.dtype.element_ty)
    for start in range(0, splits, BLOCK_S):
        rows = start + tl.arange(0, BLOCK_S)
        mask = (rows < splits)[:, None] & (cols < N)[None, :]
        acc += tl.load(partial_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=cols < N)

# ---- 3. Block pointers and tensor descriptors: the same tiles, addressed for us -------------
# A block pointer carries x's shape and strides: Triton builds the (int64) addresses, and
# boundary_check zero-fills rows past M and columns past N. Triton 3.9 removed them.

@autotuned()
@triton.jit(do_not_specialize=["M"])  # as column_sum_kernel
def column_sum_block_ptr_kernel(
    x_ptr, out_ptr,  # x[0, 0] (any strides) and the [splits, N] result, as in column_sum_kernel
    M, N, stride_m, stride_n, rows_per_split,  # sizes, strides in elements, rows per program: as there
    ACC_DTYPE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,  # as there
):
    chunk = tl.program_id(1)  # which chunk of rows
    row_start = chunk * rows_per_split
    tile_ptr = tl.make_block_ptr(  # order=(1, 0): dim 1 is the contiguous one in a row-major x
        x_ptr, shape=(M, N), strides=(stride_m, stride_n), offsets=(row_start, tl.program_id(0) * BLOCK_N),
        block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC_DTYPE)
    for _ in tl.range(row_start, tl.minimum(row_start + rows_per_split, M), BLOCK_M, num_stages=STAGES):
        acc += tl.load(tile_ptr, boundary_check=(0, 1), padding_option="zero").to(ACC_DTYPE)
        tile_ptr = tl.advance(tile_ptr, (BLOCK_M, 0))
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(out_ptr + chunk * N + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=cols < N)

def blocked_sum_block_ptr(x, out=None, poison=False):
    """x.sum(dim=0) through block pointers: any strides, on a Triton that still has them."""
    validate(x, "blocked_sum_block_ptr", differentiable=False)
    if (reason := common.block_pointers_unavailable()) is not None:
        raise ValueError(f"the block_ptr variant cannot run: {reason}")
    return column_sums(column_sum_block_ptr_kernel, x, x.stride(), out, poison)

# A descriptor load is one TMA copy of a whole tile into shared memory on Hopper (with STAGES = 2 the
# next copy is in flight while one is added). Its alignment rules, if broken, give wrong sums: we refuse.

@autotuned(max_side=256)  # one TMA copy moves at most 256 elements along each side
@triton.jit(do_not_specialize=["M"])  # as column_sum_kernel
def column_sum_descriptor_kernel(
    x_ptr, out_ptr,  # x[0, 0] (16-byte aligned, rows 16-byte multiples apart) and the [splits, N] result
    M, N, stride_m, rows_per_split,  # as in column_sum_kernel; the column stride must be 1
    ACC_DTYPE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,  # as there
):
    chunk = tl.program_id(1)  # which chunk of rows
    row_start = chunk * rows_per_split
    # Tiles reaching past the shape (M, N) come back zero-filled.
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride_m, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC_DTYPE)
    for row in tl.range(row_start, tl.minimum(row_start + rows_per_split, M), BLOCK_M, num_stages=STAGES):
        acc += x_desc.load([row, tl.program_id(0) * BLOCK_N]).to(ACC_DTYPE)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(out_ptr + chunk * N + cols, tl.sum(acc, axis=0).to(out_ptr.dtype.element_ty), mask=cols < N)

def descriptor_problem(x):
    """Why the descriptor variant cannot take x, or None when it can (an empty x launches nothing)."""
    return None if x.numel() == 0 else common.descriptor_problem(x)

def blocked_sum_descriptor(x, out=None, poison=False):
    """x.sum(dim=0) through a tensor descriptor: needs a row-major, 16-byte aligned x."""
    validate(x, "blocked_sum_descriptor", differentiable=False)
    if (problem := descriptor_problem(x)) is not None:
        raise ValueError(f"the descriptor variant cannot take x {tuple(x.shape)} {x.dtype} strides {x.stride()}: {problem}")
    common.set_descriptor_allocator()  # in-kernel descriptors need scratch memory on the GPU
    return column_sums(column_sum_descriptor_kernel, x, x.stride()[:1], out, poison)

UNAVAILABLE = {"block_ptr": common.block_pointers_unavailable()} if common.block_pointers_unavailable() else {}
VARIANTS = {name: fn for name, fn in [("pointer", blocked_sum_pointer), ("block_ptr", blocked_sum_block_ptr),
                                      ("descriptor", blocked_sum_descriptor)] if name not in UNAVAILABLE}

# ---- 4. blocked_sum as a PyTorch op: autograd and torch.compile -----------------------------
# grad_x = grad_out broadcast over the rows: an expand(), which autograd can differentiate again.
# A custom_op with an explicit fake is opaque to torch.compile, so host-side planning (plan_splits's
# cache, the SM count, the autotuner) stays out of dynamo's way; triton_op/wrap_triton would trace
# the kernel on fake tensors, which fails under the interpreter. An op call costs host time: compiling only.
def blocked_sum_forward(x: torch.Tensor) -> torch.Tensor:
    return column_sums(column_sum_kernel, x, x.stride())

def save_x_shape(ctx, inputs, output):
    ctx.x_shape = inputs[0].shape

def blocked_sum_backward(ctx, grad_out):
    return grad_out.expand(ctx.x_shape)  # grad_x[i, j] = grad_out[j]

blocked_sum_op = torch.library.custom_op("triton_lessons::blocked_sum", blocked_sum_forward, mutates_args=())
blocked_sum_op.register_fake(lambda x: x.new_empty(x.shape[1]))  # what torch.compile sees: shape and dtype
blocked_sum_op.register_autograd(blocked_sum_backward, setup_context=save_x_shape)
blocked_sum_autograd = common.eager_autograd("blocked_sum", blocked_sum_forward, save_x_shape, blocked_sum_backward)  # no dispatch

# ---- Benchmark and command line -------------------------------------------------------------
SWEEP = [{"rows": rows, "cols": cols, "dtype": dtype} for dtype in ("float32", "bfloat16")
         for rows, cols in ((16384, 8192), (2048, 65536), (1048576, 64), (64, 1048576))]

def benchmark(rows, cols, dtype="float32"):
    """Eager time (CUDA-graph replay beside it) of x.sum(0), blocked_sum and each variant; a row each."""
    x = torch.randn(rows, cols, dtype=DTYPES.get(dtype, dtype), device=common.DEVICE)
    case = f"{rows}x{cols} {str(x.dtype).removeprefix('torch.')}"
    nbytes = (rows * cols + cols) * x.element_size()  # x read once, sums written once; partials are our cost
    calls = {"torch": lambda: x.sum(dim=0), "blocked_sum": lambda: blocked_sum(x)}
    calls |= {name: functools.partial(fn, x) for name, fn in VARIANTS.items()
              if name != "descriptor" or descriptor_problem(x) is None}
    eager_ms = {name: common.bench(call) for name, call in calls.items()}  # eager first: what users pay
    return [common.result_row(case, name, ms, common.bench_graph(calls[name]), common.gbps(nbytes, ms), "GB/s",
                              eager_ms["torch"], common.copy_ceiling_gbps()) for name, ms in eager_ms.items()]

def main(argv=None):
    on_cpu = common.INTERPRETED
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000 if on_cpu else 16384, help="M, the rows summed away")
    parser.add_argument("--cols", type=int, default=96 if on_cpu else 8192, help="N, the columns kept")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="element type of x")
    args = parser.parse_args(argv)
    if args.rows < 0 or args.cols < 0:
        parser.error(f"--rows and --cols must be >= 0, got {args.rows} and {args.cols}")
    print(common.describe_run())
    for name, reason in UNAVAILABLE.items():
        print(f"variant {name!r} left out: {reason}")
    if problem := descriptor_problem(torch.empty(args.rows, args.cols, dtype=DTYPES[args.dtype], device=common.DEVICE)):
        print(f"variant 'descriptor' left out: it cannot take a {args.rows}x{args.cols} {args.dtype} x: {problem}")
    print(f"row split for {args.rows}x{args.cols}: {plan_splits(args.rows, args.cols)[2]}")
    print("blocked_sum runs the pointer kernels: any strides, every Triton, and one-row tiles (a TMA box is <= 256 wide)")
    print(f"check passed at {args.rows}x{args.cols} {args.dtype}: {', '.join(check(args.rows, args.cols, args.dtype))}\n")
    common.print_table(benchmark(args.rows, args.cols, args.dtype), common.RESULT_COLUMNS)
    if not on_cpu:
        print(f"\nautotuned pointer kernel: {column_sum_kernel.best_config}")
    print("\nGB/s: bytes that must move (x once, the sums once) over the eager time; '% of ceiling' compares it with "
          "a device-to-device copy measured now; 'x torch' above 1 is faster than x.sum(dim=0)."
          + (" Under the interpreter the times measure NumPy emulation, not a GPU." if on_cpu else ""))
    return 0

if __name__ == "__main__":
    sys.exit(main())
