"""A persistent matmul: lesson 02's Part 4, at cuBLAS's speed.

What you learn: five changes that take fused.py's kernel (Part
3, after main.py's Parts 1 and 2: read them first) to cuBLAS's
speed on an H100 or H200. Each change is a section below; then
comes the kernel, each change marked where it acts:

- (desc) tensor descriptors, which load a tile in one copy;
- (persist) one program per SM, each walking many tiles;
- (heuristics) the tile picked by a rule, not by timing;
- (halves) a float32 tile stored in two halves;
- (trans) transposed operands read where they lie.

Worked example of (persist): C has 8 tiles and the GPU has 3
SMs, so PROGRAMS = 3. Program p takes tiles p, p + 3, p + 6:

    program 0: tiles 0, 3, 6
    program 1: tiles 1, 4, 7
    program 2: tiles 2, 5

`python 02_matmul_tiled/persistent.py --draw walk.png` draws
such a walk (its right panel), from the kernel itself. Under
the interpreter on a CPU the kernel runs too, with 3 "SMs", and
its check against float64 passes as on a GPU.
"""

import functools
import sys
from pathlib import Path

import torch

# The repository's root holds common and lesson_loader.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton, which it configures)
import lesson_loader  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# fused.py beside this file (Part 3, which loads main.py):
# the persistent kernel calls its helpers as its kernel does.
HERE = Path(__file__).resolve().parent
fused = lesson_loader.load_lesson(HERE, "fused.py")
lesson = fused.lesson  # main.py: Parts 1 and 2
grouped_tile = lesson.grouped_tile  # (group)
add_bias, activate = fused.add_bias, fused.activate  # (epilogue)
input_precision = fused.input_precision  # (precision)


# ## (desc) Tensor descriptors: tiles without pointers or masks
# tl.make_tensor_descriptor(base, shape, strides, block_shape)
# describes a matrix once, inside the kernel.
# desc.load([row, col]) then reads the block that starts at
# that element. Past the matrix's edges it reads 0, so the
# kernel needs no masks; desc.store drops what lies past them.
# On an H100 each load is one copy by the TMA (the Tensor
# Memory Accelerator, a copy engine beside each SM), which
# frees the threads from computing addresses.
#
# A descriptor has rules. The base address must lie on a
# 16-byte boundary, the last stride must be 1, and the other
# strides must be multiples of 16 bytes. When one was broken,
# an H200 returned wrong numbers without an error. So the
# wrapper asks persistent_problem first (below, after (trans)).
#
# ## (persist) Persistent programs
# With one program per C tile, an SM idles after each program:
# the next one starts, and waits for its first loads. A
# persistent kernel starts one program per SM (PROGRAMS of
# them). Program p computes tiles p, p + PROGRAMS, and so on,
# in grouped order, as the worked example above shows.
#
# tl.range(start, end, step, flatten=True) is Triton's range
# with hints for the compiler. flatten=True merges the loop
# over tiles and the loop over K into one loop. The loads for
# the next tile's first K steps then start while this tile is
# still being stored.
#
# ## (heuristics) The tile, picked by a rule
# Timing every config picked worse tiles here when other work
# had run on the GPU just before. So a rule picks the tile:
# wide tiles (128 x 256) unless narrow ones (128 x 128) keep
# the programs 10% busier. Take C of 3072 x 3072 on 132 SMs:
# - 288 wide tiles take 3 turns of 132 programs: 73% busy;
# - 576 narrow tiles take 5 turns: 87% busy. Narrow wins.
def busy_share(M, N, programs, width):
    """The share of program turns that have a tile to compute,
    with C's tiles 128 x width."""
    tiles = triton.cdiv(M, 128) * triton.cdiv(N, width)
    turns = triton.cdiv(tiles, programs)
    return tiles / (turns * programs)


@functools.cache  # the rule runs once for each shape
def wide_tiles(M, N, programs):
    """Whether C's tiles are 128 x 256 rather than 128 x 128."""
    wide = busy_share(M, N, programs, 256)
    return 1.1 * wide >= busy_share(M, N, programs, 128)


