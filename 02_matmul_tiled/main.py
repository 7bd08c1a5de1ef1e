"""Tiled matrix multiplication C = A @ B with tl.dot: three ways of reaching memory, then a persistent kernel.

Each program computes one BLOCK_M x BLOCK_N tile of C. It walks along K in steps of BLOCK_K,
loads a BLOCK_M x BLOCK_K tile of A and a BLOCK_K x BLOCK_N tile of B, and lets `tl.dot` multiply
them on the tensor cores into a float32 accumulator. Each element of A is then loaded N / BLOCK_N
times instead of N times (B: M / BLOCK_M instead of M), on-chip caches absorb most of those, and
the tensor cores rather than the loads set the pace.

The three variants differ only in how a tile is fetched:
- "pointer": a tensor of addresses built from `tl.arange`, strides and masks (plain Triton);
- "block_ptr": `tl.make_block_ptr` and `tl.advance` (Triton up to 3.7; removed in 3.9);
- "descriptor": `tl.make_tensor_descriptor`, which replaced block pointers and which Hopper GPUs
  (H100, H200) serve with their tensor memory accelerator (TMA).
The section "Block pointers and tensor descriptors" below the kernels says what differs.

A fourth variant, "persistent", is the step after these: one program per SM that walks many C
tiles with descriptors, so that loading the next tile overlaps finishing the current one. It is
what `matmul` runs when the inputs allow descriptors (see "A persistent kernel" below).

You also see: grouped program order for L2 reuse, autotuning of tile sizes, float32 inputs that
follow PyTorch's TF32 switch, and error bounds that hold on a CPU and on a GPU.
"""

import argparse
import contextlib
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (switches on the interpreter before any kernel is defined)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

# ----------------------------------------------------------------------------------------------
# Autotuning
#
# The best tile shape depends on the GPU, the dtype and the problem size, so on a GPU
# `triton.autotune` times each config below the first time it meets a new (M, N, K, precision,
# dtypes) key and keeps the fastest. The list is short on purpose: each config costs a compile
# and a few timed runs, at 8192^3 about a second each. They are shapes known to run well on
# Hopper: large tiles (128 x 256) keep the tensor cores fed with few loads per FLOP, 8 warps
# (two warp groups) share such a tile, and num_stages tiles of A and B are fetched ahead while
# the current ones are multiplied. The BLOCK_K = 32 configs serve float32, whose tiles take twice
# the shared memory (256 x 128 x 32 won under TF32 on an H200). The interpreter on a CPU gets
# one fixed config: several fail there, and speed means nothing there.
# ----------------------------------------------------------------------------------------------


