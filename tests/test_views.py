"""Each lesson's --draw (tools/pictures.py) and --asm (tools/asm.py), and the ways the pictures
find out which program wrote what."""

import pytest
import torch

import support
from support import common
from tools import bench, example_paths, pictures

EXAMPLES = [path.parent.name for path in example_paths()]
# An instruction each lesson's --asm names, and that its compiled kernel must hold.
INSTRUCTIONS = {
    "01_matmul_elementwise": ["fma.rn.f32", "ld.global.b32", "ld.global.v2", "shfl.sync.bfly"],
    "02_matmul_tiled": ["wgmma.mma_async", "cp.async.cg", "cp.async.bulk.tensor"],
    "03_blocked_sum": ["shfl.sync.bfly", "bar.sync"],
    "04_weighted_sum": ["ld.global.v4.b32", "ld.global.b32"],
}


@pytest.mark.parametrize("folder", EXAMPLES)
def test_draw_writes_a_png(folder, tmp_path, capsys):
    path = tmp_path / "picture.png"
    with pytest.raises(SystemExit) as exit_info:
        support.load(folder).main(["--draw", str(path)])
    assert exit_info.value.code in (0, None)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000  # a blank figure is a few KB
    assert f"wrote {path}" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["missing/picture.png", "picture.foo", "folder.png"])
def test_draw_to_a_path_it_cannot_write_is_a_usage_error(name, tmp_path, capsys):
    # It had ended in matplotlib's FileNotFoundError or ValueError (IsADirectoryError for a
    # folder), with a traceback, after the kernels ran.
    (tmp_path / "folder.png").mkdir()
    for run in (support.load("04_weighted_sum").main, exercises_main):
        with pytest.raises(SystemExit) as exit_info:
            run(["--draw", str(tmp_path / name)])
        assert exit_info.value.code == 2
        said = capsys.readouterr().err
        why = ("there is no folder", "a .png file", "a folder of that name is there")
        assert "--draw" in said and any(reason in said for reason in why), said


@pytest.mark.parametrize("after", [["--bogus"], ["--rows", "abc"], ["-h"]])
@pytest.mark.parametrize("view", [["--draw", "picture.png"], ["--asm"]])
def test_the_options_after_draw_or_asm_are_parsed_too(view, after, tmp_path, capsys):
    # --draw and --asm acted as soon as they were read: what came after them went unread, so an
    # unknown option or a bad value after them passed, and -h drew the picture.
    view = [str(tmp_path / part) if part.endswith(".png") else part for part in view]
    with pytest.raises(SystemExit) as exit_info:
        support.load("04_weighted_sum").main([*view, *after])
    said = capsys.readouterr()
    if after == ["-h"]:
        assert exit_info.value.code == 0 and said.out.startswith("usage:")
    else:
        assert exit_info.value.code == 2 and "error:" in said.err
    assert not (tmp_path / "picture.png").exists()


@pytest.mark.parametrize(
    "folder, part", [("03_blocked_sum", "any_x.py"), ("04_weighted_sum", "wide.py")]
)
def test_draw_of_a_lessons_other_file_writes_its_lessons_picture_in_any_kind(
    folder, part, tmp_path
):
    # Both had failed: the drawing read main.py's kernels from the file given; and a name other
    # than .png, which --draw takes (.svg), was written as a PNG through Pillow, which refused.
    path = tmp_path / "picture.svg"
    with pytest.raises(SystemExit) as exit_info:
        support.load_beside(folder, part).main(["--draw", str(path)])
    assert exit_info.value.code in (0, None)
    assert path.read_text().lstrip().startswith("<?xml") and "<svg" in path.read_text()


def exercises_main(argv):  # 01's exercises.py, its first exercise
    from tools import load_example, practice

    exercises = load_example(support.REPO_ROOT / "01_matmul_elementwise" / "exercises.py")
    return practice.main(exercises, ["-e", "1", *argv])


@pytest.mark.parametrize("part", ["any_x.py", "block_ptr.py"])
def test_asm_of_a_lessons_other_file_prints_its_lessons_lines(part, capfd):
    # 03's other files had failed: the probes read main.py's kernels from the file given.
    from tools import asm

    assert asm.in_compiling_process(f"03_blocked_sum/{part}").returncode == 0
    assert "simple_column_sum_kernel" in capfd.readouterr().out


