"""`python 0X_*/main.py --asm`: the few lines of a lesson's compiled kernels (PTX, NVIDIA's
assembly language) that show what the lesson teaches, each with a sentence on what to look for.

On a GPU it launches the kernel on a small input and reads the compiled kernel's .asm["ptx"]. On
the CPU the lesson's kernels run interpreted and compile nothing, so it starts itself again with
TRITON_INTERPRET=0 (`python -m tools.asm LESSON/main.py`) and calls triton.compile for an H100
(sm_90), which needs no GPU. Such a compile knows only what it is told: as a launch would, it is
told which pointers are 16-byte aligned, which ints divide by 16 and which are 1 (specialize)."""

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

# The repository's root, so that `python tools/asm.py` finds common as `-m tools.asm` does
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402  (before triton: on a CPU it switches the interpreter on)
import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

from tools import NOT_PARTS, REPO_ROOT, load_example

SM_90 = GPUTarget("cuda", 90, 32)  # an H100: compute capability 9.0, 32 threads per warp
TYPES = {
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float32: "fp32",
}  # as Triton names them
TYPES |= {torch.float64: "fp64", torch.int32: "i32", torch.int64: "i64"}


def compile_for_sm_90(kernel, args, kwargs):
    """(triton.compile of kernel for these arguments, specialized as a launch would; the config it
    used): an autotuned kernel compiles with its first config, a plain one with None; a kernel
    under @triton.heuristics gets the values they set, as at a launch."""
    if isinstance(kernel, triton.runtime.Heuristics):
        kernel, kwargs = kernel.fn, with_heuristics(kernel, args, kwargs)
    config = kernel.configs[0] if isinstance(kernel, triton.runtime.Autotuner) else None
    fn = kernel.fn if config else kernel
    values = dict(zip(fn.arg_names, args)) | kwargs | (config.kwargs if config else {})
    signature, constexprs, attrs = {}, {}, {}
    for index, param in enumerate(fn.params):
        value = values[param.name]
        if isinstance(value, torch.Tensor):
            signature[param.name] = "*" + TYPES[value.dtype]
            aligned = value.data_ptr() % 16 == 0
        elif isinstance(value, int) and not isinstance(value, bool) and not param.is_constexpr:
            if value == 1 and not param.do_not_specialize:  # a launch makes 1 a constant
                signature[param.name], constexprs[param.name] = "constexpr", 1
                continue
            signature[param.name] = "i32" if -(2**31) <= value < 2**31 else "i64"
            aligned = value % 16 == 0 and not param.do_not_specialize
        else:  # a constexpr, or None
            signature[param.name], constexprs[param.name] = "constexpr", value
            continue
        if aligned:
            attrs[(index,)] = [["tt.divisibility", 16]]
    options = {"num_warps": config.num_warps, "num_stages": config.num_stages} if config else {}
    options.update((name, values[name]) for name in ("num_warps", "num_stages") if name in values)
    source = triton.compiler.ASTSource(fn, signature, constexprs, attrs)
    return triton.compile(source, target=SM_90, options=options), config


def with_heuristics(kernel, args, kwargs):
    """kwargs and what kernel's @triton.heuristics set, in order, each rule seeing those before it,
    as a launch does; a kernel without heuristics: kwargs."""
    if not isinstance(kernel, triton.runtime.Heuristics):
        return kwargs
    for name, rule in kernel.values.items():
        kwargs = kwargs | {name: rule(dict(zip(kernel.arg_names, args)) | kwargs)}
    return kwargs


class Probe(NamedTuple):  # a kernel to compile, its launch, and what to look for in its PTX
    title: str
    kernel: object  # a @triton.jit function, or an autotuned one
    grid: object  # as in kernel[grid]: a tuple, or a function of the config
    args: tuple
    kwargs: dict  # constexprs and launch options not set by the autotuner
    looks: list  # (regex, what its lines do[, (lines before, lines after) the first shown])
    layout: bool = False  # also print how Triton spreads its 2-D blocks over threads


def probes_01(lesson, device):
    a, w, c = (torch.randn(64, 64, device=device) for _ in range(3))
    args = (a, w.T, c, 64, 64, *a.stride(), *w.T.stride(), *c.stride())
    scalar_looks = [
        (r"ld\.global\.b32", "a turn of the K loop: one 4-byte load of A, one of B ..."),
        (r"fma\.rn\.f32", "... and one multiply-add (fma: rounded once)"),
    ]
    vector_looks = [
        (r"ld\.global\.v2", "BLOCK_K = 128 lanes over 64 threads: 2 neighbours a thread, one load"),
        (r"shfl\.sync\.bfly", "tl.sum(acc): threads swap their partial sums, halving each round"),
    ]
    return [
        Probe("scalar_kernel, float32, b = W.T", lesson.scalar_kernel, (64 * 64,), args,
              {"num_warps": 1}, scalar_looks),
        Probe("vector_k_kernel, float32, b = W.T", lesson.vector_k_kernel, (64 * 64,), args,
              lesson.VECTOR_K_LAUNCH, vector_looks),
    ]  # fmt: skip


