"""Stream-K: lesson 02's Part 5, for products with few tiles.

What you learn: how to keep every SM busy when C has too few
tiles to fill the GPU's SMs, by splitting the K loop between
programs. Read persistent.py (Part 4) first: this kernel keeps
its descriptors, its one program per SM and its epilogue.

Take a model's weight gradient at d = 768: C = X^T @ G (X the
layer's input, G the gradient of its output), with C of 768 x
3072 and K = 8192 tokens. Part 4's programs work in turns: a
turn is one tile on each SM. Its 128 x 256 tiles make 6 x 12 =
72 tiles, and an H200 has 132 SMs: one turn, 60 SMs idle, so
72 / 132 = 55% busy. Its 128 x 128 tiles make 144: two turns,
the second with 12 tiles, 144 / 264 = 55% busy again.

Stream-K counts work in iterations: one K step of one tile.
C has (tiles x K steps) iterations, and each program takes an
equal run of them, in order. So every SM works to the end. A
tile may then be split between two or more programs: the one
holding the tile's last K step (the tile's owner) adds the
others' partial sums to its own, and stores the tile. This file
uses 128 x 128 tiles. On an H200 it ran that weight gradient
at 0.79 to 0.83 of cuBLAS's speed; persistent.py's kernel runs
it at 0.60 to 0.66.

Worked example: 2 tiles of 4 K steps, 3 SMs. 8 iterations, so
the programs take 3, 3 and 2 of them (schedule(2, 4, 3), below,
prints this for any sizes):

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

# persistent.py beside this file (Part 4, which loads Parts 1
# to 3): this kernel calls their helpers as theirs do.
HERE = Path(__file__).resolve().parent
persistent = lesson_loader.load_lesson(HERE, "persistent.py")
fused = persistent.fused  # Part 3: the epilogue
lesson = persistent.lesson  # main.py: Parts 1 and 2
# Part 2's tile order: which tile of C a number names
grouped_tile = lesson.grouped_tile
# Part 3's epilogue: + bias, then GELU, before the store
add_bias, activate = fused.add_bias, fused.activate
# Part 4's descriptors of A and B, and its loads of a K step
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


def schedule(tiles, steps, programs):
    """The same runs in plain Python, as text: what each program
    computes, tile by tile. schedule(2, 4, 3) prints the worked
    example at the top of this file."""
    iterations = tiles * steps
    share, extra = divmod(iterations, programs)
    lines = []
    for p in range(programs):
        start = p * share + min(p, extra)
        end = start + share + (p < extra)
        pieces = []
        for tile in range(start // steps, -(-end // steps)):
            first = max(start, tile * steps) - tile * steps
            last = min(end, (tile + 1) * steps) - tile * steps - 1
            owner = last == steps - 1  # it holds the last step
            pieces.append(f"tile {tile}, steps {first} to {last}"
                          + (" (owner)" if owner else ""))  # fmt: skip
        lines.append(f"program {p}: " + "; ".join(pieces))
    return "\n".join(lines)


# ## (fixup) Partial sums, and flags that say they are ready
# A program whose run ends inside a tile stores its partial
# sum (float32) in its own slot of `partials`, then sets its
# flag to 1. The tile's owner waits until each such flag is 1,
# then adds the partial. An atomic operation reads and writes
# a value in one step, which no other program can split. The
# two below work as a pair:
# - tl.atomic_xchg(flag, 1, sem="release") sets the flag, after
#   the stores made before it ("release");
# - tl.atomic_cas(flag, 1, 0, sem="acquire") returns the flag's
#   value (and sets it to 0 if it is 1, which nothing needs);
#   a loop calls it until it returns 1. With "acquire", the
#   loads after it see what was stored before that release. A
#   plain tl.load of the flag would promise no such order.
# A program runs as num_warps x 32 threads (128 here): they
# all store the partial, but one thread does the atomic. So
# tl.debug_barrier() first waits until every thread of the
# program has stored its part (tutorial 05 does the same).
#
# Only a run's last tile can be a partial one, and only its
# first tile can have an owner waiting on other programs. So a
# program walks its run backwards, last tile first: its partial
# is ready early, and its wait comes last, when the partial it
# waits for is most likely ready too.
#
# Program 1 of the worked example (its run: iterations 3 to 5,
# start = 3, end = 6), through the kernel's loop below:
# - until = 6: tile = 5 // 4 = 1, first = 4, steps 0 and 1;
#   6 is not tile 1's end (8): it stores a partial, flag 1;
# - until = 4: tile 0, first = 3, step 3; 4 is tile 0's end:
#   it owns tile 0; first = 3 > 0, so it waits for program
#   0's flag and adds its partial; program 0's run starts at
#   0, not after tile 0's start: no more to wait for. It
#   stores tile 0;
# - until = 3 = start: the run is done.
#
# ## (resident) Waiting needs the awaited program running
# A waiting owner keeps its SM. If the program it waits for
# could not start until an SM is free, both would wait forever.
# So the kernel starts one program per SM, each small enough
# that one fits on an SM, and an owner only waits for programs
# with lower ids, which NVIDIA GPUs start first in practice
# (CUDA does not promise it). The interpreter on a CPU runs the
# programs one after another in that order, so each partial is
# ready before its owner asks: a check on a CPU tests the sums,
# and cannot see a mistake in the memory ordering.
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
    in_slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N
    in_slot += tl.arange(0, BLOCK_N)[None, :]
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
                # All threads load the partial, after the one
                # thread's acquire (Triton puts a barrier after
                # it). .cg reads past the SM's own cache (L1),
                # which may hold stale values, from the GPU's
                # shared one (L2), where the stores went.
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
    # New flags each call: two calls on two streams may overlap.
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
    return lesson.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
