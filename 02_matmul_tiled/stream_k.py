"""Stream-K: lesson 02's Part 5, for products with few tiles.

What you learn: how to keep every SM busy when C has too few
tiles to fill the GPU's SMs, by splitting the K loop between
programs. Read persistent.py (Part 4) first. Its terms, again:
- an SM (streaming multiprocessor) is one of the GPU's cores
  that run programs; an H200 has 132;
- a K step: Part 2's loop over K adds, at each step, the
  product of an A tile and a B tile (BLOCK_K columns of A);
- Part 4 starts one program per SM, and each program computes
  tiles in turns: a turn is one tile on each SM;
- shared memory is each SM's own fast memory, where tiles
  wait for tl.dot (num_stages K steps are loaded ahead);
- the epilogue (Part 3): + bias and GELU on a finished tile;
- a descriptor (Part 4) describes a matrix, and reads a whole
  tile at a time.
`stream_k.py --draw FILE.png` draws who adds each K step.

Take a model's weight gradient at d = 768: C = X^T @ G (X the
layer's input, G the gradient of its output), with C of 768 x
3072 (3072 = 4 x 768, the MLP's hidden width) and K = 8192
tokens. Part 4's 128 x 256 tiles make 6 x 12 = 72 tiles: one
turn, 60 of the 132 SMs idle, so 72 / 132 = 55% busy. Its 128
x 128 tiles make 144: two turns, the second with 12 tiles,
144 / (2 x 132) = 55% busy again.

Stream-K counts work in iterations: one K step of one tile. C
has (tiles x K steps) iterations, and each program takes an
equal run of them, in order. So every SM works to the end. A
tile may then be split between two or more programs. The one
holding the tile's last K step (the tile's owner) adds the
others' partial sums to its own, and stores the tile. The
owner is the last so that it waits only for programs with
lower ids: the section (resident), below, says why.

This file uses 128 x 128 tiles (128 x 256 ones ran slower).
On an H200 it ran that weight gradient at 0.79 to 0.83 of
cuBLAS's speed; persistent.py's kernel runs it at 0.60 to
0.66.

Worked example: 2 tiles of 4 K steps, 3 SMs. 8 iterations, so
the programs take 3, 3 and 2 of them (schedule(2, 4, 3), below,
writes this out; main() prints it):

    program 0: tile 0, steps 0 to 2
    program 1: tile 0, steps 3 to 3 (owner); tile 1, steps 0 to 1
    program 2: tile 1, steps 2 to 3 (owner)

Program 1 owns tile 0: it waits for program 0's partial sum of
steps 0 to 2, adds it, and stores tile 0. Program 2 owns tile
1, and waits for program 1's partial sum of steps 0 and 1.
"""

import sys
from pathlib import Path

import torch

# The repository's root holds common and lesson_loader.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (before triton, which it configures)
import lesson_loader  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# ## What this file takes from Parts 2 to 4
# persistent.py beside this file is Part 4 (it loads Parts 1
# to 3). The kernel below calls their helpers:
# - grouped_tile(tile, ...): the (row, column) block of C that
#   the number `tile` names, in Part 2's grouped order;
# - add_bias, activate: Part 3's epilogue, + bias and then
#   GELU on a finished tile, before its store;
# - operand_descriptors: Part 4's tensor descriptors of A and
#   B. desc.load([row, col]) reads a whole tile, with 0 past
#   the matrix's edges, so the kernel needs no masks;
# - load_k_step(a_desc, b_desc, row, col, k, ...): one K
#   step's operands, A's tile at [row, k] and B's at [k, col].
HERE = Path(__file__).resolve().parent
persistent = lesson_loader.load_lesson(HERE, "persistent.py")
fused = persistent.fused  # Part 3
lesson = persistent.lesson  # main.py: Parts 1 and 2
grouped_tile = lesson.grouped_tile
add_bias, activate = fused.add_bias, fused.activate
operand_descriptors = persistent.operand_descriptors
load_k_step = persistent.load_k_step
# "tf32" or "ieee", as torch's float32 matmul precision says
input_precision = fused.input_precision


# ## (runs) Each program's run of iterations
# With I iterations and P programs, each takes I // P, and the
# first I % P programs one more. Program p's run starts at
# p * (I // P) + min(p, I % P), as in the worked example:
# I = 8, P = 3 gives runs of 3, 3, 2, starting at 0, 3, 6.
@triton.jit
def run_start(p, iterations, PROGRAMS: tl.constexpr):
    """The first iteration of program p's run."""
    share = iterations // PROGRAMS
    return p * share + tl.minimum(p, iterations % PROGRAMS)


def runs(iterations, programs):
    """The same runs in plain Python: (start, end) for each
    program, its iterations start to end - 1."""
    share, extra = divmod(iterations, programs)
    starts = [p * share + min(p, extra) for p in range(programs + 1)]
    return list(zip(starts, starts[1:]))