def probes_02(lesson, device):  # lesson: any of 02's files; main.py's and persistent.py's kernels
    folder, part5 = Path(lesson.__file__).parent, lesson  # stream_k.py's also its own kernel
    lesson, part4 = load_example(folder / "main.py"), load_example(folder / "persistent.py")
    a, w, c = (torch.randn(512, 512, device=device, dtype=torch.float16) for _ in range(3))
    epilogue = dict(INPUT_PRECISION="ieee", ACTIVATION=None)
    args = (a, w, c, 512, 512, 512, *a.stride(), *w.stride(), *c.stride())
    pointer_looks = [
        (r"wgmma\.mma_async|mma\.sync", "tl.dot on the tensor cores: wgmma on an H100"),
        (
            r"cp\.async\.cg",
            "tl.load of A, B: copied to shared memory num_stages - 1 steps ahead",
        ),
        (r"cp\.async\.wait_group", "waiting for the copy of the K step about to be multiplied"),
    ]
    persistent = dict(PROGRAMS=132, A_TRANSPOSED=False, B_TRANSPOSED=True, **epilogue)
    persistent_args = (a, w, c, None, None, 512, 512, 512, 512, 512, 512)
    persistent_looks = [
        (r"cp\.async\.bulk\.tensor\.\dd\.shared", "desc.load: one TMA copy loads a whole tile"),
        (r"cp\.async\.bulk\.tensor\.\dd\.global", "desc.store: one TMA copy stores C's tile"),
        (
            r"wgmma\.mma_async",
            "last number, B's transpose flag: 0, wgmma takes B K-contiguous, as W.T is",
        ),
    ]
    probes = [
        Probe("matmul_kernel, float16", lesson.matmul_kernel,
              lesson.tile_grid(512, 512), args, {}, pointer_looks),
        Probe("persistent_matmul_kernel, float16, B = W.T", part4.persistent_matmul_kernel,
              (132,), persistent_args, persistent, persistent_looks),
    ]  # fmt: skip
    if Path(part5.__file__).name != "stream_k.py":
        return probes
    flags = torch.zeros(132, dtype=torch.int32, device=device)
    simple_args = (a, w, c, torch.empty(132, 64, 64, device=device), flags, 512, 512, 512)
    simple_args += (*a.stride(), *w.stride(), *c.stride())
    simple = dict(PROGRAMS=132, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    simple_looks = [
        (
            r"atom\.global\.gpu\.release",
            "the writer: its stores, tl.debug_barrier() (bar.sync), then one thread's release",
            (4, 0),
        ),
        (
            r"atom\.global\.acquire",
            "the owner: one thread's acquire; the value it read goes through shared memory, "
            "behind Triton's bar.sync, to every thread",
            (0, 5),
        ),
        (r"ld\.global\.cg", "every thread's loads of the partial, from L2 (cache_modifier='.cg')"),
    ]
    stream_k_args = (a, w, c, None, torch.empty(132, 128, 128, device=device), flags)
    stream_k_args += (512, 512, 512, 512, 512, 512)
    tile = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=5)
    stream_k_looks = [
        (r"atom\.global\.gpu\.release", "tl.atomic_xchg(..., sem='release'): a partial is ready"),
        (r"atom\.global\.acquire", "tl.atomic_cas(..., sem='acquire'): is the partial ready?"),
        (r"ld\.global\.cg", "the owner's loads of a partial, from L2 (cache_modifier='.cg')"),
    ]
    return probes + [
        Probe("simple_stream_k_kernel, float16, B = W.T", part5.simple_stream_k_kernel,
              (132,), simple_args, simple, simple_looks),
        Probe("stream_k_kernel, float16, B = W.T", part5.stream_k_kernel,
              (132,), stream_k_args, dict(persistent, **tile), stream_k_looks),
    ]  # fmt: skip


