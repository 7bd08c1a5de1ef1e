"""Probe: persistent and warp-specialized TMA matmuls against cuBLAS, for 02_matmul_tiled.

Run on the GPU machine:
    python results/probe_matmul.py            (4096^3 and 8192^3; fp16, bf16, fp32 under TF32)
    python results/probe_matmul.py --quick    (4096^3 only)
    python results/probe_matmul.py --selftest (tiny-size correctness of every candidate, no timing)
Without a GPU (Triton's interpreter) it runs only the tiny self-test and says so.

Each line: case | candidate | ms | TFLOP/s | x torch (torch's time / ours) | max relative error
against a float64 product of the same inputs (max |C - ref| / max |ref|), torch's own error for
scale, and the compiled kernel's registers, spills, shared memory and whether it used wgmma and
warp specialization. Configs are launched explicitly (no autotuner) so each one gets a line.

Candidates (see CANDIDATES_16BIT and CANDIDATES_TF32):
- tiled:   one program per C tile in grouped order, tensor descriptors made in the kernel: the
           shape of 02's "descriptor" kernel, as the baseline.
- persist: a persistent kernel after Triton's tutorial 09-persistent-matmul.py: as many programs
           as SMs, each walking tiles start, start + NUM_SMS, ... in grouped order with
           tl.range(..., flatten=True), so the compiler fuses the tile loop and the K loop into
           one software pipeline (the next tile's loads start during this tile's last MMAs).
           Optional EPILOGUE_SUBTILE stores C in two halves to free shared memory for stages.
- ws:      the same with tl.range(..., warp_specialize=True) (producer/consumer warp groups);
           launched in a child process with a timeout, after everything else, so that a hang or
           a broken CUDA context cannot cost the other results.
- swapAB:  for TF32 with a row-major B: accumulate C's tile transposed as B^T A^T, so that B's
           tile becomes wgmma's A operand, read from shared memory into registers (where any
           layout is allowed) and A's K-contiguous tile the K-major shared operand (_k_step).
- "B K-major" ("bKN" in names: B given as an (N, K) tensor bt, C = a @ bt.T): TF32 wgmma reads
  both operands from shared memory K-major only, so a row-major (K, N) B makes the compiler
  take a slower path. Timed on a pre-transposed B, and with the transpose included (torch's
  bt.copy_(b.T), or a Triton tiled transpose kernel).
Not a lesson and not part of `make test`: a maintainer's instrument for results/NOTES.md.
"""

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (switches on the interpreter without a GPU, before any kernel is defined)

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# ----------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------

INTERPRETED = tl.constexpr(common.INTERPRETED)
# 02's helpers, so that the candidates walk tiles and multiply exactly as the lesson does:
# tile_dot (tl.dot, bfloat16 widened under the interpreter) and grouped_tile (grouped order).
LESSON = common.load_example(common.REPO_ROOT / "02_matmul_tiled" / "main.py")
tile_dot = LESSON.tile_dot
grouped_tile = LESSON.grouped_tile


@triton.jit
def _load_b(b_desc, offs_k, offs_bn, B_KMAJOR: tl.constexpr):
    """The (BLOCK_K, BLOCK_N) tile of B: straight from a (K, N) B, or transposed from an (N, K) one."""
    if B_KMAJOR:
        b = b_desc.load([offs_bn, offs_k]).T
    else:
        b = b_desc.load([offs_k, offs_bn])
    return b


@triton.jit
def _via_registers(x, ROUND_TF32: tl.constexpr):
    """x, through an operation the compiler cannot see through (on a GPU).

    On Hopper, Triton (AccelerateMatmul) gives wgmma's A operand from registers only when it does
    not come straight from a load; otherwise both operands go to shared memory, and a TF32
    operand that is not K-major there is copied into a K-major buffer (shared -> registers ->
    shared) at every K step. Rounding to TF32 in PTX (cvt.rna.tf32.f32, what the tensor cores
    would do anyway) is such an operation. The interpreter has no inline PTX: identity there.
    """
    if ROUND_TF32 and not INTERPRETED:
        x = tl.inline_asm_elementwise(
            "cvt.rna.tf32.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1
        )
    return x


