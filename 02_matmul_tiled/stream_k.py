"""Stream-K: lesson 02's Part 5, for products with few tiles.

What you learn: how to keep every SM busy when C has too few
tiles to fill the GPU's SMs, by splitting the K loop between
programs. Read persistent.py (Part 4) first. This file uses
these terms from Parts 1 to 4:
- A program is one instance of the kernel, with its own id,
  tl.program_id(0). Here each program computes tiles of C.
- An SM (streaming multiprocessor) is one of the GPU's cores
  that run programs. An H200 has 132 of them.
- A K step is one pass of Part 2's loop over K. It adds the
  product of an A tile and a B tile (BLOCK_K columns of A).
- Part 4 starts one program per SM. Each program computes its
  tiles in turns. In one turn, each SM computes one tile.
- Shared memory is each SM's own fast memory. Tiles wait
  there for tl.dot, loaded up to num_stages - 1 K steps
  ahead.
- The epilogue (Part 3) is bias and GELU on a finished tile.
- A descriptor (Part 4) describes a matrix, and reads a whole
  tile at a time.
Sections of this file have names in parentheses. The section
(runs), for example, starts with the line "# ## (runs)".
`stream_k.py --draw FILE.png` draws who adds each K step.

Take a model's weight gradient at d = 768, C = X^T @ G. Here
X is the layer's input, and G is the gradient of its output.
C is 768 x 3072 (3072 = 4 x 768, the MLP's hidden width), and
K is 8192 tokens. Part 4's 128 x 256 tiles cut C into 6 x 12
= 72 tiles. That is one turn, with 60 of the 132 SMs idle, so
the SMs are 72 / 132 = 55% busy. Its 128 x 128 tiles make 144
tiles. That is two turns, the second with only 12 tiles, so
the SMs are 144 / (2 x 132) = 55% busy again.

Stream-K counts the work in iterations. An iteration is one
K step of one tile, so C has (tiles x K steps) iterations.
Each program takes a run, which is a block of consecutive
iterations. All runs have the same length, give or take one,
so every SM works until the end. A tile may then be split
between two or more programs. Each of them adds up its own K
steps of the tile into a partial sum (a partial, for short).
The program that holds the tile's last K step is the tile's
owner. It adds the other programs' partials to its own sum,
and stores the tile. This is new: in Parts 1 to 4, no
program used another program's results. Here an owner waits
until each partial it needs is stored. The owner has the
highest id of the tile's programs, so it waits only for
programs with lower ids. That keeps the wait from hanging,
as the section (resident) explains.

Why not split-K, which cuts each tile's K loop into equal
slices, a program for each slice? Tiles times slices must
then come near a whole number of turns: 144 tiles in two
slices make 288 programs, two full turns and a third turn
with only 24 programs.
And adding up the slices takes a second kernel, or atomic
adds. Stream-K cuts the work at any iteration, so every run
has the same length, and only the owners add partials.

This file has two kernels. The simple one adds stream-K to
Part 1's simple kernel. The fast one adds it to Part 4's, with
128 x 128 tiles (128 x 256 ones ran slower). On an H200 the
fast one ran that weight gradient at 0.79 to 0.83 of cuBLAS's
speed, and persistent.py's kernel at 0.60 to 0.66.

Worked example: 2 tiles of 4 K steps, on 3 SMs. That makes 8
iterations, so the programs take 3, 3 and 2 of them.
Iterations go tile by tile: iteration i is K step i % 4 of
tile i // 4.

    iteration  0 1 2 3 | 4 5 6 7
    program    0 0 0 1 | 1 1 2 2
               tile 0  | tile 1

schedule(2, 4, 3), below, writes this out, and main() prints
it. "(owner)" marks the run that holds a tile's last step.

    program 0: tile 0, steps 0 to 2
    program 1: tile 0, steps 3 to 3 (owner); tile 1, steps 0 to 1
    program 2: tile 1, steps 2 to 3 (owner)

Program 1 owns tile 0. It waits for program 0's partial sum
of steps 0 to 2, adds it, and stores tile 0. Program 2 owns
tile 1. It waits for program 1's partial of steps 0 and 1.
On 5 programs, schedule(2, 4, 5) splits tile 1 three ways:

    program 0: tile 0, steps 0 to 1
    program 1: tile 0, steps 2 to 3 (owner)
    program 2: tile 1, steps 0 to 1
    program 3: tile 1, steps 2 to 2
    program 4: tile 1, steps 3 to 3 (owner)

Program 4 waits for program 3's partial, then program 2's.
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
# persistent.py, beside this file, is Part 4, and it loads
# Parts 1 to 3. The kernel below calls these helpers.
# - grouped_tile(tile, ...) gives the (row, column) block of C
#   that the number `tile` names, in Part 2's grouped order.
# - add_bias and activate are Part 3's epilogue.
# - operand_descriptors makes Part 4's tensor descriptors of A
#   and B. desc.load([row, col]) reads a whole tile, with 0s
#   past the matrix's edges, so the kernel needs no masks.
# - load_k_step(a_desc, b_desc, row, col, k, ...) loads one K
#   step's operands: A's tile at [row, k] and B's at [k, col].
HERE = Path(__file__).resolve().parent
persistent = lesson_loader.load_lesson(HERE, "persistent.py")
fused = persistent.fused  # Part 3
lesson = persistent.lesson  # main.py: Parts 1 and 2
grouped_tile = lesson.grouped_tile
add_bias, activate = fused.add_bias, fused.activate
operand_descriptors = persistent.operand_descriptors
load_k_step = persistent.load_k_step
# input_precision gives "tf32" or "ieee", as torch's float32
# matmul precision says.
input_precision = fused.input_precision


# ## (runs) Each program's run of iterations
# Say there are I iterations and P programs. Each program
# takes I // P iterations, and the first I % P programs take
# one more. So program p's run starts at iteration
# p * (I // P) + min(p, I % P). In the worked example, I = 8
# and P = 3 give runs of 3, 3 and 2, starting at 0, 3 and 6.
@triton.jit
def run_start(p, iterations, PROGRAMS: tl.constexpr):
    """The first iteration of program p's run."""
    share = iterations // PROGRAMS
    return p * share + tl.minimum(p, iterations % PROGRAMS)