@pytest.mark.parametrize("folder", EXAMPLES)
def test_asm_prints_the_instructions_it_names(folder, capfd):
    with pytest.raises(SystemExit) as exit_info:
        support.load(folder).main(["--asm"])
    out = capfd.readouterr().out  # capfd: on the CPU a second process prints it
    assert exit_info.value.code == 0
    assert "sm_90" in out or "launched on" in out  # it says which target it compiled for
    opcodes = [opcode(line) for line in out.splitlines() if line.startswith(" " * 6)]
    for instruction in INSTRUCTIONS[folder]:
        assert any(op.startswith(instruction) for op in opcodes), f"{instruction} not in {out}"
    if folder == "03_blocked_sum":  # "Why reduce once" cites the layout of its 16 x 64 tile
        assert "a thread holds 1 x 4 values of a 2-D block, a warp spans 2 x 64" in out


def test_block_layout_reads_the_first_2d_blocked_layout():
    from tools import asm

    ttgir = """
    #blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
    #blocked1 = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>
    """  # noqa: E501
    assert asm.block_layout(ttgir) == ((1, 4), (2, 16), (4, 1))
    assert asm.block_layout("module {}") is None


def test_stream_k_asm_shows_its_flags_and_the_loads_of_partials(capfd):
    stream_k = support.load_example(support.REPO_ROOT / "02_matmul_tiled" / "stream_k.py")
    with pytest.raises(SystemExit) as exit_info:
        stream_k.main(["--asm"])
    out = capfd.readouterr().out
    assert exit_info.value.code == 0
    opcodes = [opcode(line) for line in out.splitlines() if line.startswith(" " * 6)]
    for instruction in [
        "bar.sync",
        "atom.global.gpu.release",
        "atom.global.acquire",
        "ld.global.cg",
    ]:
        assert any(op.startswith(instruction) for op in opcodes), f"{instruction} not in {out}"


@pytest.mark.parametrize("programs", [3, 5])
def test_stream_k_picture_records_the_runs_that_schedule_prints(programs):
    # From runs of the kernel itself: 3 programs split both tiles two ways, 5 split tile 1
    # three ways; each program adds the K steps that runs() gives it, and the last one stores.
    stream_k = support.load_example(support.REPO_ROOT / "02_matmul_tiled" / "stream_k.py")
    added_by, owner = pictures.stream_k_steps(stream_k, programs, tiles=2, steps=4)
    expected = [-1] * 8
    for p, (start, end) in enumerate(stream_k.runs(8, programs)):
        expected[start:end] = [p] * (end - start)
    assert added_by.flatten().tolist() == expected
    assert owner.tolist() == [expected[3], expected[7]]


def test_03_picture_places_the_tile_on_warps_as_asm_reads_the_layout():
    from tools import asm

    layout = asm.tile_layout(support.load("03_blocked_sum"))  # compiled in a second process
    assert layout == ((1, 4), (2, 16), (4, 1))  # as "Why reduce once" and picture.png say
    assert pictures.warp_and_lane(0, 0, layout) == (0, 0)
    assert pictures.warp_and_lane(1, 15, layout) == (0, 31)  # row 1: lanes 16 to 31
    assert pictures.warp_and_lane(2, 0, layout) == (1, 0)
    assert pictures.warp_and_lane(9, 3, layout) == (0, 19)  # rows 8 to 15 repeat 0 to 7
    column = {pictures.warp_and_lane(row, 0, layout)[0] for row in range(16)}
    assert column == {0, 1, 2, 3}  # a column's 16 values lie in all four warps