@triton.jit
def _k_step(a_desc, b_desc, offs_am, offs_bn, offs_k, acc,
            B_KMAJOR: tl.constexpr, SWAP_AB: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """acc += the product of one BLOCK_K slice. With SWAP_AB, acc holds C's tile transposed
    (BLOCK_N, BLOCK_M) and is computed as B^T A^T: B's tile, N-contiguous in shared memory, is
    read into registers as wgmma's A operand (registers take any layout) and A's tile, which is
    K-contiguous, serves as the K-major B operand. No shared -> shared copy per step."""
    a = a_desc.load([offs_am, offs_k])
    b = _load_b(b_desc, offs_k, offs_bn, B_KMAJOR)
    if SWAP_AB:
        acc = tile_dot(_via_registers(b.T, INPUT_PRECISION == "tf32"), a.T, acc, INPUT_PRECISION)
    else:
        acc = tile_dot(a, b, acc, INPUT_PRECISION)
    return acc


@triton.jit
def tiled_kernel(
    a_ptr,  # A (M, K), contiguous
    b_ptr,  # B (K, N) contiguous, or with B_KMAJOR its transpose bt (N, K) contiguous
    c_ptr,  # C (M, N), contiguous
    M, N, K,
    B_KMAJOR: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    SWAP_AB: tl.constexpr,  # accumulate C's tile transposed as B^T A^T (see _k_step)
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    if B_KMAJOR:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    offs_am = pid_m * BLOCK_M
    offs_bn = pid_n * BLOCK_N
    if SWAP_AB:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BLOCK_K)):
        acc = _k_step(a_desc, b_desc, offs_am, offs_bn, ki * BLOCK_K, acc, B_KMAJOR, SWAP_AB, INPUT_PRECISION)
    if SWAP_AB:
        c_desc.store([offs_am, offs_bn], acc.T.to(c_desc.dtype))
    else:
        c_desc.store([offs_am, offs_bn], acc.to(c_desc.dtype))