# @triton.heuristics({"NAME": rule}) on a kernel sets the
# argument NAME to rule(args) at each launch, where args holds
# the launch's arguments by name. It is the kernel below.
#
# ## (halves) Storing C in halves
# A 128 x 256 float32 tile does not fit in the shared memory
# that is left for its store. Narrow tiles would fit, but ran
# 10% slower in TF32. So a float32 tile is stored in halves.
# Triton has no tile[:, :half]; this does the same:
# - reshape the (R, 256) tile to (R, 2, 128);
# - permute it to (R, 128, 2);
# - tl.split splits the last axis of 2: two (R, 128) halves.
@triton.jit
def store_c_tile(desc, tile, row, col, HALVES: tl.constexpr):
    """Stores tile at [row, col]: whole, or in halves."""
    if HALVES:
        half: tl.constexpr = tile.shape[1] // 2
        pairs = tl.reshape(tile, (tile.shape[0], 2, half))
        left, right = tl.split(tl.permute(pairs, (0, 2, 1)))
        desc.store([row, col], left.to(desc.dtype))
        desc.store([row, col + half], right.to(desc.dtype))
    else:
        desc.store([row, col], tile.to(desc.dtype))


# ## (trans) Transposed operands
# The backward hands the kernel .T views, like b.T, whose last
# stride is not 1: no descriptor describes b.T. But b itself,
# B^T's memory read row by row, has a last stride of 1. So the
# kernel describes b and takes each loaded tile's .T
# (B_TRANSPOSED, and A_TRANSPOSED for A). The 16-bit tensor
# cores read a tile in either order.
def transposed(t):
    """Whether t is a .T view: then t.T lies row by row."""
    return t.stride(-1) != 1 and t.stride(0) == 1


