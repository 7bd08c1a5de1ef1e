"""Tiled matrix multiplication C = A @ B with tl.dot, from one tile per program to a persistent kernel.

    C[i, j] = sum over k of A[i, k] * B[k, j]        A: (M, K), B: (K, N), C: (M, N)

Each program computes one BLOCK_M x BLOCK_N tile of C, walking along K in steps of BLOCK_K: it adds the
product of an A tile and a B tile (`tl.dot`, on the tensor cores) into a float32 accumulator, so each
element of A is loaded N / BLOCK_N times instead of N times. In reading order:
- "pointer": the tile loop with pointers, masks and any strides, in an L2-friendly program order;
- "block_ptr", "descriptor": block pointers (gone in Triton 3.9), tensor descriptors (TMA on Hopper);
- "persistent": one program per SM walking many tiles, which `matmul` runs for 16-bit or TF32 dots of aligned rows (not small 16-bit ones);
- `matmul` as a PyTorch op whose gradients are matmuls on strided views: dA = dC @ B^T, dB = A^T @ dC.
"""

import argparse
import contextlib
import functools
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (before any kernel is defined: it switches on the interpreter when there is no GPU)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# ## One program per C tile, in grouped order
# The GPU starts programs roughly in the order of their ids, a wave at a time, and a tile that a wave
# reads twice comes from the L2 cache the second time. In row-major order (tile row = pid // tiles_n) a
# wave computes a few whole rows of C: few rows of A, but all of B. Grouped order walks GROUP_M tile rows
# down before it moves one tile column right, so a wave covers a squarer patch of C. Below, a wave of 4
# programs reads 1 strip of A tiles and 4 of B in row-major order, 2 and 2 grouped; the gap grows with N.
#
#     row-major:   0  1  2  3         grouped, GROUP_M = 2:   0  2  4  6
#                  4  5  6  7                                 1  3  5  7
#                  8  9 10 11                                 8 10 12 14
#                 12 13 14 15                                 9 11 13 15
@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """The (tile row, tile column) of C that program `pid` computes; the last group may be short."""
    tiles_per_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    group, in_group = pid // tiles_per_group, pid % tiles_per_group  # which group; the place within it
    rows_in_group = min(tl.cdiv(M, BLOCK_M) - group * GROUP_M, GROUP_M)
    return group * GROUP_M + in_group % rows_in_group, in_group // rows_in_group

# Triton's interpreter holds bfloat16 in uint16 arrays (NumPy has no bfloat16) and tl.dot multiplies those
# integers, so there tile_dot widens them to float32 first (exact); on a GPU the branch is not compiled.
WIDEN_BFLOAT16_DOT = tl.constexpr(common.INTERPRETED)

@triton.jit
def tile_dot(a, b, acc, INPUT_PRECISION: tl.constexpr):
    """acc + a @ b on the tensor cores."""
    if WIDEN_BFLOAT16_DOT and a.dtype == tl.bfloat16:
        a, b = a.to(tl.float32), b.to(tl.float32)
    return tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=acc.dtype)

# Tiles for the autotuner (timed on the first call in a new bucket): 128 x 256 feeds the tensor cores with few
# loads per FLOP; num_stages tiles load while others multiply; BLOCK_K = 32: float32 tiles take twice the shared memory.
# The last two, for C of few tiles (BLOCK_M 16 only for M <= 16, a decoding step): more programs, longer K steps.
TILE_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m}, num_stages=stages, num_warps=warps)
    for bm, bn, bk, group_m, stages, warps in ([(64, 64, 32, 4, 1, 4)] if common.INTERPRETED else [
        (128, 256, 64, 8, 3, 8), (128, 256, 64, 4, 3, 8), (256, 128, 64, 8, 3, 8), (128, 256, 32, 8, 4, 8),
        (256, 128, 32, 8, 3, 8), (128, 128, 64, 8, 4, 4), (128, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4),
        (64, 256, 32, 8, 4, 4), (64, 64, 32, 8, 3, 4), (64, 64, 128, 1, 4, 4), (16, 64, 256, 1, 3, 4),
    ])
]  # fmt: skip  # interpreted: one config, as the interpreter cannot time configs