def schedule(tiles, steps, programs):
    """The runs as text: what each program computes, tile by
    tile, first to last. schedule(2, 4, 3) is the worked example
    at the top of this file."""
    lines = []
    for p, (start, end) in enumerate(runs(tiles * steps, programs)):
        pieces = []
        last_tile = (end - 1) // steps
        for tile in range(start // steps, last_tile + 1):
            first = max(start, tile * steps) - tile * steps
            last = min(end, (tile + 1) * steps) - tile * steps - 1
            owner = last == steps - 1  # it holds the last step
            pieces.append(f"tile {tile}, steps {first} to {last}"
                          + (" (owner)" if owner else ""))  # fmt: skip
        lines.append(f"program {p}: " + "; ".join(pieces))
    return "\n".join(lines)


# ## (plan) Stream-K in plain PyTorch
# This function computes C as the kernel below will, without
# threads or flags. It runs the programs one after another, in
# order, so each partial sum is ready before its owner asks. A
# program walks its run backwards, last tile first, as the
# kernel does (the section (fixup) below says why). Its tiles
# go in row-major order; the kernel's, in Part 2's grouped
# order.
def stream_k_in_torch(a, b, programs, block=2, block_k=2):
    """a @ b by stream-K on `programs` programs: tiles of C of
    block x block, K steps of block_k columns of a."""
    (M, K), N = a.shape, b.shape[1]
    tiles_n = triton.cdiv(N, block)  # tiles in a row of C
    tiles = triton.cdiv(M, block) * tiles_n
    steps = triton.cdiv(K, block_k)  # K steps in a tile
    c = a.new_empty(M, N)
    partials = {}  # program -> its partial sum of one tile
    spans = runs(tiles * steps, programs)
    for p, (start, until) in enumerate(spans):
        while until > start:  # iterations [start, until) left
            tile = (until - 1) // steps  # the last tile left
            tile_start = tile * steps  # its first iteration
            first = max(tile_start, start)
            row = tile // tiles_n * block
            col = tile % tiles_n * block
            rows, cols = slice(row, row + block), slice(col, col + block)
            acc = 0
            for step in range(first - tile_start, until - tile_start):
                ks = slice(step * block_k, (step + 1) * block_k)
                acc = acc + a[rows, ks] @ b[ks, cols]
            if until == tile_start + steps:  # p owns the tile
                # A run's only partial is of its last tile. So
                # the tile's earlier steps are held by p - 1,
                # p - 2, ... in turn: add each one's partial,
                # up to the first whose run starts at or before
                # the tile's start.
                other = p - 1
                waiting = first > tile_start
                while waiting:
                    acc = acc + partials.pop(other)
                    waiting = spans[other][0] > tile_start
                    other -= 1
                c[rows, cols] = acc
            else:  # p's run ends inside this tile
                partials[p] = acc
            until = first
    return c


# ## (threads) A program is many threads
# So far a program has worked on whole tiles. On the GPU it
# runs as num_warps x 32 threads (a warp is 32 threads; this
# kernel runs 4 warps, 128 threads). A line such as tl.store
# of a tile has each thread store its own part of the tile.
# That matters now, since programs will signal each other.
#
# ## (loops) Branches and loops at run time
# An `if`, `for` or `while` in a kernel on a value known only
# at run time (an int argument, tl.program_id) runs on the GPU
# as Python would run it. One on a tl.constexpr, as Part 4's
# A_TRANSPOSED, is decided when Triton compiles. This kernel's
# runs, tiles and waits depend on its program id: they are
# decided at run time.
#
# ## (fixup) Partial sums, and flags that say they are ready
# A program whose run ends inside a tile stores its partial
# sum (float32) in its own slot of `partials`, then sets its
# flag to 1. The tile's owner waits until each such flag is 1,
# then adds the partial. An atomic operation reads and writes
# a value in one step, which no other program can split. An
# atomic on one address is done by one thread of the program.
# Two of them work as a pair:
# - tl.atomic_xchg(flag, 1, sem="release") writes 1. With
#   "release", it first waits until this thread's earlier
#   stores can be seen by the whole GPU.
# - tl.atomic_cas(flag, cmp, val, sem="acquire") compares and
#   swaps: if the flag equals cmp, it writes val; either way it
#   returns the value it found. Triton has no atomic load, so
#   the owner reads the flag with tl.atomic_cas(flag, 1, 0):
#   it returns 1 once the flag is set, and sets it back to 0,
#   as the flags started. That is safe: a program sets its
#   flag at most once a call (only a run's last tile can be
#   partial), and one owner reads it. A loop calls it until it
#   returns 1.
#   With "acquire", this thread's loads after it see what was
#   stored before the release it read. A plain tl.load of the
#   flag would promise no such order.
# A release orders the releasing thread's own stores, but all
# 128 threads stored the partial. So tl.debug_barrier() first
# waits until every thread of the program has stored its part
# (Triton's tutorial 05-layer-norm puts one at the same place).
# On the acquiring side, Triton adds one itself: one thread
# read the flag, but tl.atomic_cas returns its value to every
# thread, through shared memory, behind a barrier (in --asm,
# the bar.sync right after the atom...acquire). So every
# thread's loads come after the acquire.
#
# Only a run's last tile can be left unfinished (a partial).
# Only its first tile can need other programs' partials: the
# run may start after that tile's first K step. So a program
# walks its run backwards, last tile first: its partial is
# stored early, and its own wait comes last, when the partials
# it waits for are most likely ready too. (After the kernel,
# the worked example is traced through its loop.)
#
# ## (resident) Waiting needs the awaited program running
# A waiting owner keeps its SM. If the program it waits for
# could not start until an SM is free, both would wait forever:
# the kernel would hang. Two things prevent that:
# - one program per SM, each small enough for one SM, so all
#   of them can run at once (in bfloat16 a program takes 164
#   KB of shared memory, as the compiled kernel's
#   metadata.shared says; an H200 SM has 227 KB);
# - an owner only waits for programs with lower ids, which
#   NVIDIA GPUs start first in practice (CUDA does not promise
#   it). So even when another kernel holds some SMs, the
#   programs waited for have started.
# The interpreter on a CPU runs the programs one after
# another, in that order, so each partial is ready before its
# owner asks: a check on a CPU tests the sums, and cannot see
# a mistake in the memory ordering.
@triton.jit
def stream_k_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr,  # as persistent.py's
    partial_ptr,  # float32 (PROGRAMS, BLOCK_M, BLOCK_N)
    flag_ptr,  # int32 (PROGRAMS,), all 0
    M, N, K, stride_a, stride_b, stride_cm,  # row strides
    PROGRAMS: tl.constexpr,  # one per SM
    A_TRANSPOSED: tl.constexpr, B_TRANSPOSED: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, ACTIVATION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    a_desc, b_desc = operand_descriptors(  # as persistent.py's
        a_ptr, b_ptr, M, N, K, stride_a, stride_b,
        A_TRANSPOSED, B_TRANSPOSED, BLOCK_M, BLOCK_N, BLOCK_K,
    )  # fmt: skip
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BLOCK_M, BLOCK_N])
    pid = tl.program_id(0)
    steps = tl.cdiv(K, BLOCK_K)  # K steps in a tile
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    iterations = tiles * steps
    start = run_start(pid, iterations, PROGRAMS)  # (runs)
    end = run_start(pid + 1, iterations, PROGRAMS)
    # A partial's elements, row by row, in its slot
    slot = BLOCK_M * BLOCK_N
    slot_rows = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N
    in_slot = slot_rows + tl.arange(0, BLOCK_N)[None, :]
    until = end  # (fixup) the run backwards: [start, until) left
    while until > start:
        tile = (until - 1) // steps  # the last tile left
        tile_start = tile * steps  # its first iteration
        first = tl.maximum(tile_start, start)
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row, col = pid_m * BLOCK_M, pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for step in range(first - tile_start, until - tile_start):
            k = step * BLOCK_K
            a, b = load_k_step(a_desc, b_desc, row, col, k, A_TRANSPOSED, B_TRANSPOSED)
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        if until == tile_start + steps:  # this program owns it
            # (fixup) Each lower program whose run reaches into
            # this tile ends there, with this tile's partial.
            other = pid - 1
            waiting = first > tile_start
            while waiting:
                flag = flag_ptr + other
                while tl.atomic_cas(flag, 1, 0, sem="acquire") != 1:
                    pass
                # All threads load the partial. .cg reads it
                # from the L2 cache, which all SMs share and
                # where the stores went, past this SM's own L1
                # cache, which other SMs' stores do not update.
                # The acquire and its barrier should suffice;
                # .cg is a second guard that costs nothing: a
                # partial is read once, so from L2 anyway.
                partial = partial_ptr + other * slot + in_slot
                acc += tl.load(partial, cache_modifier=".cg")
                # Does the tile start before that program's run?
                waiting = run_start(other, iterations, PROGRAMS) > tile_start
                other -= 1
            cols = col + tl.arange(0, BLOCK_N)
            acc = add_bias(acc, bias_ptr, cols, N)  # (epilogue)
            c = activate(acc, ACTIVATION)
            c_desc.store([row, col], c.to(c_desc.dtype))
        else:  # the run ends inside this tile: a partial
            tl.store(partial_ptr + pid * slot + in_slot, acc)
            tl.debug_barrier()  # every thread's part stored
            tl.atomic_xchg(flag_ptr + pid, 1, sem="release")
        until = first