@triton.jit
def persistent_kernel(
    a_ptr,  # A (M, K), contiguous
    b_ptr,  # B (K, N) contiguous, or with B_KMAJOR its transpose bt (N, K) contiguous
    c_ptr,  # C (M, N), contiguous
    M, N, K,
    B_KMAJOR: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr,  # programs launched (the grid), the stride of the tile loop
    EPILOGUE_SUBTILE: tl.constexpr,  # store C in two (BLOCK_M, BLOCK_N / 2) halves
    FLATTEN: tl.constexpr,  # tl.range(flatten=...): fuse tile loop and K loop into one pipeline
    WARP_SPECIALIZE: tl.constexpr,  # tl.range(warp_specialize=...)
    SWAP_AB: tl.constexpr,  # accumulate C's tile transposed as B^T A^T (see _k_step)
):
    start_pid = tl.program_id(0)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    if B_KMAJOR:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    if EPILOGUE_SUBTILE:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N // 2])
    else:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    # As the tutorial: a second tile counter for the epilogue, so that the pipeliner does not
    # see one value used both in the prologue (next tile's loads) and the epilogue.
    tile_id_c = start_pid - NUM_SMS
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = grouped_tile(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        offs_am = pid_m * BLOCK_M
        offs_bn = pid_n * BLOCK_N
        if SWAP_AB:
            acc_t = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
            for ki in range(k_tiles):
                acc_t = _k_step(a_desc, b_desc, offs_am, offs_bn, ki * BLOCK_K, acc_t, B_KMAJOR, SWAP_AB,
                                INPUT_PRECISION)
            acc = acc_t.T
        else:
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for ki in range(k_tiles):
                acc = _k_step(a_desc, b_desc, offs_am, offs_bn, ki * BLOCK_K, acc, B_KMAJOR, SWAP_AB,
                              INPUT_PRECISION)
        tile_id_c += NUM_SMS
        pid_m, pid_n = grouped_tile(tile_id_c, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        offs_cm = pid_m * BLOCK_M
        offs_cn = pid_n * BLOCK_N
        if EPILOGUE_SUBTILE:
            acc3 = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(acc3)
            c_desc.store([offs_cm, offs_cn], acc0.to(c_desc.dtype))
            c_desc.store([offs_cm, offs_cn + BLOCK_N // 2], acc1.to(c_desc.dtype))
        else:
            c_desc.store([offs_cm, offs_cn], acc.to(c_desc.dtype))


@triton.jit
def transpose_kernel(
    src_ptr,  # (R, C), contiguous
    dst_ptr,  # (C, R), contiguous: dst[j, i] = src[i, j]
    R, C,
    BLOCK: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    tile = tl.load(
        src_ptr + rows.to(tl.int64)[:, None] * C + cols[None, :],
        mask=(rows[:, None] < R) & (cols[None, :] < C),
    )
    tl.store(
        dst_ptr + cols.to(tl.int64)[:, None] * R + rows[None, :],
        tl.trans(tile),
        mask=(cols[:, None] < C) & (rows[None, :] < R),
    )


# ----------------------------------------------------------------------------------------------
# Candidates
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    kernel: str  # "tiled" or "persist"
    bm: int
    bn: int
    bk: int
    stages: int
    warps: int
    group: int = 8
    b_kmajor: bool = False  # B supplied as bt (N, K)
    subtile: bool = False
    flatten: bool = True
    ws: bool = False
    transpose: str = ""  # with b_kmajor: "" pre-transposed; "torch" or "triton": transpose timed too
    swap: bool = False  # SWAP_AB: C^T = B^T A^T with B's tile as wgmma's register operand

    @property
    def name(self):
        kind = "ws" if self.ws else self.kernel
        parts = [kind, f"{self.bm}x{self.bn}x{self.bk}", f"s{self.stages}", f"w{self.warps}"]
        if self.kernel == "persist":
            parts.append("flat" if self.flatten else "noflat")
            if self.subtile:
                parts.append("sub")
        if self.swap:
            parts.append("swapAB")
        if self.b_kmajor:
            parts.append("bKN" + (f"+{self.transpose}T" if self.transpose else ""))
        return " ".join(parts)


P = Candidate
# 16-bit: B row-major (K, N), the a @ b that 02 measures; wgmma takes a 16-bit B N-major as is.
# Compiled offline for sm_90 with triton 3.6 (triton.compile, GPUTarget("cuda", 90, 32)): all
# fit in shared memory (227 KiB) without spills. Warp specialization took effect on Hopper only
# with num_warps=4 and flatten=False (the kernel then has 12 warps: one producer and two
# consumer warp groups); with num_warps=8 or flatten=True it was silently dropped, and
# EPILOGUE_SUBTILE made the Hopper WS pass abort (WSDataPartition.cpp: "unsupported op type").
CANDIDATES_16BIT = [
    P("tiled", 128, 256, 64, 3, 8),  # 02's descriptor kernel at its usual best config
    P("persist", 128, 256, 64, 3, 8),  # the tutorial's shape
    P("persist", 128, 256, 64, 4, 8, subtile=True),  # 4 stages fit only with the C tile halved
    P("persist", 128, 256, 64, 3, 8, flatten=False),
    P("persist", 256, 128, 64, 3, 8),
    P("persist", 128, 128, 64, 4, 8),
    P("persist", 128, 128, 64, 4, 4),
    P("persist", 128, 256, 64, 3, 8, b_kmajor=True),  # for scale: does a K-major B matter in 16 bits?
    # Warp-specialized: in a child process, last (see main).
    P("persist", 128, 256, 64, 3, 4, ws=True, flatten=False),
    P("persist", 256, 128, 64, 3, 4, ws=True, flatten=False),
    P("persist", 128, 128, 64, 5, 4, ws=True, flatten=False),
]
# float32 under TF32. Offline sm_90 compiles: with a row-major B, Triton 3.6 copies each B tile
# shared -> registers -> a K-major shared buffer at every K step (TF32 wgmma reads shared
# operands K-major only); swapAB avoids that copy (wgmma with A in registers). A float32 C tile of
# 128 x 256 takes 128 KiB of shared memory in the epilogue: several configs halve it (subtile),
# and 128x256x32 s3 tiled (240-272 KiB) would not launch, so the tiled baselines are smaller.
KM = {"b_kmajor": True}
CANDIDATES_TF32 = [
    P("tiled", 128, 128, 32, 4, 8),  # baseline: 02's descriptor kernel shape, row-major B
    P("tiled", 256, 128, 32, 3, 8, swap=True),
    P("tiled", 256, 128, 32, 4, 8, swap=True),
    P("persist", 256, 128, 32, 3, 8, subtile=True, swap=True),
    P("tiled", 128, 128, 32, 4, 8, **KM),  # near the earlier 257-273 TFLOP/s run
    P("persist", 128, 256, 32, 3, 8, subtile=True, **KM),
    P("persist", 128, 128, 32, 4, 8, **KM),
    P("persist", 128, 256, 32, 3, 8, subtile=True, transpose="torch", **KM),
    P("persist", 128, 256, 32, 3, 8, subtile=True, transpose="triton", **KM),
    P("persist", 128, 128, 32, 5, 4, ws=True, flatten=False, **KM),
    P("persist", 128, 128, 32, 4, 4, ws=True, flatten=False, swap=True),
    P("persist", 256, 128, 32, 2, 4, ws=True, flatten=False, swap=True),
]
del P, KM

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
SHORT = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "tf32"}


def candidates_for(dtype):
    return CANDIDATES_TF32 if dtype == torch.float32 else CANDIDATES_16BIT


def num_sms():
    if common.INTERPRETED:
        return 3  # a few programs, so that each walks several tiles
    return common.multiprocessor_count(common.DEVICE)


def input_precision(dtype):
    return "tf32" if dtype == torch.float32 else "ieee"


TRANSPOSE_BLOCK = 64


def launcher(cand, a, b, c):
    """A no-argument function that computes c = a @ b with this candidate; b is (K, N).

    With cand.b_kmajor and no cand.transpose, bt = b.T.contiguous() is made here, outside what
    is timed; with a transpose, the function fills bt itself each call.
    """
    (m, k), n = a.shape, b.shape[1]
    args = {"B_KMAJOR": cand.b_kmajor, "INPUT_PRECISION": input_precision(a.dtype), "BLOCK_M": cand.bm,
            "BLOCK_N": cand.bn, "BLOCK_K": cand.bk, "GROUP_M": cand.group, "SWAP_AB": cand.swap,
            "num_warps": cand.warps, "num_stages": cand.stages}
    b_arg = b.T.contiguous() if cand.b_kmajor else b
    tiles = triton.cdiv(m, cand.bm) * triton.cdiv(n, cand.bn)
    if cand.kernel == "tiled":
        def launch():
            common.set_descriptor_allocator()
            return tiled_kernel[(tiles,)](a, b_arg, c, m, n, k, **args)
    else:
        sms = num_sms()
        grid = (min(sms, tiles),)
        args.update(NUM_SMS=grid[0], EPILOGUE_SUBTILE=cand.subtile, FLATTEN=cand.flatten, WARP_SPECIALIZE=cand.ws)

        def launch():
            common.set_descriptor_allocator()
            return persistent_kernel[grid](a, b_arg, c, m, n, k, **args)
    if cand.transpose == "torch":
        def run():
            b_arg.copy_(b.T)
            return launch()
        return run
    if cand.transpose == "triton":
        tgrid = (triton.cdiv(k, TRANSPOSE_BLOCK), triton.cdiv(n, TRANSPOSE_BLOCK))

        def run():
            transpose_kernel[tgrid](b, b_arg, k, n, BLOCK=TRANSPOSE_BLOCK, num_warps=4)
            return launch()
        return run
    return launch


def describe_compiled(compiled):
    """Registers, spills, shared memory, and whether wgmma / warp specialization made it in."""
    if compiled is None or common.INTERPRETED:
        return ""
    parts = []
    try:
        parts.append(f"regs {compiled.n_regs} spills {compiled.n_spills}")
        parts.append(f"smem {compiled.metadata.shared // 1024} KiB")
        ptx = compiled.asm.get("ptx", "")
        ttgir = compiled.asm.get("ttgir", "")
        parts.append("wgmma" if "wgmma.mma_async" in ptx else ("mma.sync" if "mma.sync" in ptx else "no-mma"))
        if re.search(r"wgmma\.mma_async\S*\s+\{[^}]*\},\s*\{", ptx):
            parts.append("A in registers")
        if "ttg.warp_specialize" in ttgir or "setmaxnreg" in ptx:
            parts.append("WS")
    except Exception as exc:  # diagnostics only
        parts.append(f"(no kernel info: {type(exc).__name__})")
    return ", ".join(parts)


def relative_error(out, ref):
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


def short_error(exc):
    lines = [line for line in str(exc).strip().splitlines() if line.strip()] or [type(exc).__name__]
    head = lines[0][:200]
    tail = lines[-1][:200] if len(lines) > 1 else ""
    return f"{type(exc).__name__}: {head}" + (f" ... {tail}" if tail and tail != head else "")


# ----------------------------------------------------------------------------------------------
# Self-test: tiny sizes with edge tiles (M, N, K not multiples of the tiles), any device
# ----------------------------------------------------------------------------------------------


def selftest(include_ws=True):
    m, n, k = 192, 320, 160  # multiples of 16 bytes as descriptors need; not of the tiles
    failures = 0
    for dtype in DTYPES.values():
        torch.manual_seed(0)
        a = torch.randn(m, k, device=common.DEVICE).to(dtype)
        b = torch.randn(k, n, device=common.DEVICE).to(dtype)
        ref = a.double() @ b.double()
        for cand in candidates_for(dtype):
            if cand.ws and not include_ws:
                continue
            c = torch.full((m, n), float("nan"), dtype=dtype, device=common.DEVICE)
            try:
                launcher(cand, a, b, c)()
                if not common.INTERPRETED:
                    torch.cuda.synchronize()
                err = relative_error(c, ref)
                ok = err <= 1e-2
                status = f"err {err:.2e} {'ok' if ok else 'WRONG'}"
            except Exception as exc:
                ok = False
                status = f"FAILED {short_error(exc)}"
            failures += not ok
            print(f"selftest {m}x{n}x{k} {SHORT[dtype]} | {cand.name:<40} | {status}", flush=True)
    print(f"selftest: {failures} failure(s)", flush=True)
    return failures


# ----------------------------------------------------------------------------------------------
# Benchmark
# ----------------------------------------------------------------------------------------------

BEST = {}  # case -> (tflops, candidate name)


def bench_case(size, dtype, ws_phase):
    """Time torch and every candidate of this phase (WS or not) on fresh size^3 inputs."""
    case = f"{size}^3 {SHORT[dtype]}"
    torch.manual_seed(size)
    a = torch.randn(size, size, device=common.DEVICE).to(dtype)
    b = torch.randn(size, size, device=common.DEVICE).to(dtype)
    ref = a.double() @ b.double()
    flops = 2 * size**3
    torch_ms = common.bench(lambda: torch.matmul(a, b))
    torch_err = relative_error(torch.matmul(a, b), ref)
    if not ws_phase:
        rate = common.tflops(flops, torch_ms)
        print(f"{case} | {'torch.matmul a @ b':<40} | {torch_ms:7.4f} ms | {rate:6.1f} TFLOP/s "
              f"| 1.000 x torch | err {torch_err:.2e}", flush=True)
        if dtype == torch.float32:
            bt = b.T.contiguous()
            ms = common.bench(lambda: torch.matmul(a, bt.T))
            print(f"{case} | {'torch.matmul a @ bt.T':<40} | {ms:7.4f} ms | {common.tflops(flops, ms):6.1f} TFLOP/s "
                  f"| {torch_ms / ms:.3f} x torch |", flush=True)
            tb = torch.empty_like(bt)
            for label, fn in (
                ("torch bt.copy_(b.T) alone", lambda: tb.copy_(b.T)),
                ("triton transpose alone", lambda: transpose_kernel[
                    (triton.cdiv(size, TRANSPOSE_BLOCK), triton.cdiv(size, TRANSPOSE_BLOCK))
                ](b, tb, size, size, BLOCK=TRANSPOSE_BLOCK, num_warps=4)),
            ):
                try:
                    ms = common.bench(fn)
                    gbs = common.gbps(2 * b.numel() * b.element_size(), ms)
                    print(f"{case} | {label:<40} | {ms:7.4f} ms | {gbs:6.0f} GB/s", flush=True)
                except Exception as exc:
                    print(f"{case} | {label:<40} | FAILED {short_error(exc)}", flush=True)
            del bt, tb
    for cand in candidates_for(dtype):
        if cand.ws != ws_phase:
            continue
        c = torch.empty(size, size, dtype=dtype, device=common.DEVICE)
        try:
            fn = launcher(cand, a, b, c)
            start = time.perf_counter()
            compiled = fn()
            torch.cuda.synchronize()
            first_s = time.perf_counter() - start
            ms = common.bench(fn)
            c.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            err = relative_error(c, ref)
            ok = err <= max(4 * torch_err, 1e-3)
            rate = common.tflops(flops, ms)
            print(f"{case} | {cand.name:<40} | {ms:7.4f} ms | {rate:6.1f} TFLOP/s | {torch_ms / ms:.3f} x torch "
                  f"| err {err:.2e} {'ok' if ok else 'WRONG'} | first call {first_s:.1f} s | "
                  f"{describe_compiled(compiled)}", flush=True)
            if ok and rate > BEST.get(case, (0.0, ""))[0]:
                BEST[case] = (rate, cand.name, torch_ms / ms)
        except Exception as exc:
            print(f"{case} | {cand.name:<40} | FAILED {short_error(exc)}", flush=True)
            if any(sign in str(exc) for sign in ("CUDA error", "Triton Error [CUDA]", "illegal")):
                raise ContextBroken(f"the CUDA context is likely broken after {case} {cand.name}") from exc
        del c
    del a, b, ref
    torch.cuda.empty_cache()


class ContextBroken(RuntimeError):
    pass


def run_phase(sizes, dtypes, ws_phase):
    try:
        for size in sizes:
            for dtype in dtypes:
                bench_case(size, dtype, ws_phase)
    except ContextBroken as exc:
        print(f"stopping this phase: {exc}", flush=True)
    if BEST:
        print("\nbest correct candidate per case" + (" (warp-specialized only)" if ws_phase else " (without WS)"))
        for case, (rate, name, ratio) in BEST.items():
            print(f"  {case}: {name}  {rate:.1f} TFLOP/s  {ratio:.3f} x torch")
    sys.stdout.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4096^3 only")
    parser.add_argument("--dtypes", default="float16,bfloat16,float32", help="comma-separated (default: all three)")
    parser.add_argument("--no-ws", action="store_true", help="skip the warp-specialized candidates")
    parser.add_argument("--ws-timeout", type=int, default=180, help="seconds for the warp-specialized child run "
                        "(default: %(default)s)")
    parser.add_argument("--selftest", action="store_true", help="tiny-size correctness only, then exit")
    parser.add_argument("--phase", choices=["main", "ws"], default="main", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    torch.backends.cuda.matmul.allow_tf32 = True  # torch.matmul in float32 uses TF32, as the kernels do
    torch.backends.cudnn.allow_tf32 = True
    print(common.describe_run(), flush=True)
    if common.INTERPRETED:
        print("No CUDA GPU (or TRITON_INTERPRET=1): nothing to time. Running the tiny correctness self-test "
              "under Triton's interpreter instead (warp_specialize/flatten are ignored there).", flush=True)
        return 1 if selftest() else 0
    if args.selftest:
        return 1 if selftest(include_ws=not args.no_ws) else 0

    sizes = [4096] if args.quick else [4096, 8192]
    dtypes = [DTYPES[name.strip()] for name in args.dtypes.split(",") if name.strip()]
    if args.phase == "ws":
        run_phase(sizes, dtypes, ws_phase=True)
        return 0
    print(f"SMs: {num_sms()}; sizes {sizes}; dtypes {[SHORT[d] for d in dtypes]}; "
          "err = max|C - ref| / max|ref| against float64", flush=True)
    start = time.perf_counter()
    run_phase(sizes, dtypes, ws_phase=False)
    print(f"\nnon-WS phase took {time.perf_counter() - start:.0f} s", flush=True)
    if args.no_ws:
        return 0
    # Warp-specialized candidates in a child process: a hang or a broken CUDA context there
    # cannot cost the results above.
    print(f"\n## warp-specialized candidates (child process, timeout {args.ws_timeout} s)", flush=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--phase", "ws", "--dtypes", args.dtypes]
    if args.quick:
        cmd.append("--quick")
    try:
        result = subprocess.run(cmd, timeout=args.ws_timeout, env=os.environ.copy())
        if result.returncode:
            print(f"warp-specialized run exited with status {result.returncode}", flush=True)
    except subprocess.TimeoutExpired:
        print(f"warp-specialized run killed after {args.ws_timeout} s (hang, or compile too slow)", flush=True)
    print(f"total {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
