"""Lesson 02, practice: four tiled kernels to write, each checked on the spot.

Read main.py's Part 1 and Part 2's (group), and fused.py's
(epilogue) (Part 3) first; for exercise 4, stream_k.py (Part 5). Then write each exercise's
code where it says "Your code", and run

    python 02_matmul_tiled/exercises.py        # all four
    python 02_matmul_tiled/exercises.py -e 2   # one

Each exercise gets "passed" or "not yet", and for "not yet" what is
wrong: the first wrong elements, the elements no program wrote, and
any store that left its tensor (its offsets, and which program), or
load whose value reached the output. It runs on a CPU too (Triton's
interpreter). `-e N --draw FILE.png` draws which program wrote
which element (a grid of one axis); solutions.py holds worked
answers (`--solutions`). The inputs are float16: tl.dot multiplies
them exactly and adds in float32.
"""

import sys
from pathlib import Path

import torch

# The repository's root, for common and tools.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton, which it configures)
import lesson_loader  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from tools import practice  # noqa: E402

# Part 5, for exercise 4's run_start
stream_k = lesson_loader.load_lesson(Path(__file__).resolve().parent, "stream_k.py")
run_start = stream_k.run_start


def random(*shape):  # a random float16 tensor where the kernels run
    return torch.randn(shape, device=common.DEVICE).half()


# ## Exercise 1. A ReLU epilogue (main.py: Part 1, and fused.py's
# (epilogue))
# Compute C = relu(A @ B): simple_matmul_kernel, and before the
# store acc = tl.maximum(acc, 0.0). The launch is written: 32 x 32
# tiles of C, 16 values of k a step.
def reference_1(a, b):
    return torch.relu(a @ b)


@triton.jit
def relu_matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    # Your code: simple_matmul_kernel's rows, cols, ks, acc and K
    # loop, then the ReLU, then the masked store.
    pass


def launch_1(a, b, out):
    (M, K), N = a.shape, b.shape[1]
    grid = (triton.cdiv(M, 32) * triton.cdiv(N, 32),)
    strides = (*a.stride(), *b.stride(), *out.stride())
    relu_matmul_kernel[grid](a, b, out, M, N, K, *strides, BLOCK_M=32, BLOCK_N=32, BLOCK_K=16)


# ## Exercise 2. A batch of products on a grid's second axis
# (main.py: Part 1)
# For a (batch, M, K) and b (batch, K, N), compute out[i] = a[i] @
# b[i] for every i. Launch a grid of two axes: (tiles of C, batch).
# tl.program_id(1) is then the batch index: move a_ptr, b_ptr and
# c_ptr by it times their first strides, and the rest is Part 1's
# kernel. Write the kernel's body and the launch.
def reference_2(a, b):
    return a @ b


@triton.jit
def batched_matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_ab, stride_am, stride_ak,  # a's strides: batch, row, column
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    batch = tl.program_id(1)
    # Your code.
    pass


def launch_2(a, b, out):
    # Your code: batched_matmul_kernel[grid](...), grid of two axes.
    raise NotImplementedError("exercise 2: write the launch")


# ## Exercise 3. Grouped order, written by you (main.py: Part 2's
# (group))
# The kernel below is Part 1's, but it asks tile_of(pid, ...) which
# tile program pid computes. Write tile_of: grouped order, GROUP_M
# tile rows down, then right, the last group maybe shorter (as
# grouped_tile, without copying it: try first). Any order passes if
# every tile is computed once; `-e 3 --draw FILE.png` shows yours.
def reference_3(a, b):
    return a @ b


@triton.jit
def tile_of(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # Your code: return (tile row, tile column) of program pid.
    return 0, 0


@triton.jit
def grouped_matmul_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):  # fmt: skip
    pid_m, pid_n = tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a_offsets = rows[:, None] * stride_am + (k + ks)[None, :] * stride_ak
        b_offsets = (k + ks)[:, None] * stride_bk + cols[None, :] * stride_bn
        a_mask = (rows[:, None] < M) & ((k + ks)[None, :] < K)
        b_mask = ((k + ks)[:, None] < K) & (cols[None, :] < N)
        a = tl.load(a_ptr + a_offsets, mask=a_mask, other=0.0)
        b = tl.load(b_ptr + b_offsets, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc)
    c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def launch_3(a, b, out):
    (M, K), N = a.shape, b.shape[1]
    grid = (triton.cdiv(M, 16) * triton.cdiv(N, 16),)
    strides = (*a.stride(), *b.stride(), *out.stride())
    grouped_matmul_kernel[grid](
        a, b, out, M, N, K, *strides, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=3
    )


# ## Exercise 4. Stream-K's owner (stream_k.py: (plan), (fixup)
# and the simple kernel)
# The kernel below is simple_stream_k_kernel for contiguous
# matrices, but its owner asks add_partials for the other
# programs' partials of its tile. Write add_partials: for
# programs pid - 1, pid - 2, ... whose runs reach into the tile,
# wait for the program's flag (wait_for_flag), then add its
# partial, loaded from L2 (cache_modifier=".cg"). Stop after the
# first program whose run starts at or before tile_start. The
# launch runs schedule(2, 4, 5), stream_k.py's example: tile 0
# has one partial, tile 1 two. A wrong tile 1 and a right tile 0
# means a second partial was missed. Elements reported NaN:
# a partial that no program stored was added (partials start as
# NaN).
def reference_4(a, b):
    return a @ b


