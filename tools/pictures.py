"""`python 0X_*/main.py --draw FILE.png`: which program computes which part of the output, drawn
from a run of the lesson's own kernels at the size of its worked example (on the CPU, through
the interpreter, in about a second).

How a run tells who wrote what, with public Triton only:
- programs_along_axis launches a kernel with 1, 2, 3, ... programs along one grid axis, into an
  output of NaN: what the n-th launch writes that the (n-1)-th did not is program n - 1's;
- rows_in reads a sum of float64 powers of two: with x[r, :] = 2**r, a sum over rows is exact
  and its bits name the rows it added (a kernel that sums float64 adds in float64);
- an input cut from a larger buffer of NaN (inside_nan) shows that the masks work: a load past
  the edge would read NaN, and the output would be NaN;
- 02 runs its kernel's own helper, grouped_tile, in a small kernel that stores each program's tile;
  stream_k.py's K steps are powers of two too, so each partial sum names its tile and steps;
- 03's tile layout is the one Triton compiles its simple kernel with (tools.asm.tile_layout).
Autotuned kernels are launched through .fn (the kernel under @triton.autotune) with small tiles."""

import io
import math
import textwrap
from pathlib import Path

import common  # before triton: on a CPU it switches the interpreter on
import torch
import triton
import triton.language as tl
from tools import asm, load_example

NAN = float("nan")


def programs_along_axis(launch, programs, out):
    """out's elements, each as the index along one grid axis of the program that wrote it (-1:
    none). launch(n) runs the kernel with n programs along that axis into out."""
    owner = torch.full(out.shape, -1, dtype=torch.int64)
    for n in range(1, programs + 1):
        out.fill_(NAN)
        launch(n)
        owner[~out.isnan().cpu() & (owner < 0)] = n - 1
    return owner


def rows_in(total):  # the rows r whose 2**r are in `total`, a float64 sum of distinct powers
    bits = int(total)
    return [r for r in range(bits.bit_length()) if bits >> r & 1]


def powers_of_two(rows, cols):  # x[r, c] = 2**r in float64, so that sums of rows are exact
    column = 2.0 ** torch.arange(rows, dtype=torch.float64, device=common.DEVICE)
    return column[:, None].expand(rows, cols).contiguous()


def inside_nan(rows, cols, padded_rows, padded_cols):
    """A random (rows, cols) view into a (padded_rows, padded_cols) buffer of NaN."""
    buffer = torch.full((padded_rows, padded_cols), NAN, device=common.DEVICE)
    buffer[:rows, :cols] = torch.randn(rows, cols, device=common.DEVICE)
    return buffer[:rows, :cols]


def who_summed_what(launch, column_blocks, partial, rows, name):
    """Colours and labels for 03's and 04's split sums: x's rows, a blank row, then partial's. The
    kernel's program (b, p) adds up column block b (grid axis 0) of some of x's rows, x[r, :] =
    2**r, into partial row p (axis 1). launch(n): the kernel with n column blocks, into partial.
    name: a label format for (b, p)."""
    block_of = programs_along_axis(launch, column_blocks, partial)
    launch(column_blocks)  # partial again, all of it: each sum names the rows it added
    programs, cols = partial.shape
    colour = torch.full((rows + 1 + programs, cols), -1, dtype=torch.int64)
    labels = [[""] * cols for _ in range(rows + 1 + programs)]
    for p in range(programs):
        for j in range(cols):
            b = int(block_of[p, j])
            for r in [*rows_in(partial[p, j]), rows + 1 + p]:  # the rows it added, its partial row
                colour[r, j], labels[r][j] = 6 + 2 * (b * programs + p), name.format(b, p)
    return colour, labels


def cells(ax, colour, labels, title, row_names=None, aspect="auto", width=92):
    """A grid of cells: colour[i, j] an index into matplotlib's 20 "tab20" colours (-1: white),
    labels[i][j] its text; row_names: the rows' tick labels (default: indices; [] for none);
    width: the title's characters a line."""
    shown = torch.where(colour < 0, torch.nan, colour.double())
    ax.imshow(shown.numpy(), cmap="tab20", vmin=-0.5, vmax=19.5, alpha=0.45, aspect=aspect)
    rows, cols = colour.shape
    for i in range(rows):
        for j in range(cols):
            ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=7)
    row_names = [str(i) for i in range(rows)] if row_names is None else row_names
    ticks = range(cols) if row_names else []
    ax.set_xticks(ticks, [str(j) for j in ticks], fontsize=7)
    ax.set_yticks(range(len(row_names)), row_names, fontsize=7)
    ax.set_xticks([j - 0.5 for j in range(cols + 1)], minor=True)
    ax.set_yticks([i - 0.5 for i in range(rows + 1)], minor=True)
    ax.tick_params(which="both", length=0)
    ax.grid(which="minor", color="grey", linewidth=0.5)
    ax.set_title("\n".join(textwrap.fill(line, width) for line in title.split("\n")), fontsize=8)


