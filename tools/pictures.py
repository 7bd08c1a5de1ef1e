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
- 02 runs its kernel's own helper, grouped_tile, in a small kernel that stores each program's tile.
Autotuned kernels are launched through .fn (the kernel under @triton.autotune) with small tiles."""

from pathlib import Path

import torch
import triton
import triton.language as tl

import common

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


def cells(ax, colour, labels, title, row_names=None):
    """A grid of cells: colour[i, j] an int picking a colour (-1: white), labels[i][j] its text;
    row_names: the rows' tick labels (default: their indices; [] for no ticks)."""
    shown = torch.where(colour < 0, torch.nan, colour.double() % 9)
    ax.imshow(shown.numpy(), cmap="Pastel1", vmin=0, vmax=8, aspect="equal")
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
    ax.set_title(title, fontsize=8)


def draw_01(lesson, axes):
    """C's elements by the vector_k_kernel program that wrote each; one program's K loop."""
    m, n, k, block_k = 3, 4, 10, 4
    a, b = inside_nan(m, k, m, k + 2), torch.randn(k, n, device=common.DEVICE)
    c = torch.empty(m, n, device=common.DEVICE)
    args = (a, b, c, n, k, *a.stride(), *b.stride(), *c.stride())
    launch = lambda p: lesson.vector_k_kernel[(p,)](*args, BLOCK_K=block_k)  # noqa: E731
    owner = programs_along_axis(launch, m * n, c)
    cells(
        axes[0], owner, [[f"program {int(p)}" for p in row] for row in owner],
        f"vector_k_kernel: the program that wrote each element of C ({m} x {n})\n"
        f"program p computes C[p // N, p % N], N = {n}",
    )  # fmt: skip
    step = torch.tensor([[s // block_k if s < k else -1 for s in range(k + 2)]])
    labels = [[f"step {s // block_k}" if s < k else "masked" for s in range(k + 2)]]
    cells(
        axes[1], step, labels,
        f"program 6 (C[1, 2]): the step of its K loop that loads each A[1, k]\n"
        f"BLOCK_K = {block_k}, K = {k}; A[1, 10:12] hold NaN, and C is finite: "
        f"{bool(c.isfinite().all())}",
        ["A[1, k]"],
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


def draw_02(lesson, axes):
    """The launch order of C's tiles, row-major and grouped, and the strips of A and B that the
    first wave of programs reads (the matmul tutorial's picture, here from grouped_tile)."""
    tiles, wave, block = 9, 9, 16
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
        colour = torch.where(in_wave, 0, -1)
        colour[1:, 0], colour[0, 1:] = torch.where(a_read, 0, 8), torch.where(b_read, 0, 8)
        labels = [[str(int(v)) if v >= 0 else "" for v in row] for row in order]
        labels[0] = [""] + [f"B{j}" for j in range(tiles)]
        for i in range(tiles):
            labels[i + 1][0] = f"A{i}"
        name = "row-major (GROUP_M = 1)" if group_m == 1 else f"grouped (GROUP_M = {group_m})"
        cells(
            ax, colour, labels,
            f"{name}: program ids over C's {tiles} x {tiles} tiles. The first {wave} programs "
            f"(one wave,\nif {wave} run at once) read {int(a_read.sum())} row strips of A "
            f"(A0 ..) and {int(b_read.sum())} column strips of B (B0 ..)",
            [],
        )  # fmt: skip


def draw_03(lesson, axes):
    """The docstring's example by simple_column_sum_kernel; then column_sum_kernel's row split."""
    M, N, block_m, block_n = 5, 6, 2, 4
    x, out = inside_nan(M, N, 6, 8), torch.empty(N, device=common.DEVICE)
    launch = lambda p: lesson.simple_column_sum_kernel[(p,)](  # noqa: E731
        x, out, M, N, *x.stride(), BLOCK_M=block_m, BLOCK_N=block_n
    )
    owner = programs_along_axis(launch, triton.cdiv(N, block_n), out)
    colour = torch.full((6, 8), -1, dtype=torch.int64)
    colour[:M, :N] = owner[None, :]
    labels = [[f"p{int(owner[j])} pass {i // block_m}" for j in range(N)] for i in range(M)]
    labels = [row + ["masked"] * 2 for row in labels] + [["masked"] * 8]
    cells(
        axes[0], colour, labels,
        f"simple_column_sum_kernel, x ({M} x {N}): program p owns BLOCK_N = {block_n} columns; "
        f"pass i of\nits loop loads rows 2i, 2i + 1. NaN past x's edges, and out is finite: "
        f"{bool(out.isfinite().all())}",
    )  # fmt: skip
    M, rows_per_split, splits, column_blocks = 12, 4, 3, 2
    x = powers_of_two(M, N)
    partial = torch.empty((splits, N), dtype=torch.float64, device=common.DEVICE)
    launch = lambda c: lesson.column_sum_kernel.fn[(c, splits)](  # noqa: E731
        x, partial, M, N, *x.stride(), rows_per_split, BLOCK_M=block_m, BLOCK_N=block_n, STAGES=1
    )
    block_of = programs_along_axis(launch, column_blocks, partial)
    launch(column_blocks)  # partial again, all of it: each sum names the rows it added
    colour = torch.full((M + 1 + splits, N), -1, dtype=torch.int64)
    labels = [[""] * N for _ in range(M + 1 + splits)]
    for s in range(splits):
        for j in range(N):
            program = (int(block_of[s, j]), s)
            for r in [*rows_in(partial[s, j]), M + 1 + s]:  # the rows it added, its partial row
                colour[r, j], labels[r][j] = program[0] * splits + s, "{},{}".format(*program)
    cells(
        axes[1], colour, labels,
        f"column_sum_kernel, x ({M} x {N}) in {splits} chunks of {rows_per_split} rows: program "
        f"(c, s) sums\ncolumn block c of chunk s into partial row s; a second pass adds them up",
        [str(r) for r in range(M)] + [""] + [f"partial {s}" for s in range(splits)],
    )  # fmt: skip


def draw_04(lesson, axes):
    """forward_kernel's row tiles on the docstring's example; backward_kernel's (D tile, p) grid."""
    rows, D, rows_tile, d_tile = 5, 6, 2, 4
    x, w = inside_nan(rows, D, 6, 8), torch.randn(D, device=common.DEVICE)
    y = torch.empty(rows, device=common.DEVICE)
    launch = lambda p: lesson.forward_kernel.fn[(p,)](  # noqa: E731
        x, w, y, rows, D, *x.stride(), X_ROW_ALIGN=1, D_ALIGN=1, ROWS_TILE=rows_tile, D_TILE=d_tile
    )
    owner = programs_along_axis(launch, triton.cdiv(rows, rows_tile), y)
    colour = torch.full((6, 8), -1, dtype=torch.int64)
    colour[:rows, :D] = owner[:, None]
    labels = [[f"p{int(owner[r])} step {d // d_tile}" for d in range(D)] for r in range(rows)]
    labels = [row + ["masked"] * 2 for row in labels] + [["masked"] * 8]
    cells(
        axes[0], colour, labels,
        f"forward_kernel, x ({rows} x {D}): program p writes y for ROWS_TILE = {rows_tile} rows; "
        f"step s loads\ncolumns 4s to 4s + 3. NaN past x's edges, and y is finite: "
        f"{bool(y.isfinite().all())}",
    )  # fmt: skip
    rows, D, programs = 10, 8, 2
    x, ones = powers_of_two(rows, D), torch.ones(max(rows, D), dtype=torch.float64)
    w, grad_y = ones[:D].to(common.DEVICE), ones[:rows].to(common.DEVICE)
    grad_x = torch.empty((rows, D), dtype=torch.float64, device=common.DEVICE)
    partial = torch.empty((programs, D), dtype=torch.float64, device=common.DEVICE)
    launch = lambda t: lesson.backward_kernel.fn[(t, programs)](  # noqa: E731
        x, w, grad_y, grad_x, partial, rows, D, *x.stride(), grad_y.stride(0), X_ROW_ALIGN=1,
        D_ALIGN=1, NEED_GRAD_X=True, NEED_GRAD_W=True, ROWS_TILE=rows_tile, D_TILE=d_tile,
    )  # fmt: skip
    tile_of = programs_along_axis(launch, triton.cdiv(D, d_tile), partial)
    launch(triton.cdiv(D, d_tile))  # partial again, all of it: each sum names the rows it added
    colour = torch.full((rows + 1 + programs, D), -1, dtype=torch.int64)
    labels = [[""] * D for _ in range(rows + 1 + programs)]
    for p in range(programs):
        for d in range(D):
            program = (int(tile_of[p, d]), p)
            for r in [*rows_in(partial[p, d]), rows + 1 + p]:  # the rows it read, its partial row
                colour[r, d], labels[r][d] = program[0] * programs + p, "{},{}".format(*program)
    cells(
        axes[1], colour, labels,
        f"backward_kernel, x ({rows} x {D}): program (t, p) takes D tile t and row tiles p, "
        f"p + {programs}, ...,\nwrites their grad_x, and sums x * grad_y into partial row p",
        [str(r) for r in range(rows)] + [""] + [f"partial {p}" for p in range(programs)],
    )  # fmt: skip


DRAWINGS = {"01": draw_01, "02": draw_02, "03": draw_03, "04": draw_04}


def draw(lesson, path):
    """Draw the picture of `lesson` (a lesson's main module) into the PNG at path."""
    from matplotlib.figure import Figure  # not pyplot: no display needed

    figure = Figure(figsize=(12, 5), layout="constrained")
    DRAWINGS[Path(lesson.__file__).parent.name[:2]](lesson, figure.subplots(1, 2))
    figure.suptitle(f"{lesson.__doc__.splitlines()[0]}\n({common.describe_run()})", fontsize=9)
    figure.savefig(path, dpi=90)
    print(f"wrote {path}")