def runs(iterations, programs):
    """The same runs in plain Python, as a (start, end) pair for
    each program. A run is iterations start to end - 1."""
    share, extra = divmod(iterations, programs)
    starts = [p * share + min(p, extra) for p in range(programs + 1)]
    return list(zip(starts, starts[1:]))


def schedule(tiles, steps, programs):
    """The runs as text: each program's tiles, first to last,
    with their K steps. schedule(2, 4, 3) is the worked example
    at the top of this file."""
    lines = []
    for p, (start, end) in enumerate(runs(tiles * steps, programs)):
        pieces = []
        last_tile = (end - 1) // steps
        for tile in range(start // steps, last_tile + 1):
            first = max(start, tile * steps) - tile * steps
            last = min(end, (tile + 1) * steps) - tile * steps - 1
            owner = last == steps - 1  # p holds the tile's last step
            pieces.append(f"tile {tile}, steps {first} to {last}"
                          + (" (owner)" if owner else ""))  # fmt: skip
        lines.append(f"program {p}: " + "; ".join(pieces))
    return "\n".join(lines)


# ## (plan) Stream-K in plain PyTorch
# This function computes C as the kernel below will, but
# without the kernel's threads and flags, which the section
# (fixup) explains. It runs the programs one after another,
# in order, so each partial is ready before its owner asks
# for it. Its tiles go in row-major order, as the simple
# kernel's do; the fast kernel's go in Part 2's grouped order.
# A program walks its run backwards, last tile first, as the
# kernels do. Here, where programs run one at a time, that
# changes nothing. In the kernels, where all programs run at
# once, it matters. Only a run's last tile can be left as a
# partial, and only its first tile can need other programs'
# partials. Walking forwards, program p would first wait for
# p - 1's partial, which p - 1 stores only at the end of its
# run, after its own wait for p - 2. The programs would then
# run one after another. Walking backwards, each program
# stores its partial first, and waits last.
def stream_k_in_torch(a, b, programs, block=2, block_k=2):
    """a @ b by stream-K on `programs` programs. C's tiles are
    block x block, and a K step is block_k columns of a."""
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
                # A run leaves a partial only of its last
                # tile. So this tile's earlier steps belong
                # to programs p - 1, p - 2, and so on. Add
                # each one's partial, up to the first whose
                # run starts at or before the tile's start.
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


# The worked example, traced through this function's loop.
# Program 1's run is iterations 3 to 5 (start = 3, until = 6).
# Iteration i is K step i % 4 of tile i // 4.
# - until = 6. The last iteration left is 5, of tile 1, so
#   tile_start is 4 and first is max(4, 3) = 4. The program
#   adds K steps 0 and 1. Tile 1 ends at iteration 8, not 6,
#   so it keeps a partial (the kernels store it, and set a
#   flag that says it is ready).
# - until = 4. Iteration 3 is left, of tile 0, so tile_start
#   is 0 and first is 3. The program adds K step 3. Tile 0
#   ends at iteration 4, so program 1 owns it.
#   Since first > tile_start, a lower program holds tile 0's
#   earlier steps. Program 1 adds program 0's partial (the
#   kernels first wait for its flag). Program 0's run starts
#   at 0, tile 0's start, so no program before it holds any
#   of tile 0. Program 1 stores tile 0.
# - until = 3 = start. The run is done.
# On 5 programs, schedule(2, 4, 5) splits tile 1 three ways.
# Programs 2, 3 and 4 hold steps 0 to 1, step 2 and step 3.
# Program 4 owns tile 1, and adds program 3's partial first.
# Program 3's run starts after tile 1's start, so program 4
# then adds program 2's partial too.


# ## (fixup) Threads, and flags that say a partial is ready
# The stream-K paper calls an owner's adding of partials the
# fixup. In the kernel, all programs run at the same time, so
# an owner must wait until each partial it needs is stored.
# Each program has a slot in `partials`, room for one float32
# partial, and a flag in `flags`, an int32 that starts at 0.
# A program whose run ends inside a tile stores its partial in
# its slot, then sets its flag to 1. The tile's owner waits
# until that flag is 1, then adds the partial.
# Until now, Triton hid a program's threads. Here they matter.
# A program runs as num_warps x 32 threads. (A warp is 32
# threads. The kernel below runs 4 warps, Triton's default
# num_warps, so 128 threads.) A line such as tl.store of a
# tile has each thread store its own part of the tile.
# Four steps hand a partial over. Each step stops one way the
# owner could add a partial that is not all there yet.
# 1. The writer's threads store their parts of the partial.
#    Then tl.debug_barrier() makes each thread wait until all
#    of them have stored. Without it, the flag could be set
#    while some thread's part is still on its way. (In PTX,
#    the GPU's assembly language that --asm shows, a barrier
#    is bar.sync. Triton's tutorial 05-layer-norm puts one at
#    the same place.)
# 2. One thread sets the flag with tl.atomic_xchg(flag, 1,
#    sem="release"). (You write the line; Triton runs an
#    atomic on one value in one thread.) An atomic reads and
#    writes a value in one step, which no other program can
#    split. A "release" write is seen only with every store
#    its thread made before it, and after the barrier that
#    covers every thread's part. Without it, the GPU could
#    show other SMs the flag before the partial.
# 3. One thread of the owner reads the flag with
#    tl.atomic_cas(flag, 1, 0, sem="acquire"), in a loop, until
#    it returns 1. An "acquire" read keeps its thread's later
#    loads after it. Without it, a load of the partial could
#    be done early, before the partial was stored.
# 4. Triton hands the value that one thread read to every
#    thread, through shared memory, behind a barrier it adds.
#    Then every thread loads its part of the partial, with
#    cache_modifier=".cg": from the L2 cache, which all SMs
#    share, and not from its SM's own L1 cache, which other
#    SMs' stores do not update.
# `--asm` shows these instructions, in this order.
# Triton has no atomic load, so step 3 reads the flag with a
# compare-and-swap: if the flag is 1, it writes 0. Either way,
# it returns the value it found. (With tl.atomic_cas(flag, 1,
# 1) it would leave the 1 in place; writing 0 puts the flag
# back as it started.) That is safe, because a program sets
# its flag at most once a launch (only a run's last tile can
# be a partial), and only one owner reads it.
#
# ## (resident) Why an owner's wait ends
# A program is resident on an SM once it has started there. An
# owner that waits keeps its SM. If the program it waits for
# could not start until an SM is free, both would wait
# forever, and the kernel would hang. Two things prevent that.
# - There is one program per SM, and each one fits on an SM,
#   so all of them can be resident at once. In bfloat16, a
#   program of the fast kernel takes 160 KB of shared memory
#   (the simple kernel's, 24 KB), as the compiled kernel's
#   metadata.shared says (--asm prints it). An H200 SM has
#   227 KB.
# - An owner waits only for programs with lower ids. NVIDIA
#   GPUs start those first in practice, though CUDA does not
#   promise it. So even when another kernel holds some SMs,
#   the programs waited for have started.
# The interpreter on a CPU runs the programs one after
# another, in id order, so each partial is ready before its
# owner asks for it. A check on a CPU therefore tests the
# sums, but cannot see a mistake in the memory ordering.


# ## The simple stream-K kernel
# This kernel is Part 1's simple_matmul_kernel (pointers,
# masks, 64 x 64 tiles in row-major order) with stream-K's
# runs, partials and flags added. It reads like
# stream_k_in_torch, line for line.
@triton.jit
def simple_stream_k_kernel(
    a_ptr, b_ptr, c_ptr,  # as simple_matmul_kernel's
    partial_ptr,  # float32 (PROGRAMS, BLOCK_M, BLOCK_N)
    flag_ptr,  # int32 (PROGRAMS,), all 0
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    PROGRAMS: tl.constexpr,  # one per SM
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BLOCK_N)  # tiles in a row of C
    tiles = tl.cdiv(M, BLOCK_M) * tiles_n
    steps = tl.cdiv(K, BLOCK_K)  # K steps in a tile
    iterations = tiles * steps
    start = run_start(pid, iterations, PROGRAMS)  # see (runs)
    end = run_start(pid + 1, iterations, PROGRAMS)
    # Program p's slot starts at element p * slot of partials.
    # in_slot is each element's offset in a slot, row by row.
    # A slot holds a whole tile, so its loads and stores need no
    # mask.
    slot = BLOCK_M * BLOCK_N
    slot_rows = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N
    in_slot = slot_rows + tl.arange(0, BLOCK_N)[None, :]
    ks = tl.arange(0, BLOCK_K)
    # As in stream_k_in_torch, the program walks its run
    # backwards, last tile first; (plan) says why, and traces
    # the worked example through the same loop.
    until = end  # iterations [start, until) are left
    # The `while`, `for` and `if` below test values known only
    # at run time, like int arguments and the program id. So
    # they run on the GPU as Python would run them. (An `if`
    # on a tl.constexpr, such as Part 4's A_TRANSPOSED, is
    # decided when Triton compiles.)
    while until > start:
        tile = (until - 1) // steps  # the last tile left
        tile_start = tile * steps  # its first iteration
        first = tl.maximum(tile_start, start)
        rows = tile // tiles_n * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile % tiles_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for step in range(first - tile_start, until - tile_start):
            k = step * BLOCK_K + ks  # this K step's columns of A
            a_offsets = rows[:, None] * stride_am + k[None, :] * stride_ak
            b_offsets = k[:, None] * stride_bk + cols[None, :] * stride_bn
            a_mask = (rows[:, None] < M) & (k[None, :] < K)
            b_mask = (k[:, None] < K) & (cols[None, :] < N)
            a = tl.load(a_ptr + a_offsets, mask=a_mask, other=0.0)
            b = tl.load(b_ptr + b_offsets, mask=b_mask, other=0.0)
            acc = tl.dot(a, b, acc)
        if until == tile_start + steps:  # this program owns it
            # (The partials it waits for were stored by the
            # `else` branch below, the writer's side.)
            # Each lower program whose run reaches into this
            # tile ends its run here, leaving a partial. If
            # first > tile_start, program pid - 1 is one.
            other = pid - 1
            waiting = first > tile_start
            while waiting:
                flag = flag_ptr + other
                # (fixup)'s step 3: until program `other`
                # sets its flag. (resident) says why this
                # wait ends.
                while tl.atomic_cas(flag, 1, 0, sem="acquire") != 1:
                    pass
                # Step 4: each thread loads its part, from L2.
                partial = partial_ptr + other * slot + in_slot
                acc += tl.load(partial, cache_modifier=".cg")
                # Does the tile start before that program's
                # run? Then a lower program holds more of it.
                waiting = run_start(other, iterations, PROGRAMS) > tile_start
                other -= 1
            c_offsets = rows[:, None] * stride_cm + cols[None, :] * stride_cn
            c_mask = (rows[:, None] < M) & (cols[None, :] < N)
            c = acc.to(c_ptr.dtype.element_ty)  # C's dtype
            tl.store(c_ptr + c_offsets, c, mask=c_mask)
        else:  # the run ends inside this tile, with a partial
            tl.store(partial_ptr + pid * slot + in_slot, acc)
            # (fixup)'s steps 1 and 2: every thread's part
            # stored, then the flag set by a release.
            tl.debug_barrier()
            tl.atomic_xchg(flag_ptr + pid, 1, sem="release")
        until = first


def matmul_stream_k_simple(a, b):
    """a @ b by simple_stream_k_kernel: one program per SM, and
    C in 64 x 64 tiles, as matmul_simple's."""
    (M, K), N = a.shape, b.shape[1]
    assert K == b.shape[0], "a's columns must match b's rows"
    if K == 0:  # no K steps to share out, so no program would store
        return torch.zeros((M, N), dtype=a.dtype, device=a.device)
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    lesson.within_limits(a, b, c)  # as matmul_simple
    a, b = common.dot_inputs(a, b)  # as matmul_simple
    programs = common.sm_count(a.device)  # see (resident)
    tile = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    # A slot a program, of one float32 tile
    slot = (tile["BLOCK_M"], tile["BLOCK_N"])
    f32 = dict(dtype=torch.float32, device=a.device)
    partials = torch.empty((programs, *slot), **f32)
    # The owners set a call's flags back to 0. But two calls on
    # two CUDA streams (queues of GPU work, which may run side
    # by side) may overlap. So each call gets new flags.
    flags = torch.zeros(programs, dtype=torch.int32, device=a.device)
    strides = (*a.stride(), *b.stride(), *c.stride())
    simple_stream_k_kernel[(programs,)](
        a, b, c, partials, flags, M, N, K, *strides,
        PROGRAMS=programs, **tile,
    )  # fmt: skip
    return c


# ## The fast kernel: Part 4's tools on the simple one
# stream_k_kernel does what simple_stream_k_kernel does, and
# its loop has the same lines. What changes:
# - (desc) Part 4's descriptors read A's and B's tiles, and
#   write C's, in place of pointers and masks;
# - (trans) it reads A^T or B^T as they lie, as Part 4's does;
# - (group) its tiles go in Part 2's grouped order, or in
#   row-major order where C is taller than wide (its wrapper
#   says why);
# - (tile) 128 x 128 tiles, K steps of 128 bytes of a row,
#   num_stages = 5, and 8 warps;
# - (epilogue) the owner adds the bias and applies GELU
#   before it stores the tile.
# do_not_specialize, as in persistent.py: a new size reuses
# the compiled kernel (in a weight gradient, K is the tokens).
@triton.jit(do_not_specialize=["M", "N", "K", "stride_a", "stride_b", "stride_cm"])
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
    a_desc, b_desc = operand_descriptors(  # (desc), (trans)
        a_ptr, b_ptr, M, N, K, stride_a, stride_b,
        A_TRANSPOSED, B_TRANSPOSED, BLOCK_M, BLOCK_N, BLOCK_K,
    )  # fmt: skip
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [stride_cm, 1], [BLOCK_M, BLOCK_N])
    pid = tl.program_id(0)
    steps = tl.cdiv(K, BLOCK_K)  # K steps in a tile
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    iterations = tiles * steps
    start = run_start(pid, iterations, PROGRAMS)
    end = run_start(pid + 1, iterations, PROGRAMS)
    slot = BLOCK_M * BLOCK_N
    slot_rows = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N
    in_slot = slot_rows + tl.arange(0, BLOCK_N)[None, :]
    until = end  # iterations [start, until) are left
    while until > start:
        tile = (until - 1) // steps  # the last tile left
        tile_start = tile * steps  # its first iteration
        first = tl.maximum(tile_start, start)
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row, col = pid_m * BLOCK_M, pid_n * BLOCK_N  # (group)
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for step in range(first - tile_start, until - tile_start):
            k = step * BLOCK_K
            a, b = load_k_step(a_desc, b_desc, row, col, k, A_TRANSPOSED, B_TRANSPOSED)
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        if until == tile_start + steps:  # this program owns it
            other = pid - 1
            waiting = first > tile_start
            while waiting:  # as in the simple kernel
                flag = flag_ptr + other
                while tl.atomic_cas(flag, 1, 0, sem="acquire") != 1:
                    pass
                partial = partial_ptr + other * slot + in_slot
                acc += tl.load(partial, cache_modifier=".cg")
                waiting = run_start(other, iterations, PROGRAMS) > tile_start
                other -= 1
            cols = col + tl.arange(0, BLOCK_N)
            acc = add_bias(acc, bias_ptr, cols, N)  # (epilogue)
            c = activate(acc, ACTIVATION)
            c_desc.store([row, col], c.to(c_desc.dtype))  # (desc)
        else:  # the run ends inside this tile, with a partial
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
    programs = common.sm_count(a.device)  # one per SM; see (resident)
    # Tiles with neighbouring numbers should run along C's
    # shorter side: that was quicker on an H200. Grouped order
    # runs down C's columns (C wide); row-major order
    # (GROUP_M = 1) runs along C's rows (C tall).
    group = 1 if M > N else 8
    tile = dict(BLOCK_M=128, BLOCK_N=128, GROUP_M=group)
    # A K step reads 128 bytes of each row, as in persistent.py.
    tile["BLOCK_K"] = 128 // a_arg.element_size()
    slot = (tile["BLOCK_M"], tile["BLOCK_N"])
    f32 = dict(dtype=torch.float32, device=a.device)
    partials = torch.empty((programs, *slot), **f32)
    # The owners set a call's flags back to 0. But two calls on
    # two CUDA streams (queues of GPU work, which may run side
    # by side) may overlap. So each call gets new flags.
    flags = torch.zeros(programs, dtype=torch.int32, device=a.device)
    # Storing a float32 C tile needs more shared memory. Fewer
    # K steps in flight (num_stages) leave room for it.
    stages = 5 if c.element_size() == 2 else 4
    common.set_descriptor_allocator()  # as persistent.py's
    stream_k_kernel[(programs,)](
        a_arg, b_arg, c, bias, partials, flags, M, N, K, *strides,
        PROGRAMS=programs, A_TRANSPOSED=a_t, B_TRANSPOSED=b_t,
        INPUT_PRECISION=input_precision(c.dtype),
        ACTIVATION=activation, **tile, num_warps=8, num_stages=stages,
    )  # fmt: skip
    return c