def tile_config(block_m, block_n, block_k, group_m, num_stages, num_warps):
    """One autotuning candidate."""
    return triton.Config(
        {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP_M": group_m},
        num_stages=num_stages,
        num_warps=num_warps,
    )


if common.INTERPRETED:
    TILE_CONFIGS = [tile_config(64, 64, 32, 4, num_stages=1, num_warps=4)]
else:
    TILE_CONFIGS = [
        tile_config(128, 256, 64, 8, num_stages=3, num_warps=8),
        tile_config(128, 256, 64, 4, num_stages=3, num_warps=8),
        tile_config(256, 128, 64, 8, num_stages=3, num_warps=8),
        tile_config(128, 256, 32, 8, num_stages=4, num_warps=8),
        tile_config(256, 128, 32, 8, num_stages=3, num_warps=8),
        tile_config(128, 128, 64, 8, num_stages=4, num_warps=4),
        tile_config(128, 128, 32, 8, num_stages=4, num_warps=4),
        tile_config(128, 64, 32, 8, num_stages=4, num_warps=4),
        tile_config(64, 256, 32, 8, num_stages=4, num_warps=4),
        tile_config(64, 64, 32, 8, num_stages=3, num_warps=4),
    ]


def configs_that_fit(configs, named_args, **kwargs):
    """Drop the configs not worth timing for this problem; at least one always stays.

    Shared memory: num_stages copies of an A tile and a B tile live there at once. A
    128 x 256 x 64 config that fits for float16 needs twice the space for float32 and would only
    fail to compile. Size: a tile far taller or wider than C spends the tensor cores on padding,
    so for a small C only the small tiles are timed (which also keeps tuning quick).
    """
    a = named_args["a_ptr"]
    limit = triton.runtime.driver.active.utils.get_device_properties(a.device.index)["max_shared_mem"]
    max_m = max(64, triton.next_power_of_2(named_args["M"]))
    max_n = max(64, triton.next_power_of_2(named_args["N"]))

    def shared_bytes(config):
        kw = config.kwargs
        pipeline = config.num_stages * (kw["BLOCK_M"] + kw["BLOCK_N"]) * kw["BLOCK_K"] * a.element_size()
        if "EPILOGUE_SUBTILE" not in kw:
            return pipeline
        # The persistent kernel stages its C tile (or half of it) in shared memory for the TMA
        # store while the next tile's loads already fill the pipeline buffers.
        return pipeline + kw["BLOCK_M"] * kw["BLOCK_N"] * a.element_size() // (2 if kw["EPILOGUE_SUBTILE"] else 1)

    fitting = [
        config for config in configs
        if shared_bytes(config) <= limit and config.kwargs["BLOCK_M"] <= max_m and config.kwargs["BLOCK_N"] <= max_n
    ]
    return fitting or [min(configs, key=shared_bytes)]


def autotuned_with(configs):
    """A decorator: the autotuner over `configs`, keyed on the sizes and the float32 precision.

    The autotuner adds the dtypes of the tensor arguments to the key by itself, so float16 and
    bfloat16 are tuned separately.
    """
    return triton.autotune(configs=configs, key=["M", "N", "K", "INPUT_PRECISION"],
                           prune_configs_by={"early_config_prune": configs_that_fit})


autotuned = autotuned_with(TILE_CONFIGS)  # the three tile-per-program kernels


# ----------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Map a program id to the (row, column) of the C tile it computes, in grouped order.

    Programs run roughly in id order. Row-major order (pid_m = pid // tiles_n) would make the
    first wave of programs read a few rows of A and ALL of B, too much for the L2 cache at large
    N. Grouped order instead walks down GROUP_M tile rows before moving one tile column right:

        row-major, 4 x 4 tiles:   0  1  2  3      grouped, GROUP_M = 2:   0  2  4  6
                                  4  5  6  7                              1  3  5  7
                                  ...                                     8 10 12 14

    so programs that run together share both their A rows and their B columns, and most tile
    loads hit L2 instead of device memory. The last group has fewer rows when GROUP_M does not
    divide the number of tile rows.
    """
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * tiles_n
    first_row = (pid // tiles_per_group) * GROUP_M
    rows_in_group = min(tiles_m - first_row, GROUP_M)
    pid_m = first_row + (pid % tiles_per_group) % rows_in_group
    pid_n = (pid % tiles_per_group) // rows_in_group
    return pid_m, pid_n


# Triton's interpreter (3.6 up to at least 3.9) multiplies bfloat16 tiles in tl.dot as the raw
# 16-bit integers that hold them and returns nonsense. Under the interpreter, tile_dot widens
# bfloat16 tiles to float32 first: exact, since a bfloat16 value is a float32 with a shorter
# mantissa. On a GPU this flag is False and the branch is not even compiled.
WIDEN_BFLOAT16_DOT = tl.constexpr(common.INTERPRETED)


@triton.jit
def tile_dot(a, b, acc, INPUT_PRECISION: tl.constexpr):
    """acc + a @ b on the tensor cores (see WIDEN_BFLOAT16_DOT for the interpreter's detour)."""
    if WIDEN_BFLOAT16_DOT and a.dtype == tl.bfloat16:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=acc.dtype)


@autotuned
@triton.jit
def matmul_pointer_kernel(
    a_ptr,  # A, (M, K), any strides
    b_ptr,  # B, (K, N), any strides
    c_ptr,  # C, (M, N), written here, any strides
    M,  # rows of A and C
    N,  # columns of B and C
    K,  # columns of A, rows of B: the length of each dot product
    stride_am,  # elements between A[i, k] and A[i + 1, k]
    stride_ak,  # elements between A[i, k] and A[i, k + 1]
    stride_bk,  # elements between B[k, j] and B[k + 1, j]
    stride_bn,  # elements between B[k, j] and B[k, j + 1]
    stride_cm,  # elements between C[i, j] and C[i + 1, j]
    stride_cn,  # elements between C[i, j] and C[i, j + 1]
    ACC_DTYPE: tl.constexpr,  # accumulator: float32, or float64 for float64 input
    INPUT_PRECISION: tl.constexpr,  # float32 input: "tf32" (tensor cores) or "ieee" (exact products)
    BLOCK_M: tl.constexpr,  # rows of the C tile
    BLOCK_N: tl.constexpr,  # columns of the C tile
    BLOCK_K: tl.constexpr,  # step along K: columns of the A tile, rows of the B tile
    GROUP_M: tl.constexpr,  # tile rows per group in the program order (see grouped_tile)
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    # Addresses of the first A and B tiles. Offsets are 64-bit: row * stride passes 2**31 once a
    # matrix holds more than 2**31 elements, and 32-bit arithmetic would wrap around silently.
    a_ptrs = a_ptr + rows.to(tl.int64)[:, None] * stride_am + ks.to(tl.int64)[None, :] * stride_ak
    b_ptrs = b_ptr + ks.to(tl.int64)[:, None] * stride_bk + cols.to(tl.int64)[None, :] * stride_bn
    a_step = tl.cast(BLOCK_K, tl.int64) * stride_ak  # distance to the next A tile, also 64-bit
    b_step = tl.cast(BLOCK_K, tl.int64) * stride_bk
    # A float32 accumulator even for float16/bfloat16 input: summing K products in 16 bits would
    # lose about log2(K) bits. tl.dot multiplies 16-bit tiles and adds into it in float32.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
    for k in range(0, K, BLOCK_K):
        # Masks keep the edge tiles inside the matrices: rows past M, columns past N and the
        # last partial step along K (K need not be a multiple of BLOCK_K) read as 0, and zeros
        # add nothing to the dot products.
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < K - k) & (cols[None, :] < N), other=0.0)
        acc = tile_dot(a, b, acc, INPUT_PRECISION)
        a_ptrs += a_step
        b_ptrs += b_step
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + cols.to(tl.int64)[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@autotuned
@triton.jit
def matmul_block_ptr_kernel(
    a_ptr,  # A, (M, K), any strides
    b_ptr,  # B, (K, N), any strides
    c_ptr,  # C, (M, N), written here, any strides
    M,  # rows of A and C
    N,  # columns of B and C
    K,  # columns of A, rows of B
    stride_am,  # elements between A[i, k] and A[i + 1, k]
    stride_ak,  # elements between A[i, k] and A[i, k + 1]
    stride_bk,  # elements between B[k, j] and B[k + 1, j]
    stride_bn,  # elements between B[k, j] and B[k, j + 1]
    stride_cm,  # elements between C[i, j] and C[i + 1, j]
    stride_cn,  # elements between C[i, j] and C[i, j + 1]
    ACC_DTYPE: tl.constexpr,  # accumulator: float32, or float64 for float64 input
    INPUT_PRECISION: tl.constexpr,  # float32 input: "tf32" or "ieee"
    BLOCK_M: tl.constexpr,  # rows of the C tile
    BLOCK_N: tl.constexpr,  # columns of the C tile
    BLOCK_K: tl.constexpr,  # step along K
    GROUP_M: tl.constexpr,  # tile rows per group in the program order
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    # A block pointer carries the whole description of a tile: the matrix's base, shape and
    # strides (kept as 64-bit numbers), the block's current offsets and its shape. `order` lists
    # the dimensions from fastest- to slowest-varying in memory; it is a layout hint only.
    a_block = tl.make_block_ptr(
        a_ptr, shape=(M, K), strides=(stride_am, stride_ak), offsets=(pid_m * BLOCK_M, 0),
        block_shape=(BLOCK_M, BLOCK_K), order=(1, 0),
    )
    b_block = tl.make_block_ptr(
        b_ptr, shape=(K, N), strides=(stride_bk, stride_bn), offsets=(0, pid_n * BLOCK_N),
        block_shape=(BLOCK_K, BLOCK_N), order=(1, 0),
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
    for _ in range(0, K, BLOCK_K):
        # boundary_check names the dimensions to check against `shape`; what lies outside
        # reads as zero (padding_option). No masks to build by hand.
        a = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc = tile_dot(a, b, acc, INPUT_PRECISION)
        # The block pointer is a value: advance returns a new one moved by (rows, columns).
        a_block = tl.advance(a_block, (0, BLOCK_K))
        b_block = tl.advance(b_block, (BLOCK_K, 0))
    c_block = tl.make_block_ptr(
        c_ptr, shape=(M, N), strides=(stride_cm, stride_cn), offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
        block_shape=(BLOCK_M, BLOCK_N), order=(1, 0),
    )
    tl.store(c_block, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


# ----------------------------------------------------------------------------------------------
# Block pointers and tensor descriptors
#
# Both describe a matrix by base, shape and strides and hand out rectangular blocks of it, so a
# kernel written with one reads almost like the other. They differ in five ways.
#
# Who holds the position. A block pointer (tl.make_block_ptr) is a moving cursor: it holds base,
# shape, strides, block shape AND the current offsets; `tl.load(block)` reads the block at those
# offsets and `tl.advance(block, (0, BLOCK_K))` returns a cursor moved along. A tensor
# descriptor (tl.make_tensor_descriptor) holds base, shape, strides and block shape but no
# position: every `desc.load([row, col])` and `desc.store([row, col], tile)` names the block's
# first element explicitly, so the loop keeps a plain coordinate (k below) instead of a cursor.
#
# Boundaries. With a block pointer you say which dimensions to check (boundary_check) and what
# to read outside (padding_option); an unchecked dimension is trusted to stay in range. A
# descriptor always checks every dimension against its shape: reads outside give zeros (or
# NaN, if asked), writes outside are dropped. Edge tiles need nothing from the kernel.
#
# Alignment. A block pointer takes any strides: it is compiled into the same address
# arithmetic and masks as the "pointer" kernel, so transposed and sliced views work. A
# descriptor mirrors the hardware's copy descriptor and takes only: a 16-byte aligned base, a
# last stride of 1 (rows contiguous; hence `strides=[stride, 1]` below), every other stride a
# multiple of 16 bytes (K and N multiples of 8 for 16-bit types, of 4 for float32), block
# dimensions that are powers of two, the last one at least 16 bytes. On an H200 with Triton 3.6
# a descriptor that broke these rules returned wrong numbers with no error, so the wrapper
# checks them (common.descriptor_unsupported) and refuses with a ValueError; `matmul` then takes
# the pointer kernel, which handles any layout.
#
# Hardware. On Hopper and later GPUs a descriptor load is one TMA instruction: a single thread
# asks the tensor memory accelerator to copy a whole tile from device memory into shared
# memory, and the copy engine computes the addresses and checks the bounds. No registers hold
# per-element addresses, and with num_stages > 1 Triton overlaps these copies with the tensor
# cores' work. The descriptor itself is built at run time in a little global scratch memory,
# which is why the launch needs triton.set_allocator (common.set_descriptor_allocator). On older
# GPUs and in the interpreter a descriptor becomes ordinary masked loads, and block pointers
# become ordinary loads everywhere: they never reach TMA in current Triton. Measured on an H200
# (Triton 3.6), the three kernels reach about the same speed with 16-bit inputs at their best
# configs, since the pointer kernel's asynchronous copies pipeline well too; TMA's gain is fewer
# instructions and registers spent on addresses, which matters more in bigger kernels. With
# float32 under TF32 the descriptor was slower (see "A persistent kernel" below).
#
# History. Block pointers came first; tensor descriptors replaced them. Triton 3.7 warns on
# block pointers, 3.8 emulates them with pointer arithmetic, and 3.9 removes them
# (NotImplementedError at compile time), so this file leaves "block_ptr" out of VARIANTS where
# they do not run. Porting is mechanical: make_block_ptr becomes make_tensor_descriptor without
# `offsets` and `order` (and with a last stride of 1), tl.load(block, boundary_check=...)
# becomes desc.load([row, col]), and tl.advance becomes arithmetic on the coordinates.
# ----------------------------------------------------------------------------------------------


@autotuned
@triton.jit
def matmul_descriptor_kernel(
    a_ptr,  # A, (M, K), rows contiguous, 16-byte aligned
    b_ptr,  # B, (K, N), rows contiguous, 16-byte aligned
    c_ptr,  # C, (M, N), written here, rows contiguous, 16-byte aligned
    M,  # rows of A and C
    N,  # columns of B and C
    K,  # columns of A, rows of B
    stride_am,  # elements between rows of A: a multiple of 16 bytes
    stride_bk,  # elements between rows of B: a multiple of 16 bytes
    stride_cm,  # elements between rows of C: a multiple of 16 bytes
    ACC_DTYPE: tl.constexpr,  # accumulator: float32, or float64 for float64 input
    INPUT_PRECISION: tl.constexpr,  # float32 input: "tf32" or "ieee"
    BLOCK_M: tl.constexpr,  # rows of the C tile
    BLOCK_N: tl.constexpr,  # columns of the C tile
    BLOCK_K: tl.constexpr,  # step along K
    GROUP_M: tl.constexpr,  # tile rows per group in the program order
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    # No offsets here: a descriptor describes the whole matrix; the last stride must be 1.
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DTYPE)
    for k in range(0, K, BLOCK_K):
        # Explicit coordinates of each block's first element; the part of an edge block that
        # lies past M, N or K reads as zero.
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([k, pid_n * BLOCK_N])
        acc = tile_dot(a, b, acc, INPUT_PRECISION)
    # The part of an edge tile past M or N is not written.
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


# ----------------------------------------------------------------------------------------------
# A persistent kernel
#
# The kernels above launch one program per C tile: 512 programs of 128 x 256 at 4096^3, which
# run in waves of 132 (one per SM, as each needs most of an SM's shared memory). Between waves
# an SM idles while a finished program's C tile drains and a new program's first tiles arrive.
# A persistent kernel launches one program per SM instead and lets each walk the C tiles
# start, start + PROGRAMS, start + 2 * PROGRAMS, ... in the same grouped order. Written with
# tl.range(..., flatten=True), the tile loop and the K loop become one software pipeline: the
# next tile's first TMA copies are issued while the current tile's last products run, and its C
# tile is stored while the tensor cores go on. This is the design of Triton's tutorial
# 09-persistent-matmul. On an H200 (Triton 3.6, `make bench`) it runs float16 and bfloat16 at 99%
# of cuBLAS at 8192^3, where the three kernels above reach 95-98%. At 4096^3 the chip's power
# limit sets much of the pace: persistent 98-101% of cuBLAS, the other three 93-99%.
#
# float32 under TF32 needs one more step. The tensor cores read float32 tiles from shared memory
# only K-contiguous. A's tiles are (A's rows run along K); B's, from a row-major B, run along N,
# and the compiler then copies every B tile into a K-contiguous buffer on every K step, through
# registers: on an H200 that held the descriptor kernel to 82-87 TFLOP/s against cuBLAS's 352-356. So
# under TF32 the wrapper first writes B^T, (N, K) and contiguous, with transpose_kernel (one pass
# over B), and the kernel loads (BLOCK_N, BLOCK_K) boxes of it and multiplies by their `.T`, a
# view the tensor cores read K-major: 332 TFLOP/s at 8192^3, transpose included (96% of cuBLAS).
# ----------------------------------------------------------------------------------------------
if common.INTERPRETED:
    PERSISTENT_CONFIGS = [
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4, "EPILOGUE_SUBTILE": True}, num_warps=4)
    ]
else:
    PERSISTENT_CONFIGS = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "EPILOGUE_SUBTILE": subtile},
                      num_stages=stages, num_warps=warps)
        for bm, bn, bk, subtile, stages, warps in (
            (128, 256, 64, False, 3, 8),  # 16-bit: the fastest on an H200 at 4096^3 and 8192^3
            (128, 256, 32, True, 3, 8),  # float32: its C tile is halved for the store to fit
            (128, 128, 64, False, 4, 8),
            (128, 128, 32, False, 4, 8),
            (64, 64, 32, False, 3, 4),  # small matrices, and float64
        )
    ]  # fmt: skip