def tile_shared_bytes(config, element_size):
    """Shared memory a config needs: num_stages copies of an A tile and a B tile."""
    kw = config.kwargs
    return config.num_stages * (kw["BLOCK_M"] + kw["BLOCK_N"]) * kw["BLOCK_K"] * element_size

def autotuned(configs, shared_bytes):
    """triton.autotune (it adds dtypes to the key), timing configs that fit in shared memory and suit C's size."""
    def fitting(configs, named_args, **kwargs):  # kwargs: the other arguments the autotuner passes
        a = named_args["a_ptr"]
        limit = triton.runtime.driver.active.utils.get_device_properties(a.device.index)["max_shared_mem"]
        m, n = (common.next_power_of_2(named_args[size]) for size in ("M", "N"))
        kept = [c for c in configs if shared_bytes(c, a.element_size()) <= limit
                and min(64, m) <= c.kwargs["BLOCK_M"] <= max(64, m) and c.kwargs["BLOCK_N"] <= max(64, n)]
        return kept or [min(configs, key=lambda c: shared_bytes(c, a.element_size()))]
    return triton.autotune(configs=configs, key=["M", "N", "K", "INPUT_PRECISION"],
                           prune_configs_by={"early_config_prune": fitting}, **common.TUNING)

@autotuned(TILE_CONFIGS, tile_shared_bytes)
@triton.jit(do_not_specialize=["M"])  # M only masks rows: no compile per row count (N and K: multiples of 16 vectorize)
def matmul_pointer_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,  # A (M, K), B (K, N) and C (M, N, written here), any strides
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,  # elements between rows, columns of A, B, C
    ACC_DTYPE: tl.constexpr, INPUT_PRECISION: tl.constexpr,  # accumulator float32 (float64 for float64); "tf32"/"ieee"
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # the C tile; the step along K
    GROUP_M: tl.constexpr,  # tile rows per group in the program order
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows, cols = pid_m * BLOCK_M + tl.arange(0, BLOCK_M), pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    # 64-bit offsets: past 2**31 elements, 32-bit row * stride would wrap around silently.
    a_ptrs = a_ptr + rows.to(tl.int64)[:, None] * stride_am + ks.to(tl.int64)[None, :] * stride_ak
    b_ptrs = b_ptr + ks.to(tl.int64)[:, None] * stride_bk + cols.to(tl.int64)[None, :] * stride_bn
    # A float32 accumulator for 16-bit input too: a long 16-bit running sum rounds small products away.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
    for k in range(0, K, BLOCK_K):
        # Rows past M, columns past N and the last partial step along K read as 0, which adds nothing.
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < K - k) & (cols[None, :] < N), other=0.0)
        acc = tile_dot(a, b, acc, INPUT_PRECISION)
        a_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_ak  # int64: BLOCK_K * stride in int32 could wrap
        b_ptrs += tl.cast(BLOCK_K, tl.int64) * stride_bk
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + cols.to(tl.int64)[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))

def validate(a, b, name="matmul", differentiable=True):
    """(M, N, K), or TypeError/ValueError naming what is wrong; differentiable=False: refuse inputs that require grad."""
    for arg, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: {arg} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            raise TypeError(f"{name}: {arg} has dtype {t.dtype}; supported: float16, bfloat16, float32, float64")
        if t.dim() != 2:
            raise ValueError(f"{name}: {arg} must be 2-D, got shape {tuple(t.shape)}")
        if t.device.type != common.DEVICE.type:
            raise ValueError(f"{name}: {arg} is on {t.device}, expected a {common.DEVICE.type} tensor")
    if a.dtype != b.dtype:
        raise TypeError(f"{name}: a and b must have one dtype, got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"{name}: a is on {a.device} and b on {b.device}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{name}: a {tuple(a.shape)} and b {tuple(b.shape)} do not chain: {a.shape[1]} != {b.shape[0]}")
    if not differentiable and torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):
        raise ValueError(f"{name} records no gradients and an input requires grad: call matmul")
    return a.shape[0], b.shape[1], a.shape[1]