# The kernel's operands, as it reads them: (desc) a descriptor
# for each of A and B, made once for the whole loop, and (trans)
# a_ptr holding A^T (K x M) or b_ptr B^T (N x K) as they lie.
@triton.jit
def operand_descriptors(
    a_ptr, b_ptr, M, N, K, stride_a, stride_b,
    A_TRANSPOSED: tl.constexpr, B_TRANSPOSED: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    if A_TRANSPOSED:
        a_desc = tl.make_tensor_descriptor(a_ptr, [K, M], [stride_a, 1], [BLOCK_K, BLOCK_M])
    else:
        a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_a, 1], [BLOCK_M, BLOCK_K])
    if B_TRANSPOSED:
        b_desc = tl.make_tensor_descriptor(b_ptr, [N, K], [stride_b, 1], [BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [stride_b, 1], [BLOCK_K, BLOCK_N])
    return a_desc, b_desc


@triton.jit
def load_k_step(
    a_desc, b_desc, row, col, k,
    A_TRANSPOSED: tl.constexpr, B_TRANSPOSED: tl.constexpr,
):  # fmt: skip
    """A's tile at [row, k] and B's at [k, col]."""
    # (trans) A^T's tile at [k, row], turned back by .T; the
    # branch is decided when Triton compiles.
    a = a_desc.load([k, row]).T if A_TRANSPOSED else a_desc.load([row, k])
    b = b_desc.load([col, k]).T if B_TRANSPOSED else b_desc.load([k, col])
    return a, b


# TF32 tensor cores need each row of A and each column of B
# contiguous in memory (K contiguous). transpose_kernel copies
# an operand that is not, X into X^T, a tile per program.
@triton.jit
def transpose_kernel(
    x_ptr, xt_ptr,  # X (rows, cols), any strides; X^T
    rows, cols, stride_xr, stride_xc,
    stride_xt,  # X^T's row stride (its columns are contiguous)
    BLOCK: tl.constexpr,  # each program moves BLOCK x BLOCK
):  # fmt: skip
    tiles_c = tl.cdiv(cols, BLOCK)
    rs = (tl.program_id(0) // tiles_c) * BLOCK + tl.arange(0, BLOCK)
    cs = (tl.program_id(0) % tiles_c) * BLOCK + tl.arange(0, BLOCK)
    rs, cs = rs.to(tl.int64), cs.to(tl.int64)  # offsets past 2^31
    x_offsets = rs[:, None] * stride_xr + cs[None, :] * stride_xc
    mask = (rs[:, None] < rows) & (cs[None, :] < cols)
    tile = tl.load(x_ptr + x_offsets, mask=mask)
    # Element (r, c) of X goes to (c, r) of X^T.
    xt_offsets = cs[:, None] * stride_xt + rs[None, :]
    xt_mask = (cs[:, None] < cols) & (rs[None, :] < rows)
    tl.store(xt_ptr + xt_offsets, tl.trans(tile), mask=xt_mask)


def rows_contiguous(t, block=64, kernel=transpose_kernel):
    """t, or a copy of t whose rows are contiguous in memory and
    start on 16-byte boundaries (made by `kernel`)."""
    if common.descriptor_problem(t) is None:
        return t  # a descriptor reads t as it lies
    rows, cols = t.shape
    per_16 = 16 // t.element_size()  # elements in 16 bytes
    # Each row padded to 16 bytes, then the padding cut off.
    padded = triton.cdiv(cols, per_16) * per_16
    copy = t.new_empty((rows, padded))[:, :cols]
    grid = (triton.cdiv(cols, block) * triton.cdiv(rows, block),)
    # X = t.T, so that X^T is the copy of t.
    x_strides = t.T.stride()
    kernel[grid](t.T, copy, cols, rows, *x_strides, copy.stride(0), BLOCK=block)
    return copy


def persistent_operands(a, b):
    """(A's matrix, A_TRANSPOSED, B's, B_TRANSPOSED) to read."""
    if input_precision(a.dtype) == "tf32":
        # A as rows of K; B as B^T, whose rows are B's columns.
        return rows_contiguous(a), False, rows_contiguous(b.T), True
    a_t, b_t = transposed(a), transposed(b)
    return (a.T if a_t else a), a_t, (b.T if b_t else b), b_t


def persistent_problem(a, b, c):
    """Why the kernel cannot compute c = a @ b, or None."""
    if a.dtype == torch.float64:
        return "persistent: no float64 (fused.py's kernel takes it)"
    tf32 = input_precision(a.dtype) == "tf32"  # A, B copied
    named = [] if tf32 else [("a", a), ("b", b)]
    for name, t in named + [("the output", c)]:
        t = t.T if transposed(t) and t is not c else t
        if reason := common.descriptor_problem(t):
            where = f"{name} {tuple(t.shape)} strides {t.stride()}"
            return f"persistent: no descriptor for {where}: {reason}"


# ## The kernel, each change marked
# Triton compiles a new version of a kernel when an int
# argument changes a fact it specializes on (such as == 1, or
# divisible by 16). do_not_specialize names ints to leave out,
# so that a new size reuses the compiled kernel.
@triton.heuristics({  # (heuristics)
    "BLOCK_N": lambda args: 256 if wide_tiles(args["M"], args["N"], args["PROGRAMS"]) else 128,
    # A K step reads 128 bytes of each row: 64 16-bit values.
    "BLOCK_K": lambda args: 128 // args["a_ptr"].element_size(),
    "STORE_HALVES": lambda args: args["BLOCK_N"] == 256 and args["a_ptr"].element_size() == 4,
    # A narrow tile leaves room in shared memory for 5 K steps
    # in flight. With 4 warps, it ran up to 13% faster than 4
    # steps with 8 (and 4% slower on one shape).
    "num_stages": lambda args: 3 if args["BLOCK_N"] == 256 else 5,
    "num_warps": lambda args: 8 if args["BLOCK_N"] == 256 else 4,
})  # fmt: skip
@triton.jit(do_not_specialize=["M", "N", "K", "stride_a", "stride_b", "stride_cm"])
def persistent_matmul_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr,  # as matmul_kernel's
    pre_ptr,  # P = A @ B + bias, kept for op.py's backward, or None
    M, N, K, stride_a, stride_b, stride_cm,  # row strides
    PROGRAMS: tl.constexpr,  # (persist) one per SM
    A_TRANSPOSED: tl.constexpr,  # (trans) a_ptr holds A^T
    B_TRANSPOSED: tl.constexpr,  # b_ptr holds B^T
    INPUT_PRECISION: tl.constexpr, ACTIVATION: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STORE_HALVES: tl.constexpr,
):  # fmt: skip
    BLOCK_M: tl.constexpr = 128  # the tile's rows
    GROUP_M: tl.constexpr = 8
    a_desc, b_desc = operand_descriptors(  # (desc), (trans)
        a_ptr, b_ptr, M, N, K, stride_a, stride_b,
        A_TRANSPOSED, B_TRANSPOSED, BLOCK_M, BLOCK_N, BLOCK_K,
    )  # fmt: skip
    C_COLUMNS: tl.constexpr = BLOCK_N // (1 + STORE_HALVES)  # (halves)
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BLOCK_M, C_COLUMNS])
    if pre_ptr is not None:  # P has C's strides
        pre_desc = tl.make_tensor_descriptor(pre_ptr, [M, N], [stride_cm, 1], [BLOCK_M, C_COLUMNS])
    # (persist) store_tile counts on its own, and equals `tile`
    # at each store. With `tile` used both in the next tile's
    # loads and in this store, the compiler mishandled it (as
    # Triton's tutorial 09 notes).
    store_tile = tl.program_id(0) - PROGRAMS
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row, col = pid_m * BLOCK_M, pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k in range(0, K, BLOCK_K):
            a, b = load_k_step(a_desc, b_desc, row, col, k, A_TRANSPOSED, B_TRANSPOSED)
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        store_tile += PROGRAMS
        pid_m, pid_n = grouped_tile(store_tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row, col = pid_m * BLOCK_M, pid_n * BLOCK_N
        acc = add_bias(acc, bias_ptr, col + tl.arange(0, BLOCK_N), N)
        if pre_ptr is not None:
            store_c_tile(pre_desc, acc, row, col, STORE_HALVES)
        c = activate(acc, ACTIVATION)
        store_c_tile(c_desc, c, row, col, STORE_HALVES)


def matmul_persistent(a, b, bias=None, activation=None):
    """As fused.py's matmul_fused, by persistent_matmul_kernel."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    # The gradient of c.sum() is one value expanded to C's
    # shape (strides 0), which no descriptor takes: copy it.
    a, b = (t.contiguous() if 0 in t.stride() else t for t in (a, b))
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    assert (problem := persistent_problem(a, b, c)) is None, problem
    a, b = common.dot_inputs(a, b)  # on a CPU: bfloat16 as float32
    a_arg, a_t, b_arg, b_t = persistent_operands(a, b)
    strides = (a_arg.stride(0), b_arg.stride(0), c.stride(0))
    programs = common.sm_count(a.device)  # one program per SM
    # A descriptor made inside a kernel needs scratch memory.
    common.set_descriptor_allocator()
    persistent_matmul_kernel[(programs,)](
        a_arg, b_arg, c, bias, None, M, N, K, *strides,
        PROGRAMS=programs, A_TRANSPOSED=a_t, B_TRANSPOSED=b_t,
        INPUT_PRECISION=input_precision(c.dtype), ACTIVATION=activation,
    )  # fmt: skip
    return c


VARIANTS = {**fused.VARIANTS, "persistent": matmul_persistent}


# ## Timing (the harness: skip it on a first read)
def refusal(a, b):
    """Why the kernel cannot take a @ b or its backward's
    products (main() prints it), or None."""
    c = a.new_empty((a.shape[0], b.shape[1]))
    grad_a, grad_b = a.new_empty(a.shape), b.new_empty(b.shape)
    products = [(a, b, c), (c, b.T, grad_a), (a.T, c, grad_b)]
    problems = (persistent_problem(*p) for p in products)
    return next((problem for problem in problems if problem), None)


def variants_for(a, b):
    """The VARIANTS that take a @ b and its backward's products."""
    refused = refusal(a, b)
    persistent = {} if refused else {"persistent": VARIANTS["persistent"]}
    return fused.variants_for(a, b) | persistent


def benchmark(m, n, k, dtype="float16"):
    """main.py's timing table, with the persistent kernel's row."""
    return lesson.benchmark(m, n, k, dtype, sys.modules[__name__])


SWEEP = lesson.SWEEP  # `make bench` times main.py's cases
check_epilogue = fused.check_epilogue  # main() runs it


def main(argv=None):
    return lesson.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