VARIANTS = {
    **persistent.VARIANTS,
    "stream_k_simple": matmul_stream_k_simple,
    "stream_k": matmul_stream_k,
}


# ## Timing (the harness, which you may skip on a first read)
def variants_for(a, b):
    """The kernels main() checks and times: Part 4's and this
    file's two, where they can compute a @ b and the products
    of its backward. stream_k accepts whatever the persistent
    kernel accepts."""
    earlier = persistent.variants_for(a, b)
    variants = {}
    if "persistent" in earlier:
        variants["persistent"] = earlier["persistent"]
    if "simple" in earlier:  # as matmul_simple, it takes any a, b
        variants["stream_k_simple"] = matmul_stream_k_simple
    if "persistent" in earlier:
        variants["stream_k"] = matmul_stream_k
    return variants


def refusal(a, b):  # persistent.py's, which stream_k shares
    why = persistent.refusal(a, b)
    return why and why.replace("persistent", "persistent and stream_k", 1)


def check_epilogue(a, b):
    """fused.py's check of the fused epilogue, and the same for
    this file's kernel, where that kernel takes a @ b."""
    fused.check_epilogue(a, b)
    if "stream_k" in variants_for(a, b):
        fused.check_epilogue(a, b, matmul_stream_k, "stream_k")