def probes_03(lesson, device):  # lesson: any of 03's files; main.py's kernels
    lesson = load_example(Path(lesson.__file__).parent / "main.py")
    x, out = torch.randn(1000, 96, device=device), torch.empty(96, device=device)
    looks = [
        (r"add\.f32", "adds: the loop's (each thread its own elements), and tl.sum's"),
        (r"shfl\.sync\.bfly", "tl.sum(acc, axis=0): threads of a warp swap sums in registers"),
        (r"bar\.sync", "tl.sum across warps: a barrier, where every warp waits for the others"),
    ]
    args, tile = (x, out, 1000, 96, *x.stride()), dict(BLOCK_M=16, BLOCK_N=64)
    return [
        Probe("simple_column_sum_kernel, float32: tl.sum after the loop",
              lesson.simple_column_sum_kernel, (2,), args, tile, looks, layout=True),
        Probe("one_d_column_sum_kernel, float32: tl.sum in the loop",
              lesson.one_d_column_sum_kernel, (2,), args, tile, looks),
    ]  # fmt: skip


def probes_04(lesson, device):  # lesson: main.py or wide.py; wide.py's kernel
    wide = load_example(Path(lesson.__file__).parent / "wide.py")
    x, w, y = torch.randn(1000, 1000, device=device), *torch.randn(2, 1000, device=device)
    looks = [
        (r"ld\.global\.v4\.b32", "wide loads: 16 bytes (4 float32) in one instruction"),
        (r"ld\.global\.b32", "scalar loads: 4 bytes each"),
    ]
    rows = lambda meta: (triton.cdiv(1000, meta["ROWS_TILE"]),)  # noqa: E731
    return [
        Probe(f"forward_wide_kernel (wide.py), float32, D = 1000, X_ROW_ALIGN = D_ALIGN = "
              f"{align} (wide loads need both)", wide.forward_wide_kernel,
              rows, (x, w, y, 1000, 1000, *x.stride()), dict(X_ROW_ALIGN=align, D_ALIGN=align),
              looks)
        for align in (1, 4)
    ]  # fmt: skip


def block_layout(ttgir):
    """The first 2-D blocked layout in a kernel's TTGIR (Triton's IR after it has placed each
    block's values on threads), as ((rows, columns) a thread holds, (rows, columns) a warp's
    threads span, (rows, columns) of warps); None if it has none."""
    pairs = r"\[(\d+), (\d+)\]"
    layout = rf"sizePerThread = {pairs}, threadsPerWarp = {pairs}, warpsPerCTA = {pairs}"
    found = re.search(r"#\w+\.blocked<\{" + layout, ttgir)
    if found is None:
        return None
    numbers = [int(n) for n in found.groups()]
    return tuple(tuple(numbers[i : i + 2]) for i in (0, 2, 4))


def in_loops(lines):
    """For each PTX line, whether it lies in a loop: between a label and a later branch back to
    it (`$L__BB0_2:` ... `bra.uni $L__BB0_2;`), which is how a compiled loop ends each turn."""
    labels = {m[1]: i for i, line in enumerate(lines) if (m := re.match(r"(\$\w+):", line))}
    looped = [False] * len(lines)
    for end, line in enumerate(lines):
        target = re.search(r"\bbra(?:\.uni)?\s+(\$\w+);", line)
        start = labels.get(target.group(1)) if target else None
        if start is not None and start < end:
            looped[start:end] = [True] * (end - start)
    return looped


PROBES = {"01": probes_01, "02": probes_02, "03": probes_03, "04": probes_04}