@triton.jit
def transpose_kernel(
    src_ptr,  # B, (K, N), any strides
    dst_ptr,  # B^T, (N, K), rows contiguous, written here
    K,  # rows of B
    N,  # columns of B
    stride_src_k,  # elements between B[k, j] and B[k + 1, j]
    stride_src_n,  # elements between B[k, j] and B[k, j + 1]
    stride_dst_n,  # elements between rows of B^T (K, or more when rows are padded)
    BLOCK: tl.constexpr,  # side of the square tile each program moves
):
    # A 1-D grid (axis 1 of a CUDA grid stops at 65535 programs): program -> (tile row, tile column).
    tiles_n = tl.cdiv(N, BLOCK)
    ks = (tl.program_id(0) // tiles_n) * BLOCK + tl.arange(0, BLOCK)
    ns = (tl.program_id(0) % tiles_n) * BLOCK + tl.arange(0, BLOCK)
    tile = tl.load(
        src_ptr + ks.to(tl.int64)[:, None] * stride_src_k + ns.to(tl.int64)[None, :] * stride_src_n,
        mask=(ks[:, None] < K) & (ns[None, :] < N),
    )
    # tl.trans reshuffles the tile between threads (through shared memory), so that both the
    # loads above and the stores below run along contiguous rows.
    tl.store(
        dst_ptr + ns.to(tl.int64)[:, None] * stride_dst_n + ks[None, :],
        tl.trans(tile),
        mask=(ns[:, None] < N) & (ks[None, :] < K),
    )


@autotuned_with(PERSISTENT_CONFIGS)
@triton.jit
def matmul_persistent_kernel(
    a_ptr,  # A, (M, K), rows contiguous, 16-byte aligned
    b_ptr,  # B, (K, N), rows contiguous, 16-byte aligned; with B_TRANSPOSED, B^T, (N, K), likewise
    c_ptr,  # C, (M, N), written here, rows contiguous, 16-byte aligned
    M,  # rows of A and C
    N,  # columns of B and C
    K,  # columns of A, rows of B
    stride_am,  # elements between rows of A: a multiple of 16 bytes
    stride_b,  # elements between rows of B (or of B^T): a multiple of 16 bytes
    stride_cm,  # elements between rows of C: a multiple of 16 bytes
    PROGRAMS: tl.constexpr,  # programs launched (one per SM): the stride of the walk over tiles
    B_TRANSPOSED: tl.constexpr,  # b_ptr holds B^T (the TF32 path, see above)
    ACC_DTYPE: tl.constexpr,  # accumulator: float32, or float64 for float64 input
    INPUT_PRECISION: tl.constexpr,  # float32 input: "tf32" or "ieee"
    BLOCK_M: tl.constexpr,  # rows of the C tile
    BLOCK_N: tl.constexpr,  # columns of the C tile
    BLOCK_K: tl.constexpr,  # step along K
    GROUP_M: tl.constexpr,  # tile rows per group in the walk (see grouped_tile)
    EPILOGUE_SUBTILE: tl.constexpr,  # store C in two halves of BLOCK_N / 2 columns (less shared memory)
):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    if B_TRANSPOSED:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_b, 1], block_shape=[BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_b, 1], block_shape=[BLOCK_K, BLOCK_N])
    if EPILOGUE_SUBTILE:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N // 2])
    else:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    # The store uses its own tile counter, as in Triton's tutorial: the pipeliner moves the next
    # tile's loads ahead of this tile's store, and one shared counter would tie them together.
    store_tile = tl.program_id(0) - PROGRAMS
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS, flatten=True):
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
        if EPILOGUE_SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(c_desc.dtype))
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


