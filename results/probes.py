"""GPU measurements behind results/NOTES.md that `make bench` does not make.

Each probe prints lines as it goes; run on the GPU machine, e.g.
    python results/probes.py ceiling flush
    python results/probes.py            (every probe)
Not a lesson and not part of `make test`: a maintainer's instrument for the notes.
"""

import argparse
import functools
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

MB = 1e6
FLUSH_BYTES = 256 * 2**20  # what triton.testing.do_bench clears the L2 with


@triton.jit
def read_kernel(
    x_ptr,  # pointer to n float32, contiguous
    partial_ptr,  # pointer to one float32 per program
    n,  # elements of x
    BLOCK: tl.constexpr,  # elements per loop step
):
    # Read-only streaming: each program sums blocks pid, pid + programs, ... With one block per
    # program this is an ordinary grid; with 132 x k programs it is a persistent one.
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for block in range(pid, tl.cdiv(n, BLOCK), tl.num_programs(0)):
        offsets = block * BLOCK + tl.arange(0, BLOCK)  # int32: these probes stay under 2^31 elements
        acc += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(acc))


@triton.jit
def forward_persistent_kernel(
    x_ptr,  # pointer to x[0, 0], (rows, D) contiguous
    w_ptr,  # pointer to w[0]
    y_ptr,  # pointer to y[0]
    rows, D,  # problem size
    ROWS_TILE: tl.constexpr,  # rows per tile
    D_TILE: tl.constexpr,  # columns per step
    STAGES: tl.constexpr,  # software-pipelining depth of the loop over D
):
    # 04's forward pointer kernel with a fixed grid of programs that each walk several row tiles.
    for tile in range(tl.program_id(0), tl.cdiv(rows, ROWS_TILE), tl.num_programs(0)):
        row_ids = tile * ROWS_TILE + tl.arange(0, ROWS_TILE)
        row_mask = row_ids < rows
        row_starts = row_ids.to(tl.int64) * D
        acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
        for d0 in tl.range(0, D, D_TILE, num_stages=STAGES):
            cols = d0 + tl.arange(0, D_TILE)
            col_mask = cols < D
            x = tl.load(x_ptr + row_starts[:, None] + cols[None, :], mask=row_mask[:, None] & col_mask[None, :], other=0.0)
            w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
            acc += x.to(tl.float32) * w.to(tl.float32)[None, :]
        tl.store(y_ptr + row_ids, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=row_mask)


