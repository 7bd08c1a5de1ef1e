"""Every candidate tile of 03's and 04's pointer kernels, timed on 12 shapes: is each lesson's tile
list still within 1% of the best candidate? (results/NOTES.md item 41 chose the lists this way, on
an H100.)

Run on a GPU machine from the repository root: `python tools/tile_sweep.py`. Kernel time only
(triton.testing.do_bench: median, L2 flushed), each config launched straight through Triton. The
candidates are the lists the lessons had before item 41: 03's 16 tiles with 1 and 2 stages, 04's 15
tiles, each pruned as the op prunes. Per shape: the best candidate, the best in the lesson's
list, their ratio. Uses only the lessons' public names.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402
from tools import REPO_ROOT, load_example  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402

blocked_sum = load_example(REPO_ROOT / "03_blocked_sum/main.py")
blocked_sum_op = load_example(REPO_ROOT / "03_blocked_sum/op.py")  # prunes as the op does
weighted_sum = load_example(REPO_ROOT / "04_weighted_sum/main.py")
weighted_sum_op = load_example(REPO_ROOT / "04_weighted_sum/op.py")  # prunes as the op does
dev = common.DEVICE
TILES_03 = [
    (128, 32, 4),
    (256, 32, 4),
    (64, 64, 4),
    (128, 64, 4),
    (128, 64, 8),
    (256, 64, 8),
    (32, 128, 4),
    (64, 128, 4),
    (128, 128, 8),
    (32, 256, 4),
    (64, 256, 8),
    (16, 512, 4),
    (32, 512, 8),
    (16, 1024, 8),
    (1, 512, 4),
    (1, 1024, 8),
]  # (BLOCK_M, BLOCK_N, num_warps), each with STAGES 1 and 2
TILES_04 = [
    (128, 32, 4),
    (64, 64, 4),
    (8, 128, 4),
    (16, 128, 4),
    (32, 128, 4),
    (64, 128, 8),
    (128, 128, 8),
    (16, 256, 4),
    (32, 256, 8),
    (4, 512, 4),
    (8, 512, 4),
    (16, 512, 8),
    (4, 1024, 4),
    (8, 1024, 8),
    (16, 1024, 8),
]  # (ROWS_TILE, D_TILE, num_warps)


EXTRA_03 = [
    (1000, 700, "float32"),
    (300000, 700, "float32"),
    (4096, 512, "float32"),
    (1000, 900, "float32"),
]
EXTRA_04 = [
    (8192, 300, "float32"),
    (8192, 768, "float32"),
    (8192, 4000, "float32"),
    (4096, 512, "float32"),
]


def kernel_ms(launch):
    return triton.testing.do_bench(launch, warmup=10, rep=40, return_mode="median")


def report(name, times, in_lesson):
    best = min(times, key=times.get)
    ours = min(
        (c for c in times if in_lesson(c)), key=times.get, default=None
    )  # None: the lesson keeps its smallest
    found = (
        "none fits"
        if ours is None
        else (f"{ours!s:22s} {times[ours] * 1e3:7.1f} us | ratio {times[ours] / times[best]:.3f}")
    )
    print(
        f"{name:34s} best {best!s:22s} {times[best] * 1e3:7.1f} us | lesson's best {found}",
        flush=True,
    )


def main():
    lesson_03 = {
        (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.kwargs["STAGES"])
        for c in blocked_sum.CONFIGS
    }
    candidates_03 = [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n, "STAGES": s}, num_warps=w)
        for m, n, w in TILES_03
        for s in (1, 2)
    ]
    print(common.describe_run())
    for rows, cols, dtype in [
        *((c["rows"], c["cols"], c["dtype"]) for c in blocked_sum.SWEEP),
        *EXTRA_03,
    ]:
        x = torch.randn(rows, cols, device=dev, dtype=getattr(torch, dtype))
        splits, rows_per_chunk = blocked_sum.chunks(rows)
        # the first pass writes float32 partial sums if the rows are split, else x's dtype
        partials = torch.empty(
            splits, cols, device=dev, dtype=torch.float32 if splits > 1 else x.dtype
        )
        times = {}
        for config in blocked_sum_op.prune_configs(
            candidates_03, {"N": cols, "rows_per_chunk": rows_per_chunk}
        ):
            kw = config.all_kwargs()
            times[(kw["BLOCK_M"], kw["BLOCK_N"], kw["num_warps"], kw["STAGES"])] = kernel_ms(
                lambda: blocked_sum.column_sum_kernel.fn[
                    (triton.cdiv(cols, kw["BLOCK_N"]), splits)
                ](x, partials, rows, cols, *x.stride(), rows_per_chunk, **kw)
            )
        report(f"03 {rows}x{cols} {dtype}", times, lambda c: c in lesson_03)

    lesson_04 = {
        (c.kwargs["ROWS_TILE"], c.kwargs["D_TILE"], c.num_warps)
        for c in weighted_sum.forward_kernel.configs
    }
    candidates_04 = [
        triton.Config({"ROWS_TILE": r, "D_TILE": d}, num_warps=w) for r, d, w in TILES_04
    ]
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    for rows, dim, dtype in [
        *((c["rows"], c["dim"], c["dtype"]) for c in weighted_sum.SWEEP),
        *EXTRA_04,
    ]:
        shapes = ((rows, dim), dim, rows)
        x, w, grad_y = (
            torch.randn(shape, device=dev, dtype=getattr(torch, dtype)) for shape in shapes
        )
        y, grad_x = torch.empty_like(grad_y), torch.empty_like(x)
        layout = weighted_sum.alignment(x)
        # the backward's program count per D tile, as the lesson's backward() plans it
        programs = max(sms, triton.cdiv(weighted_sum.PROGRAMS_PER_SM * sms, triton.cdiv(dim, 128)))
        programs = min(programs, rows)
        partial = torch.empty(programs, dim, device=dev)
        forward, backward = {}, {}
        for config in weighted_sum_op.tiles_for_d(candidates_04, {"D": dim}):  # the op's prune
            kw = config.all_kwargs()
            rows_tile, d_tile, warps = kw["ROWS_TILE"], kw["D_TILE"], kw["num_warps"]
            forward[rows_tile, d_tile, warps] = kernel_ms(
                lambda: weighted_sum.forward_kernel.fn[(triton.cdiv(rows, rows_tile),)](
                    x, w, y, rows, dim, *x.stride(), **layout, **kw
                )
            )
            backward[rows_tile, d_tile, warps] = kernel_ms(
                lambda: weighted_sum.backward_kernel.fn[(triton.cdiv(dim, d_tile), programs)](
                    x,
                    w,
                    grad_y,
                    grad_x,
                    partial,
                    rows,
                    dim,
                    *x.stride(),
                    **layout,
                    **kw,
                )
            )
        report(f"04 fwd {rows}x{dim} {dtype}", forward, lambda c: c in lesson_04)
        report(f"04 bwd {rows}x{dim} {dtype}", backward, lambda c: c in lesson_04)


if __name__ == "__main__":
    formatter = argparse.RawDescriptionHelpFormatter  # the docstring's paragraphs, as written
    argparse.ArgumentParser(description=__doc__, formatter_class=formatter).parse_args()
    if common.INTERPRETED:
        sys.exit("tile_sweep.py times kernels on a GPU: none here (or TRITON_INTERPRET=1).")
    main()