# ----------------------------------------------------------------------------------------------
# Launch wrappers
# ----------------------------------------------------------------------------------------------


def validate(a, b, out=None):
    """Check a (M, K) and b (K, N) (and out, if given); return (M, N, K) or raise naming the problem."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"matmul: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"matmul: {name} has dtype {t.dtype}; supported: float16, bfloat16, float32, float64")
        if t.dim() != 2:
            raise ValueError(f"matmul: {name} must be 2-D, got shape {tuple(t.shape)}")
        if t.device.type != common.DEVICE.type:
            raise ValueError(f"matmul: {name} is on {t.device}, expected a {common.DEVICE.type} tensor")
    if a.dtype != b.dtype:
        raise TypeError(f"matmul: a and b must have one dtype, got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"matmul: a is on {a.device} and b on {b.device}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"matmul: a {tuple(a.shape)} and b {tuple(b.shape)} do not chain: {a.shape[1]} != {b.shape[0]}"
        )
    m, k = a.shape
    n = b.shape[1]
    if out is not None:
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"matmul: out must be a torch.Tensor, got {type(out).__name__}")
        if out.shape != (m, n) or out.dtype != a.dtype or out.device != a.device:
            raise ValueError(
                f"matmul: out is {tuple(out.shape)} {out.dtype} on {out.device}, "
                f"expected {(m, n)} {a.dtype} on {a.device}"
            )
    return m, n, k


def input_precision(dtype):
    """The tl.dot input precision that matches torch.matmul for this dtype right now.

    For float32, PyTorch's own switch decides, as it does for torch.matmul:
    torch.get_float32_matmul_precision() "highest" (the default) keeps full float32 products
    ("ieee"); "high" and "medium" allow TF32, tensor-core products of inputs rounded to 10
    mantissa bits ("tf32"), about 8 times faster on an H200. 16-bit and float64 inputs ignore it.
    """
    if dtype == torch.float32 and torch.get_float32_matmul_precision() != "highest":
        return "tf32"
    return "ieee"


def prepare(a, b, out):
    """Validate, allocate C and handle the cases that need no kernel; return (c, launch_needed)."""
    m, n, k = validate(a, b, out)
    c = torch.empty((m, n), dtype=a.dtype, device=a.device) if out is None else out
    if c.numel() == 0:
        return c, False
    if k == 0:
        c.zero_()  # an empty sum
        return c, False
    return c, True


def launch_args(dtype):
    """The keyword arguments every kernel takes besides pointers, sizes and strides."""
    return {
        "ACC_DTYPE": tl.float64 if dtype == torch.float64 else tl.float32,
        "INPUT_PRECISION": input_precision(dtype),
    }


def tile_grid(m, n):
    """One program per C tile, in a 1-D grid that grouped_tile maps to (row, column)."""
    return lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)


def launch_any_strides(kernel, a, b, out):
    """Run the pointer or block-pointer kernel, which take the same arguments and any strides."""
    c, launch_needed = prepare(a, b, out)
    if launch_needed:
        (m, k), n = a.shape, b.shape[1]
        kernel[tile_grid(m, n)](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), **launch_args(a.dtype))
    return c


def matmul_pointer(a, b, out=None):
    """a @ b with pointer arithmetic and masks: any strides, any sizes."""
    return launch_any_strides(matmul_pointer_kernel, a, b, out)


def matmul_block_ptr(a, b, out=None):
    """a @ b with block pointers: any strides, any sizes, where this Triton still has them."""
    return launch_any_strides(matmul_block_ptr_kernel, a, b, out)


def descriptor_problem(a, b, c):
    """Why a tensor descriptor cannot describe a, b or c, or None when it can (b=None: not asked)."""
    for name, t in (("a", a), ("b", b), ("the output", c)):
        if t is None:
            continue
        reason = common.descriptor_unsupported(t)
        if reason is not None:
            return f"{name} {tuple(t.shape)} {t.dtype} strides {t.stride()}: {reason}"
    return None


def matmul_descriptor(a, b, out=None):
    """a @ b with tensor descriptors (TMA on Hopper); a, b and the output must meet their alignment rules."""
    c, launch_needed = prepare(a, b, out)
    if launch_needed:
        problem = descriptor_problem(a, b, c)
        if problem is not None:
            raise ValueError(f"matmul_descriptor: a tensor descriptor cannot describe {problem}")
        (m, k), n = a.shape, b.shape[1]
        common.set_descriptor_allocator()
        matmul_descriptor_kernel[tile_grid(m, n)](
            a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), **launch_args(a.dtype)
        )
    return c


# Square tiles of B per transpose program: 64 x 64 float32 is 16 KB, read and written in rows.
TRANSPOSE_BLOCK = 64


def programs_per_device():
    """The persistent kernel's grid: one program per SM (three under the interpreter, to walk tiles)."""
    if common.INTERPRETED:
        return 3
    return common.multiprocessor_count(common.DEVICE)