def replay_ms(fn, flush, setup=None, reps=60):
    """Median ms of graph replays of fn(), each after flush() (outside the timed region)."""
    graph = common.capture_graph(fn, setup)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(5):
        flush()
        graph.replay()
    for start, end in zip(starts, ends):
        flush()
        start.record()
        graph.replay()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def flushes():
    """Ways to empty the L2 between runs: as do_bench does (writes, so the L2 is left full of dirty
    lines that the timed kernel must write back), by reading (clean lines), and not at all."""
    buffer = torch.randn(FLUSH_BYTES // 4, device=common.DEVICE)
    sink = torch.empty((), device=common.DEVICE)
    return {
        "write (do_bench)": buffer.zero_,
        "read": lambda: torch.sum(buffer, dim=0, out=sink),
        "none": lambda: None,
    }


def line(*parts):
    print(" | ".join(str(p) for p in parts), flush=True)


def us_percent(ms, nbytes, ceiling):
    """'137.6 us (92.3%)': a time in microseconds and its bytes' rate as a percentage of the copy ceiling."""
    return f"{ms * 1e3:.1f} us ({100 * common.gbps(nbytes, ms) / ceiling:.1f}%)"


def probe_ceiling():
    """Copy and read-only bandwidth against size: how much a launch of a given size can reach."""
    sms = common.multiprocessor_count(common.DEVICE)
    line("ceiling (1 GiB eager copy, as common)", f"{common.copy_ceiling_gbps():.0f} GB/s")
    for read_mb in (67, 134, 268, 537, 1074):
        n = int(read_mb * MB) // 4
        src = torch.randn(n, device=common.DEVICE)
        dst = torch.empty_like(src)
        nbytes = 2 * n * 4
        eager = triton.testing.do_bench(lambda: dst.copy_(src), warmup=25, rep=100, return_mode="median")
        neg = common.bench(lambda: torch.neg(src, out=dst))
        line(f"copy {read_mb} MB read + {read_mb} MB written", f"eager copy_ {common.gbps(nbytes, eager):.0f} GB/s",
             f"graphed torch.neg {common.gbps(nbytes, neg):.0f} GB/s")
        for programs_per_sm in (None, 2, 4, 8, 16):
            block = 4096
            programs = triton.cdiv(n, block) if programs_per_sm is None else programs_per_sm * sms
            partial = torch.empty(programs, device=common.DEVICE)
            ms = common.bench(lambda: read_kernel[(programs,)](src, partial, n, BLOCK=block, num_warps=8))
            label = "one block per program" if programs_per_sm is None else f"{programs_per_sm} programs per SM"
            line(f"  read {read_mb} MB, {label}", f"{ms * 1e3:.1f} us", f"{common.gbps(n * 4, ms):.0f} GB/s",
                 f"{100 * common.gbps(n * 4, ms) / common.copy_ceiling_gbps():.1f}% of ceiling")
        del src, dst


def probe_flush():
    """The same graphs timed after each way of flushing the L2."""
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    blocked = common.load_example(common.REPO_ROOT / "03_blocked_sum" / "main.py")
    ways = flushes()
    x = torch.randn(65536, 1024, device=common.DEVICE)
    w = torch.randn(1024, device=common.DEVICE)
    grad_y = torch.randn(65536, device=common.DEVICE)
    dst = torch.empty_like(x)
    x2 = torch.randn(16384, 8192, device=common.DEVICE)
    out2 = torch.empty(8192, device=common.DEVICE)
    leaf_x, leaf_w = x.detach().requires_grad_(), w.detach().requires_grad_()
    saved = {}

    def forward():
        saved["y"] = weighted.weighted_sum(leaf_x, leaf_w)

    cases = [
        ("torch.neg 268 MB in + out", lambda: torch.neg(x, out=dst), None, 2 * x.numel() * 4),
        ("04 forward 65536x1024 fp32", lambda: weighted.weighted_sum(x, w), None, x.numel() * 4),
        ("04 backward 65536x1024 fp32", lambda: torch.autograd.grad(saved["y"], (leaf_x, leaf_w), grad_y, retain_graph=True),
         forward, 2 * x.numel() * 4),
        ("03 16384x8192 fp32", lambda: blocked.blocked_sum(x2, out=out2), None, x2.numel() * 4),
        ("torch.sum(0) 16384x8192 fp32", lambda: x2.sum(0), None, x2.numel() * 4),
    ]
    for name, fn, setup, nbytes in cases:
        graph = common.capture_graph(fn, setup)
        do_bench_ms = triton.testing.do_bench(graph.replay, warmup=25, rep=100, return_mode="median")
        parts = [name, f"do_bench {us_percent(do_bench_ms, nbytes, common.copy_ceiling_gbps())}"]
        for way, flush in ways.items():
            ms = replay_ms(fn, flush, setup)
            parts.append(f"flush {way} {us_percent(ms, nbytes, common.copy_ceiling_gbps())}")
        line(*parts)


def autotune_table(kernel, label):
    timings = getattr(kernel, "configs_timings", None) or {}
    ranked = sorted(timings.items(), key=lambda item: item[1][0] if isinstance(item[1], (list, tuple)) else item[1])
    line(label, f"best {kernel.best_config}")
    for config, times in ranked[:6]:
        first = times[0] if isinstance(times, (list, tuple)) else times
        line("   ", f"{first * 1e3:.1f} us", config)


def forward_cases(weighted):
    for dtype in (torch.float32, torch.bfloat16):
        for rows, dim in weighted.BENCH_SHAPES:
            x = torch.randn(rows, dim, dtype=dtype, device=common.DEVICE)
            w = torch.randn(dim, dtype=dtype, device=common.DEVICE)
            y = torch.empty(rows, dtype=dtype, device=common.DEVICE)
            yield f"{rows}x{dim} {dtype}", x, w, y


def probe_forward():
    """04 forward: time and the autotuner's ranking per shape."""
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    for case, x, w, y in forward_cases(weighted):
        ms = common.bench(lambda: weighted.forward(x, w, y, "pointer"))
        percent = 100 * common.gbps(x.numel() * x.element_size(), ms) / common.copy_ceiling_gbps()
        autotune_table(weighted.forward_pointer_kernel, f"04 fwd {case}: {ms * 1e3:.1f} us ({percent:.1f}%)")


def probe_persistent():
    """04 forward with a persistent grid (k programs per SM walking row tiles), the best tile."""
    sms = common.multiprocessor_count(common.DEVICE)
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    for case, x, w, y in forward_cases(weighted):
        (rows, dim), nbytes = x.shape, x.numel() * x.element_size()
        ms = common.bench(lambda: weighted.forward(x, w, y, "pointer"))
        line(f"04 fwd {case}", f"grid of row tiles {ms * 1e3:.1f} us", f"{100 * common.gbps(nbytes, ms) / ceiling:.1f}%")
        best = weighted.forward_pointer_kernel.best_config
        tile, d_tile = best.kwargs["ROWS_TILE"], best.kwargs["D_TILE"]
        for per_sm in (2, 4, 8):
            for stages in (1, 3):
                programs = min(per_sm * sms, triton.cdiv(rows, tile))
                ms = common.bench(lambda: forward_persistent_kernel[(programs,)](
                    x, w, y, rows, dim, ROWS_TILE=tile, D_TILE=d_tile, STAGES=stages, num_warps=best.num_warps))
                line("    persistent", f"{per_sm}/SM stages {stages}", f"{ms * 1e3:.1f} us",
                     f"{100 * common.gbps(nbytes, ms) / ceiling:.1f}%")


@triton.jit
def backward_variant_kernel(
    x_ptr, w_ptr, grad_y_ptr, grad_x_ptr, partial_ptr,  # as 04's backward_pointer_kernel, contiguous x
    rows, D,  # problem size
    ORDER: tl.constexpr,  # "store_first" (04 before item 15), "loads_first" (04 now), "prefetch" (next tile's
    # loads a step early), "row_sum" (loads first, the accumulator summed over its rows every step: one row of registers),
    # "tile_base" (loads first; a 64-bit pointer to the tile's first row, advanced per step, plus loop-invariant int32
    # offsets inside the tile, instead of int64 addresses recomputed for every element), "read_only" (loads_first
    # without the grad_x store: grad_w's half alone), "write_only" (without the x load: grad_x's half alone), "copy"
    # (grad_x = -x and nothing else: torch.neg's work in this kernel's loop)
    LOAD_EVICTION: tl.constexpr,  # eviction_policy of the x loads ("" = default)
    STORE_CACHE: tl.constexpr,  # cache_modifier of the grad_x stores ("" = default)
    ROWS_TILE: tl.constexpr, D_TILE: tl.constexpr,  # tile
    STAGES: tl.constexpr = 1,  # num_stages of the loop over row tiles: > 1 lets Triton copy loads into shared memory
    # ahead of use (cp.async), so the bytes in flight no longer need registers
):
    # 04's pointer backward with both gradients, D a multiple of 16, in the ways of doing a
    # step that ORDER names, and with cache hints: which brings the fused pass closest to a copy?
    d0 = tl.program_id(0) * D_TILE
    pid = tl.program_id(1)
    step = tl.num_programs(1) * ROWS_TILE
    cols = d0 + tl.arange(0, D_TILE)
    w = tl.load(w_ptr + cols).to(tl.float32)
    if ORDER == "row_sum":
        acc = tl.zeros((D_TILE,), dtype=tl.float32)
    else:
        acc = tl.zeros((ROWS_TILE, D_TILE), dtype=tl.float32)
    row_ids = (pid * ROWS_TILE + tl.arange(0, ROWS_TILE)).to(tl.int64)
    if ORDER == "prefetch":
        x = tl.load(x_ptr + row_ids[:, None] * D + cols[None, :], mask=(row_ids < rows)[:, None], other=0.0,
                    eviction_policy=LOAD_EVICTION)
        grad_y = tl.load(grad_y_ptr + row_ids, mask=row_ids < rows, other=0.0).to(tl.float32)
    in_tile = tl.arange(0, ROWS_TILE)[:, None] * D + cols[None, :]  # int32: ROWS_TILE * D < 2^31 here
    first_row = pid.to(tl.int64) * ROWS_TILE  # the row tile's first row, a scalar
    for _ in tl.range(pid, tl.cdiv(rows, ROWS_TILE), tl.num_programs(1), num_stages=STAGES):
        row_mask = row_ids < rows
        offsets = row_ids[:, None] * D + cols[None, :]
        if ORDER == "tile_base":
            tile_mask = (tl.arange(0, ROWS_TILE) < rows - first_row)[:, None]
            x = tl.load(x_ptr + first_row * D + in_tile, mask=tile_mask, other=0.0)
            grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(tl.float32)
            tl.store(grad_x_ptr + first_row * D + in_tile, (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty),
                     mask=tile_mask)
            acc += x.to(tl.float32) * grad_y[:, None]
        elif ORDER == "store_first":
            grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(tl.float32)
            tl.store(grad_x_ptr + offsets, (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty),
                     mask=row_mask[:, None], cache_modifier=STORE_CACHE)
            x = tl.load(x_ptr + offsets, mask=row_mask[:, None], other=0.0, eviction_policy=LOAD_EVICTION)
            acc += x.to(tl.float32) * grad_y[:, None]
        elif ORDER == "read_only":
            x = tl.load(x_ptr + offsets, mask=row_mask[:, None], other=0.0, eviction_policy=LOAD_EVICTION)
            grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(tl.float32)
            acc += x.to(tl.float32) * grad_y[:, None]
        elif ORDER == "copy":
            x = tl.load(x_ptr + offsets, mask=row_mask[:, None], other=0.0)
            tl.store(grad_x_ptr + offsets, -x, mask=row_mask[:, None])
        elif ORDER == "write_only":
            grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(tl.float32)
            tl.store(grad_x_ptr + offsets, (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty),
                     mask=row_mask[:, None], cache_modifier=STORE_CACHE)
        elif ORDER == "loads_first" or ORDER == "row_sum":
            x = tl.load(x_ptr + offsets, mask=row_mask[:, None], other=0.0, eviction_policy=LOAD_EVICTION)
            grad_y = tl.load(grad_y_ptr + row_ids, mask=row_mask, other=0.0).to(tl.float32)
            tl.store(grad_x_ptr + offsets, (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty),
                     mask=row_mask[:, None], cache_modifier=STORE_CACHE)
            if ORDER == "row_sum":
                acc += tl.sum(x.to(tl.float32) * grad_y[:, None], axis=0)
            else:
                acc += x.to(tl.float32) * grad_y[:, None]
        else:
            next_ids = row_ids + step
            next_x = tl.load(x_ptr + next_ids[:, None] * D + cols[None, :], mask=(next_ids < rows)[:, None], other=0.0,
                             eviction_policy=LOAD_EVICTION)
            next_grad_y = tl.load(grad_y_ptr + next_ids, mask=next_ids < rows, other=0.0).to(tl.float32)
            tl.store(grad_x_ptr + offsets, (grad_y[:, None] * w[None, :]).to(grad_x_ptr.dtype.element_ty),
                     mask=row_mask[:, None], cache_modifier=STORE_CACHE)
            acc += x.to(tl.float32) * grad_y[:, None]
            x, grad_y = next_x, next_grad_y
        row_ids += step
        first_row += step
    if ORDER == "row_sum":
        tl.store(partial_ptr + pid.to(tl.int64) * D + cols, acc)
    else:
        tl.store(partial_ptr + pid.to(tl.int64) * D + cols, tl.sum(acc, axis=0))


def backward_inputs(rows, dim, dtype):
    """Fresh random x (rows, dim), w (dim,) and grad_y (rows,) for 04's backward."""
    return (torch.randn(rows, dim, dtype=dtype, device=common.DEVICE), torch.randn(dim, dtype=dtype, device=common.DEVICE),
            torch.randn(rows, dtype=dtype, device=common.DEVICE))


def probe_backward():
    """04 backward: the whole backward(), the first kernel alone, the second pass alone, orders and cache hints."""
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    kernel = weighted.backward_pointer_kernel
    for dtype in (torch.float32, torch.bfloat16):
        for rows, dim in weighted.BENCH_SHAPES:
            x, w, grad_y = backward_inputs(rows, dim, dtype)
            nbytes = 2 * x.numel() * x.element_size()
            case = f"04 bwd {rows}x{dim} {dtype}"
            programs = weighted.backward_programs(rows, dim)
            total = common.bench(lambda: weighted.backward(x, w, grad_y, "pointer", True, True))
            grad_x = torch.empty_like(x)
            partial = torch.randn(programs, dim, device=common.DEVICE)
            grad_w = torch.empty(dim, dtype=dtype, device=common.DEVICE)
            best = kernel.best_config
            grid = (triton.cdiv(dim, best.kwargs["D_TILE"]), programs)
            align = weighted._alignment(dim, x.element_size())
            alone = common.bench(lambda: kernel.fn[grid](
                x, w, grad_y, grad_x, partial, rows, dim, x.stride(0), x.stride(1), grad_y.stride(0),
                X_ROW_ALIGN=align, D_ALIGN=align, NEED_GRAD_X=True, NEED_GRAD_W=True, ACC_DTYPE=tl.float32,
                num_warps=best.num_warps, **best.kwargs))
            second = common.bench(lambda: weighted.sum_partials(partial, grad_w))
            torch_sum = common.bench(lambda: partial.sum(0).to(dtype))
            line(case, f"{grid[1]} programs per D tile, {grid[0] * grid[1]} in all", best,
                 f"backward() {us_percent(total, nbytes, ceiling)}",
                 f"first kernel alone {us_percent(alone, nbytes, ceiling)}",
                 f"sum_partials_kernel alone {second * 1e3:.1f} us", f"partial.sum(0).to(dtype) alone {torch_sum * 1e3:.1f} us")
            if dim % best.kwargs["D_TILE"]:
                continue  # the variants below do not mask columns
            variants = [(order, "", "") for order in ("store_first", "loads_first", "prefetch", "row_sum", "tile_base")]
            variants += [("loads_first", "evict_first", ""), ("loads_first", "", ".cs")]
            for order, eviction, store_cache in variants:
                ms = common.bench(lambda: backward_variant_kernel[grid](
                    x, w, grad_y, grad_x, partial, rows, dim, ORDER=order, LOAD_EVICTION=eviction, STORE_CACHE=store_cache,
                    ROWS_TILE=best.kwargs["ROWS_TILE"], D_TILE=best.kwargs["D_TILE"], num_warps=best.num_warps))
                line("    variant", order, f"x loads {eviction or 'default'}, grad_x stores {store_cache or 'default'}",
                     us_percent(ms, nbytes, ceiling))
            ms = common.bench(lambda: torch.neg(x, out=grad_x))
            line(case, "torch.neg, same bytes", f"{ms * 1e3:.1f} us", f"{100 * common.gbps(nbytes, ms) / ceiling:.1f}%")


def launch_variant(x, w, grad_y, grad_x, partial, grid, config, stages, order):
    """One launch of backward_variant_kernel with a tile config and a pipelining depth; returns the compiled kernel."""
    rows, dim = x.shape
    return backward_variant_kernel[grid](x, w, grad_y, grad_x, partial, rows, dim, ORDER=order, LOAD_EVICTION="",
                                         STORE_CACHE="", STAGES=stages, num_warps=config.num_warps, **config.kwargs)


def probe_backward_split():
    """04 backward's first kernel against its two halves (read_only, write_only) alone and one after the other."""
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    for dtype in (torch.float32, torch.bfloat16):
        for rows, dim in ((65536, 1024), (1048576, 128)):
            x, w, grad_y = backward_inputs(rows, dim, dtype)
            grad_x = torch.empty_like(x)
            half = x.numel() * x.element_size()
            weighted.backward(x, w, grad_y, "pointer", True, True)
            best = weighted.backward_pointer_kernel.best_config
            programs = weighted.backward_programs(rows, dim)
            grid = (triton.cdiv(dim, best.kwargs["D_TILE"]), programs)
            partial = torch.empty(programs, dim, device=common.DEVICE)
            read_programs = 8 * common.multiprocessor_count(common.DEVICE)
            read_partial = torch.empty(read_programs, device=common.DEVICE)

            variant = functools.partial(launch_variant, x, w, grad_y, grad_x, partial, grid, best, 1)
            flat = x.view(-1).view(torch.float32)  # the same bytes, read as float32
            cases = [
                ("fused (loads_first)", lambda: variant("loads_first"), 2 * half),
                ("read_only", lambda: variant("read_only"), half),
                ("write_only", lambda: variant("write_only"), half),
                ("read_only then write_only", lambda: (variant("read_only"), variant("write_only")), 2 * half),
                ("torch.neg x -> grad_x", lambda: torch.neg(x, out=grad_x), 2 * half),
                ("grad_x.fill_(1.5)", lambda: grad_x.fill_(1.5), half),
                ("read_kernel over x, 8/SM", lambda: read_kernel[(read_programs,)](flat, read_partial, flat.numel(),
                                                                                  BLOCK=4096, num_warps=8), half),
            ]
            for name, fn, nbytes in cases:
                ms = common.bench(fn)
                line(f"04 bwd {rows}x{dim} {dtype}", best, name, f"{nbytes / MB:.0f} MB",
                     us_percent(ms, nbytes, ceiling))


def probe_backward_stages():
    """04 backward's first kernel (loads_first variant) with its loop software-pipelined: every tile, programs per
    SM and num_stages, against 04's kernel and torch.neg on the same bytes."""
    sms = common.multiprocessor_count(common.DEVICE)
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    kernel = weighted.backward_pointer_kernel
    for dtype in (torch.float32, torch.bfloat16):
        for rows, dim in ((65536, 1024), (16384, 4096), (1048576, 128)):
            x, w, grad_y = backward_inputs(rows, dim, dtype)
            grad_x = torch.empty_like(x)
            nbytes = 2 * x.numel() * x.element_size()
            case = f"04 bwd kernel {rows}x{dim} {dtype}"

            total = common.bench(lambda: weighted.backward(x, w, grad_y, "pointer", True, True))
            line(case, "04's backward()", us_percent(total, nbytes, ceiling), kernel.best_config)
            ms = common.bench(lambda: torch.neg(x, out=grad_x))
            line(case, "torch.neg, same bytes", us_percent(ms, nbytes, ceiling))
            results = []
            for config in weighted._prune_tiles(kernel.configs, {"D": dim}):
                tile, d_tile = config.kwargs["ROWS_TILE"], config.kwargs["D_TILE"]
                d_tiles = triton.cdiv(dim, d_tile)
                for per_sm in (1, 2, 4):
                    programs = max(1, min(triton.cdiv(per_sm * sms, d_tiles), triton.cdiv(rows, tile)))
                    partial = torch.empty(programs, dim, device=common.DEVICE)
                    for stages in (1, 2, 3, 4):
                        run = functools.partial(launch_variant, x, w, grad_y, grad_x, partial, (d_tiles, programs),
                                                config, stages)
                        try:
                            compiled = run("loads_first")
                        except triton.runtime.errors.OutOfResources:
                            continue
                        ms = common.bench(lambda: run("loads_first"))
                        where = (f"{tile}x{d_tile} {config.num_warps} warps, {per_sm}/SM ({programs} per D tile), "
                                 f"stages {stages}: {compiled.n_regs} registers, {compiled.metadata.shared} B shared")
                        results.append((ms, where, run))
            results.sort(key=lambda r: r[0])
            for ms, where, _ in results[:6]:
                line(case, "loads_first", where, us_percent(ms, nbytes, ceiling))
            best_unpipelined = next(r for r in results if "stages 1:" in r[1])
            line(case, "best with stages 1", best_unpipelined[1], us_percent(best_unpipelined[0], nbytes, ceiling))
            _, where, run = results[0]
            ms = common.bench(lambda: run("read_only"))
            line(case, "read_only, best config above", where, f"{ms * 1e3:.1f} us",
                 f"{100 * common.gbps(nbytes / 2, ms) / ceiling:.1f}% of the ceiling for its {nbytes / 2 / MB:.0f} MB")


def probe_backward_balance():
    """04 backward's first kernel (loads_first variant) with 1 to 64 programs per SM, alone and with 04's second pass;
    under Nsight Compute, one profiled launch of each shows how evenly the SMs were kept busy:
        ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum,sm__cycles_active.avg,\
            sm__cycles_active.max,sm__cycles_active.min python results/probes.py backward_balance
    """
    sms = common.multiprocessor_count(common.DEVICE)
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    for dtype, rows, dim in ((torch.float32, 1048576, 128), (torch.float32, 65536, 1024), (torch.bfloat16, 65536, 1024),
                             (torch.bfloat16, 1048576, 128)):
        x, w, grad_y = backward_inputs(rows, dim, dtype)
        grad_x = torch.empty_like(x)
        grad_w = torch.empty_like(w)
        nbytes = 2 * x.numel() * x.element_size()
        weighted.backward(x, w, grad_y, "pointer", True, True)
        best = weighted.backward_pointer_kernel.best_config
        configs = [best]
        if (best.kwargs["ROWS_TILE"], best.kwargs["D_TILE"], best.num_warps) != (32, 128, 4):
            configs.append(triton.Config({"ROWS_TILE": 32, "D_TILE": 128}, num_warps=4))
        for config in configs:
            d_tiles = triton.cdiv(dim, config.kwargs["D_TILE"])
            for per_sm in (1, 4, 16, 64):
                programs = max(1, min(triton.cdiv(per_sm * sms, d_tiles), triton.cdiv(rows, config.kwargs["ROWS_TILE"])))
                partial = torch.empty(programs, dim, device=common.DEVICE)
                run = functools.partial(launch_variant, x, w, grad_y, grad_x, partial, (d_tiles, programs), config, 1,
                                        "loads_first")
                alone = common.bench(run)
                both = common.bench(lambda: (run(), weighted.sum_partials(partial, grad_w)))
                line(f"04 bwd {rows}x{dim} {dtype}", f"{config.kwargs['ROWS_TILE']}x{config.kwargs['D_TILE']} "
                     f"{config.num_warps} warps, {per_sm}/SM ({programs} per D tile, {d_tiles * programs} in all)",
                     f"first kernel {us_percent(alone, nbytes, ceiling)}",
                     f"with the second pass {us_percent(both, nbytes, ceiling)}")
                torch.cuda.synchronize()
                torch.cuda.cudart().cudaProfilerStart()
                run()
                torch.cuda.synchronize()
                torch.cuda.cudart().cudaProfilerStop()


def probe_backward_configs():
    """04 backward's first kernel and the prefetch variant, every tile config and several program counts, graph-timed."""
    sms = common.multiprocessor_count(common.DEVICE)
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    kernel = weighted.backward_pointer_kernel
    for dtype, rows, dim in ((torch.float32, 65536, 1024), (torch.bfloat16, 65536, 1024), (torch.float32, 1048576, 128)):
        x, w, grad_y = backward_inputs(rows, dim, dtype)
        grad_x = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        align = weighted._alignment(dim, x.element_size())
        results = []
        for config in weighted._prune_tiles(kernel.configs, {"D": dim}):
            tile, d_tile = config.kwargs["ROWS_TILE"], config.kwargs["D_TILE"]
            d_tiles = triton.cdiv(dim, d_tile)
            for per_sm in (1, 2, 4, 8):
                programs = max(1, min(triton.cdiv(per_sm * sms, d_tiles), triton.cdiv(rows, tile)))
                partial = torch.empty(programs, dim, device=common.DEVICE)
                where = f"{tile}x{d_tile} {config.num_warps} warps, {per_sm}/SM in all ({programs} per D tile)"
                ms = common.bench(lambda: kernel.fn[(d_tiles, programs)](
                    x, w, grad_y, grad_x, partial, rows, dim, x.stride(0), x.stride(1), grad_y.stride(0),
                    X_ROW_ALIGN=align, D_ALIGN=align, NEED_GRAD_X=True, NEED_GRAD_W=True, ACC_DTYPE=tl.float32,
                    num_warps=config.num_warps, **config.kwargs))
                results.append((ms, f"04's kernel {where}"))
                ms = common.bench(lambda: backward_variant_kernel[(d_tiles, programs)](
                    x, w, grad_y, grad_x, partial, rows, dim, ORDER="prefetch", LOAD_EVICTION="", STORE_CACHE="",
                    num_warps=config.num_warps, **config.kwargs))
                results.append((ms, f"prefetch variant {where}"))
        for ms, what in sorted(results)[:8]:
            line(f"04 bwd kernel {rows}x{dim} {dtype}", what, us_percent(ms, nbytes, ceiling))
        line("   slowest", *(f"{what}: {ms * 1e3:.1f} us" for ms, what in sorted(results)[-2:]))


@triton.jit
def column_sum_order_kernel(
    x_ptr,  # pointer to x[0, 0]; (M, N), contiguous
    partial_ptr,  # pointer to a (programs, N) float32 buffer
    M, N,  # shape of x
    rows_per_split,  # rows of each chunk when not INTERLEAVED (a multiple of BLOCK_M)
    INTERLEAVED: tl.constexpr,  # program s takes row tiles s, s + programs, ... instead of one chunk
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,  # tile
    STAGES: tl.constexpr = 1,  # num_stages of the row loop: > 1 copies loads into shared memory ahead (cp.async)
):
    # 03's first pass on a tall matrix, two ways of handing out rows: 03's contiguous chunk per
    # program (the programs on the chip at one time read far-apart places), or interleaved row
    # tiles (they read one window of the matrix together, as a copy kernel's blocks do).
    pid_s = tl.program_id(1)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if INTERLEAVED:
        first, stop, step = pid_s * BLOCK_M, M, tl.num_programs(1) * BLOCK_M
    else:
        first, stop, step = pid_s * rows_per_split, tl.minimum(pid_s * rows_per_split + rows_per_split, M), BLOCK_M
    for row in tl.range(first, stop, step, num_stages=STAGES):
        rows = row + tl.arange(0, BLOCK_M)
        mask = (rows < stop)[:, None] & col_mask[None, :]
        acc += tl.load(x_ptr + rows.to(tl.int64)[:, None] * N + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(partial_ptr + pid_s.to(tl.int64) * N + cols, tl.sum(acc, axis=0), mask=col_mask)


SMALL_TILES = ((8, 128, 4), (16, 128, 4), (32, 128, 8), (8, 256, 4), (4, 512, 4), (2, 1024, 8))


def probe_backward_small_tiles():
    """04 backward with tiles of 8 to 16 elements a thread (04's list held 16 to 64 before NOTES item 26): fewer
    registers, so more programs resident per SM, closer to the warps torch.neg keeps busy. 04's first kernel plus its second pass, every
    bench shape, 4, 8 and 16 programs per SM, against 04's backward() and torch.neg on the same bytes."""
    sms = common.multiprocessor_count(common.DEVICE)
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    kernel = weighted.backward_pointer_kernel
    for dtype in (torch.float32, torch.bfloat16):
        for rows, dim in weighted.BENCH_SHAPES:
            x, w, grad_y = backward_inputs(rows, dim, dtype)
            grad_x = torch.empty_like(x)
            grad_w = torch.empty_like(w)
            nbytes = 2 * x.numel() * x.element_size()
            align = weighted._alignment(dim, x.element_size())
            case = f"04 bwd {rows}x{dim} {dtype}"
            total = common.bench(lambda: weighted.backward(x, w, grad_y, "pointer", True, True))
            line(case, "04's backward()", us_percent(total, nbytes, ceiling), kernel.best_config)
            line(case, "torch.neg, same bytes", us_percent(common.bench(lambda: torch.neg(x, out=grad_x)), nbytes, ceiling))
            results = []
            for tile, d_tile, warps in SMALL_TILES:
                width = triton.next_power_of_2(dim)
                if not min(width, 128) <= d_tile <= max(width, 32):  # the rule of 04's _prune_tiles
                    continue
                d_tiles = triton.cdiv(dim, d_tile)
                for per_sm in (4, 8, 16):
                    programs = max(1, min(triton.cdiv(per_sm * sms, d_tiles), triton.cdiv(rows, tile)))
                    partial = torch.empty(programs, dim, device=common.DEVICE)

                    def first(programs=programs, partial=partial, d_tiles=d_tiles, tile=tile, d_tile=d_tile, warps=warps):
                        return kernel.fn[(d_tiles, programs)](
                            x, w, grad_y, grad_x, partial, rows, dim, x.stride(0), x.stride(1), grad_y.stride(0),
                            X_ROW_ALIGN=align, D_ALIGN=align, NEED_GRAD_X=True, NEED_GRAD_W=True, ACC_DTYPE=tl.float32,
                            ROWS_TILE=tile, D_TILE=d_tile, num_warps=warps)

                    compiled = first()
                    alone = common.bench(first)
                    both = common.bench(lambda: (first(), weighted.sum_partials(partial, grad_w)))
                    results.append((both, alone, f"{tile}x{d_tile} {warps} warps, {compiled.n_regs} registers, "
                                                 f"{per_sm}/SM ({programs} per D tile)"))
            for both, alone, where in sorted(results)[:4]:
                line(case, where, f"first kernel {us_percent(alone, nbytes, ceiling)}",
                     f"with the second pass {us_percent(both, nbytes, ceiling)}")


def probe_second_pass():
    """04 backward's second pass (sum_partials_kernel) with other tiles: rows per step, columns per program, warps.
    Each alone, replayed with no L2 flush (the backward leaves the partial buffer in L2); the best one then behind
    04's first kernel, against 04's own second pass there."""
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    kernel = weighted.backward_pointer_kernel
    no_flush = flushes()["none"]
    for dtype, rows, dim in ((torch.float32, 1048576, 128), (torch.bfloat16, 1048576, 128), (torch.float32, 65536, 1024),
                             (torch.float32, 16384, 4096), (torch.float32, 65536, 1000)):
        x, w, grad_y = backward_inputs(rows, dim, dtype)
        grad_x = torch.empty_like(x)
        grad_w = torch.empty_like(w)
        weighted.backward(x, w, grad_y, "pointer", True, True)
        best = kernel.best_config
        programs = weighted.backward_programs(rows, dim)
        partial = torch.randn(programs, dim, device=common.DEVICE)
        align = weighted._alignment(dim, x.element_size())

        def first():
            kernel.fn[(triton.cdiv(dim, best.kwargs["D_TILE"]), programs)](
                x, w, grad_y, grad_x, partial, rows, dim, x.stride(0), x.stride(1), grad_y.stride(0),
                X_ROW_ALIGN=align, D_ALIGN=align, NEED_GRAD_X=True, NEED_GRAD_W=True, ACC_DTYPE=tl.float32,
                num_warps=best.num_warps, **best.kwargs)

        def second(block_p, block_d, warps):
            weighted.sum_partials_kernel[(triton.cdiv(dim, block_d),)](
                partial, grad_w, programs, dim, BLOCK_P=block_p, BLOCK_D=block_d, num_warps=warps)

        case = f"04 bwd {rows}x{dim} {dtype}, partial buffer {programs}x{dim}"
        ours = replay_ms(lambda: weighted.sum_partials(partial, grad_w), no_flush)
        line(case, f"04's second pass alone {ours * 1e3:.1f} us")
        results = []
        for block_p in (256, 512, 1024, 2048):
            for block_d in (1, 2, 4, 8, 16, 32):
                for warps in (4, 8):
                    if block_p * block_d > 64 * 32 * warps or block_p * block_d < 32 * warps:
                        continue  # over 64 or under 1 element a thread
                    ms = replay_ms(functools.partial(second, block_p, block_d, warps), no_flush)
                    results.append((ms, (block_p, block_d, warps)))
        results.sort()
        for ms, (block_p, block_d, warps) in results[:5]:
            line(case, f"{block_p} rows x {block_d} columns, {warps} warps: {triton.cdiv(dim, block_d)} programs, "
                       f"{triton.cdiv(programs, block_p)} steps", f"{ms * 1e3:.1f} us")
        fastest = functools.partial(second, *results[0][1])
        both_04 = common.bench(lambda: (first(), weighted.sum_partials(partial, grad_w)))
        both_fastest = common.bench(lambda: (first(), fastest()))
        line(case, f"first kernel + 04's second pass {both_04 * 1e3:.1f} us",
             f"first kernel + the fastest above {both_fastest * 1e3:.1f} us")


def probe_backward_copy():
    """04 backward on 1048576 x 128 against the same loop doing only torch.neg's work (ORDER "copy": load x, store
    -x), with 8 programs per SM walking many tiles and with one or two tiles per program: does the fused work or
    the loop's structure cost the gap to torch.neg?"""
    sms = common.multiprocessor_count(common.DEVICE)
    ceiling = common.copy_ceiling_gbps()
    rows, dim = 1048576, 128
    for dtype in (torch.float32, torch.bfloat16):
        x, w, grad_y = backward_inputs(rows, dim, dtype)
        grad_x = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        case = f"04 bwd {rows}x{dim} {dtype}"
        line(case, "torch.neg", us_percent(common.bench(lambda: torch.neg(x, out=grad_x)), nbytes, ceiling))
        for rows_tile, warps in ((8, 4), (16, 4), (128, 8)):
            config = triton.Config({"ROWS_TILE": rows_tile, "D_TILE": dim}, num_warps=warps)
            for programs in (8 * sms, min(triton.cdiv(rows, rows_tile), 65535)):  # a grid's axis 1 stops at 65535
                partial = torch.empty(programs, dim, device=common.DEVICE)
                times = [us_percent(common.bench(functools.partial(launch_variant, x, w, grad_y, grad_x, partial,
                                                                   (1, programs), config, 1, order)), nbytes, ceiling)
                         for order in ("copy", "loads_first")]
                line(case, f"{rows_tile}x{dim} {warps} warps, {programs} programs", f"copy {times[0]}",
                     f"fused first kernel {times[1]}")


def probe_backward_d1000():
    """04 backward() at D = 1000 against D = 1024, with x's rows 128-byte aligned or not: does the gap at D = 1000
    come from rows that start part-way into a cache line (1000 x 4 bytes = 31.25 lines), or from masked lanes?"""
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    rows = 65536
    for dtype in (torch.float32, torch.bfloat16):
        def padded(width, dim):
            return torch.randn(rows, width, dtype=dtype, device=common.DEVICE)[:, :dim]

        cases = [
            ("65536x1024 contiguous", padded(1024, 1024)),
            ("65536x1000 contiguous (rows 32 B off a line)", padded(1000, 1000)),
            ("65536x1000 in a 1024-wide buffer (rows on lines)", padded(1024, 1000)),
            ("65536x1024 in a 1032-wide buffer (rows 32 B off a line)", padded(1032, 1024)),
        ]
        for name, x in cases:
            dim = x.shape[1]
            w = torch.randn(dim, dtype=dtype, device=common.DEVICE)
            grad_y = torch.randn(rows, dtype=dtype, device=common.DEVICE)
            nbytes = 2 * x.numel() * x.element_size()
            ms = common.bench(lambda: weighted.backward(x, w, grad_y, "pointer", True, True))
            grad_x = torch.empty(rows, dim, dtype=dtype, device=common.DEVICE)
            neg = common.bench(lambda: torch.neg(x, out=grad_x))
            line(f"04 bwd {dtype}", name, f"backward() {us_percent(ms, nbytes, ceiling)}",
                 f"torch.neg x -> grad_x {us_percent(neg, nbytes, ceiling)}", weighted.backward_pointer_kernel.best_config)


def probe_backward_programs():
    """04 backward(): programs per SM and the second pass's tile height, on every bench shape."""
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    defaults = weighted.BACKWARD_PROGRAMS_PER_SM, weighted.SUM_PARTIALS_MAX_ROWS, weighted.SUM_PARTIALS_TILE
    for dtype in (torch.float32, torch.bfloat16):
        for rows, dim in weighted.BENCH_SHAPES:
            x, w, grad_y = backward_inputs(rows, dim, dtype)
            nbytes = 2 * x.numel() * x.element_size()
            parts = [f"04 bwd {rows}x{dim} {dtype}"]
            for per_sm in (4, 8):
                for max_rows, tile in ((128, 4096), (1024, 4096), (1024, 16384)):
                    weighted.BACKWARD_PROGRAMS_PER_SM, weighted.SUM_PARTIALS_MAX_ROWS, weighted.SUM_PARTIALS_TILE = (
                        per_sm, max_rows, tile)
                    ms = common.bench(lambda: weighted.backward(x, w, grad_y, "pointer", True, True))
                    parts.append(f"{per_sm}/SM, {max_rows} rows x {tile}: {ms * 1e3:.1f} us "
                                 f"({100 * common.gbps(nbytes, ms) / ceiling:.1f}%)")
            weighted.BACKWARD_PROGRAMS_PER_SM, weighted.SUM_PARTIALS_MAX_ROWS, weighted.SUM_PARTIALS_TILE = defaults
            line(*parts)


def probe_backward_per_sm():
    """04 backward() with 3 to 8 programs per SM (the second pass as 04 has it), on every bench shape; 4 (04's
    choice) is timed again last, to show the run-to-run spread."""
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    default = weighted.BACKWARD_PROGRAMS_PER_SM
    for dtype in (torch.float32, torch.bfloat16):
        for rows, dim in weighted.BENCH_SHAPES:
            x, w, grad_y = backward_inputs(rows, dim, dtype)
            nbytes = 2 * x.numel() * x.element_size()
            parts = [f"04 bwd {rows}x{dim} {dtype}"]
            for per_sm in (3, 4, 5, 6, 8, 4):
                weighted.BACKWARD_PROGRAMS_PER_SM = per_sm
                ms = common.bench(lambda: weighted.backward(x, w, grad_y, "pointer", True, True))
                parts.append(f"{per_sm}/SM {us_percent(ms, nbytes, ceiling)}")
            weighted.BACKWARD_PROGRAMS_PER_SM = default
            line(*parts, weighted.backward_pointer_kernel.best_config)


def probe_backward_bytes():
    """One launch each of 04's backward, its store-first, read-only and write-only variants and torch.neg, for Nsight
    Compute.

    Prints nothing useful alone: run under
        ncu --clock-control none --profile-from-start off --metrics dram__bytes_read.sum,... \
            python results/probes.py backward_bytes
    The profiler is on only around the launches (autotuning and warm-up stay out).
    """
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    for dtype, rows, dim in ((torch.float32, 65536, 1024), (torch.bfloat16, 65536, 1024), (torch.float32, 1048576, 128)):
        x, w, grad_y = backward_inputs(rows, dim, dtype)
        grad_x = torch.empty_like(x)
        weighted.backward(x, w, grad_y, "pointer", True, True)
        best = weighted.backward_pointer_kernel.best_config
        programs = weighted.backward_programs(rows, dim)
        grid = (triton.cdiv(dim, best.kwargs["D_TILE"]), programs)
        partial = torch.empty(programs, dim, device=common.DEVICE)

        def store_first():
            backward_variant_kernel[grid](x, w, grad_y, grad_x, partial, rows, dim, ORDER="store_first", LOAD_EVICTION="",
                                          STORE_CACHE="", num_warps=best.num_warps, **best.kwargs)

        half = functools.partial(launch_variant, x, w, grad_y, grad_x, partial, grid, best, 1)
        store_first()
        half("read_only")
        half("write_only")
        torch.neg(x, out=grad_x)
        torch.cuda.synchronize()
        line(f"profiling {rows}x{dim} {dtype}: backward (first kernel, sum_partials_kernel), store-first variant, "
             "read_only variant, write_only variant, torch.neg", best)
        torch.cuda.cudart().cudaProfilerStart()
        weighted.backward(x, w, grad_y, "pointer", True, True)
        store_first()
        half("read_only")
        half("write_only")
        torch.neg(x, out=grad_x)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()


def probe_column_sum():
    """03: the autotuner's ranking per shape and the split plan."""
    blocked = common.load_example(common.REPO_ROOT / "03_blocked_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    for dtype in (torch.float32, torch.bfloat16):
        for case in blocked.SWEEP[:4]:
            rows, cols = case["rows"], case["cols"]
            x = torch.randn(rows, cols, dtype=dtype, device=common.DEVICE)
            nbytes = x.numel() * x.element_size()
            ms = common.bench(lambda: blocked.blocked_sum(x))
            label = f"03 {rows}x{cols} {dtype}: {us_percent(ms, nbytes, ceiling)}"
            autotune_table(blocked.column_sum_pointer_kernel, label + f"; {blocked.plan_splits(rows, cols)[2]}")


def probe_column_order():
    """03 on 1048576 x 64: contiguous row chunks against interleaved row tiles, several tiles and counts."""
    sms = common.multiprocessor_count(common.DEVICE)
    blocked = common.load_example(common.REPO_ROOT / "03_blocked_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    rows, cols = 1048576, 64
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(rows, cols, dtype=dtype, device=common.DEVICE)
        nbytes = x.numel() * x.element_size()
        ms = common.bench(lambda: blocked.blocked_sum(x))
        line(f"03 {rows}x{cols} {dtype} blocked_sum", us_percent(ms, nbytes, ceiling),
             blocked.column_sum_pointer_kernel.best_config)
        results = []
        for block_m, block_n, warps in ((128, 64, 4), (256, 64, 8), (64, 64, 4), (256, 32, 4), (512, 64, 8)):
            for per_sm in (2, 4, 8, 16):
                programs = per_sm * sms
                rows_per_split = triton.cdiv(triton.cdiv(rows, programs), block_m) * block_m
                partial = torch.empty(programs, cols, device=common.DEVICE)
                for interleaved in (False, True):
                    grid = (triton.cdiv(cols, block_n), programs if interleaved else triton.cdiv(rows, rows_per_split))
                    ms = common.bench(lambda: column_sum_order_kernel[grid](
                        x, partial, rows, cols, rows_per_split, INTERLEAVED=interleaved,
                        BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps))
                    results.append((ms, f"{'interleaved' if interleaved else 'chunks'} {block_m}x{block_n} {warps} warps {per_sm}/SM"))
        for ms, what in sorted(results)[:10]:
            line("    first pass alone", what, us_percent(ms, nbytes, ceiling))
        best_chunks = min(r for r in results if r[1].startswith("chunks"))
        line("    best chunks", best_chunks[1], f"{best_chunks[0] * 1e3:.1f} us")


def probe_column_wide():
    """03's pointer kernel on 64 x 1048576 with tiles outside its autotuning list, against torch.sum(0)."""
    blocked = common.load_example(common.REPO_ROOT / "03_blocked_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    rows, cols = 64, 1048576
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(rows, cols, dtype=dtype, device=common.DEVICE)
        out = torch.empty(cols, dtype=dtype, device=common.DEVICE)
        nbytes = x.numel() * x.element_size()

        ms = common.bench(lambda: blocked.blocked_sum(x, out=out))
        line(f"03 {rows}x{cols} {dtype}", "blocked_sum", us_percent(ms, nbytes, ceiling),
             blocked.column_sum_pointer_kernel.best_config)
        ms = common.bench(lambda: torch.sum(x, dim=0, out=out))
        line(f"03 {rows}x{cols} {dtype}", "torch.sum(0)", us_percent(ms, nbytes, ceiling))
        results = []
        for block_m in (1, 2, 4, 8, 16, 32, 64):
            for block_n in (256, 512, 1024, 2048, 4096):
                for warps in (4, 8):
                    if block_m * block_n > 64 * warps * 32 or block_m * block_n < 4 * warps * 32:
                        continue  # over 64 or under 4 elements per thread
                    ms = common.bench(lambda: blocked.column_sum_pointer_kernel.fn[(triton.cdiv(cols, block_n), 1)](
                        x, out, rows, cols, x.stride(0), x.stride(1), rows, ACC_DTYPE=tl.float32,
                        BLOCK_M=block_m, BLOCK_N=block_n, STAGES=1, num_warps=warps))
                    results.append((ms, f"{block_m}x{block_n} {warps} warps"))
        for ms, what in sorted(results)[:8]:
            line(f"03 {rows}x{cols} {dtype}", what, us_percent(ms, nbytes, ceiling))


def probe_column_per_sm():
    """03's blocked_sum() with its row split planned for 4, 8 and 16 programs per SM (the autotuner retunes for
    each plan), on every bench shape; 4 (03's choice) timed again last for the run-to-run spread."""
    blocked = common.load_example(common.REPO_ROOT / "03_blocked_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    default = blocked.PROGRAMS_PER_SM
    for case in blocked.SWEEP:
        rows, cols, dtype = case["rows"], case["cols"], blocked.DTYPES[case["dtype"]]
        x = torch.randn(rows, cols, dtype=dtype, device=common.DEVICE)
        out = torch.empty(cols, dtype=dtype, device=common.DEVICE)
        nbytes = x.numel() * x.element_size()
        parts = [f"03 {rows}x{cols} {dtype}"]
        for per_sm in (4, 8, 16, 4):
            blocked.PROGRAMS_PER_SM = per_sm
            blocked._plan_splits.cache_clear()
            ms = common.bench(lambda: blocked.blocked_sum(x, out=out))
            splits = blocked.plan_splits(rows, cols)[0]
            parts.append(f"{per_sm}/SM ({splits} splits) {us_percent(ms, nbytes, ceiling)}")
        blocked.PROGRAMS_PER_SM = default
        blocked._plan_splits.cache_clear()
        line(*parts)


def read_ms(x):
    """Median ms of read_kernel streaming x's bytes (as float32 words) with 8 programs per SM: x's read floor."""
    flat = x.view(-1).view(torch.float32)
    programs = 8 * common.multiprocessor_count(common.DEVICE)
    partial = torch.empty(programs, device=common.DEVICE)
    return common.bench(lambda: read_kernel[(programs,)](flat, partial, flat.numel(), BLOCK=4096, num_warps=8))


def probe_column_tiles():
    """03's pointer kernel on its two 268 MB wide-ish shapes: every tile from tall and narrow (128 bytes of each row
    per program) to one row and wide (1 to 2 KB), each with 1 to 32 row splits and 03's second pass, against 03's
    blocked_sum() and a streaming read of the same bytes."""
    blocked = common.load_example(common.REPO_ROOT / "03_blocked_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    tiles = ((64, 64, 4), (32, 128, 4), (64, 128, 4), (16, 256, 4), (8, 256, 4), (8, 512, 8), (4, 512, 4),
             (2, 512, 4), (1, 512, 4), (4, 1024, 8), (1, 1024, 8))
    for dtype in (torch.float32, torch.bfloat16):
        for rows, cols in ((16384, 8192), (2048, 65536)):
            x = torch.randn(rows, cols, dtype=dtype, device=common.DEVICE)
            out = torch.empty(cols, dtype=dtype, device=common.DEVICE)
            nbytes = x.numel() * x.element_size()
            case = f"03 {rows}x{cols} {dtype}"
            ms = common.bench(lambda: blocked.blocked_sum(x, out=out))
            line(case, "blocked_sum()", us_percent(ms, nbytes, ceiling), blocked.plan_splits(rows, cols)[2],
                 blocked.column_sum_pointer_kernel.best_config)
            line(case, "read_kernel, same bytes", us_percent(read_ms(x), nbytes, ceiling))
            results = []
            for block_m, block_n, warps in tiles:
                plans = {triton.cdiv(triton.cdiv(rows, wanted), blocked.ROW_ALIGN) * blocked.ROW_ALIGN
                         for wanted in (1, 2, 4, 8, 16, 32)}  # chunks start on ROW_ALIGN rows, as in 03
                for rows_per_split in sorted(plans, reverse=True):
                    splits = triton.cdiv(rows, rows_per_split)
                    target = out if splits == 1 else torch.empty(splits, cols, device=common.DEVICE)
                    block_s = min(triton.next_power_of_2(splits), 256)
                    block_n_sum = max(16, min(256, 4096 // block_s))

                    def run(target=target, splits=splits, rows_per_split=rows_per_split, block_m=block_m,
                            block_n=block_n, warps=warps, block_s=block_s, block_n_sum=block_n_sum):
                        blocked.column_sum_pointer_kernel.fn[(triton.cdiv(cols, block_n), splits)](
                            x, target, rows, cols, x.stride(0), x.stride(1), rows_per_split, ACC_DTYPE=tl.float32,
                            BLOCK_M=block_m, BLOCK_N=block_n, STAGES=1, num_warps=warps)
                        if splits > 1:
                            blocked.sum_partials_kernel[(triton.cdiv(cols, block_n_sum),)](
                                target, out, splits, cols, BLOCK_S=block_s, BLOCK_N=block_n_sum)

                    programs = triton.cdiv(cols, block_n) * splits
                    results.append((common.bench(run), f"{block_m}x{block_n} {warps} warps, {splits} splits ({programs} programs)"))
            for ms, what in sorted(results)[:6]:
                line(case, what, us_percent(ms, nbytes, ceiling))


def probe_column_stages():
    """03 on its two widest shapes: the first pass alone and the second pass's share, then the first pass with its row
    loop pipelined through shared memory (tl.range num_stages 1 to 4, cp.async), against a streaming read."""
    blocked = common.load_example(common.REPO_ROOT / "03_blocked_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    kernel = blocked.column_sum_pointer_kernel
    for dtype in (torch.float32, torch.bfloat16):
        for rows, cols in ((16384, 8192), (2048, 65536)):
            x = torch.randn(rows, cols, dtype=dtype, device=common.DEVICE)
            out = torch.empty(cols, dtype=dtype, device=common.DEVICE)
            nbytes = x.numel() * x.element_size()
            case = f"03 {rows}x{cols} {dtype}"
            whole = common.bench(lambda: blocked.blocked_sum(x, out=out))
            splits, rows_per_split, _ = blocked.plan_splits(rows, cols)
            best = kernel.best_config
            partial = torch.empty(splits, cols, device=common.DEVICE)
            alone = common.bench(lambda: kernel.fn[(triton.cdiv(cols, best.kwargs["BLOCK_N"]), splits)](
                x, partial, rows, cols, x.stride(0), x.stride(1), rows_per_split, ACC_DTYPE=tl.float32,
                num_warps=best.num_warps, **best.kwargs))
            read = read_ms(x)
            line(case, f"blocked_sum() {us_percent(whole, nbytes, ceiling)}", f"its first pass alone {alone * 1e3:.1f} us",
                 f"{splits} splits", best, f"read_kernel, same bytes {us_percent(read, nbytes, ceiling)}")
            block_s = min(triton.next_power_of_2(splits), 256)
            block_n_sum = max(16, min(256, 4096 // block_s))
            results = []
            for block_m, block_n, warps in ((64, 64, 4), (32, 128, 4), (64, 128, 4), (8, 256, 4), (1, 512, 4)):
                for stages in (1, 2, 3, 4):
                    def run(block_m=block_m, block_n=block_n, warps=warps, stages=stages):
                        column_sum_order_kernel[(triton.cdiv(cols, block_n), splits)](
                            x, partial, rows, cols, rows_per_split, INTERLEAVED=False, BLOCK_M=block_m, BLOCK_N=block_n,
                            STAGES=stages, num_warps=warps)
                        if splits > 1:
                            blocked.sum_partials_kernel[(triton.cdiv(cols, block_n_sum),)](
                                partial, out, splits, cols, BLOCK_S=block_s, BLOCK_N=block_n_sum)

                    try:
                        run()
                    except triton.runtime.errors.OutOfResources:
                        continue
                    results.append((common.bench(run), f"{block_m}x{block_n} {warps} warps, stages {stages}"))
            for ms, what in sorted(results)[:6]:
                line(case, what, us_percent(ms, nbytes, ceiling))
            line(case, "stages 1, best", *next((what, us_percent(ms, nbytes, ceiling)) for ms, what in sorted(results)
                                               if what.endswith("stages 1")))


def probe_backward_stages_small():
    """04 backward on 1048576 x 128 with item 26's small tiles at 8 programs per SM, its loop pipelined through shared
    memory (num_stages 1 to 4), with 04's second pass, against 04's backward() and torch.neg."""
    sms = common.multiprocessor_count(common.DEVICE)
    weighted = common.load_example(common.REPO_ROOT / "04_weighted_sum" / "main.py")
    ceiling = common.copy_ceiling_gbps()
    rows, dim = 1048576, 128
    for dtype in (torch.float32, torch.bfloat16):
        x, w, grad_y = backward_inputs(rows, dim, dtype)
        grad_x = torch.empty_like(x)
        grad_w = torch.empty_like(w)
        nbytes = 2 * x.numel() * x.element_size()
        case = f"04 bwd {rows}x{dim} {dtype}"
        line(case, "04's backward()", us_percent(common.bench(lambda: weighted.backward(x, w, grad_y, "pointer", True, True)),
                                                 nbytes, ceiling), weighted.backward_pointer_kernel.best_config)
        line(case, "torch.neg, same bytes", us_percent(common.bench(lambda: torch.neg(x, out=grad_x)), nbytes, ceiling))
        programs = 8 * sms
        partial = torch.empty(programs, dim, device=common.DEVICE)
        for rows_tile in (8, 16):
            config = triton.Config({"ROWS_TILE": rows_tile, "D_TILE": 128}, num_warps=4)
            for stages in (1, 2, 3, 4):
                run = functools.partial(launch_variant, x, w, grad_y, grad_x, partial, (1, programs), config, stages,
                                        "loads_first")
                compiled = run()
                both = common.bench(lambda: (run(), weighted.sum_partials(partial, grad_w)))
                line(case, f"{rows_tile}x128 4 warps, 8/SM, stages {stages}: {compiled.n_regs} registers, "
                           f"{compiled.metadata.shared} B shared", f"with the second pass {us_percent(both, nbytes, ceiling)}")


def clock_and_power(fn, replays=3000):
    """Replay fn()'s graph many times and ask nvidia-smi for the SM clock, board power and temperature meanwhile."""
    graph = common.capture_graph(fn)
    for _ in range(replays):
        graph.replay()
    time.sleep(0.1)  # the GPU is busy for several hundred ms more
    sample = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    torch.cuda.synchronize()
    return sample


def probe_matmul_data():
    """02 at 4096^3: does the data set the speed? float16 and bfloat16 inputs from randn, and float16 inputs holding
    bfloat16-rounded values (the same kernel as float16, 3 fewer mantissa bits that can toggle), timed for
    torch.matmul and 02's matmul in three interleaved rounds, with the SM clock and power under each."""
    tiled = common.load_example(common.REPO_ROOT / "02_matmul_tiled" / "main.py")
    n = 4096
    flops = 2 * n**3

    def inputs(kind):
        a, b = (torch.randn(n, n, device=common.DEVICE) for _ in range(2))
        if kind == "float16":
            return a.half(), b.half()
        if kind == "bfloat16":
            return a.bfloat16(), b.bfloat16()
        return a.bfloat16().half(), b.bfloat16().half()

    for repeat in range(3):
        for kind in ("float16", "bfloat16", "float16 holding bfloat16 values"):
            a, b = inputs(kind)
            c = torch.empty(n, n, dtype=a.dtype, device=common.DEVICE)
            times = {}
            for name, fn in (("torch.matmul", lambda: torch.matmul(a, b, out=c)), ("02 matmul", lambda: tiled.matmul(a, b, out=c))):
                times[name] = common.bench(fn)
                line(f"round {repeat + 1}", f"{n}^3 {kind}", name, f"{times[name] * 1e3:.1f} us",
                     f"{flops / times[name] / 1e9:.0f} TFLOP/s", f"under load: {clock_and_power(fn)}")
            line(f"round {repeat + 1}", f"{n}^3 {kind}", f"x torch {times['torch.matmul'] / times['02 matmul']:.3f}")


def probe_matmul_settling():
    """02 at 4096^3 float16 from an idle GPU: torch.matmul and 02's matmul timed in turn for about 40 s, with the SM
    clock and power under each: how long until the ratio stops moving?"""
    tiled = common.load_example(common.REPO_ROOT / "02_matmul_tiled" / "main.py")
    n = 4096
    a, b = (torch.randn(n, n, device=common.DEVICE).half() for _ in range(2))
    c = torch.empty(n, n, dtype=a.dtype, device=common.DEVICE)
    tiled.matmul(a, b, out=c)  # autotune before the idle spell
    torch.cuda.synchronize()
    time.sleep(20)
    start = time.perf_counter()
    while time.perf_counter() - start < 40:
        elapsed = time.perf_counter() - start
        torch_ms = common.bench(lambda: torch.matmul(a, b, out=c))
        ours_ms = common.bench(lambda: tiled.matmul(a, b, out=c))
        line(f"{elapsed:5.1f} s", f"torch {2 * n**3 / torch_ms / 1e9:.0f} TFLOP/s", f"02 {2 * n**3 / ours_ms / 1e9:.0f} TFLOP/s",
             f"x torch {torch_ms / ours_ms:.3f}", f"02 under load: {clock_and_power(lambda: tiled.matmul(a, b, out=c), 1000)}")


PROBES = {"ceiling": probe_ceiling, "flush": probe_flush, "forward": probe_forward, "persistent": probe_persistent,
          "backward": probe_backward, "backward_configs": probe_backward_configs, "backward_split": probe_backward_split,
          "backward_stages": probe_backward_stages, "backward_balance": probe_backward_balance,
          "backward_programs": probe_backward_programs, "backward_per_sm": probe_backward_per_sm,
          "backward_small_tiles": probe_backward_small_tiles, "backward_d1000": probe_backward_d1000,
          "second_pass": probe_second_pass, "backward_copy": probe_backward_copy,
          "backward_bytes": probe_backward_bytes, "column_sum": probe_column_sum, "column_order": probe_column_order,
          "column_wide": probe_column_wide, "column_per_sm": probe_column_per_sm,
          "column_tiles": probe_column_tiles,
          "column_stages": probe_column_stages, "backward_stages_small": probe_backward_stages_small, "matmul_data": probe_matmul_data,
          "matmul_settling": probe_matmul_settling}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("probes", nargs="*", metavar="PROBE", help=f"any of {', '.join(PROBES)} (default: all)")
    args = parser.parse_args(argv)
    if unknown := set(args.probes) - set(PROBES):
        parser.error(f"unknown probe(s) {', '.join(sorted(unknown))}; choose from {', '.join(PROBES)}")
    if common.INTERPRETED:
        print("these probes measure a GPU; there is none here")
        return 0
    print(common.describe_run(), flush=True)
    for name in args.probes or PROBES:
        print(f"\n## {name}", flush=True)
        PROBES[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
