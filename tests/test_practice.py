"""The exercises (NN_name/exercises.py) and their checker (tools/practice.py): every worked
solution passes, every untouched stub gets "not yet" with a report and no traceback, and a
solution broken on purpose gets the report that names what it did wrong."""

import dataclasses
import functools
import inspect
import re
import signal
import subprocess
import sys
import types

import numpy as np
import pytest
import torch

import support
from support import common
import triton  # after support, whose import of common may switch on the interpreter
import triton.language as tl
from tools import load_example, practice

FOLDERS = ["01_matmul_elementwise", "02_matmul_tiled", "03_blocked_sum", "04_weighted_sum"]


def module(folder, name):
    return load_example(support.REPO_ROOT / folder / f"{name}.py")


def check_with_kernels(solutions, number, launch, **kernels):
    """practice.check of exercise `number` of `solutions`, its launch running `kernels` (a
    mistake planted on purpose) in place of the kernels of those names."""
    launch = practice.with_kernels(launch, **kernels)
    exercise = dataclasses.replace(solutions.EXERCISES[number - 1], launch=launch)
    return practice.check(exercise)


exercises01 = module("01_matmul_elementwise", "exercises")
solutions01 = module("01_matmul_elementwise", "solutions")
solutions04 = module("04_weighted_sum", "solutions")


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_solution_passes(folder):
    solutions = module(folder, "solutions")
    assert len(solutions.EXERCISES) >= 3
    for number, exercise in enumerate(solutions.EXERCISES, 1):
        passed, lines = practice.check(exercise)
        assert passed and lines == [], f"{folder} solution {number}: {lines}"


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_untouched_stub_gets_not_yet_and_a_report(folder):
    for number, exercise in enumerate(module(folder, "exercises").EXERCISES, 1):
        passed, lines = practice.check(exercise)
        assert not passed and lines, f"{folder} exercise {number}"
        assert not any("Traceback" in line for line in lines)


def test_the_stubs_reports_say_what_is_missing():
    reports = [practice.check(e)[1] for e in exercises01.EXERCISES]
    assert reports[0] == [
        "15 of 15 elements are NaN (no program wrote them, or one wrote NaN): (0, 0), (0, 1), "
        "(0, 2), (1, 0), (1, 1)"
    ]
    assert reports[1][0].startswith("your code raised NotImplementedError: exercise 2")
    assert reports[2][0].startswith("your code raised NotImplementedError: exercise 3")