def input_precision(dtype):
    """As torch.matmul: float32 under set_float32_matmul_precision("high"/"medium") takes TF32 (10-bit mantissas)."""
    return "tf32" if dtype == torch.float32 and torch.get_float32_matmul_precision() != "highest" else "ieee"

def launch_args(dtype):  # the constexpr arguments every matmul kernel takes besides its tiles
    return dict(ACC_DTYPE=tl.float64 if dtype == torch.float64 else tl.float32, INPUT_PRECISION=input_precision(dtype))

def bucket(a, b, precision):  # the autotuner runs once per bucket (common.launch_tuned): sizes to powers of 2, dtype
    return (*map(common.next_power_of_2, (a.shape[0], b.shape[1], a.shape[1])), a.dtype, precision)

def launch_tiles(kernel, a, b, c, strides=None):
    """One program per C tile, in a 1-D grid that grouped_tile maps to (row, column); strides: those the kernel takes."""
    (m, k), n = a.shape, b.shape[1]
    strides = strides or (*a.stride(), *b.stride(), *c.stride())
    grid, args = lambda meta: (common.cdiv(m, meta["BLOCK_M"]) * common.cdiv(n, meta["BLOCK_N"]),), launch_args(a.dtype)
    common.launch_tuned(kernel, grid, bucket(a, b, args["INPUT_PRECISION"]), a, b, c, m, n, k, *strides, **args)

def launch_into(launch, a, b, out, sizes):
    """launch(a, b, c) into out, or a fresh C (copied into out if out overlaps a or b, which programs still read)."""
    m, n, k = sizes
    copy_back = out is not None and common.check_out(out, (m, n), a.dtype, a.device, (a, b))
    c = out if out is not None and not copy_back else torch.empty((m, n), dtype=a.dtype, device=a.device)
    if k == 0:
        c.zero_()  # empty sums
    elif c.numel():
        launch(a, b, c)
    return out.copy_(c) if copy_back else c

def matmul_pointer(a, b, out=None):
    """a @ b with pointer arithmetic and masks: any strides, any sizes."""
    launch = functools.partial(launch_tiles, matmul_pointer_kernel)
    return launch_into(launch, a, b, out, validate(a, b, "matmul_pointer", differentiable=False))

def reference(a, b):
    """What matmul computes, in PyTorch: check() takes it in float64, benchmark() times it."""
    return torch.matmul(a, b)