def worked_example_x(rows=5, cols=6):
    """The docstrings' x: (5, 6), stored row after row (so a column past 5 is the next row's
    start), with NaN after its end: a load past the end that a mask let through shows as NaN."""
    memory = torch.full(((rows + 1) * cols,), NAN, device=common.DEVICE)
    memory[: rows * cols] = torch.randn(rows * cols, device=common.DEVICE)
    return memory[: rows * cols].view(rows, cols)


def masked(row, col, rows=5, cols=6):  # what a masked lane at (row, col) of x's tile would read
    offset = row * cols + col
    return f"x[{offset // cols}, {offset % cols}]" if offset < rows * cols else "past x"


def offsets_read(lesson, b, m, block_k):
    """The offsets that vector_k_kernel's program for C[1, 2] reads of b (K, N), whose memory
    holds its own offsets: with A[1] 1 at one k and 0 elsewhere, C[1, 2] is B[k, 2]'s offset
    (float32 holds these small integers exactly)."""
    (k, n), offsets = b.shape, []
    for step in range(k):
        a = torch.zeros(m, k, device=b.device)
        a[1, step] = 1
        c = torch.empty(m, n, device=b.device)
        args = (a, b, c, n, k, *a.stride(), *b.stride(), *c.stride())
        lesson.vector_k_kernel[(m * n,)](*args, BLOCK_K=block_k)
        offsets.append(int(c[1, 2]))
    return offsets