@triton.jit
def row_kernel_mask_off_by_one(
    a_ptr, b_ptr, c_ptr, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    in_n = cols <= N  # one column too many
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(K):
        a = tl.load(a_ptr + row * stride_am + k * stride_ak)
        b = tl.load(b_ptr + k * stride_bk + cols * stride_bn, mask=in_n, other=0.0)
        acc += a * b
    tl.store(c_ptr + row * stride_cm + cols * stride_cn, acc, mask=in_n)


def launch_off_by_one(a, b, out):
    (M, K), N = a.shape, b.shape[1]
    strides = (*a.stride(), *b.stride(), *out.stride())
    block_n = triton.next_power_of_2(N)
    row_kernel_mask_off_by_one[(M,)](a, b, out, N, K, *strides, BLOCK_N=block_n)


def test_a_mask_off_by_one_gets_the_out_of_bounds_report():
    # A (5, 7) @ B (7, 20): the extra column reads B[k, 20], which is B[k + 1, 0] but past B's
    # end on the last k, and stores C[r, 20], past C's end on the last row.
    exercise = dataclasses.replace(exercises01.EXERCISES[2], launch=launch_off_by_one)
    passed, lines = practice.check(exercise)
    assert not passed
    assert lines[0] == (
        "a store left the output: offsets 100, past its last (its elements are at offsets 0 to "
        "99); program 4 (of 5) made it"
    )
    # Under the interpreter programs run one after another: C[r, 20], which is C[r + 1, 0], is
    # written again by program r + 1. On a GPU they race for it, and may leave it wrong: the
    # checker then says the output changes run to run, beside or instead of the load; or the race
    # moves the output while it probes guard bands, and the load's range comes out wider (seen
    # on an H200: "offsets ..., before its first element and offsets 140 to 4107, past its last").
    if common.INTERPRETED:
        assert lines[1:] == [
            "a load read outside input b: offsets 140, past its last (its elements are at "
            "offsets 0 to 139)"
        ]
    else:
        load = [line for line in lines[1:] if line.startswith("a load read outside input b:")]
        race = [line for line in lines[1:] if line.startswith("the output differs from one run")]
        assert race or (load and "140" in load[0]), lines


@triton.jit
def bias_kernel_reads_one_before(
    a_ptr, b_ptr, bias_ptr, c_ptr, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
):  # fmt: skip
    pid = tl.program_id(0)
    row, col = pid // N, pid % N
    acc = tl.zeros((), dtype=tl.float32)
    for k in range(K):
        a = tl.load(a_ptr + row * stride_am + k * stride_ak)
        acc += a * tl.load(b_ptr + k * stride_bk + col * stride_bn)
    acc += tl.load(bias_ptr + col - 1)  # bias[col - 1]: one before, and bias[-1] for col 0
    tl.store(c_ptr + row * stride_cm + col * stride_cn, acc)


def launch_reads_one_before(a, b, bias, out):
    (M, K), N = a.shape, b.shape[1]
    strides = (*a.stride(), *b.stride(), *out.stride())
    bias_kernel_reads_one_before[(M * N,)](a, b, bias, out, N, K, *strides)


def test_a_load_before_the_first_element_and_wrong_values_are_reported():
    exercise = dataclasses.replace(exercises01.EXERCISES[0], launch=launch_reads_one_before)
    passed, lines = practice.check(exercise)
    assert not passed
    assert lines[0].startswith(
        "15 elements wrong, the first: (0, 0): expected "
    )  # all: bias[col - 1]
    assert lines[1] == (
        "a load read outside input bias: offsets -1, before its first element (its elements "
        "are at offsets 0 to 2)"
    )


@triton.jit
def kernel_that_writes_into_a(a_ptr, c_ptr, n):
    offsets = tl.arange(0, 16)
    tl.store(c_ptr + offsets, tl.load(a_ptr + offsets, mask=offsets < n), mask=offsets < n)
    tl.store(a_ptr + offsets, 0.0, mask=offsets < n)  # a store into an input


def launch_writes_into_a(a, w, out):
    kernel_that_writes_into_a[(1,)](a, out, out.numel())


def test_a_store_into_an_input_is_reported():
    exercise = dataclasses.replace(exercises01.EXERCISES[1], launch=launch_writes_into_a)
    passed, lines = practice.check(exercise)
    assert not passed
    assert lines[0] == (
        "a store wrote into input a: offsets 0 to 15 (its elements are at offsets 0 to 53); "
        "program 0 (of 1) made it"
    )


def test_the_command_line(tmp_path, capsys):
    assert practice.main(exercises01, []) == 0  # "not yet" everywhere, still exit 0
    printed = capsys.readouterr().out
    assert "0 of 3 passed" in printed and "exercise 2, A @ W.T without a copy: not yet" in printed
    assert practice.main(exercises01, ["--strict", "-e", "1"]) == 1
    assert practice.main(exercises01, ["--solutions", "--strict"]) == 0
    assert "3 of 3 passed" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        practice.main(exercises01, ["-e", "4"])
    assert exit_info.value.code == 2
    picture = tmp_path / "who.png"
    assert practice.main(exercises01, ["--solutions", "-e", "3", "--draw", str(picture)]) == 0
    assert picture.stat().st_size > 1000


@pytest.mark.parametrize("folder", FOLDERS)
def test_solutions_run_by_their_path_check_themselves(folder):
    # python NN_name/solutions.py had printed nothing
    script = support.REPO_ROOT / folder / "solutions.py"
    done = subprocess.run([sys.executable, str(script), "-e", "1"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exercise 1, " in done.stdout and "1 of 1 passed" in done.stdout


def test_solutions_run_by_their_path_fail_where_an_answer_is_wrong(capsys):
    # an answer that is "not yet" had exited 0, as an exercise still in progress does
    with pytest.raises(SystemExit) as exit_info:
        practice.main(solutions01, ["--solutions"])  # no such flag: it checks itself
    assert exit_info.value.code == 2
    assert practice.main(solutions01, ["-e", "1"]) == 0
    wrong = dataclasses.replace(solutions01.EXERCISES[0], launch=lambda **tensors: None)
    answers = types.SimpleNamespace(
        __doc__=solutions01.__doc__, __file__=solutions01.__file__, EXERCISES=[wrong]
    )
    assert practice.main(answers, []) == 1
    assert "0 of 1 passed" in capsys.readouterr().out


def test_draw_says_when_the_kernel_writes_no_element_of_the_output(tmp_path, capsys):
    # 04's exercise 3: the kernel writes partial sums and the host the output; the picture had
    # drawn one cell, "none", for a solution that passes.
    picture = tmp_path / "who.png"
    exercises04 = module("04_weighted_sum", "exercises")
    # It exited 0, as though the picture had been written.
    assert practice.main(exercises04, ["--solutions", "-e", "3", "--draw", str(picture)]) == 1
    assert "its kernel wrote no element of the output" in capsys.readouterr().out
    assert not picture.exists()


def test_guards_hold_their_values_and_the_tensor_its_own():
    t = torch.arange(6.0, device=common.DEVICE).reshape(2, 3)
    buffer, view = practice.guarded(t, -1.0)
    band = practice.guard(6)
    assert band >= 4096 and buffer.numel() == 6 + 2 * band
    assert torch.equal(view, t) and view.data_ptr() == buffer.data_ptr() + band * 4
    assert (buffer[:band] == -1).all() and (buffer[band + 6 :] == -1).all()
    assert practice.outside(6)[:2] == [-band, -band + 1] and practice.outside(6)[band] == 6


def launch_grid_too_large(a, b, out):
    # Exercise 3's solution kernel on a program per element: rows 5 to 99 do not exist.
    (M, K), N = a.shape, b.shape[1]
    strides = (*a.stride(), *b.stride(), *out.stride())
    row_kernel[(M * N,)](a, b, out, N, K, *strides, BLOCK_N=triton.next_power_of_2(N))


row_kernel = solutions01.row_kernel


def test_a_grid_too_large_is_caught_in_the_guard_band():
    # 100 programs for 5 rows of 20: rows 5 to 99 are stored 100 to 1999 elements past C's end,
    # inside its guard band (a narrow band let them corrupt the interpreter's own memory).
    exercise = dataclasses.replace(solutions01.EXERCISES[2], launch=launch_grid_too_large)
    passed, lines = practice.check(exercise)
    assert not passed
    assert lines[0] == (
        "a store left the output: offsets 100 to 1999, past its last (its elements are at "
        "offsets 0 to 99); program 5 (of 100) made it"
    )
    # Programs 5 to 99 also read rows of A past its end: 35 to 699, the first and the last.
    assert "a load read outside input a: offsets 35 to 699, past its last" in lines[-1]


@triton.jit
def first_dim_kernel_mask_off_by_one(
    x_ptr, w_ptr, y_ptr, rows, D, stride_row, stride_col,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * D_TILE + tl.arange(0, D_TILE)
    col_mask = cols <= D  # one column too many
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    for r0 in range(0, rows, ROWS_TILE):
        row_ids = r0 + tl.arange(0, ROWS_TILE)
        mask = (row_ids < rows)[:, None] & col_mask[None, :]
        x = tl.load(x_ptr + row_ids[:, None] * stride_row + cols[None, :] * stride_col, mask=mask)
        acc += x * tl.load(w_ptr + row_ids, mask=row_ids < rows, other=0.0)[:, None]
    tl.store(y_ptr + cols, tl.sum(acc, axis=0), mask=col_mask)


def test_04_a_mask_off_by_one_gets_the_out_of_bounds_report():
    # x (37, 50): column 50 of row r is x[r + 1, 0], but past x's end on the last row; y[50] is
    # past y's end, stored by the second of two programs.
    passed, lines = check_with_kernels(
        solutions04,
        1,
        solutions04.exercises.launch_1,
        first_dim_kernel=first_dim_kernel_mask_off_by_one,
    )
    assert not passed
    assert lines[0] == (
        "a store left the output: offsets 50, past its last (its elements are at offsets 0 to "
        "49); program 1 (of 2) made it"
    )
    assert lines[-1].startswith("a load read outside input x: offsets 1850, past its last")


@triton.jit
def first_dim_kernel_without_a_row_mask(
    x_ptr, w_ptr, y_ptr, rows, D, stride_row, stride_col,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * D_TILE + tl.arange(0, D_TILE)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    for r0 in range(0, rows, ROWS_TILE):
        row_ids = r0 + tl.arange(0, ROWS_TILE)
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        x = tl.load(x_ptr + offsets, mask=(cols < D)[None, :])  # rows past the last read too
        acc += x * tl.load(w_ptr + row_ids, mask=row_ids < rows, other=0.0)[:, None]
    tl.store(y_ptr + cols, tl.sum(acc, axis=0), mask=cols < D)


def test_a_load_outside_that_a_masked_off_zero_multiplies_is_reported():
    # x's rows past the last are read, and multiplied by w's masked-off 0: any guard value but
    # inf or NaN gives 0, so the run with the band at 1000 left the output as it was, and the
    # checker said "passed". On a GPU that memory may hold NaN.
    passed, lines = check_with_kernels(
        solutions04, 1, solutions04.exercises.launch_1,
        first_dim_kernel=first_dim_kernel_without_a_row_mask,
    )  # fmt: skip
    assert not passed
    assert lines == [lines[0]] and lines[0].startswith("a load read outside input x: offsets"), (
        lines
    )


def launch_by_pytorch(a, b, bias, out):
    assert bias_kernel  # noqa: F821  (with_kernels gives it: named, never launched)
    out.copy_(a @ b + bias)


def test_a_launch_that_never_launches_its_kernel_is_told_so():
    # Its values are right: the checker compared values only, and said "passed".
    launch = practice.with_kernels(launch_by_pytorch, bias_kernel=solutions01.bias_kernel)
    exercise = dataclasses.replace(solutions01.EXERCISES[0], launch=launch)
    passed, lines = practice.check(exercise)
    assert not passed
    assert lines == [
        "your launch launched no kernel (kernel[grid](...)): the exercise asks for a Triton "
        "kernel to compute the output, not PyTorch"
    ]


def launch_2_through_a_helper(x, w, grad_y, out):
    launch_grad_x(w, grad_y, out, *x.shape)


def launch_grad_x(w, grad_y, out, rows, d):
    solutions04.grad_x_kernel[(triton.cdiv(rows, 16),)](
        w, grad_y, out, rows, d, ROWS_TILE=16, D_TILE=32
    )


def test_a_kernel_launched_from_a_helper_passes():
    # The checker records only the kernels the launch names; it had said "no kernel" here.
    exercise = dataclasses.replace(solutions04.EXERCISES[1], launch=launch_2_through_a_helper)
    assert practice.check(exercise) == (True, [])


def test_an_output_that_changes_run_to_run_is_named_as_such():
    # As a sum over torch.empty's memory, or programs racing to one element, would: a launch
    # whose output is new on every run, on the same inputs.
    runs = iter(range(100))

    def launch_changing(x, grad_y, partial, out):
        out.fill_(float(next(runs)))

    exercise = dataclasses.replace(solutions04.EXERCISES[2], launch=launch_changing)
    passed, lines = practice.check(exercise)
    assert not passed
    assert lines[-1].startswith("the output differs from one run to the next on the same inputs")


@triton.jit
def partial_kernel_store_unmasked(
    x_ptr, grad_y_ptr, partial_ptr, rows, D, stride_row, stride_col,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    p = tl.program_id(0)
    row_ids = p * ROWS_TILE + tl.arange(0, ROWS_TILE)
    grad_y = tl.load(grad_y_ptr + row_ids, mask=row_ids < rows, other=0.0)
    for d0 in range(0, D, D_TILE):
        cols = d0 + tl.arange(0, D_TILE)
        mask = (row_ids < rows)[:, None] & (cols < D)[None, :]
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        tl.store(partial_ptr + p * D + cols, tl.sum(x * grad_y[:, None], axis=0))  # no mask


def test_04_a_store_past_the_partial_buffer_is_reported():
    # The slip a learner made first: the last program's last D tile (columns 32 to 63 of 50)
    # stores 14 values past partial's end. partial is the checker's, guarded as out is.
    passed, lines = check_with_kernels(
        solutions04, 3, solutions04.exercises.launch_3, partial_kernel=partial_kernel_store_unmasked
    )
    assert not passed
    assert lines[0] == (
        "a store left the buffer partial: offsets 150 to 163, past its last (its elements are at "
        "offsets 0 to 149); program 2 (of 3) made it"
    )


solutions03 = module("03_blocked_sum", "solutions")


@triton.jit
def row_sum_kernel_ignoring_stride_n(
    x_ptr, out_ptr, M, N, stride_m, stride_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for j0 in range(0, N, BLOCK_N):
        cols = j0 + tl.arange(0, BLOCK_N)
        mask = (rows < M)[:, None] & (cols < N)[None, :]
        offsets = rows[:, None] * stride_m + cols[None, :]  # stride_n dropped: 1 only if rows are
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=rows < M)


@triton.jit
def row_sum_kernel_one_tile_short(
    x_ptr, out_ptr, M, N, stride_m, stride_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for j0 in range(0, N - 1, BLOCK_N):  # N - 1: the last tile is skipped where N % 32 == 1
        cols = j0 + tl.arange(0, BLOCK_N)
        mask = (rows < M)[:, None] & (cols < N)[None, :]
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=rows < M)


def test_a_loop_bound_one_short_gets_wrong_values():
    # It passed: at N = 50 the loop from 0 to N - 1 still reached the tile at 32.
    passed, lines = check_with_kernels(
        solutions03,
        1,
        solutions03.exercises.launch_1,
        row_sum_kernel=row_sum_kernel_one_tile_short,
    )
    assert not passed and lines[0].startswith("37 elements wrong, the first: (0,)"), lines


def test_a_kernel_that_ignores_a_stride_gets_wrong_values():
    # 03's exercise 1 hands x as a .T view (strides (1, 37)), and the checker keeps it one.
    passed, lines = check_with_kernels(
        solutions03,
        1,
        solutions03.exercises.launch_1,
        row_sum_kernel=row_sum_kernel_ignoring_stride_n,
    )
    assert not passed and any(" elements wrong, the first: " in line for line in lines), lines


@triton.jit
def column_max_kernel_padding_with_zero(
    x_ptr, out_ptr, M, N, stride_m, stride_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # 0, not -inf: wins over negatives
    for i0 in range(0, M, BLOCK_M):
        rows = i0 + tl.arange(0, BLOCK_M)
        mask = (rows < M)[:, None] & (cols < N)[None, :]
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        acc = tl.maximum(acc, tl.load(x_ptr + offsets, mask=mask, other=0.0))
    tl.store(out_ptr + cols, tl.max(acc, axis=0), mask=cols < N)


def test_a_max_padded_with_zero_gets_wrong_values():
    # 03's exercise 2 hands an all-negative x: a masked-off 0 would win every column's max.
    passed, lines = check_with_kernels(
        solutions03, 2, solutions03.launch_2, column_max_kernel=column_max_kernel_padding_with_zero
    )
    assert not passed
    assert any("elements wrong" in line and "got 0" in line for line in lines), lines


@triton.jit
def row_sum_kernel_with_a_typo(
    x_ptr, out_ptr, M, N, stride_m, stride_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(out_ptr + rows, acc_sum, mask=rows < M)  # noqa: F821  (the typo: no acc_sum)


def test_an_error_inside_a_kernel_names_the_learners_line():
    passed, lines = check_with_kernels(
        solutions03, 1, solutions03.exercises.launch_1, row_sum_kernel=row_sum_kernel_with_a_typo
    )
    assert not passed and "acc_sum" in lines[0], lines
    if common.INTERPRETED:  # (compiled, Triton's message quotes the kernel's line itself)
        source, first = inspect.getsourcelines(row_sum_kernel_with_a_typo.fn)
        line = first + next(i for i, text in enumerate(source) if "acc_sum" in text)
        where = f"(line {line} of test_practice.py, in row_sum_kernel_with_a_typo)"
        assert lines[0].endswith(where), lines


@triton.jit
def split_sum_kernel_past_its_chunk(
    x_ptr, partial_ptr, M, N, stride_m, stride_n, rows_per_chunk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    first = tl.program_id(1) * rows_per_chunk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in range(first, first + rows_per_chunk + BLOCK_M, BLOCK_M):  # a tile past the chunk
        rows = i0 + tl.arange(0, BLOCK_M)
        mask = (rows < M)[:, None] & (cols < N)[None, :]  # no chunk end: next chunk's rows too
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(partial_ptr + tl.program_id(1) * N + cols, tl.sum(acc, axis=0), mask=cols < N)


@triton.jit
def split_sum_kernel_masked_on_m(
    x_ptr, partial_ptr, M, N, stride_m, stride_n, rows_per_chunk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    first = tl.program_id(1) * rows_per_chunk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in range(first, first + rows_per_chunk, BLOCK_M):  # the chunk's tiles, the last past it
        rows = i0 + tl.arange(0, BLOCK_M)
        mask = (rows < M)[:, None] & (cols < N)[None, :]  # no chunk end in the mask
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(partial_ptr + tl.program_id(1) * N + cols, tl.sum(acc, axis=0), mask=cols < N)


def test_a_split_that_sums_rows_twice_gets_wrong_values():
    # 03's exercise 4: a chunk that runs into the next one counts its first rows twice.
    passed, lines = check_with_kernels(
        solutions03,
        4,
        solutions03.launch_4,
        split_column_sum_kernel=split_sum_kernel_past_its_chunk,
    )
    # Nearly every column of 20 is wrong: on fresh random inputs, a column's rows counted twice
    # can sum to almost nothing (one CI run reported 19).
    wrong = re.match(r"(\d+) elements wrong, the first: ", lines[0]) if lines else None
    assert not passed and wrong and int(wrong[1]) >= 15, lines


@triton.jit
def swapped_kernel_stepping_by_one(
    x_ptr, grad_y_ptr, partial_ptr, rows, D, stride_row, stride_col,
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,
):  # fmt: skip
    p = tl.program_id(1)
    cols = tl.program_id(0) * D_TILE + tl.arange(0, D_TILE)
    acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    for tile in range(p, tl.cdiv(rows, ROWS_TILE)):  # every tile from p, not every P-th
        row_ids = tile * ROWS_TILE + tl.arange(0, ROWS_TILE)
        grad_y = tl.load(grad_y_ptr + row_ids, mask=row_ids < rows, other=0.0)
        mask = (row_ids < rows)[:, None] & (cols < D)[None, :]
        offsets = row_ids[:, None] * stride_row + cols[None, :] * stride_col
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0) * grad_y[:, None]
    tl.store(partial_ptr + p * D + cols, tl.sum(acc, axis=0), mask=cols < D)


def test_a_swapped_loop_that_steps_by_one_gets_wrong_values():
    # 04's exercise 4: programs that walk every row tile from p count most rows two or three times.
    passed, lines = check_with_kernels(
        solutions04, 4, solutions04.launch_4, swapped_partial_kernel=swapped_kernel_stepping_by_one
    )
    assert not passed and lines[0].startswith("50 elements wrong, the first: (0,)"), lines


def test_a_swapped_grid_leaves_a_d_tile_unwritten_and_stores_past_partial():
    # 04's exercise 4 with the grid's axes swapped: 4 D tiles and P = 3 differ, so it shows.
    def launch_swapped(x, grad_y, partial, out):
        rows, D = x.shape
        grid = (partial.shape[0], triton.cdiv(D, 16))  # (P, D tiles): the axes swapped
        kernel = solutions04.swapped_partial_kernel
        kernel[grid](x, grad_y, partial, rows, D, *x.stride(), ROWS_TILE=16, D_TILE=16)
        out.copy_(partial.sum(0))

    exercise = dataclasses.replace(solutions04.EXERCISES[3], launch=launch_swapped)
    passed, lines = practice.check(exercise)
    assert not passed and any(line.startswith("a store left the buffer partial") for line in lines)


@triton.jit
def split_sum_kernel_into_row_0(
    x_ptr, partial_ptr, M, N, stride_m, stride_n, rows_per_chunk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    first = tl.program_id(1) * rows_per_chunk
    end = tl.minimum(first + rows_per_chunk, M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i0 in range(first, first + rows_per_chunk, BLOCK_M):
        rows = i0 + tl.arange(0, BLOCK_M)
        mask = (rows < end)[:, None] & (cols < N)[None, :]
        offsets = rows[:, None] * stride_m + cols[None, :] * stride_n
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(partial_ptr + cols, tl.sum(acc, axis=0), mask=cols < N)  # every chunk into row 0


def test_a_buffer_row_no_program_wrote_is_named():
    # 03's exercise 4 with every chunk stored into partial's row 0: rows 1 to 7 of the buffer
    # stay NaN, and the report names the buffer, not only the output they spoil.
    passed, lines = check_with_kernels(
        solutions03, 4, solutions03.launch_4, split_column_sum_kernel=split_sum_kernel_into_row_0
    )
    assert not passed and lines[0].startswith(
        "140 of 160 elements of the buffer partial are NaN (no program wrote them, or one wrote "
        "NaN): (1, 0), (1, 1)"
    ), lines


def test_a_split_that_ignores_its_chunks_end_gets_wrong_values():
    # 03's exercise 4: chunks of 40 rows are not whole tiles of 16, so a mask on M alone adds
    # rows 40 to 47 of each chunk twice.
    passed, lines = check_with_kernels(
        solutions03, 4, solutions03.launch_4, split_column_sum_kernel=split_sum_kernel_masked_on_m
    )
    assert not passed and lines[0].startswith("20 elements wrong, the first: (0,)"), lines


exercises02 = module("02_matmul_tiled", "exercises")
solutions02 = module("02_matmul_tiled", "solutions")
wait_for_flag = exercises02.wait_for_flag  # (a global name, as the kernels below call it)


@triton.jit
def add_one_partial(
    acc, pid, first, tile_start, iterations, partial_ptr, flag_ptr, in_slot,
    PROGRAMS: tl.constexpr, SLOT: tl.constexpr,
):  # fmt: skip
    if first > tile_start:  # program pid - 1's partial only: never pid - 2's
        wait_for_flag(flag_ptr + pid - 1)
        acc += tl.load(partial_ptr + (pid - 1) * SLOT + in_slot)
    return acc


@triton.jit
def wait_for_its_own_flag(
    acc, pid, first, tile_start, iterations, partial_ptr, flag_ptr, in_slot,
    PROGRAMS: tl.constexpr, SLOT: tl.constexpr,
):  # fmt: skip
    if first > tile_start:  # an owner stores no partial: its own flag stays 0
        wait_for_flag(flag_ptr + pid)
        acc += tl.load(partial_ptr + pid * SLOT + in_slot)
    return acc


def owner_launch(add_partials):  # exercise 4's launch, its kernel calling add_partials
    body = practice.with_kernels(exercises02.owner_stream_k_kernel.fn, add_partials=add_partials)
    kernel = triton.jit(body)
    return practice.with_kernels(exercises02.launch_4, owner_stream_k_kernel=kernel)


def test_a_stream_k_owner_that_misses_a_partial_gets_its_tile_reported():
    # schedule(2, 4, 5): tile 0 (columns 0 to 15) has one partial, tile 1 (16 to 31) two.
    exercise = dataclasses.replace(exercises02.EXERCISES[3], launch=owner_launch(add_one_partial))
    passed, lines = practice.check(exercise)
    assert not passed
    # Tile 1's 256 elements miss a partial; one whose partial is near 0 may pass the tolerance.
    found = re.match(r"(\d+) elements wrong, the first: \(0, 16\): expected", lines[0])
    assert found and 240 <= int(found[1]) <= 256, lines


def test_a_stream_k_owner_waiting_for_a_flag_no_program_sets_ends_with_a_report():
    # wait_for_flag gives up, and the partial added was never stored: NaN, as the output starts
    exercise = dataclasses.replace(
        exercises02.EXERCISES[3], launch=owner_launch(wait_for_its_own_flag)
    )
    passed, lines = practice.check(exercise)
    assert not passed
    assert lines[0].startswith("512 of 512 elements are NaN (no program wrote them"), lines


@triton.jit
def wait_for_its_own_flag_adding_the_right_partials(
    acc, pid, first, tile_start, iterations, partial_ptr, flag_ptr, in_slot,
    PROGRAMS: tl.constexpr, SLOT: tl.constexpr,
):  # fmt: skip
    other = pid - 1
    waiting = first > tile_start
    while waiting:
        wait_for_flag(flag_ptr + pid)  # pid's flag, not other's: the wait gives up
        acc += tl.load(partial_ptr + other * SLOT + in_slot, cache_modifier=".cg")
        waiting = solutions02.run_start(other, iterations, PROGRAMS) > tile_start
        other -= 1
    return acc


def test_a_stream_k_owner_that_adds_partials_it_never_waited_for_is_told_so():
    # Programs run one by one under the interpreter, so the partials are there: right values.
    # It passed; the flags no wait set back to 0 now say so.
    launch = owner_launch(wait_for_its_own_flag_adding_the_right_partials)
    exercise = dataclasses.replace(exercises02.EXERCISES[3], launch=launch)
    passed, lines = practice.check(exercise)
    assert not passed
    assert "no wait_for_flag for the flags of programs [0, 2, 3]: they stayed set" in lines, lines


@triton.jit
def bias_kernel_rows_end_to_end(
    a_ptr, b_ptr, bias_ptr, c_ptr, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
):  # fmt: skip
    pid = tl.program_id(0)
    row, col = pid // N, pid % N
    acc = tl.zeros((), dtype=tl.float32)
    for k in range(K):
        a = tl.load(a_ptr + row * K + k)  # A's rows taken as K apart: stride_am unused
        acc += a * tl.load(b_ptr + k * stride_bk + col * stride_bn)
    acc += tl.load(bias_ptr + col)
    tl.store(c_ptr + row * stride_cm + col * stride_cn, acc)


def test_a_kernel_right_only_on_rows_end_to_end_is_told_so():
    # Only a .T view had told a stride apart: this kernel passed exercise 1 (a contiguous a).
    passed, lines = check_with_kernels(
        solutions01, 1, exercises01.launch_1, bias_kernel=bias_kernel_rows_end_to_end
    )
    assert not passed and len(lines) == 1, lines
    assert lines[0].startswith(
        "with gaps in memory between the elements of the inputs and the output (as x[:, ::2] "
        "has), 15 of 15 elements are wrong or unwritten, the first: (0, 0): expected"
    ), lines
    assert lines[0].endswith(": a stride your kernel was given goes unused")


def launch_1_by_pytorch_alone(a, b, bias, out):
    out.copy_(a @ b + bias)


def launch_1_then_pytorch(a, b, bias, out):
    strides = (*a.stride(), *b.stride(), *out.stride())
    solutions01.bias_kernel[(1,)](a, b, bias, out, b.shape[1], a.shape[1], *strides)
    out.copy_(a @ b + bias)  # over what the kernel's one program left


def test_an_output_that_pytorch_computed_is_told_so():
    # Both passed: the checker complained only of a kernel named and never launched.
    exercise = dataclasses.replace(solutions01.EXERCISES[0], launch=launch_1_by_pytorch_alone)
    assert practice.check(exercise) == (False, [
        "your launch launched no kernel (kernel[grid](...)): the exercise asks for a Triton "
        "kernel to compute the output, not PyTorch"
    ])  # fmt: skip
    exercise = dataclasses.replace(solutions01.EXERCISES[0], launch=launch_1_then_pytorch)
    assert practice.check(exercise) == (False, [
        "your launch changed the output after its kernel ran: the exercise asks the kernel to "
        "compute it"
    ])  # fmt: skip


def launch_2_through_the_lesson(a, w, out):  # as exercises.py's launch_2 may write it
    M, K = a.shape
    strides = (*a.stride(), w.stride(1), w.stride(0), *out.stride())
    launch = lesson.vector_k_kernel[(M * w.shape[0],)]  # noqa: F821  (with_kernels gives lesson)
    launch(a, w, out, w.shape[0], K, *strides, **lesson.VECTOR_K_LAUNCH)  # noqa: F821


def test_a_kernel_launched_as_a_modules_attribute_is_seen():
    # lesson.vector_k_kernel[grid] was not recorded: "names vector_k_kernel but never launched"
    kernel = exercises01.vector_k_kernel  # as exercises.py holds the lesson's, by its name
    launch = practice.with_kernels(
        launch_2_through_the_lesson, lesson=exercises01.lesson, vector_k_kernel=kernel
    )
    exercise = dataclasses.replace(solutions01.EXERCISES[1], launch=launch)
    assert practice.check(exercise) == (True, [])


def launch_1_that_never_ends(a, b, bias, out):
    assert solutions01.bias_kernel  # a kernel named, as a learner's launch names one
    while True:
        pass


def test_a_launch_that_never_ends_is_stopped_and_told_so(monkeypatch):
    monkeypatch.setattr(practice, "LAUNCH_SECONDS", 0.5)
    exercise = dataclasses.replace(solutions01.EXERCISES[0], launch=launch_1_that_never_ends)
    passed, lines = practice.check(exercise)
    assert not passed and lines[0].startswith(
        "your code raised RanTooLong: your launch ran past 0.5 s: a loop that never ends? (line "
    ), lines


def launch_1_without_its_grid(a, b, bias, out):
    strides = (*a.stride(), *b.stride(), *out.stride())
    solutions01.bias_kernel(a, b, bias, out, b.shape[1], a.shape[1], *strides)


def launch_1_missing_an_argument(a, b, bias, out):
    strides = (*a.stride(), *b.stride(), *out.stride())
    solutions01.bias_kernel[(15,)](a, b, bias, out, b.shape[1], *strides)  # no K


def test_a_launch_written_wrong_is_named_at_the_learners_line():
    # Triton's interpreter had said "'builtin_function_or_method' object has no attribute
    # 'scalar'"; and the missing argument named a line of Python's inspect.py
    exercise = dataclasses.replace(solutions01.EXERCISES[0], launch=launch_1_without_its_grid)
    assert practice.check(exercise)[1][0].startswith(
        "your code raised TypeError: a kernel is launched as kernel[grid](...), its grid in "
        "brackets (line "
    )
    exercise = dataclasses.replace(solutions01.EXERCISES[0], launch=launch_1_missing_an_argument)
    line = practice.check(exercise)[1][0]
    assert "stride_cn" in line and line.endswith(", in launch_1_missing_an_argument)"), line


@triton.jit
def store_past_a_row_kernel(first_ptr, second_ptr):  # each program stores one element past
    tl.store(first_ptr + 16, 1.0)
    tl.store(second_ptr + 16 + tl.program_id(0), 1.0)


def launch_into_two_rows(a, b, bias, out):
    store_past_a_row_kernel[(2,)](out[0], out[1])


def test_a_store_outside_through_a_view_of_out_names_its_program():
    # out[0] and out[1] were not out: relaunched, the kernel wrote the first run's buffers,
    # and the checker said "none of the first 64 programs alone did".
    exercise = dataclasses.replace(solutions01.EXERCISES[0], launch=launch_into_two_rows)
    lines = practice.check(exercise)[1]
    stores = [line for line in lines if line.startswith("a store left the output")]
    assert stores and stores[0].endswith("; program 0 (of 2) made it"), lines


row_kernel = solutions01.row_kernel  # exercise 3's answer, for the launches below
ROW_KERNELS = {"row": row_kernel}


def launch_3_nested(a, b, out):
    def go():
        strides = (*a.stride(), *b.stride(), *out.stride())
        block_n = triton.next_power_of_2(b.shape[1])
        row_kernel[(a.shape[0],)](a, b, out, b.shape[1], a.shape[1], *strides, BLOCK_N=block_n)

    go()


def launch_3_from_a_dict(a, b, out):
    strides = (*a.stride(), *b.stride(), *out.stride())
    block_n = triton.next_power_of_2(b.shape[1])
    launch = ROW_KERNELS["row"][(a.shape[0],)]
    launch(a, b, out, b.shape[1], a.shape[1], *strides, BLOCK_N=block_n)


def launch_3_by_default(a, b, out, kernel=row_kernel, block_n=32):
    strides = (*a.stride(), *b.stride(), *out.stride())
    kernel[(a.shape[0],)](a, b, out, b.shape[1], a.shape[1], *strides, BLOCK_N=block_n)
    return "done"  # a learner's return value: no remark


@torch.no_grad()
def launch_3_decorated(a, b, out):
    launch_3_nested(a, b, out)


class Launcher3:  # a launch as an object, its kernel as a class attribute
    kernel = row_kernel

    def __call__(self, a, b, out):
        launch_3_by_default(a, b, out, kernel=self.kernel)


def launch_3_made_by(kernel):  # a closure's kernel
    return lambda a, b, out: launch_3_by_default(a, b, out, kernel=kernel)


@pytest.mark.parametrize(
    "launch",
    [
        launch_3_nested,
        launch_3_from_a_dict,
        launch_3_by_default,
        launch_3_decorated,
        functools.partial(launch_3_by_default, block_n=32),
        functools.partial(launch_3_by_default, kernel=ROW_KERNELS["row"]),
        Launcher3(),
        launch_3_made_by(row_kernel),
    ],
)
def test_a_right_launch_written_another_way_passes(launch):
    # Each was told "your launch names no @triton.jit kernel" (the checker looked kernels up
    # by name), and a partial crashed it; the string returned was reported as what was wrong.
    exercise = dataclasses.replace(solutions01.EXERCISES[2], launch=launch)
    assert practice.check(exercise) == (True, [])


@triton.jit
def row_kernel_steps_by_one(
    a_ptr, b_ptr, c_ptr, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(K):  # k and cols: their strides taken as 1
        a = tl.load(a_ptr + row * stride_am + k)
        acc += a * tl.load(b_ptr + k * stride_bk + cols, mask=cols < N, other=0.0)
    tl.store(c_ptr + row * stride_cm + cols * stride_cn, acc, mask=cols < N)


def test_a_kernel_that_ignores_the_inner_strides_is_told_so():
    # Its rows apart, their elements still side by side: it passed.
    passed, lines = check_with_kernels(
        solutions01, 3, solutions01.launch_3, row_kernel=row_kernel_steps_by_one
    )
    assert not passed and len(lines) == 1 and "a stride your kernel was given" in lines[0], lines


def test_the_time_limit_leaves_anothers_alarm_be():
    # The checker's own limit had cancelled it (as pytest-timeout's signal method sets one).
    signal.setitimer(signal.ITIMER_REAL, 100.0)
    try:
        assert practice.check(solutions01.EXERCISES[0]) == (True, [])
        assert 90 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


tile_product = solutions02.tile_product  # (a global name, as the kernel below calls it)


@triton.jit
def batched_kernel_with_batches_end_to_end(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    batch = tl.program_id(1)
    a_ptr += batch * M * stride_am  # the batch strides taken as M or K rows
    b_ptr += batch * K * stride_bk
    c_ptr += batch * M * stride_cm
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tl.program_id(0) // tiles_n, tl.program_id(0) % tiles_n
    rows, cols, acc = tile_product(
        a_ptr, b_ptr, pid_m, pid_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
        BLOCK_M, BLOCK_N, BLOCK_K,
    )  # fmt: skip
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc, mask=c_mask)


@triton.jit
def row_of_c(a_ptr, b_ptr, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_N: tl.constexpr):
    # program r's row of C, summed right: the two kernels below differ in their stores only
    row, cols = tl.program_id(0), tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(K):
        a = tl.load(a_ptr + row * stride_am + k * stride_ak)
        acc += a * tl.load(b_ptr + k * stride_bk + cols * stride_bn, mask=cols < N, other=0.0)
    return acc


@triton.jit
def row_kernel_steps_by_one_in_c(
    a_ptr, b_ptr, c_ptr, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    row, cols = tl.program_id(0), tl.arange(0, BLOCK_N)
    acc = row_of_c(a_ptr, b_ptr, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_N)
    tl.store(c_ptr + row * stride_cm + cols, acc, mask=cols < N)  # stride_cn taken as 1


@triton.jit
def row_kernel_masked_by_the_row_stride(
    a_ptr, b_ptr, c_ptr, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    row, cols = tl.program_id(0), tl.arange(0, BLOCK_N)
    acc = row_of_c(a_ptr, b_ptr, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK_N)
    c_mask = cols * stride_cn < stride_cm  # N where C's rows lie end to end, more with gaps
    tl.store(c_ptr + row * stride_cm + cols * stride_cn, acc, mask=c_mask)


@pytest.mark.parametrize(
    "solutions, number, launch, planted, said",
    [
        (solutions02, 2, solutions02.launch_2, batched_kernel_with_batches_end_to_end,
         "a stride your kernel was given goes unused"),
        (solutions01, 3, solutions01.launch_3, row_kernel_steps_by_one_in_c,
         "a stride your kernel was given goes unused"),
        (solutions01, 3, solutions01.launch_3, row_kernel_masked_by_the_row_stride,
         "a store left the output, into a gap or past its end"),
    ],
)  # fmt: skip
def test_a_kernel_right_only_where_elements_lie_end_to_end_is_told_so(
    solutions, number, launch, planted, said
):
    # Each passed: a batch's matrices, the output's elements and its rows lay end to end.
    name = "batched_matmul_kernel" if number == 2 else "row_kernel"
    passed, lines = check_with_kernels(solutions, number, launch, **{name: planted})
    assert not passed and any(line.endswith(said) for line in lines), lines


def launch_3_into_a_copy(a, b, out):
    flat = out.reshape(-1)  # a copy where out has gaps: the kernel's stores never reach out
    strides = (*a.stride(), *b.stride(), out.shape[1], 1)
    block_n = triton.next_power_of_2(b.shape[1])
    row_kernel[(a.shape[0],)](a, b, flat, b.shape[1], a.shape[1], *strides, BLOCK_N=block_n)


def test_a_launch_that_writes_a_copy_of_out_is_told_so():
    # Its kernel uses every stride it is given: "a stride your kernel was given goes unused".
    exercise = dataclasses.replace(solutions01.EXERCISES[2], launch=launch_3_into_a_copy)
    passed, lines = practice.check(exercise)
    assert not passed and len(lines) == 1, lines
    assert "no element of the output was written: did the launch write a copy" in lines[0]


@triton.jit
def store_past_by_keyword_kernel(c_ptr, n):
    tl.store(c_ptr + n + tl.program_id(0) * 0, 1.0)  # each program: one past the end


def launch_by_keyword(a, b, bias, out):
    store_past_by_keyword_kernel[(3,)](c_ptr=out, n=out.numel())


def test_a_store_outside_through_a_tensor_given_by_keyword_names_its_program():
    # The tensor given by keyword was not replaced when the launch ran again: "none of the
    # first 64 programs alone did", of 3.
    exercise = dataclasses.replace(solutions01.EXERCISES[0], launch=launch_by_keyword)
    lines = practice.check(exercise)[1]
    stores = [line for line in lines if line.startswith("a store left the output")]
    assert stores and stores[0].endswith("; program 0 (of 3) made it"), lines


@triton.jit
def kernel_that_never_ends(c_ptr):
    i = 0
    while i >= 0:
        i += 1
    tl.store(c_ptr, i)


def launch_a_kernel_that_never_ends(a, b, bias, out):
    kernel_that_never_ends[(1,)](out)


@pytest.mark.skipif(not common.INTERPRETED, reason="a signal stops Python, not a GPU's kernel")
def test_a_kernel_that_never_ends_is_stopped_and_told_so(monkeypatch):
    # Stopped inside the kernel, the interpreter's InterpreterError had wrapped the report.
    monkeypatch.setattr(practice, "LAUNCH_SECONDS", 0.5)
    launch = launch_a_kernel_that_never_ends
    passed, lines = practice.check(dataclasses.replace(solutions01.EXERCISES[0], launch=launch))
    assert not passed and lines[0].startswith("your code raised RanTooLong: your launch ran"), lines


@triton.jit
def kernel_that_does_nothing(c_ptr):
    pass


def launch_3_by_pytorch_then_a_kernel(a, b, out):
    out.copy_(a @ b)
    kernel_that_does_nothing[(1,)](out)


def test_pytorch_s_answer_before_a_kernel_that_does_nothing_is_told_so():
    # It passed: the checker looked for a change after the kernels only.
    launch = launch_3_by_pytorch_then_a_kernel
    assert practice.check(dataclasses.replace(solutions01.EXERCISES[2], launch=launch)) == (
        False,
        ["your launch wrote the output before its kernel ran, which left it as it was: the "
         "exercise asks the kernel to compute it"],
    )  # fmt: skip


@triton.jit
def row_kernel_with_strides_swapped(
    a_ptr, b_ptr, c_ptr, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(K):
        a = tl.load(a_ptr + row * stride_am + k * stride_ak)
        b = tl.load(b_ptr + k * stride_cm + cols * stride_ak, mask=cols < N, other=0.0)  # C's, A's
        acc += a * b
    tl.store(c_ptr + row * stride_cm + cols * stride_bn, acc, mask=cols < N)  # B's


def test_a_kernel_that_takes_one_tensors_stride_for_anothers_is_told_so():
    # It passed: B (7 x 20) and C (5 x 20) were laid out alike, and every inner step was 2.
    passed, lines = check_with_kernels(
        solutions01, 3, solutions01.launch_3, row_kernel=row_kernel_with_strides_swapped
    )
    assert not passed and any("a stride your kernel was given" in line for line in lines), lines


@triton.jit
def kernel_that_adds_the_bias(c_ptr, bias_ptr, N, stride_cm, stride_cn):
    pid = tl.program_id(0)
    row, col = pid // N, pid % N
    c = c_ptr + row * stride_cm + col * stride_cn
    tl.store(c, tl.load(c) + tl.load(bias_ptr + col))


def launch_1_by_pytorch_and_a_bias_kernel(a, b, bias, out):
    torch.matmul(a, b, out=out)
    M, N = out.shape
    kernel_that_adds_the_bias[(M * N,)](out, bias, N, *out.stride())


def test_pytorch_s_product_before_a_kernel_that_adds_to_it_is_told_so():
    # It passed: the kernel changed the output, so the checker took it for the kernel's work.
    launch = launch_1_by_pytorch_and_a_bias_kernel
    passed, lines = practice.check(dataclasses.replace(solutions01.EXERCISES[0], launch=launch))
    assert (passed, lines[:1]) == (
        False,
        ["your launch wrote the output before its kernel ran (PyTorch computed a part of it?): "
         "the exercise asks the kernel to compute it"],
    ), lines  # fmt: skip


@triton.jit
def kernel_that_zeroes_partial(partial_ptr, N, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    tl.store(partial_ptr + tl.program_id(0) * N + cols, tl.zeros((BLOCK_N,), tl.float32), cols < N)


def launch_03_4_zeroes_then_pytorch(x, partial, out):
    N = x.shape[1]
    kernel_that_zeroes_partial[(partial.shape[0],)](partial, N, BLOCK_N=triton.next_power_of_2(N))
    out.copy_(x.sum(0))  # in place of the second pass


def launch_04_3_zeroes_then_pytorch(x, grad_y, partial, out):
    D = x.shape[1]
    kernel_that_zeroes_partial[(partial.shape[0],)](partial, D, BLOCK_N=triton.next_power_of_2(D))
    out.copy_((x * grad_y[:, None]).sum(0))  # in place of the second pass


@pytest.mark.parametrize(
    "solutions, number, launch",
    [
        (solutions03, 4, launch_03_4_zeroes_then_pytorch),
        (solutions04, 3, launch_04_3_zeroes_then_pytorch),
    ],
)
def test_an_output_pytorch_made_in_place_of_the_second_pass_is_told_so(solutions, number, launch):
    # It passed: with a buffer, an output changed after the kernels is the second pass's, and
    # the buffer was checked for NaN only.
    exercise = dataclasses.replace(solutions.EXERCISES[number - 1], launch=launch)
    passed, lines = practice.check(exercise)
    assert not passed and len(lines) == 1, lines
    assert lines[0].startswith("the output is right, but not made from partial: the launch's"), (
        lines
    )
    assert " gives from what your kernel stored there " in lines[0], lines


def launch_3_with_an_int_grid(a, b, out):
    (M, K), N = a.shape, b.shape[1]
    strides = (*a.stride(), *b.stride(), *out.stride())
    solutions01.row_kernel[M](a, b, out, N, K, *strides, BLOCK_N=32)


def launch_03_3_filling_rows_first(x, out):
    out[0], out[1] = 7.0, float("-inf")  # a fill before the kernel, one value a row: allowed
    solutions03.launch_3(x, out)


def test_a_fill_before_the_kernel_is_no_result_of_pytorch_s():
    launch = launch_03_3_filling_rows_first
    assert practice.check(dataclasses.replace(solutions03.EXERCISES[2], launch=launch)) == (
        True,
        [],
    )


def launch_3_on_a_grid_of(kind):
    def launch(a, b, out):
        (M, K), N = a.shape, b.shape[1]
        strides = (*a.stride(), *b.stride(), *out.stride())
        solutions01.row_kernel[(kind(M),)](a, b, out, N, K, *strides, BLOCK_N=32)

    return launch


@pytest.mark.parametrize("kind", [np.int64, torch.tensor])
def test_a_grid_of_numpy_or_torch_ints_is_a_grid(kind):
    launch = launch_3_on_a_grid_of(kind)
    exercise = dataclasses.replace(solutions01.EXERCISES[2], launch=launch)
    assert practice.check(exercise) == (True, [])


def launch_3_with_row_0_by_pytorch(a, b, out):
    out[0] = a[0] @ b  # a row PyTorch computed, the others NaN: no fill
    solutions01.launch_3(a[1:], b, out[1:])


def test_a_row_pytorch_computed_before_the_kernel_is_told_so():
    launch = launch_3_with_row_0_by_pytorch
    passed, lines = practice.check(dataclasses.replace(solutions01.EXERCISES[2], launch=launch))
    assert not passed and lines[0].startswith("your launch wrote the output before its kernel"), (
        lines
    )


def launch_03_4_zeroes_then_pytorch_in_partial(x, partial, out):
    N = x.shape[1]
    kernel_that_zeroes_partial[(partial.shape[0],)](partial, N, BLOCK_N=triton.next_power_of_2(N))
    partial[0] = x.sum(0)  # after the kernel
    out.copy_(partial.sum(0))  # the second pass, as written


def launch_03_4_pytorch_in_partial_then_no_program(x, partial, out):
    partial.zero_()
    partial[0] = x.sum(0)  # before a kernel of no program
    kernel_that_zeroes_partial[(0,)](partial, x.shape[1], BLOCK_N=32)
    out.copy_(partial.sum(0))  # the second pass, as written


def launch_03_4_pytorch_in_partial_then_a_kernel_on_the_rest(x, partial, out):
    N = x.shape[1]
    partial[0] = x.sum(0)  # before a kernel that zeroes the other rows
    zero = kernel_that_zeroes_partial
    zero[(partial.shape[0] - 1,)](partial[1:], N, BLOCK_N=triton.next_power_of_2(N))
    out.copy_(partial.sum(0))  # the second pass, as written


@pytest.mark.parametrize(
    "launch, first",
    [
        (launch_03_4_zeroes_then_pytorch_in_partial, "the output is right, but not made from"),
        (launch_03_4_pytorch_in_partial_then_no_program, "your launch launched no kernel"),
        (
            launch_03_4_pytorch_in_partial_then_a_kernel_on_the_rest,
            "your launch wrote the buffer partial before its kernel ran",
        ),
    ],
)
def test_partial_sums_pytorch_wrote_around_a_kernel_are_told_so(launch, first):
    exercise = dataclasses.replace(solutions03.EXERCISES[3], launch=launch)
    passed, lines = practice.check(exercise)
    assert not passed and lines[0].startswith(first), lines


def test_a_grid_that_is_no_tuple_is_told_so():
    # Triton's own error was "object of type 'int' has no len()".
    launch = launch_3_with_an_int_grid
    passed, lines = practice.check(dataclasses.replace(solutions01.EXERCISES[2], launch=launch))
    assert not passed and lines[0].startswith(
        "your code raised TypeError: the grid is a tuple of ints, such as (n,), or a function "
        "returning one; got 5 (line "
    ), lines


@triton.jit
def relu_matmul_kernel_with_a_float16_acc(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    rows, cols, ks = tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_N), tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)  # tl.dot's acc must be float32
    a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak)
    b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn)
    acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc)


def test_an_assert_without_a_message_in_triton_shows_its_line():
    # The interpreter's tl.dot asserts its accumulator's dtype with no message: the report read
    # "AssertionError()" alone.
    passed, lines = check_with_kernels(
        solutions02, 1, solutions02.exercises.launch_1,
        relu_matmul_kernel=relu_matmul_kernel_with_a_float16_acc,
    )  # fmt: skip
    assert not passed, lines
    if not common.INTERPRETED:  # (compiled, Triton's compile error says what failed)
        assert lines[0].startswith("your code raised "), lines
        return
    if "AssertionError" not in lines[0]:  # (Triton 3.9's interpreter runs it: wrong values)
        pytest.skip("this Triton's interpreter does not assert tl.dot's accumulator dtype")
    assert "AssertionError() (line " in lines[0], lines
    assert "; Triton's check that failed: assert " in lines[0], lines
    assert "acc.type.element_ty == out_dtype" in lines[0], lines


@triton.jit
def sum_into_row_0(partial_ptr, P, N, P_TILE: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, P_TILE)
    offsets = rows[:, None] * N + cols[None, :]
    mask = (rows < P)[:, None] & (cols < N)[None, :]
    sums = tl.sum(tl.load(partial_ptr + offsets, mask=mask, other=0.0), axis=0)
    tl.store(partial_ptr + cols, sums, mask=cols < N)  # in place, into row 0


def split_sums_into(partial, x, chunks):  # solutions03's kernel, on the first chunks of 40 rows
    (M, N), split = x.shape, solutions03.split_column_sum_kernel
    split[(triton.cdiv(N, 16), chunks)](x, partial, M, N, *x.stride(), 40, BLOCK_M=16, BLOCK_N=16)


def launch_03_4_with_a_second_pass_of_its_own(x, partial, out):
    N, P = x.shape[1], partial.shape[0]
    split_sums_into(partial, x, P)
    sum_into_row_0[(triton.cdiv(N, 16),)](
        partial, P, N, P_TILE=triton.next_power_of_2(P), BLOCK_N=16
    )
    out.copy_(partial[0])


def test_a_second_pass_of_the_learners_own_that_changes_partial_passes():
    # It failed: the written second pass was checked on partial as the last kernel left it.
    exercise = dataclasses.replace(
        solutions03.EXERCISES[3], launch=launch_03_4_with_a_second_pass_of_its_own
    )
    assert practice.check(exercise) == (True, [])


def launch_03_4_with_the_last_chunk_by_pytorch(x, partial, out):
    P = partial.shape[0]
    split_sums_into(partial, x, P - 1)
    partial[P - 1] = x[(P - 1) * 40 :].sum(0)  # after the kernel, where it left NaN
    out.copy_(partial.sum(0))


def launch_03_1_by_pytorch_between_kernels(x, out):
    kernel_that_does_nothing[(1,)](out)
    out.copy_(x.sum(1))
    kernel_that_does_nothing[(1,)](out)


def launch_03_4_with_partial_by_pytorch_a_column_each(x, partial, out):
    partial.copy_((x.sum(0) / partial.shape[0]).expand_as(partial))  # one value a column
    kernel_that_does_nothing[(1,)](partial)
    out.copy_(partial.sum(0))


def launch_03_1_with_the_last_row_by_pytorch(x, out):
    out[-1] = x[-1].sum()  # one element: no fill of 0 or an infinity
    solutions03.launch_1(x[:-1], out[:-1])


@pytest.mark.parametrize(
    "number, launch, first",
    [
        (4, launch_03_4_with_the_last_chunk_by_pytorch, "the output is right, but not made from"),
        (1, launch_03_1_by_pytorch_between_kernels, "your launch changed the output between its"),
        (4, launch_03_4_with_partial_by_pytorch_a_column_each, "your launch wrote the buffer"),
        (1, launch_03_1_with_the_last_row_by_pytorch, "your launch wrote the output before its"),
    ],
)
def test_pytorch_s_work_around_the_kernels_is_told_so(number, launch, first):
    # Each passed: NaN in partial was taken for right, the host's writes between two kernels
    # were not looked at, partial was allowed a fill of one value a column, and one element
    # PyTorch wrote was taken for a fill.
    exercise = dataclasses.replace(solutions03.EXERCISES[number - 1], launch=launch)
    passed, lines = practice.check(exercise)
    assert not passed and lines[0].startswith(first), lines


def launch_03_1_with_an_assert_of_its_own(x, out):
    if not x.is_contiguous():  # (an assert of its own: pytest would give an assert a message)
        raise AssertionError  # x comes as a .T view


def test_a_learners_own_assert_is_not_called_triton_s():
    # It read "AssertionError:  (line ...); Triton's check that failed: assert x.is_contiguous()".
    exercise = dataclasses.replace(
        solutions03.EXERCISES[0], launch=launch_03_1_with_an_assert_of_its_own
    )
    passed, lines = practice.check(exercise)
    source, first = inspect.getsourcelines(launch_03_1_with_an_assert_of_its_own)
    where = f"(line {first + 2} of test_practice.py, in launch_03_1_with_an_assert_of_its_own)"
    assert (passed, lines) == (False, [f"your code raised AssertionError {where}"])


def test_a_list_grid_is_a_grid_where_triton_takes_one():
    # Triton launches on a list on a GPU; its interpreter takes tuples only.
    launch = launch_3_on_a_grid_of(lambda m: m)  # (M,), then as a list:
    exercise = dataclasses.replace(solutions01.EXERCISES[2], launch=launch_3_on_a_list)
    passed, lines = practice.check(exercise)
    if common.INTERPRETED:
        assert not passed and "the grid is a tuple of ints" in lines[0], lines
    else:
        assert (passed, lines) == (True, [])
    assert practice.check(dataclasses.replace(exercise, launch=launch)) == (True, [])


def launch_3_on_a_list(a, b, out):
    (M, K), N = a.shape, b.shape[1]
    strides = (*a.stride(), *b.stride(), *out.stride())
    solutions01.row_kernel[[M]](a, b, out, N, K, *strides, BLOCK_N=32)