def k_major_b(b):
    """B^T as an (N, K) tensor with contiguous rows, for the TF32 path of the persistent kernel.

    A b that is itself a transposed view (b = w.T, as in x @ w.T) is used as it lies; any other
    layout is copied by transpose_kernel into rows padded to 16 bytes, as a descriptor needs.
    """
    k, n = b.shape
    if common.descriptor_unsupported(b.T) is None:
        return b.T
    bt = torch.empty((n, triton.cdiv(k, 4) * 4), dtype=b.dtype, device=b.device)[:, :k]
    grid = (triton.cdiv(k, TRANSPOSE_BLOCK) * triton.cdiv(n, TRANSPOSE_BLOCK),)
    transpose_kernel[grid](b, bt, k, n, *b.stride(), bt.stride(0), BLOCK=TRANSPOSE_BLOCK)
    return bt


def persistent_problem(a, b, c):
    """Why the persistent kernel cannot take a, b and c, or None. a and c must meet the descriptor
    rules, and so must b, except under TF32, where the kernel reads B^T (see k_major_b)."""
    return descriptor_problem(a, None if input_precision(a.dtype) == "tf32" else b, c)


def matmul_persistent(a, b, out=None):
    """a @ b with the persistent kernel; see persistent_problem for the layouts it takes."""
    c, launch_needed = prepare(a, b, out)
    if launch_needed:
        tf32 = input_precision(a.dtype) == "tf32"
        problem = persistent_problem(a, b, c)
        if problem is not None:
            raise ValueError(f"matmul_persistent: a tensor descriptor cannot describe {problem}")
        (m, k), n = a.shape, b.shape[1]
        b_arg = k_major_b(b) if tf32 else b
        programs = programs_per_device()
        common.set_descriptor_allocator()
        matmul_persistent_kernel[(programs,)](
            a, b_arg, c, m, n, k, a.stride(0), b_arg.stride(0), c.stride(0),
            PROGRAMS=programs, B_TRANSPOSED=tf32, **launch_args(a.dtype),
        )
    return c