def draw_01(lesson, figure):
    """01: which program of vector_k_kernel computes each element of C, its K loop, and the memory
    that strides send it to"""
    axes = figure.subplot_mosaic([[0, 1], [2, 2]], height_ratios=[3, 1])
    m, n, k, block_k = 3, 4, 10, 4
    a, b = inside_nan(m, k, m, k + 2), torch.randn(k, n, device=common.DEVICE)
    c = torch.empty(m, n, device=common.DEVICE)
    args = (a, b, c, n, k, *a.stride(), *b.stride(), *c.stride())
    launch = lambda p: lesson.vector_k_kernel[(p,)](*args, BLOCK_K=block_k)  # noqa: E731
    owner = programs_along_axis(launch, m * n, c)
    cells(
        axes[0], owner, [[f"program {int(p)}" for p in row] for row in owner],
        f"C ({m} x {n}): the program that wrote each element, recorded from runs of\n"
        f"vector_k_kernel: program p computes C[p // N, p % N], N = {n}",
    )  # fmt: skip
    step = torch.tensor([[12 + 2 * (min(s, k - 1) // block_k) for s in range(k + 2)]])
    labels = [[f"step {s // block_k}" + ("\nmasked" if s >= k else "") for s in range(k + 2)]]
    cells(
        axes[1], step, labels,
        f"program 6 (C[1, 2]) walks A[1, :] in steps of BLOCK_K = {block_k}\n(for k0 in range(0, "
        f"K, BLOCK_K)); step 2's lanes k = 10, 11 are past K = {k}: masked off.\nA's rows lie in a "
        f"buffer 12 wide whose last 2 columns hold NaN: a masked lane\nthat loaded one would make "
        f"C NaN. C is finite: {bool(c.isfinite().all())}",
        ["A[1, k]"], "equal",
    )  # fmt: skip
    memory, read = torch.arange(k * n, dtype=torch.float32), torch.full((2, k * n), -1)
    for layout, b in enumerate((memory.view(n, k).T, memory.view(k, n))):
        read[layout, offsets_read(lesson, b.to(common.DEVICE), m, block_k)] = 6  # program 6
    cells(
        axes[2], read, [[str(o) if r >= 0 else "" for o, r in enumerate(row)] for row in read],
        "The memory offsets program 6 read for B[:, 2]: B = W.T (strides (1, 10)) reads W's "
        "row 2, offsets 20 to 29, side by side;\na row-major B (strides (4, 1)) reads every 4th "
        "offset, 2 to 38",
        ["B = W.T: W's memory", "row-major B's memory"], width=190,
    )  # fmt: skip


@triton.jit
def tile_of_program_kernel(
    where_ptr, M, N, tile_of: tl.constexpr,  # tile_of: a @triton.jit function, here grouped_tile
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    row, col = tile_of(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    tl.store(where_ptr + 2 * pid, row)
    tl.store(where_ptr + 2 * pid + 1, col)


def draw_02(lesson, figure):
    """02: the order of C's tiles, row-major and grouped (grouped_tile, whose comment draws 4 x 4
    tiles with GROUP_M = 2), the strips of A and B that one wave of programs reads, and the tiles
    each program of the persistent kernel walks"""
    part4 = load_example(Path(lesson.__file__).parent / "persistent.py")  # 02's Part 4
    axes = figure.subplots(1, 3, width_ratios=[1, 1, 0.8])
    draw_persistent_walk(part4, axes[2])
    tiles, wave, block, red, grey = 9, 9, 16, 6, 15
    for ax, group_m in zip(axes, (1, 3)):
        where = torch.empty((tiles * tiles, 2), dtype=torch.int32, device=common.DEVICE)
        tile_of_program_kernel[(tiles * tiles,)](
            where, tiles * block, tiles * block, lesson.grouped_tile,
            BLOCK_M=block, BLOCK_N=block, GROUP_M=group_m,
        )  # fmt: skip
        order = torch.full((tiles + 1, tiles + 1), -1, dtype=torch.int64)  # row 0 B, column 0 A
        for pid, (row, col) in enumerate(where.cpu().tolist()):
            order[row + 1, col + 1] = pid
        in_wave = (order >= 0) & (order < wave)
        a_read, b_read = in_wave.any(1)[1:], in_wave.any(0)[1:]
        colour = torch.where(in_wave, red, -1)
        colour[1:, 0], colour[0, 1:] = (
            torch.where(a_read, red, grey),
            torch.where(b_read, red, grey),
        )
        labels = [[str(int(v)) if v >= 0 else "" for v in row] for row in order]
        labels[0] = [""] + [f"B{j}" for j in range(tiles)]
        for i in range(tiles):
            labels[i + 1][0] = f"A{i}"
        strips = int(a_read.sum()) + int(b_read.sum())
        name = (
            "row-major, simple_matmul_kernel's order: grouped_tile with GROUP_M = 1"
            if group_m == 1 else f"grouped: grouped_tile with GROUP_M = {group_m}"
        )  # fmt: skip
        cells(
            ax, colour, labels,
            f"{name}.\nA number: the program id that computes that tile of C. Red: the "
            f"first {wave} programs\n(one wave, if {wave} SMs) and the {strips} strips of A and B "
            f"they read; grey: not read",
            [], width=62,
        )  # fmt: skip


def draw_03(lesson, figure):
    """03: who sums what, in simple_column_sum_kernel and in column_sum_kernel; and which warp
    holds which values of simple_column_sum_kernel's tile"""
    figure.set_size_inches(12, 9.5)
    top, bottom = figure.subfigures(2, 1, height_ratios=[5, 4.5])
    axes = top.subplots(1, 2)
    draw_tile_layout(bottom.subplots(), asm.tile_layout(lesson))
    M, N, block_m, block_n = 5, 6, 2, 4
    x, out = worked_example_x(M, N), torch.empty(N, device=common.DEVICE)
    launch = lambda p: lesson.simple_column_sum_kernel[(p,)](  # noqa: E731
        x, out, M, N, *x.stride(), BLOCK_M=block_m, BLOCK_N=block_n
    )
    owner = programs_along_axis(launch, triton.cdiv(N, block_n), out)
    colour = torch.tensor([[2 * int(owner[min(j, N - 1)]) for j in range(8)] for _ in range(6)])
    labels = [
        [f"p{int(owner[min(j, N - 1)])} step {i // block_m}\n"
         + (f"acc[{i % block_m}]" if i < M and j < N else f"masked\n({masked(i, j)})")
         for j in range(8)]
        for i in range(6)
    ]  # fmt: skip
    cells(
        axes[0], colour, labels,
        f"simple_column_sum_kernel on the docstring's x ({M} x {N}): program p owns BLOCK_N = "
        f"{block_n} columns;\nstep i adds rows 2i, 2i + 1 into acc's rows 0, 1. A masked cell "
        f"names what an unmasked load would read; none is read:\nthe memory after x is filled "
        f"with NaN, and {'no sum' if out.isfinite().all() else 'a sum'} came out NaN",
    )  # fmt: skip
    M, rows_per_chunk, splits, column_blocks = 12, 4, 3, 2
    x = powers_of_two(M, N)
    partial = torch.empty((splits, N), dtype=torch.float64, device=common.DEVICE)
    launch = lambda c: lesson.column_sum_kernel.fn[(c, splits)](  # noqa: E731 (.fn: untuned)
        x, partial, M, N, *x.stride(), rows_per_chunk, BLOCK_M=block_m, BLOCK_N=block_n, STAGES=1
    )
    colour, labels = who_summed_what(launch, column_blocks, partial, M, "c{} s{}")
    cells(
        axes[1], colour, labels,
        f"column_sum_kernel, x ({M} x {N}) in {splits} chunks of {rows_per_chunk} rows "
        f"(chosen here; the lesson's are\nlonger): program (c, s) adds chunk s's rows of "
        f"program c's columns into partial row s; sum_partials adds them up",
        [f"x row {r}" for r in range(M)] + [""] + [f"partial {s}" for s in range(splits)],
    )  # fmt: skip


def draw_tile_layout(ax, layout, rows=16, cols=64):
    """The layout --asm prints for 03's 16 x 64 float32 tile: a cell is the 4 values of a row
    that one thread holds, coloured by warp and labelled with its warp and lane (the thread's
    number in its warp). layout: tools.asm.block_layout's ((rows, columns) a thread holds,
    (rows, columns) of threads in a warp, (rows, columns) of warps), columns fastest."""
    (_, tc), _, (nr, nc) = layout  # the values a thread holds in a row; the grid of warps
    groups = cols // tc  # the cells along a row: one thread's tc values each
    colour = torch.zeros((rows, groups), dtype=torch.int64)
    labels = [[""] * groups for _ in range(rows)]
    for i in range(rows):
        for g in range(groups):
            warp, lane = warp_and_lane(i, g, layout)
            colour[i, g], labels[i][g] = 2 * warp, f"w{warp} t{lane}"
    cells(
        ax, colour, labels,
        f"simple_column_sum_kernel's {rows} x {cols} float32 tile, as Triton lays it out on "
        f"{nr * nc} warps (`main.py --asm` prints this layout): a cell is the {tc} values of a "
        f"row that one thread holds (columns {tc}g to {tc}g + {tc - 1}), coloured by its warp w, "
        f"t its lane. acc += tile stays in each thread; tl.sum(acc, axis=0) adds a column, "
        f"whose {rows} values lie in all {nr * nc} warps",
        width=150,
    )  # fmt: skip
    ax.set_xticks(range(groups), [f"{tc * g}-{tc * g + tc - 1}" for g in range(groups)], fontsize=6)


def warp_and_lane(row, group, layout):
    """(warp, lane) of the thread that holds row `row`, columns group * tc to group * tc + tc - 1
    of a block laid out as `layout` (tools.asm.block_layout's), its threads' columns fastest."""
    (tr, tc), (wr, wc), (nr, nc) = layout
    r, c = row // tr, group  # the thread's place in the grid of threads, repeated to cover
    return (r // wr % nr) * nc + (c // wc % nc), (r % wr) * wc + c % wc


def draw_04(lesson, figure):
    """04: simple_forward_kernel's row tiles, and backward_kernel's (D tile, program) grid"""
    axes = figure.subplots(1, 2)
    rows, D, rows_tile, d_tile = 5, 6, 2, 4
    x, w = worked_example_x(rows, D), torch.randn(D, device=common.DEVICE)
    y = torch.empty(rows, device=common.DEVICE)
    launch = lambda p: lesson.simple_forward_kernel[(p,)](  # noqa: E731
        x, w, y, rows, D, *x.stride(), ROWS_TILE=rows_tile, D_TILE=d_tile
    )
    owner = programs_along_axis(launch, triton.cdiv(rows, rows_tile), y)
    colour = torch.tensor([[2 * int(owner[min(r, rows - 1)]) for _ in range(8)] for r in range(6)])
    labels = [
        [f"p{int(owner[min(r, rows - 1)])} step {d // d_tile}"
         + ("" if r < rows and d < D else f"\nmasked\n({masked(r, d)})")
         for d in range(8)]
        for r in range(6)
    ]  # fmt: skip
    cells(
        axes[0], colour, labels,
        f"simple_forward_kernel on the docstring's x ({rows} x {D}): program p computes y for "
        f"ROWS_TILE = {rows_tile} rows;\nstep s loads columns 4s to 4s + 3. A masked cell names "
        f"what an unmasked load would read; none is read:\nthe memory after x is filled with "
        f"NaN, and {'no y' if y.isfinite().all() else 'a y'} came out NaN",
    )  # fmt: skip
    rows, D, programs = 10, 8, 2
    x, ones = powers_of_two(rows, D), torch.ones(max(rows, D), dtype=torch.float64)
    w, grad_y = ones[:D].to(common.DEVICE), ones[:rows].to(common.DEVICE)
    grad_x = torch.empty((rows, D), dtype=torch.float64, device=common.DEVICE)
    partial = torch.empty((programs, D), dtype=torch.float64, device=common.DEVICE)
    launch = lambda t: lesson.backward_kernel.fn[(t, programs)](  # noqa: E731
        x, w, grad_y, grad_x, partial, rows, D, *x.stride(), ROWS_TILE=rows_tile, D_TILE=d_tile,
    )  # fmt: skip
    colour, labels = who_summed_what(launch, triton.cdiv(D, d_tile), partial, rows, "t{} p{}")
    cells(
        axes[1], colour, labels,
        f"backward_kernel, x ({rows} x {D}): program (t, p) takes D tile t of row tiles p, "
        f"p + {programs}, ... (their grad_x too)\nand adds x * grad_y into partial row p; "
        f"partial.sum(0) then adds partial's rows into grad_w",
        [f"row {r} (tile {r // rows_tile})" for r in range(rows)] + [""]
        + [f"partial {p}" for p in range(programs)],
    )  # fmt: skip


def draw_persistent_walk(lesson, ax, programs=4, tiles=6):
    """Which program of persistent_matmul_kernel stores each 128 x 128 tile of C, from runs with
    1 to `programs` of its PROGRAMS programs launched (programs_along_axis), and at which turn of
    its walk: tile t is program t % PROGRAMS's turn t // PROGRAMS, in grouped order."""
    side, k = 128 * tiles, 64
    a, b = (torch.randn(side, k, device=common.DEVICE, dtype=torch.float16) for _ in range(2))
    c = torch.empty((side, side), device=common.DEVICE, dtype=torch.float16)
    assert not lesson.wide_tiles(side, side, programs)  # the heuristics pick 128 x 128 tiles
    common.set_descriptor_allocator()
    launch = lambda n: lesson.persistent_matmul_kernel[(n,)](  # noqa: E731
        a, b, c, None, None, side, side, k, k, k, side, PROGRAMS=programs,
        A_TRANSPOSED=False, B_TRANSPOSED=True, INPUT_PRECISION="ieee", ACTIVATION=None,
    )  # fmt: skip
    owner = programs_along_axis(launch, programs, c)[::128, ::128]  # one cell a tile
    where = torch.empty((tiles * tiles, 2), dtype=torch.int32, device=common.DEVICE)
    tile_of_program_kernel[(tiles * tiles,)](
        where, side, side, lesson.grouped_tile, BLOCK_M=128, BLOCK_N=128, GROUP_M=8
    )
    labels = [["" for _ in range(tiles)] for _ in range(tiles)]
    for tile, (row, col) in enumerate(where.cpu().tolist()):
        assert owner[row, col] == tile % programs  # the walk the lesson describes
        labels[row][col] = f"p{tile % programs}, turn {tile // programs}"
    cells(
        ax, owner, labels,
        f"persistent_matmul_kernel, PROGRAMS = {programs}, C of {tiles} x {tiles} tiles: the "
        f"program that stored each tile (recorded from runs), and the turn of its walk: program p "
        f"takes tiles p, p + {programs}, ... in grouped order (GROUP_M = 8: down whole columns)",
        width=60,
    )  # fmt: skip


def draw_02_stream_k(lesson, figure):
    """02, Part 5 (stream_k.py): the persistent kernel's walk, a tile a program's turn, and
    stream-K's split of each tile's K steps between programs"""
    axes = figure.subplots(1, 2)
    draw_persistent_walk(load_example(Path(lesson.__file__).parent / "persistent.py"), axes[0])
    draw_stream_k_steps(lesson, axes[1])


def stream_k_steps(lesson, programs=3, tiles=2, steps=4):
    """From runs of stream_k_kernel with PROGRAMS = programs on C of 1 x `tiles` tiles of 128 x
    128 and K of `steps` K steps: the program that added each K step of each tile, (tiles,
    steps), and the program that stored each tile, (tiles,). A is ones, and B's block for tile t
    and K step s holds 2 ** (steps * t + s) / 32: the bits of a partial sum (rows_in) name its
    tile and steps. The owner's own steps are those in no partial."""
    block_k = 32  # a float32 K step
    m, n, k = 128, 128 * tiles, block_k * steps
    a = torch.ones(m, k, device=common.DEVICE)
    b = torch.empty(k, n, device=common.DEVICE)
    for t in range(tiles):
        for s in range(steps):
            value = 2.0 ** (steps * t + s) / block_k
            b[s * block_k : (s + 1) * block_k, t * 128 : (t + 1) * 128] = value
    c = torch.empty(m, n, device=common.DEVICE)
    partials = torch.full((programs, 128, 128), NAN, device=common.DEVICE)
    common.set_descriptor_allocator()

    def launch(count):  # the first `count` programs: each waits only for lower ones
        flags = torch.zeros(programs, dtype=torch.int32, device=common.DEVICE)
        lesson.stream_k_kernel[(count,)](
            a, b, c, None, partials, flags, m, n, k, k, n, n, PROGRAMS=programs,
            A_TRANSPOSED=False, B_TRANSPOSED=False, INPUT_PRECISION="ieee", ACTIVATION=None,
            BLOCK_M=128, BLOCK_N=128, BLOCK_K=block_k, GROUP_M=8,
        )  # fmt: skip

    owner = programs_along_axis(launch, programs, c)[0, ::128]  # one a tile
    added_by = torch.full((tiles, steps), -1, dtype=torch.int64)
    for p, total in enumerate(partials[:, 0, 0].tolist()):
        for bit in [] if math.isnan(total) else rows_in(total):
            added_by[bit // steps, bit % steps] = p
    for t in range(tiles):
        added_by[t][added_by[t] < 0] = owner[t]
    return added_by, owner


def draw_stream_k_steps(lesson, ax, programs=3, tiles=2, steps=4):
    """Who adds each K step of each tile in stream_k_kernel, and who stores the tile."""
    added_by, owner = stream_k_steps(lesson, programs, tiles, steps)
    labels = [[f"p{p}" + (" owner" if p == owner[t] else "") for p in row]
              for t, row in enumerate(added_by.tolist())]  # fmt: skip
    cells(
        ax, 2 * added_by, labels,  # tab20's even colours: a hue a program
        f"stream_k_kernel, PROGRAMS = {programs}, C of {tiles} tiles of {steps} K steps (columns)"
        f": the program that added each K step (recorded from launches of the kernel). The owner "
        f"adds the others' partial sums and stores the tile. As schedule({tiles}, {steps}, "
        f"{programs}) prints",
        [f"tile {t}" for t in range(tiles)], width=70,
    )  # fmt: skip


DRAWINGS = {"01": draw_01, "02": draw_02, "03": draw_03, "04": draw_04}
DRAWINGS["02_matmul_tiled/stream_k.py"] = draw_02_stream_k


def draw(lesson, path):
    """Draw the picture of `lesson` (a lesson's main module) into the PNG at path."""
    import PIL.Image  # Pillow, which matplotlib needs and brings
    from matplotlib.figure import Figure  # not pyplot: no display needed

    figure = Figure(figsize=(12, 5), layout="constrained")
    path_in_repo = f"{Path(lesson.__file__).parent.name}/{Path(lesson.__file__).name}"
    drawing = DRAWINGS.get(path_in_repo)
    if drawing is None:  # a file with no picture of its own (any_x.py): main.py's
        drawing = DRAWINGS[path_in_repo[:2]]
        lesson = load_example(Path(lesson.__file__).parent / "main.py")
    drawing(lesson, figure)
    # No versions or device in the title: the picture is the same wherever it is drawn, so
    # `make pictures` leaves the tracked PNGs unchanged.
    figure.suptitle(drawing.__doc__, fontsize=9)
    if Path(path).suffix.lower() != ".png":  # another kind matplotlib writes (.svg, .pdf)
        figure.savefig(path, dpi=90)
    else:  # 64 colours are plenty for flat cells and text, and make the PNG a few times smaller
        buffer = io.BytesIO()
        figure.savefig(buffer, dpi=90)
        PIL.Image.open(buffer).quantize(colors=64).save(path, optimize=True)
    print(f"wrote {path}")