@contextlib.contextmanager
def float32_matmul_precision(precision):
    """Set torch's float32 matmul precision for a while ("highest", "high", "medium"; None: leave it)."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision or before)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)

def product_roundoff(dtype):  # error of one product: none in float32 but for TF32's inputs (10 mantissa bits)
    return 2.0**-9 if input_precision(dtype) == "tf32" else 0.0

def random_matrix(rows, cols, dtype, transposed=False):  # torch.randn (rows, cols), or a view of (cols, rows) as .T
    t = torch.randn((cols, rows) if transposed else (rows, cols), device=common.DEVICE).to(dtype)
    return t.T if transposed else t

def check(m, n, k, dtype=torch.float32, precision=None, transpose_a=False, transpose_b=False):
    """Each variant taking the layout, and matmul, into NaN-filled out= against float64; returns their names.
    (VARIANTS, refusals and matmul come further down, after the faster forms.)"""
    with float32_matmul_precision(precision):
        a, b = random_matrix(m, k, dtype, transpose_a), random_matrix(k, n, dtype, transpose_b)
        expected, magnitude = reference(a.double(), b.double()), reference(a.double().abs(), b.double().abs())
        checked = [name for name in VARIANTS if name not in refusals(a, b)] + ["matmul"]
        for name in checked:
            out = torch.full((m, n), float("nan"), dtype=dtype, device=common.DEVICE)
            (matmul if name == "matmul" else VARIANTS[name])(a, b, out=out)
            what = f"{name} {m}x{n}x{k} {dtype} precision={torch.get_float32_matmul_precision()}"
            common.assert_close(out, expected, magnitude, k, what, product_roundoff(dtype))
    return checked

# ## Block pointers
# tl.make_block_ptr(base, shape, strides, offsets, block_shape, order) is a cursor over a matrix of any
# strides: tl.load reads the block at the offsets (boundary_check: the dimensions to mask), tl.advance
# moves it; `order` (fastest dimension first) is a layout hint. Triton 3.9 removed block pointers.
@autotuned(TILE_CONFIGS, tile_shared_bytes)
@triton.jit
def matmul_block_ptr_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,  # A (M, K), B (K, N) and C (M, N, written here), any strides
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,  # elements between rows, columns of A, B, C
    ACC_DTYPE: tl.constexpr, INPUT_PRECISION: tl.constexpr,  # accumulator float32 (float64 for float64); "tf32"/"ieee"
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # the C tile; the step along K
    GROUP_M: tl.constexpr,  # tile rows per group in the program order
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    a_block = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BLOCK_M, 0), (BLOCK_M, BLOCK_K), (1, 0))
    b_block = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BLOCK_N), (BLOCK_K, BLOCK_N), (1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc = tile_dot(a, b, acc, INPUT_PRECISION)
        a_block = tl.advance(a_block, (0, BLOCK_K))  # a new cursor, moved along K
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    c_block = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn), (pid_m * BLOCK_M, pid_n * BLOCK_N),
                                (BLOCK_M, BLOCK_N), (1, 0))
    tl.store(c_block, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))

def matmul_block_ptr(a, b, out=None):
    """a @ b with block pointers: any strides, any sizes, where this Triton still has them."""
    launch = functools.partial(launch_tiles, matmul_block_ptr_kernel)
    with common.quiet_block_pointer_warnings():  # Triton 3.7 and 3.8 warn that they are deprecated
        return launch_into(launch, a, b, out, validate(a, b, "matmul_block_ptr", differentiable=False))

# ## Tensor descriptors
# tl.make_tensor_descriptor replaced block pointers. It describes a matrix by base, shape, strides and a block shape, but
# holds no position: each desc.load([row, col]) names the block's first element, so the K loop keeps a plain coordinate.
# Every dimension is checked against the shape (reads outside give 0, writes outside are dropped): no masks. The price is
# alignment: a 16-byte aligned base, a last stride of 1 (hence strides=[stride, 1]), other strides multiples of 16 bytes.
# A descriptor that breaks them can give wrong numbers on a GPU and no error, so descriptor_problem checks them first. On
# Hopper a descriptor load is one TMA instruction: the copy engine computes addresses and bounds, not registers. The
# descriptor is built at run time in scratch memory: common.set_descriptor_allocator() provides it.
@autotuned(TILE_CONFIGS, tile_shared_bytes)
@triton.jit(do_not_specialize=["M", "N", "K", "stride_am", "stride_bk", "stride_cm"])  # the descriptors check bounds
def matmul_descriptor_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,  # A (M, K), B (K, N), C (M, N, written here): rows contiguous, 16-byte aligned
    stride_am, stride_bk, stride_cm,  # elements between rows of A, B and C: multiples of 16 bytes
    ACC_DTYPE: tl.constexpr, INPUT_PRECISION: tl.constexpr,  # accumulator float32 (float64 for float64); "tf32"/"ieee"
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # the C tile; the step along K
    GROUP_M: tl.constexpr,  # tile rows per group in the program order
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([k, pid_n * BLOCK_N])
        acc = tile_dot(a, b, acc, INPUT_PRECISION)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))

def descriptor_problem(a, b, c, variant="matmul_descriptor"):
    """Why a descriptor cannot take a, b (None: skip it) or c, or None: common.descriptor_problem for each, and no
    stride 0 (expand()): it passes the 16-byte rule, but a descriptor's shape and strides describe distinct rows."""
    for name, t in (("a", a), ("b", b), ("the output", c)):
        reason = t is not None and (common.descriptor_problem(t) or ("a stride is 0" if 0 in t.stride() else None))
        if reason:
            return f"{variant}: a tensor descriptor cannot describe {name} {tuple(t.shape)} strides {t.stride()}: {reason}"