VARIANTS = {"pointer": matmul_pointer}
UNAVAILABLE = {}
if common.block_pointers_unavailable() is None:
    VARIANTS["block_ptr"] = matmul_block_ptr
else:
    UNAVAILABLE["block_ptr"] = common.block_pointers_unavailable()
VARIANTS["descriptor"] = matmul_descriptor
VARIANTS["persistent"] = matmul_persistent

KERNELS = {
    "pointer": matmul_pointer_kernel,
    "block_ptr": matmul_block_ptr_kernel,
    "descriptor": matmul_descriptor_kernel,
    "persistent": matmul_persistent_kernel,
}


def matmul(a, b, out=None):
    """C = a @ b for a (M, K) and b (K, N) of one floating dtype, any strides; C has that dtype.

    float32 follows torch.get_float32_matmul_precision(), as torch.matmul does. float16,
    bfloat16 and TF32 float32 run the persistent kernel when a, the output (and, outside TF32,
    b) meet the descriptor rules: on an H200 it ran at 98 to 101% of cuBLAS in 16 bits and 93 to
    96% in TF32 at 4096^3 and 8192^3, the fastest variant on all of them. Anything else runs the
    pointer kernel, which takes any layout: exact float32 ("highest") and float64 go there too,
    as their dots do not use the tensor cores' fast paths that the persistent design feeds.
    """
    m, n, _ = validate(a, b, out)
    c = torch.empty((m, n), dtype=a.dtype, device=a.device) if out is None else out
    fast_dot = a.dtype in (torch.float16, torch.bfloat16) or input_precision(a.dtype) == "tf32"
    if fast_dot and c.numel() and a.numel() and b.numel() and persistent_problem(a, b, c) is None:
        return matmul_persistent(a, b, out=c)
    return matmul_pointer(a, b, out=c)