def test_asm_counts_the_lines_inside_a_loop():
    from tools import asm

    ptx = """
    mov.u32 %r1, 0;
    $L__BB0_3:                              // =>This Inner Loop Header: Depth=1
    add.f32 %r2, %r2, %r3;
    bar.sync 0;
    @%p10 bra 	$L__BB0_3;
    $L__BB0_4:
    bar.sync 0;
    @%p2 bra $L__BB0_4;
    bar.sync 0;
    bra.uni $L__BB0_9;
    $L__BB0_9:
    ret;"""
    lines = [line.strip() for line in ptx.strip().splitlines()]
    looped = asm.in_loops(lines)
    inside = [line.split()[0] for line, flag in zip(lines, looped) if flag]
    # The first loop's add and barrier, the second loop's barrier; not the one after both,
    # nor the lines a forward branch jumps over.
    assert inside == ["$L__BB0_3:", "add.f32", "bar.sync", "$L__BB0_4:", "bar.sync"]


def test_asm_shows_wide_loads_only_where_the_alignment_is_visible(capfd):
    with pytest.raises(SystemExit):
        support.load("04_weighted_sum").main(["--asm"])
    unaligned, aligned = capfd.readouterr().out.split("D_ALIGN = 4")
    assert "ld.global.v4" not in unaligned and "ld.global.v4" in aligned


def opcode(line):  # "@%p2 ld.global.b32 { %r1 }, ..." -> "ld.global.b32" (after the predicate)
    words = line.split()
    return words[1] if words[0].startswith("@") else words[0]


def test_a_sum_of_powers_of_two_names_its_rows():
    x = pictures.powers_of_two(6, 3)
    assert pictures.rows_in(x[[1, 3, 4], 2].sum()) == [1, 3, 4]
    assert pictures.rows_in(x[:, 0].sum()) == list(range(6))


def test_launches_of_more_and_more_programs_find_what_each_wrote():
    lesson = support.load("04_weighted_sum")
    x, w = torch.randn(5, 6, device=common.DEVICE), torch.randn(6, device=common.DEVICE)
    y = torch.empty(5, device=common.DEVICE)

    def launch(programs):  # forward_kernel, 2 rows per program
        lesson.forward_kernel.fn[(programs,)](x, w, y, 5, 6, *x.stride(), ROWS_TILE=2, D_TILE=4)

    assert pictures.programs_along_axis(launch, 3, y).tolist() == [0, 0, 1, 1, 2]


def test_01_picture_reads_every_offset_program_6_loads():
    # Its bottom panel: C[1, 2]'s program reads W's row 2 for B = W.T, every 4th offset for a
    # row-major (10, 4) B; all ten, exactly (float32 sums of powers of 2 once dropped four).
    lesson, memory = support.load("01_matmul_elementwise"), torch.arange(40.0, device=common.DEVICE)
    assert pictures.offsets_read(lesson, memory.view(4, 10).T, 3, 4) == list(range(20, 30))
    assert pictures.offsets_read(lesson, memory.view(10, 4), 3, 4) == list(range(2, 40, 4))


@pytest.mark.parametrize("group_m", [1, 2])
def test_grouped_order_as_02_draws_it_in_its_docstring(group_m):
    lesson = support.load("02_matmul_tiled")
    where = torch.empty((16, 2), dtype=torch.int32, device=common.DEVICE)
    pictures.tile_of_program_kernel[(16,)](
        where, 64, 64, lesson.grouped_tile, BLOCK_M=16, BLOCK_N=16, GROUP_M=group_m
    )
    order = torch.empty((4, 4), dtype=torch.int64)
    for pid, (row, col) in enumerate(where.cpu().tolist()):
        order[row, col] = pid
    row_major = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    grouped = [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    assert order.tolist() == (row_major if group_m == 1 else grouped)


def test_bench_plots_bars_per_case_and_a_panel_per_pass(tmp_path):
    rows = [
        dict(case=case, variant=variant + step, throughput=t, unit="GB/s")
        for case in ("64x8 float32", "128x8 float32")
        for step in (" fwd", " bwd")
        for variant, t in (("simple", 1.0), ("tuned", 2.0), ("torch", 3.0))
    ]
    figure = bench.plot(rows, "04_weighted_sum", tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [ax.get_title() for ax in figure.axes] == ["04_weighted_sum fwd", "04_weighted_sum bwd"]
    for ax in figure.axes:  # simple and tuned for each of the two cases: four bars
        assert sorted(bar.get_height() for bar in ax.patches) == [1.0, 1.0, 2.0, 2.0]