def launch_descriptor(a, b, c):
    if problem := descriptor_problem(a, b, c):
        raise ValueError(problem)
    common.set_descriptor_allocator()
    launch_tiles(matmul_descriptor_kernel, a, b, c, (a.stride(0), b.stride(0), c.stride(0)))

def matmul_descriptor(a, b, out=None):
    """a @ b with tensor descriptors; ValueError where descriptor_problem finds one."""
    return launch_into(launch_descriptor, a, b, out, validate(a, b, "matmul_descriptor", differentiable=False))

# ## A persistent kernel
# The kernels above run one program per C tile, in waves; between waves an SM idles while a finished tile
# drains and the next program's first tiles arrive. A persistent kernel runs one program per SM, which
# walks tiles start, start + PROGRAMS, ... in grouped order; tl.range(..., flatten=True) makes the tile
# and K loops one software pipeline (Triton's tutorial 09-persistent-matmul). With EPILOGUE_SUBTILE the C
# tile is staged for the TMA store in two halves, so that big float32 tiles fit in shared memory. TF32
# tensor cores read float32 tiles only K-contiguous, and the compiler would re-layout each tile of a
# row-major B on every K step: so the wrapper writes B^T first, and the kernel multiplies by boxes' `.T`.
PERSISTENT_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m, "EPILOGUE_SUBTILE": subtile},
                  num_stages=stages, num_warps=warps)
    for bm, bn, bk, group_m, subtile, stages, warps in ([(64, 64, 32, 4, True, 1, 4)] if common.INTERPRETED else [
        (128, 256, 64, 8, False, 3, 8),  # 16-bit inputs
        (128, 256, 32, 8, True, 3, 8),  # float32: the C tile is stored in halves to fit
        (128, 128, 64, 8, False, 4, 8), (128, 128, 32, 8, False, 4, 8),
        (64, 64, 32, 8, False, 3, 4),  # small matrices, and float64
    ])
]  # fmt: skip

def persistent_shared_bytes(config, element_size):
    """The pipeline's A and B tiles, plus the C tile (or its half) staged for the TMA store."""
    c_tile = config.kwargs["BLOCK_M"] * config.kwargs["BLOCK_N"] * element_size
    return tile_shared_bytes(config, element_size) + c_tile // (1 + config.kwargs["EPILOGUE_SUBTILE"])

@autotuned(PERSISTENT_CONFIGS, persistent_shared_bytes)
@triton.jit(do_not_specialize=["M", "N", "K", "stride_am", "stride_b", "stride_cm"])  # as the descriptor kernel
def matmul_persistent_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,  # A (M, K), B (K, N) or B^T (N, K), C (M, N, written here): as for descriptors
    stride_am, stride_b, stride_cm,  # elements between rows of A, of b_ptr's matrix, of C: multiples of 16 bytes
    PROGRAMS: tl.constexpr, B_TRANSPOSED: tl.constexpr,  # programs (one per SM); b_ptr holds B^T (set under TF32 only)
    ACC_DTYPE: tl.constexpr, INPUT_PRECISION: tl.constexpr,  # accumulator float32 (float64 for float64); "tf32"/"ieee"
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # the C tile; the step along K
    GROUP_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,  # tile rows per group; store C in two halves
):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    if B_TRANSPOSED:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_b, 1], block_shape=[BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_b, 1], block_shape=[BLOCK_K, BLOCK_N])
    C_COLUMNS: tl.constexpr = BLOCK_N // (1 + EPILOGUE_SUBTILE)  # the columns of each store
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, C_COLUMNS])
    # The store keeps its own tile counter, as in Triton's tutorial: the pipeliner moves the next
    # tile's loads ahead of this tile's store, and one shared counter would tie them together.
    store_tile = tl.program_id(0) - PROGRAMS
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N), PROGRAMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
        for k in range(0, K, BLOCK_K):
            a = a_desc.load([pid_m * BLOCK_M, k])
            if B_TRANSPOSED:
                b = b_desc.load([pid_n * BLOCK_N, k]).T  # a (BLOCK_K, BLOCK_N) view of a K-contiguous box
            else:
                b = b_desc.load([k, pid_n * BLOCK_N])
            acc = tile_dot(a, b, acc, INPUT_PRECISION)
        store_tile += PROGRAMS
        pid_m, pid_n = grouped_tile(store_tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        if EPILOGUE_SUBTILE:  # columns viewed as (2, BLOCK_N // 2), the 2 moved last, split: left and right halves
            left, right = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(c_desc.dtype))
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + C_COLUMNS], right.to(c_desc.dtype))
        else:
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))