# The worked example through this loop. Program 1's run is
# iterations 3 to 5 (start = 3, end = 6); iteration i is K
# step i % 4 of tile i // 4.
# - until = 6: the last iteration left is 5, of tile 1, whose
#   first iteration (tile_start) is 4; first = max(4, 3) = 4.
#   It adds K steps 0 and 1. Tile 1 ends at iteration 8, not
#   6: it stores a partial and sets flag 1.
# - until = 4: iteration 3, of tile 0; tile_start = 0 and
#   first = 3: K step 3. Tile 0 ends at 4: program 1 owns it.
#   first > tile_start, so a lower program holds tile 0's
#   earlier steps: it waits for program 0's flag and adds its
#   partial. Program 0's run starts at 0, tile 0's start: no
#   program before it to wait for. It stores tile 0.
# - until = 3 = start: the run is done.
# On 5 programs, schedule(2, 4, 5) splits tile 1 three ways:
# programs 2, 3 and 4 hold steps 0 to 1, 2 and 3. Program 4
# owns it: it adds program 3's partial, then, since program
# 3's run starts after tile 1's start, program 2's.


def matmul_stream_k(a, b, bias=None, activation=None):
    """As persistent.py's matmul_persistent, by stream_k_kernel."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    a, b = (t.contiguous() if 0 in t.stride() else t for t in (a, b))
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    problem = persistent.persistent_problem(a, b, c)
    assert problem is None, problem
    a, b = common.dot_inputs(a, b)  # on a CPU: bfloat16 as float32
    a_arg, a_t, b_arg, b_t = persistent.persistent_operands(a, b)
    strides = (a_arg.stride(0), b_arg.stride(0), c.stride(0))
    programs = common.sm_count(a.device)  # (resident)
    tile = dict(BLOCK_M=128, BLOCK_N=128, GROUP_M=8)
    # A K step reads 128 bytes of each row, as in persistent.py.
    tile["BLOCK_K"] = 128 // a_arg.element_size()
    f32 = dict(dtype=torch.float32, device=a.device)
    partials = torch.empty((programs, 128, 128), **f32)
    # The owners set a call's flags back to 0, but two calls on
    # two streams may overlap: so new flags each call.
    flags = torch.zeros(programs, dtype=torch.int32, device=a.device)
    # A float32 C tile needs more shared memory to store: fewer
    # K steps in flight leave it room.
    stages = 5 if c.element_size() == 2 else 4
    common.set_descriptor_allocator()  # as persistent.py's
    stream_k_kernel[(programs,)](
        a_arg, b_arg, c, bias, partials, flags, M, N, K, *strides,
        PROGRAMS=programs, A_TRANSPOSED=a_t, B_TRANSPOSED=b_t,
        INPUT_PRECISION=input_precision(c.dtype),
        ACTIVATION=activation, **tile, num_warps=4, num_stages=stages,
    )  # fmt: skip
    return c


VARIANTS = {**persistent.VARIANTS, "stream_k": matmul_stream_k}


# ## Timing (the harness: skip it on a first read)
def variants_for(a, b):
    """The VARIANTS that take a @ b and its backward's products:
    stream_k takes what the persistent kernel takes."""
    variants = persistent.variants_for(a, b)
    if "persistent" in variants:
        variants["stream_k"] = matmul_stream_k
    return variants


def check_epilogue(a, b):
    """fused.py's check of the fused epilogue, and the same for
    this file's kernel, where it takes a @ b."""
    fused.check_epilogue(a, b)
    if "stream_k" in variants_for(a, b):
        fused.check_epilogue(a, b, matmul_stream_k, "stream_k")


def benchmark(m, n, k, dtype="float16"):
    """main.py's timing table, with the stream-K kernel's row."""
    return lesson.benchmark(m, n, k, dtype, sys.modules[__name__])


SWEEP = lesson.SWEEP  # `make bench` times main.py's cases
# main()'s default case: the docstring's weight gradient, few
# tiles and a long K, where stream-K pays. The interpreter's is
# smaller: 2 tiles of 16 K steps.
if common.INTERPRETED:
    CASE = (128, 256, 1024, "float16")
else:
    CASE = (768, 3072, 8192, "bfloat16")


def main(argv=None):
    # The worked example, then a tile split three ways.
    a = torch.randn(2, 8, dtype=torch.float64)
    b = torch.randn(8, 4, dtype=torch.float64)
    for programs in (3, 5):
        print(f"schedule(2, 4, {programs}):")
        print(schedule(2, 4, programs))
        c = stream_k_in_torch(a, b, programs)
        error = (c - a @ b).abs().max().item()
        print(f"stream_k_in_torch, 2x8 @ 8x4: at most {error:.1e} off")
    return lesson.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