def benchmark(m, n, k, dtype="float16"):
    """main.py's timing table, with the stream-K kernel's row."""
    return lesson.benchmark(m, n, k, dtype, sys.modules[__name__])


SWEEP = lesson.SWEEP  # `make bench` times main.py's cases
# main()'s default case is the docstring's weight gradient. It
# has few tiles and a long K, where stream-K pays. Under the
# interpreter, the case is smaller: 2 of the fast kernel's
# tiles, of 16 K steps each (8 of 32 in the simple kernel).
if common.INTERPRETED:
    CASE = (128, 256, 1024, "float16")
else:
    CASE = (768, 3072, 8192, "bfloat16")


def print_example():
    """The worked example, a tile split three ways, and the
    docstring's case: how busy each kernel keeps the SMs.
    main.py's main() calls it, after reading the arguments."""
    a = torch.randn(2, 8, dtype=torch.float64)
    b = torch.randn(8, 4, dtype=torch.float64)
    for programs in (3, 5):
        print(f"schedule(2, 4, {programs}):")
        print(schedule(2, 4, programs))
        c = stream_k_in_torch(a, b, programs)
        error = (c - a @ b).abs().max().item()
        print(f"stream_k_in_torch, 2x8 @ 8x4: at most {error:.1e} off")
    # 768 x 3072 x 8192 on an H200's 132 SMs: 144 tiles of 128
    # steps. Stream-K's runs are 139 or 140 iterations long.
    tiles_busy = persistent.busy_share(768, 3072, 132, 128)
    iterations = 144 * 128
    runs_busy = iterations / (triton.cdiv(iterations, 132) * 132)
    print(f"768x3072x8192 on 132 SMs: Part 4's 128 x 128 tiles keep {tiles_busy:.0%}"
          f" of the SMs' time busy, stream-K's runs {runs_busy:.1%}")  # fmt: skip


def main(argv=None):
    return lesson.main(argv, sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