@triton.jit
def transpose_kernel(
    src_ptr, dst_ptr,  # B (K, N), any strides; B^T (N, K), rows contiguous, written here
    K, N, stride_src_k, stride_src_n,  # B's shape; elements between its rows, between its columns
    stride_dst_n,  # elements between rows of B^T (K, or more when rows are padded)
    BLOCK: tl.constexpr,  # side of the square tile each program moves
):
    tiles_n = tl.cdiv(N, BLOCK)  # a 1-D grid: axis 1 of a CUDA grid stops at 65535 programs
    ks = (tl.program_id(0) // tiles_n) * BLOCK + tl.arange(0, BLOCK)
    ns = (tl.program_id(0) % tiles_n) * BLOCK + tl.arange(0, BLOCK)
    src = src_ptr + ks.to(tl.int64)[:, None] * stride_src_k + ns.to(tl.int64)[None, :] * stride_src_n
    tile = tl.load(src, mask=(ks[:, None] < K) & (ns[None, :] < N))
    # tl.trans moves the tile between threads, so that loads and stores both run along rows.
    dst = dst_ptr + ns.to(tl.int64)[:, None] * stride_dst_n + ks[None, :]
    tl.store(dst, tl.trans(tile), mask=(ns[:, None] < N) & (ks[None, :] < K))

def k_major_b(b, block=64):
    """B^T (N, K), rows contiguous: as it lies for b = w.T, else a copy (block-square tiles, rows padded to 16 B)."""
    k, n = b.shape
    if common.descriptor_problem(b.T) is None:
        return b.T
    row_align = 16 // b.element_size()  # elements per 16 bytes: a descriptor's row stride is a multiple of 16 B
    bt = torch.empty((n, common.cdiv(k, row_align) * row_align), dtype=b.dtype, device=b.device)[:, :k]
    grid = (common.cdiv(k, block) * common.cdiv(n, block),)
    common.launch(transpose_kernel, grid, b, bt, k, n, *b.stride(), bt.stride(0), BLOCK=block)
    return bt

def persistent_problem(a, b, c):
    """As descriptor_problem, but under TF32 b may have any layout: the kernel reads B^T (see k_major_b)."""
    return descriptor_problem(a, None if input_precision(a.dtype) == "tf32" else b, c, "matmul_persistent")

def launch_persistent(a, b, c, checked=False):
    """Run the persistent kernel; checked=True: the caller found no persistent_problem."""
    if not checked and (problem := persistent_problem(a, b, c)):
        raise ValueError(problem)
    (m, k), n, args = a.shape, b.shape[1], launch_args(a.dtype)
    tf32 = args["INPUT_PRECISION"] == "tf32"
    b_arg = k_major_b(b) if tf32 else b
    programs = 3 if common.INTERPRETED else common.multiprocessor_count(common.DEVICE)  # 3: walk several tiles
    common.set_descriptor_allocator()
    common.launch_tuned(matmul_persistent_kernel, (programs,), bucket(a, b, args["INPUT_PRECISION"]), a, b_arg, c,
                        m, n, k, a.stride(0), b_arg.stride(0), c.stride(0), PROGRAMS=programs, B_TRANSPOSED=tf32, **args)

def matmul_persistent(a, b, out=None):
    """a @ b with the persistent kernel; ValueError where persistent_problem finds one."""
    return launch_into(launch_persistent, a, b, out, validate(a, b, "matmul_persistent", differentiable=False))

UNAVAILABLE = {name: reason for name, reason in [("block_ptr", common.block_pointers_unavailable())] if reason}
VARIANTS = {name: fn for name, fn in [("pointer", matmul_pointer), ("block_ptr", matmul_block_ptr),
                                      ("descriptor", matmul_descriptor), ("persistent", matmul_persistent)]
            if name not in UNAVAILABLE}

def refusals(a, b):
    """Variant -> why it cannot take a @ b into a fresh C, at the current float32 precision."""
    c = a.new_empty((a.shape[0], b.shape[1]))
    found = {"descriptor": descriptor_problem(a, b, c), "persistent": persistent_problem(a, b, c)}
    return {name: reason for name, reason in found.items() if reason}

# ## matmul: the best kernel for the input, as a PyTorch op with gradients
# For C = A @ B and a loss L, dL/dA = dC @ B^T and dL/dB = A^T @ dC: matmuls of views with swapped strides, which the
# kernels take as they are. torch.library.custom_op registers matmul as an op; its fake (shape and dtype only) lets
# torch.compile trace around the kernels and the host-side planning (SM count, autotuner); a triton_op would trace the
# kernels themselves, which fails on fake tensors under the CPU interpreter. The backward calls matmul (or the op), so
# matmul has gradients too. Dispatch through an op costs host time per call: matmul goes through it only when compiled.
SMALL_C, SHORT_K = 1 << 20, 1024  # C of up to 64 tiles of 128 x 128 and K up to this: the pointer kernel does better
def launch_best(a, b, c):
    """The persistent kernel for 16-bit and TF32 dots where it can; the pointer kernel (any layout) where its smaller
    tiles give more programs: C one row of 128-row tiles (a decoding step), or 16-bit, of at most SMALL_C elements, K
    at most SHORT_K, N and K multiples of 16 (the pointer kernel's loads vectorize only then)."""
    (m, k), n = a.shape, b.shape[1]
    sixteen_bit = a.dtype in (torch.float16, torch.bfloat16)
    small = m <= 128 or (sixteen_bit and m * n <= SMALL_C and k <= SHORT_K and n % 16 == 0 and k % 16 == 0)
    if (sixteen_bit or input_precision(a.dtype) == "tf32") and not small and persistent_problem(a, b, c) is None:
        launch_persistent(a, b, c, checked=True)
    else:
        launch_tiles(matmul_pointer_kernel, a, b, c)

def matmul_forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return launch_into(launch_best, a, b, None, validate(a, b))

def matmul_backward(ctx, grad_c, mm=None):  # mm: matmul_op in the op's backward, which torch.compile records
    a, b = ctx.saved_tensors
    grad_a = (mm or matmul)(grad_c, b.T) if ctx.needs_input_grad[0] else None
    grad_b = (mm or matmul)(a.T, grad_c) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b

save_inputs = lambda ctx, inputs, output: ctx.save_for_backward(*inputs)  # noqa: E731
matmul_op = torch.library.custom_op("triton_lessons::matmul", matmul_forward, mutates_args=())
matmul_op.register_fake(lambda a, b: a.new_empty((a.shape[0], b.shape[1])))
matmul_op.register_autograd(functools.partial(matmul_backward, mm=matmul_op), setup_context=save_inputs)
matmul_autograd = common.eager_autograd("matmul", matmul_forward, save_inputs, matmul_backward)  # eager: no dispatch

def matmul(a, b, out=None):
    """C = a @ b for a (M, K), b (K, N) of one floating dtype, any strides; float32 follows torch's TF32 setting.
    The op when compiling; its backward in an autograd.Function for eager gradients; else a plain launch, out= too."""
    sizes = validate(a, b)
    wants_grad = torch.is_grad_enabled() and (a.requires_grad or b.requires_grad)
    if out is None and (wants_grad or torch.compiler.is_compiling()):
        return matmul_op(a, b) if torch.compiler.is_compiling() else matmul_autograd(a, b)
    return launch_into(launch_best, a, b, out, sizes)

# ## Benchmark and main
POWER_SETTLE_MS, BENCH_ROUNDS = 1000, 1 if common.INTERPRETED else 3  # each round, torch warms up the clocks first

def benchmark(m, n, k, dtype=torch.float16, precision="highest"):
    """torch.matmul and each variant that takes row-major inputs of this size: eager, then from a CUDA graph."""
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    with float32_matmul_precision(precision):
        a, b = random_matrix(m, k, dtype), random_matrix(k, n, dtype)
        case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')}"
        case += f" {input_precision(dtype)}" if dtype == torch.float32 else ""
        runs = {"torch": lambda: reference(a, b), "matmul": lambda: matmul(a, b)}
        runs.update({name: (lambda fn=fn: fn(a, b)) for name, fn in VARIANTS.items() if name not in refusals(a, b)})
        rounds = [{name: (common.bench(run, warmup_ms=POWER_SETTLE_MS if name == "torch" else 25), common.bench_graph(run))
                   for name, run in runs.items()} for _ in range(BENCH_ROUNDS)]
    flops = 2 * m * n * k  # one multiply and one add per term of each dot product
    median = {name: [None if None in times else statistics.median(times) for times in zip(*(r[name] for r in rounds))]
              for name in runs}
    return [common.result_row(case, name, eager, graph, common.tflops(flops, eager), "TFLOP/s", median["torch"][0])
            for name, (eager, graph) in median.items()]

SWEEP = [{"m": size, "n": size, "k": size, "dtype": dtype, "precision": "high"}
         for size in (4096, 8192) for dtype in ("float16", "bfloat16", "float32")]
SWEEP += [{"m": m, "n": n, "k": k, "dtype": dtype} for dtype in ("float16", "bfloat16")  # beyond large cubes
          for m, n, k in ((4000, 4000, 4000), (8192, 8192, 512), (128, 4096, 4096), (16, 8192, 8192), (1000, 1001, 999))]

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for flag, meaning in (("--m", "rows of A and C"), ("--n", "columns of B and C"), ("--k", "columns of A, rows of B")):
        parser.add_argument(flag, type=int, default=256 if common.INTERPRETED else 4096, help=meaning)
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32", "float64"],
                        help="dtype of A, B and C")
    parser.add_argument("--precision", default=torch.get_float32_matmul_precision(), help="torch.set_float32_matmul_"
                        "precision for torch.matmul and the kernels (float32: highest = exact, high/medium = TF32)",
                        choices=["highest", "high", "medium"])
    args = parser.parse_args(argv)
    if min(args.m, args.n, args.k) < 0:
        parser.error(f"sizes must be 0 or more, got --m {args.m} --n {args.n} --k {args.k}")
    dtype = getattr(torch, args.dtype)
    print(common.describe_run())
    with float32_matmul_precision(args.precision):
        a, b = (torch.empty(shape, dtype=dtype, device=common.DEVICE) for shape in ((args.m, args.k), (args.k, args.n)))
        for name, reason in {**UNAVAILABLE, **refusals(a, b)}.items():
            print(f"variant {name!r} left out: {reason}")
    checked = check(args.m, args.n, args.k, dtype, args.precision)
    print(f"check {args.m}x{args.n}x{args.k} {args.dtype}: {', '.join(checked)} match a float64 reference\n")
    rows = benchmark(args.m, args.n, args.k, dtype, args.precision)
    common.print_table(rows, common.RESULT_COLUMNS)
    print("\nTFLOP/s = 2*M*N*K / eager time; 'x torch' = torch.matmul's eager time over ours (1.0: parity); 'graph ms'"
          " replays the launches from a CUDA graph, without Python. matmul runs one of the variants below it; pointer,"
          " block_ptr and descriptor differ only in how tiles reach the tensor cores. Under the interpreter the times"
          " show the CPU's emulation only.")
    return 0

if __name__ == "__main__":
    sys.exit(main())