def reference(a, b):
    """What matmul computes, in PyTorch."""
    return a @ b


# ----------------------------------------------------------------------------------------------
# Check and benchmark
# ----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def float32_matmul_precision(precision):
    """Set torch's float32 matmul precision for a while ("highest", "high", "medium"; None: leave it)."""
    before = torch.get_float32_matmul_precision()
    if precision is not None:
        torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def product_roundoff(dtype):
    """Relative error of one product in the dot, for common.assert_close.

    16-bit products are exact in the float32 accumulator (11 + 11 significant bits fit in 24),
    and float32 products are exact under "ieee". TF32 keeps 10 of the 23 mantissa bits of each
    input: rounded, each input is off by up to 2**-11, truncated (as tensor cores may do) by up
    to 2**-10, so a product is off by up to 2**-9. The interpreter ignores TF32 and computes
    exactly; the looser bound still holds there.
    """
    return 2.0**-9 if input_precision(dtype) == "tf32" else 0.0


def random_matrix(rows, cols, dtype, transposed=False):
    """torch.randn (rows, cols); with transposed=True a transposed view of a (cols, rows) tensor."""
    if transposed:
        return torch.randn(cols, rows, device=common.DEVICE).to(dtype).T
    return torch.randn(rows, cols, device=common.DEVICE).to(dtype)


def check(m, n, k, dtype=torch.float32, precision=None, transpose_a=False, transpose_b=False, variants=None):
    """Compare every variant (and matmul) with a float64 reference on fresh random inputs.

    Returns the names checked; variants that refuse the input (a descriptor on a transposed
    view, say) with a ValueError are skipped. Raises AssertionError naming the worst element.
    """
    names = list(VARIANTS) if variants is None else list(variants)
    checked = []
    with float32_matmul_precision(precision):
        a = random_matrix(m, k, dtype, transpose_a)
        b = random_matrix(k, n, dtype, transpose_b)
        expected = a.double() @ b.double()
        magnitude = a.double().abs() @ b.double().abs()
        for name in names + ["matmul"]:
            fn = matmul if name == "matmul" else VARIANTS[name]
            out = torch.full((m, n), float("nan"), dtype=dtype, device=common.DEVICE)
            try:
                fn(a, b, out=out)
            except ValueError:
                if name == "matmul":
                    raise
                continue
            what = f"{name} {m}x{n}x{k} {dtype} precision={torch.get_float32_matmul_precision()}"
            common.assert_close(out, expected, magnitude, k, what, product_roundoff(dtype))
            checked.append(name)
    return checked