def show(lesson):
    """Print the lines for `lesson`, a lesson's main module; the exit status."""
    if common.INTERPRETED:  # compile in a new process, where @triton.jit compiles
        return in_compiling_process(lesson.__file__).returncode
    on_gpu = torch.cuda.is_available()
    if on_gpu:
        major, minor = torch.cuda.get_device_capability()
        where = f"launched on {torch.cuda.get_device_name()} (sm_{major}{minor})"
    else:
        where = "compiled for sm_90 (an H100) without a GPU"
    print(f"PTX of {Path(lesson.__file__).parent.name}, triton {triton.__version__}: {where}")
    device = "cuda" if on_gpu else "cpu"
    common.set_descriptor_allocator()  # 02's persistent kernel makes descriptors
    for probe in PROBES[Path(lesson.__file__).parent.name[:2]](lesson, device):
        if on_gpu:
            compiled = probe.kernel[probe.grid](*probe.args, **probe.kwargs)
            config = getattr(probe.kernel, "best_config", None)  # the autotuner's choice
        else:
            compiled, config = compile_for_sm_90(probe.kernel, probe.args, probe.kwargs)
        settings = with_heuristics(probe.kernel, probe.args, probe.kwargs)
        settings = (config.kwargs | {"num_warps": config.num_warps}) if config else settings
        tile = {k: v for k, v in settings.items() if k.startswith(("BLOCK", "ROWS", "D_T", "num_"))}
        lines = [line.strip() for line in compiled.asm["ptx"].splitlines()]
        looped = in_loops(lines)
        print(f"\n{probe.title}\n  ({', '.join(f'{k} {v}' for k, v in tile.items())}):")
        shared = compiled.metadata.shared
        print(f"  shared memory: {shared / 1024:.0f} KB a program (metadata.shared)")
        layout = block_layout(compiled.asm["ttgir"]) if probe.layout else None
        if layout:  # (rows, columns): a thread's share, a warp's span, the warps
            (tr, tc), (wr, wc), (nr, nc) = layout
            print(
                f"  layout (Triton's): a thread holds {tr} x {tc} values of a 2-D block, a warp "
                f"spans {tr * wr} x {tc * wc}, its {nr} x {nc} warps {tr * wr * nr} x "
                f"{tc * wc * nc}, repeated to cover the block"
            )
        for pattern, meaning, *around in probe.looks:
            hits = [i for i, line in enumerate(lines) if re.search(pattern, line)]
            found, inside = [lines[i] for i in hits], sum(looped[i] for i in hits)
            matches = "line matches" if len(found) == 1 else "lines match"
            print(f"  {len(found)} {matches} {pattern} ({inside} in a loop): {meaning}")
            if around and found:  # the first, with instructions around it
                found = with_neighbours(lines, hits[0], *around[0])
            for line in found[:2] if not around else found:  # a long list of registers: {...}
                line = re.sub(r"\{[^}]{30,}\}", "{...}", line)
                print(f"      {line if len(line) <= 96 else line[:93] + '...'}")
    return 0


def with_neighbours(lines, at, before, after):
    """lines[at] with `before` instructions before it and `after` after it: PTX lines that are
    neither blank, nor a comment, nor a .loc (where in the source a line came from)."""
    kept = [i for i, line in enumerate(lines) if line and not line.startswith(("//", ".loc"))]
    where = kept.index(at)
    return [lines[i] for i in kept[max(where - before, 0) : where + after + 1]]


def in_compiling_process(*args, **run_options):
    """`python -m tools.asm *args` in a new process with the interpreter off, where @triton.jit
    compiles; run_options go to subprocess.run."""
    environment = dict(os.environ, TRITON_INTERPRET="0")
    command = [sys.executable, "-m", "tools.asm", *args]
    return subprocess.run(command, env=environment, cwd=REPO_ROOT, **run_options)


def tile_layout(lesson):
    """block_layout of 03's simple kernel on its 16 x 64 float32 tile, compiled for sm_90 as
    `--asm` compiles it; in a new process where the interpreter runs, since only where it does not
    does @triton.jit compile (`python -m tools.asm --layout LESSON/main.py` prints it)."""
    if common.INTERPRETED:
        layout = ["--layout", lesson.__file__]
        done = in_compiling_process(*layout, capture_output=True, text=True, check=True)
        return ast.literal_eval(done.stdout.strip().splitlines()[-1])
    probe = probes_03(lesson, "cpu")[0]  # the simple kernel, laid out as --asm shows it
    compiled, _ = compile_for_sm_90(probe.kernel, probe.args, probe.kwargs)
    return block_layout(compiled.asm["ttgir"])


if __name__ == "__main__":  # the process --asm starts, with TRITON_INTERPRET=0
    parser = argparse.ArgumentParser(description="What `python LESSON/main.py --asm` runs.")
    parser.add_argument("lesson", metavar="LESSON/main.py")
    parser.add_argument("--layout", action="store_true", help="print 03's tile layout only")
    args = parser.parse_args()
    lesson_file = Path(args.lesson)  # main.py, or a file the lesson goes on in
    if lesson_file.parent.name[:2] not in PROBES or lesson_file.name in NOT_PARTS[1:]:
        parser.error(f"{args.lesson}: name a lesson's main.py, as 01_matmul_elementwise/main.py")
    if not lesson_file.is_file():
        parser.error(f"{args.lesson}: no such file")
    if args.layout and not lesson_file.parent.name.startswith("03"):
        parser.error("--layout: 03's tile layout; name 03_blocked_sum/main.py")
    lesson = load_example(args.lesson)
    try:  # the probes launch main.py's kernels; a part without them (01's any_x.py) has no --asm
        list(PROBES[lesson_file.parent.name[:2]](lesson, "cpu"))
    except AttributeError as missing:
        parser.error(f"{args.lesson} has no --asm ({missing.name} is main.py's): name a lesson's "
                     f"main.py, as {lesson_file.parent.name}/main.py")  # fmt: skip
    if args.layout:
        print(tile_layout(lesson))
    else:
        sys.exit(show(lesson))