@triton.jit
def wait_for_flag(flag_ptr):
    """Waits until the flag is 1 and sets it back to 0, as the
    simple kernel's owner does. It gives up after 1000 tries, so
    that a wait for a flag no program sets ends."""
    tries = 0
    while (tl.atomic_cas(flag_ptr, 1, 0, sem="acquire") != 1) & (tries < 1000):
        tries += 1


@triton.jit
def add_partials(
    acc, pid, first, tile_start, iterations, partial_ptr, flag_ptr, in_slot,
    PROGRAMS: tl.constexpr, SLOT: tl.constexpr,  # SLOT: elements in a partial
):  # fmt: skip
    # Your code: acc plus the partials of programs pid - 1, ...
    return acc


@triton.jit
def owner_stream_k_kernel(
    a_ptr, b_ptr, c_ptr, partial_ptr, flag_ptr, M, N, K,
    PROGRAMS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    steps = tl.cdiv(K, BLOCK_K)
    iterations = tl.cdiv(M, BLOCK_M) * tiles_n * steps
    start = run_start(pid, iterations, PROGRAMS)
    until = run_start(pid + 1, iterations, PROGRAMS)
    in_slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    ks = tl.arange(0, BLOCK_K)
    while until > start:
        tile = (until - 1) // steps
        tile_start = tile * steps
        first = tl.maximum(tile_start, start)
        rows = tile // tiles_n * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile % tiles_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for step in range(first - tile_start, until - tile_start):
            k = step * BLOCK_K + ks
            a_mask = (rows[:, None] < M) & (k[None, :] < K)
            b_mask = (k[:, None] < K) & (cols[None, :] < N)
            a = tl.load(a_ptr + rows[:, None] * K + k[None, :], mask=a_mask, other=0.0)
            b = tl.load(b_ptr + k[:, None] * N + cols[None, :], mask=b_mask, other=0.0)
            acc = tl.dot(a, b, acc)
        if until == tile_start + steps:  # this program owns the tile
            acc = add_partials(
                acc, pid, first, tile_start, iterations, partial_ptr, flag_ptr, in_slot,
                PROGRAMS, BLOCK_M * BLOCK_N,
            )  # fmt: skip
            c_mask = (rows[:, None] < M) & (cols[None, :] < N)
            c_offsets = rows[:, None] * N + cols[None, :]
            tl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
        else:  # a partial, and its flag
            tl.store(partial_ptr + pid * BLOCK_M * BLOCK_N + in_slot, acc)
            tl.debug_barrier()
            tl.atomic_xchg(flag_ptr + pid, 1, sem="release")
        until = first


def launch_4(a, b, out):
    (M, K), N = a.shape, b.shape[1]
    programs = 5
    # NaN in every slot: an added partial no program stored shows
    partials = torch.full((programs, 16 * 16), float("nan"), device=a.device)
    flags = torch.zeros(programs, dtype=torch.int32, device=a.device)
    owner_stream_k_kernel[(programs,)](
        a, b, out, partials, flags, M, N, K,
        PROGRAMS=programs, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16,
    )  # fmt: skip
    if flags.any():  # (the checker reports a Remark the launch returns)
        set_still = flags.nonzero().flatten().tolist()
        remark = f"no wait_for_flag for the flags of programs {set_still}: they stayed set"
        return practice.Remark(remark)


EXERCISES = [
    practice.Exercise(
        title="a ReLU epilogue",
        section="Part 1; fused.py's (epilogue)",
        inputs=lambda: dict(a=random(70, 24), b=random(24, 36)),  # 3 x 2 tiles: not square
        reference=reference_1,
        terms=24,
        launch=launch_1,
    ),
    practice.Exercise(
        title="a batch of products",
        section="Part 1",
        inputs=lambda: dict(a=random(3, 40, 24), b=random(3, 24, 36)),
        reference=reference_2,
        terms=24,
        launch=launch_2,
    ),
    practice.Exercise(
        title="grouped order",
        section="Part 2's (group)",
        inputs=lambda: dict(a=random(100, 24), b=random(24, 70)),  # 7 tile rows: a short group
        reference=reference_3,
        terms=24,
        launch=launch_3,
    ),
    practice.Exercise(
        title="stream-K's owner",
        section="stream_k.py's (plan), (fixup) and simple kernel",
        # 2 tiles (16 x 16) of 4 K steps (16 each): schedule(2, 4, 5)
        inputs=lambda: dict(a=random(16, 64), b=random(64, 32)),
        reference=reference_4,
        terms=64,
        launch=launch_4,
        strided=False,  # its kernel takes contiguous matrices
    ),
]


if __name__ == "__main__":
    sys.exit(practice.main(sys.modules[__name__]))