def chosen_config(name):
    """The config the autotuner picked last for a variant's kernel, as one line."""
    kernel = KERNELS[name]
    config = getattr(kernel, "best_config", None) or kernel.configs[0]
    sizes = ", ".join(f"{key}={value}" for key, value in config.kwargs.items())
    return f"{sizes}, num_warps={config.num_warps}, num_stages={config.num_stages}"


# Large matmuls hold an H200 at its 700 W power limit, and the SM clock then depends on what ran
# just before: from an idle GPU, cuBLAS ran 4096^3 float16 at 686 TFLOP/s, and after a second
# of matmuls both it and the persistent kernel ran near 635 (results/NOTES.md, item 28).
# Whatever was timed first after a pause (compiling, autotuning, a lighter example) gained up
# to 8%. So each variant runs for POWER_SETTLE_MS untimed before its timing starts. Even settled,
# one median moves by up to 4% from one timing to the next, as the clock hunts around the limit;
# so on a GPU the variants are timed in BENCH_ROUNDS interleaved rounds, each keeping the median
# of its rounds.
POWER_SETTLE_MS = 1000
BENCH_ROUNDS = 1 if common.INTERPRETED else 3


def benchmark(m, n, k, dtype=torch.float16, precision="highest"):
    """Time every variant that takes row-major inputs of this size, and torch.matmul."""
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    rows = []
    with float32_matmul_precision(precision):
        a = random_matrix(m, k, dtype)
        b = random_matrix(k, n, dtype)
        case = f"{m}x{n}x{k} {str(dtype).removeprefix('torch.')}"
        if dtype == torch.float32:
            case += f" {input_precision(dtype)}"
        flops = 2 * m * n * k  # one multiply and one add per term of each dot product
        runs = {"torch": lambda: reference(a, b)}
        for name, fn in VARIANTS.items():
            problem = {"descriptor": descriptor_problem, "persistent": persistent_problem}.get(name)
            if problem and problem(a, b, torch.empty(m, n, dtype=dtype, device=a.device)):
                continue  # sizes a descriptor cannot take (N not a multiple of 16 bytes, say)
            runs[name] = lambda fn=fn: fn(a, b)
        times = {name: [] for name in runs}
        for _ in range(BENCH_ROUNDS):
            for name, run in runs.items():
                times[name].append(common.bench(run, warmup_ms=POWER_SETTLE_MS))
        torch_ms = statistics.median(times["torch"])
        for name, ms_each_round in times.items():
            ms = statistics.median(ms_each_round)
            rows.append({
                "case": case, "variant": name, "ms": ms, "throughput": common.tflops(flops, ms),
                "unit": "TFLOP/s", "% of ceiling": None, "x torch": torch_ms / ms,
            })
    return rows


SWEEP = [
    {"m": size, "n": size, "k": size, "dtype": dtype, "precision": "high"}
    for size in (4096, 8192)
    for dtype in ("float16", "bfloat16", "float32")
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = 256 if common.INTERPRETED else 4096
    parser.add_argument("--m", type=int, default=default, help=f"rows of A and C (default {default})")
    parser.add_argument("--n", type=int, default=default, help=f"columns of B and C (default {default})")
    parser.add_argument("--k", type=int, default=default, help=f"columns of A, rows of B (default {default})")
    parser.add_argument("--dtype", default="float16", choices=[str(d).removeprefix("torch.") for d in SUPPORTED_DTYPES])
    parser.add_argument(
        "--precision", default=torch.get_float32_matmul_precision(), choices=["highest", "high", "medium"],
        help="torch.set_float32_matmul_precision for both torch.matmul and the kernels; "
        "float32 only: highest = exact float32 products, high/medium = TF32 (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)

    print(common.describe_run())
    for name, reason in UNAVAILABLE.items():
        print(f"variant {name!r} left out: {reason}")
    checked = check(args.m, args.n, args.k, dtype, args.precision)
    print(f"check {args.m}x{args.n}x{args.k} {args.dtype}: {', '.join(checked)} match a float64 reference")
    print()
    rows = benchmark(args.m, args.n, args.k, dtype, args.precision)
    common.print_table(rows, common.RESULT_COLUMNS)
    print()
    for name in VARIANTS:
        if any(row["variant"] == name for row in rows):
            print(f"{name} config: {chosen_config(name)}")
    print()
    print(
        "TFLOP/s = 2*M*N*K / time. 'x torch' is torch.matmul's time (cuBLAS on a GPU) over the kernel's: "
        "1.0 is parity. pointer, block_ptr and descriptor run the same tiles and tl.dot and differ only in "
        "how the tiles reach shared memory; persistent keeps one program per SM walking many tiles. On an "
        "H200 (Triton 3.6) the first three reached 93 to 99% of cuBLAS in float16 and bfloat16 at 4096^3 "
        "and 8192^3 and about 40% in float32 with TF32 (a row-major B gives TF32 tensor-core instructions "
        "the wrong layout); persistent reached 98 to 101% in 16 bits and 93 to 96% in TF32, where it reads "
        "a transposed copy of B. Under the interpreter the times show only the CPU's emulation."
    )


if __name__ == "__main__":
    main()
