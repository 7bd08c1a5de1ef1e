"""The little code the lessons share: the interpreter switch, timing, the float64 tolerance,
checks of outputs, a table printer.

Import it before defining any Triton kernel: without CUDA it switches on Triton's CPU interpreter
(TRITON_INTERPRET=1), which Triton reads when a kernel is decorated. Set that variable yourself to
interpret on a GPU machine.
"""

import contextlib
import functools
import importlib.util
import os
import statistics
import sys
import time
import timeit
import warnings
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = torch.device("cpu" if INTERPRETED else "cuda")

import triton  # noqa: E402  (imported after the interpreter switch on purpose)
import triton.language as tl  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent


def describe_run():
    """One line naming what the numbers were measured on."""
    if INTERPRETED:
        where = "Triton interpreter on the CPU (times show Python, not a GPU)"
    else:
        where = torch.cuda.get_device_name()
    return f"{where} | torch {torch.__version__} | triton {triton.__version__}"


# ## Timing: what the GPU spends, and what the host spends to ask for it
# A call costs the GPU its kernels' time, and the host (the CPU running Python) the time to check
# the arguments and queue the launches. The host does not wait for the GPU, so in a loop a call
# costs about the larger of the two; a CUDA graph replays the launches without the Python.
TIMING_COLUMNS = (
    "case", "variant", "GPU ms", "GPU x torch", "host us", "host x torch",
    "throughput", "unit", "% of ceiling",
)  # fmt: skip


def gpu_ms(fn, setup=lambda: None):
    """Median GPU time of fn() in ms: triton.testing.do_bench, with the L2 cache flushed before
    each run, of fn() replayed from a CUDA graph (after setup()), so that the host's Python, which
    can take longer than the kernels, is not counted. Under the interpreter: the median wall time
    of three calls."""
    if INTERPRETED:
        setup()
        fn()
        return statistics.median(timeit.repeat(fn, number=1, repeat=3)) * 1e3
    return triton.testing.do_bench(capture_graph(fn, setup).replay, return_mode="median")


def host_us(fn, calls=100, rounds=9):
    """Host time of one call of fn() in us: `calls` calls issued back to back (the GPU queues their
    kernels, so the host never waits for it), median over `rounds`. None under the interpreter,
    where the host does all the work."""
    if INTERPRETED:
        return None
    fn()
    per_call = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        per_call.append((time.perf_counter() - start) / calls)
    torch.cuda.synchronize()
    return statistics.median(per_call) * 1e6


def measure(fn, setup=lambda: None):
    """(GPU ms, host us) of fn(), each after setup() (which might run a forward for fn's
    backward)."""
    gpu = gpu_ms(fn, setup)
    setup()
    return gpu, host_us(fn)


def timing_row(case, variant, times, torch_times, throughput, unit, ceiling=None):
    """A row of TIMING_COLUMNS. times and torch_times: (GPU ms, host us) of this variant and of
    PyTorch's op; "x torch" is PyTorch's time over ours (above 1: we are faster)."""
    (gpu, host), (torch_gpu, torch_host) = times, torch_times
    return {
        "case": case,
        "variant": variant,
        "GPU ms": gpu,
        "GPU x torch": torch_gpu / gpu,
        "host us": host,
        "host x torch": None if host is None else torch_host / host,
        "throughput": throughput,
        "unit": unit,
        "% of ceiling": None if ceiling is None else 100 * throughput / ceiling,
    }


def gbps(nbytes, ms):  # GB/s (10^9 bytes) of moving nbytes in ms milliseconds
    return nbytes / (ms * 1e-3) / 1e9


def tflops(flops, ms):  # TFLOP/s of flops operations in ms milliseconds
    return flops / (ms * 1e-3) / 1e12


@functools.cache
def copy_ceiling_gbps():
    """Device-to-device copy bandwidth (bytes read plus written) of 1 GiB, far past the L2 cache
    (16 MiB under the interpreter), measured now."""
    src = torch.randn((1 << 22) if INTERPRETED else (1 << 28), device=DEVICE)
    dst = torch.empty_like(src)
    # Timed eagerly: at 1 GiB the host's share is noise, and a CUDA graph may copy on other engines.
    copy = lambda: dst.copy_(src)  # noqa: E731
    ms = gpu_ms(copy) if INTERPRETED else triton.testing.do_bench(copy, return_mode="median")
    return gbps(2 * src.numel() * src.element_size(), ms)


def capture_graph(fn, setup=lambda: None):
    """Run setup() and fn() (compiling, tuning), then capture fn() in a torch.cuda.CUDAGraph, all
    on a side stream: the default stream cannot capture, and autograd runs a backward on the
    stream of its forward."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        setup()
        fn()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    return graph


def print_table(rows, columns):
    """Print rows (dicts) as an aligned table of the given columns; floats get 4 significant
    digits, None a dash."""
    cells = [
        ["-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v) for v in row]
        for row in ([row.get(col) for col in columns] for row in rows)
    ]
    widths = [max(len(col), *(len(r[i]) for r in cells)) for i, col in enumerate(columns)]
    for line in [columns, ["-" * w for w in widths], *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))


# ## Checks
def assert_close(actual, expected, magnitude, reduction_length, what, product_roundoff=0.0):
    """Raise AssertionError unless `actual` matches the float64 `expected` within rounding error.

    magnitude: the same computation on absolute values (|x| @ |w|, ...); reduction_length: how many
    products each element sums; product_roundoff: relative error of one product (2**-9 for a TF32
    dot). The bound per element is u_out * |expected| (rounding into the output dtype) plus
    (4 * sqrt(n) * u_acc + product_roundoff) * magnitude: n additions in float32 (float64 for
    float64), and sqrt(n) because random rounding errors mostly cancel; a bound this tight still
    catches a dropped row. NaN always fails."""
    if actual.shape != expected.shape:
        raise AssertionError(
            f"{what}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
        )
    if actual.numel() == 0:
        return
    # Unit roundoff: 2^-11 in float16, 2^-8 in bfloat16, 2^-24 in float32.
    u_out = torch.finfo(actual.dtype).eps / 2
    if INTERPRETED and actual.dtype == torch.bfloat16:
        u_out *= 2  # Triton's interpreter rounds float32 to bfloat16 by truncation: a whole ulp
    u_acc = torch.finfo(torch.float64 if actual.dtype == torch.float64 else torch.float32).eps / 2
    # Below the smallest normal number the spacing of the output dtype stops shrinking.
    floor = torch.finfo(actual.dtype).tiny
    summed = (4 * max(reduction_length, 1) ** 0.5 * u_acc + product_roundoff) * magnitude
    allowed = u_out * expected.abs().clamp_min(floor) + summed
    error = (actual.double() - expected).abs()
    excess = torch.where(error <= allowed, 0.0, (error - allowed).nan_to_num(float("inf")) + 1.0)
    if excess.any():
        worst = int(excess.flatten().argmax())
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), actual.shape))
        bad = int((excess > 0).sum())
        raise AssertionError(
            f"{what}: {bad} of {actual.numel()} elements off; worst at {index}: "
            f"got {actual.flatten()[worst].item():.6g}, "
            f"expected {expected.flatten()[worst].item():.6g}, "
            f"error {error.flatten()[worst].item():.3g} "
            f"> allowed {allowed.flatten()[worst].item():.3g}"
        )


@contextlib.contextmanager
def uninitialized_memory_is_nan():
    """Inside the block, torch.empty and its kin return floats filled with NaN, so that an output
    element a kernel forgets to write shows up as NaN. PyTorch's deterministic mode does this
    (torch.utils.deterministic.fill_uninitialized_memory); warn_only=True keeps it from refusing
    the ops it has no deterministic form of, and their warnings are kept quiet."""
    was_on = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Deterministic behavior was enabled", UserWarning)
            yield
    finally:
        torch.use_deterministic_algorithms(was_on, warn_only=warn_only)


def shares_memory(a, b):
    """Whether tensors a and b may touch the same bytes (their spans in one storage overlap)."""
    if a.numel() == 0 or b.numel() == 0:
        return False
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False

    def span(t):  # first and one-past-last byte address
        last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()) if stride > 0)
        return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def check_out(out, shape, dtype, device, inputs):
    """Raise TypeError/ValueError naming what is wrong with an out= tensor (not a tensor; shape,
    dtype, device; elements overlapping each other; inputs requiring grad). True when out shares
    memory with one of `inputs`: then compute into a fresh tensor and copy it into out, as
    torch.matmul does."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if (tuple(out.shape), out.dtype, out.device) != (tuple(shape), dtype, device):
        raise ValueError(
            f"out is {tuple(out.shape)} {out.dtype} on {out.device}, "
            f"expected {tuple(shape)} {dtype} on {device}"
        )
    if torch._debug_has_internal_overlap(out) == 1:
        raise ValueError(
            f"out has strides {out.stride()} for shape {tuple(out.shape)}: several of its elements "
            "share one memory location (an expand()ed view?), so results would overwrite each other"
        )
    if torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
        raise ValueError(
            "out= is not differentiable: an input requires grad; call without out= to get gradients"
        )
    return any(shares_memory(out, t) for t in inputs)


def kernel_out(out, shape, dtype, device, inputs):
    """The tensor a kernel writes: out, or a new one when out is None or shares memory with an
    input the kernel still reads (write_out then copies it into out). Raises as check_out does,
    and on an out that requires grad in grad mode, as PyTorch's out= does: a kernel's write into
    it is not differentiable."""
    if out is None:
        return torch.empty(shape, dtype=dtype, device=device)
    overlaps = check_out(out, shape, dtype, device, inputs)
    if torch.is_grad_enabled() and out.requires_grad:
        raise ValueError("out requires grad, and a kernel's write into it is not differentiable")
    return torch.empty(shape, dtype=dtype, device=device) if overlaps else out


def write_out(result, out):
    """result when out is None; else out holding result (copied unless it is result), its version
    bumped as by any in-place write in PyTorch, so that a backward that saved out raises rather
    than run on the new values."""
    if out is None:
        return result
    if out is not result:
        out.copy_(result)
    torch.autograd.graph.increment_version(out)
    return out


@contextlib.contextmanager
def quiet_block_pointer_warnings():
    """Inside the block, Triton's warnings that block pointers are deprecated are not shown: a
    DeprecationWarning in 3.7, a UserWarning on every tl.make_block_ptr in 3.8's interpreter."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", ".*make_block_ptr is deprecated")
        yield


@functools.cache
def block_pointers_unavailable():
    """Why this Triton cannot run block pointers, or None. It copies 16 numbers through one rather
    than trust version strings: 3.8's interpreter fails on them, 3.9 removed them, and builds of
    Triton's main branch report old versions. Triton 3.7 and 3.8 warn that block pointers are
    deprecated; the lessons say so themselves, so the probe keeps that warning quiet."""
    try:
        src = torch.arange(16, dtype=torch.float32, device=DEVICE)
        dst = torch.full_like(src, float("nan"))
        with quiet_block_pointer_warnings():
            _block_ptr_probe_kernel[(1,)](src, dst)
        if not torch.equal(src, dst):
            return "a block-pointer copy returned wrong values"
    except Exception as exc:  # any failure means "do not use block pointers here"
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"tl.make_block_ptr does not run on triton {triton.__version__}: {first_line[:120]}"


@triton.jit
def _block_ptr_probe_kernel(src_ptr, dst_ptr):
    src = tl.make_block_ptr(src_ptr, (16,), (1,), offsets=(0,), block_shape=(16,), order=(0,))
    dst = tl.make_block_ptr(dst_ptr, (16,), (1,), offsets=(0,), block_shape=(16,), order=(0,))
    tl.store(dst, tl.load(src))


def descriptor_problem(tensor):
    """Why a tensor descriptor cannot describe this tensor, or None. Broken rules (16-byte aligned
    base, last stride 1, other strides multiples of 16 bytes, int32 sizes) can give wrong sums on
    a GPU without an error."""
    if tensor.numel() == 0:
        return "the tensor is empty"
    if max(tensor.shape) >= 2**31:
        return f"shape {tuple(tensor.shape)} has a dimension of 2^31 or more (sizes are int32)"
    if tensor.data_ptr() % 16:
        return f"its base address {tensor.data_ptr():#x} is not 16-byte aligned"
    if tensor.stride(-1) != 1:
        return f"its last stride is {tensor.stride(-1)}, not 1"
    for dim, stride in enumerate(tensor.stride()[:-1]):
        if stride * tensor.element_size() % 16:
            nbytes = stride * tensor.element_size()
            return f"stride {stride} of dim {dim} is {nbytes} bytes, not a multiple of 16"


def set_descriptor_allocator():
    """Scratch memory for in-kernel tensor descriptors. Triton keeps the allocator in a context
    variable, which each thread has its own copy of: set it before each launch."""
    triton.set_allocator(
        lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEVICE)
    )


def load_example(path):
    """Import a lesson's main.py by path, once: its folder starts with digits, so no import
    statement can name it."""
    name = "example_" + Path(path).resolve().parent.name
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(path).resolve())
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def example_paths():  # every example's main.py, in reading order
    return sorted(REPO_ROOT.glob("[0-9][0-9]_*/main.py"))


# ## Until lesson 02 is rebuilt in the standard form (issue 25): its launch cache, tuning per
# bucket, eager and graph timing, and autograd helper. 01, 03 and 04 use none of these.
RESULT_COLUMNS = (
    "case", "variant", "eager ms", "graph ms", "throughput", "unit", "% of ceiling", "x torch",
)  # fmt: skip


def bench(fn, warmup_ms=25, rep_ms=100):
    """Median ms of a lone eager call of fn(), L2 flushed, CUDA events around it (the host's work
    before the kernels counts). Under the interpreter: gpu_ms's wall clock."""
    if INTERPRETED:
        return gpu_ms(fn)
    fn()
    flush = torch.empty(256 << 20, dtype=torch.int8, device=DEVICE)  # more than any L2
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)

    def timed_call():
        flush.zero_()
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    deadline = time.perf_counter() + warmup_ms / 1e3
    while time.perf_counter() < deadline:
        fn()
    reps = max(5, min(1000, int(rep_ms / max(timed_call(), 1e-3))))
    return statistics.median(timed_call() for _ in range(reps))


def bench_graph(fn):
    """gpu_ms: fn()'s kernels replayed from a CUDA graph; None under the interpreter."""
    return None if INTERPRETED else gpu_ms(fn)


def result_row(case, variant, eager_ms, graph_ms, throughput, unit, torch_ms, ceiling=None):
    """A row of RESULT_COLUMNS; torch_ms is PyTorch's eager time."""
    percent = None if ceiling is None else 100 * throughput / ceiling
    values = (case, variant, eager_ms, graph_ms, throughput, unit, percent, torch_ms / eager_ms)
    return dict(zip(RESULT_COLUMNS, values))


@functools.cache
def multiprocessor_count(device):  # SMs of the CUDA device (a torch.device or an index)
    return torch.cuda.get_device_properties(device).multi_processor_count


TUNING = dict(
    do_bench=functools.partial(triton.testing.do_bench, warmup=5, rep=20), cache_results=True
)
TUNE_EVERY_SHAPE = os.environ.get("LESSONS_TUNE_EVERY_SHAPE") == "1"
_tuned = {}  # (autotuned kernel, bucket) -> launch arguments of the config chosen for that bucket
_compiled = {}  # (kernel, device, argument classes, named arguments) -> (compiled, named in order)


def launch_tuned(kernel, grid, bucket, *args, **kwargs):
    """kernel[grid](*args, **kwargs) for an autotuned kernel, tuned once per bucket (sizes rounded
    to powers of two, dtypes, whatever else picks the tile); later calls go through `launch`."""
    config = None if TUNE_EVERY_SHAPE else _tuned.get((kernel, bucket))
    if config is None:
        kernel[grid](*args, **kwargs)
        _tuned[kernel, bucket] = kernel.best_config.all_kwargs()
    else:
        launch(kernel.fn, grid(config) if callable(grid) else grid, *args, **kwargs, **config)


def argument_class(arg):
    """What Triton compiles a kernel for, per argument, or finer: a tensor's dtype and 16-byte
    alignment; an int's being 1, a multiple of 16, over 31 or 63 bits; any other value itself."""
    if isinstance(arg, torch.Tensor):
        return arg.dtype, arg.data_ptr() % 16 == 0
    if type(arg) is int:
        return arg == 1, arg % 16 == 0, arg.bit_length() > 31, arg.bit_length() > 63
    return type(arg), arg


def launch(kernel, grid, *args, **named):
    """kernel[grid](*args, **named) for a @triton.jit kernel, grid a tuple; after the first call of
    each class of arguments, the compiled kernel is launched straight."""
    if INTERPRETED:
        kernel[grid](*args, **named)
        return
    key = (
        kernel,
        torch.cuda.current_device(),
        *map(argument_class, args),
        *named.items(),
        *map(type, named.values()),
    )
    if (found := _compiled.get(key)) is None:
        if any(param.is_constexpr for param in kernel.params[: len(args)]):
            raise TypeError(f"common.launch: pass {kernel.__name__}'s constexpr arguments by name")
        ordered = [named[name] for name in kernel.arg_names[len(args) :]]  # KeyError if missing
        _compiled[key] = kernel[grid](*args, **named), ordered
    else:
        compiled, ordered = found
        compiled[(*grid, 1, 1)[:3]](*args, *ordered)


def cdiv(a, b):  # ceil(a / b) on the host
    return -(-a // b)


def next_power_of_2(n):  # as triton.next_power_of_2, but 1 for n = 0
    return 1 << max(n - 1, 0).bit_length()


def eager_autograd(name, forward, setup_context, backward):
    """forward(*inputs) as a torch.autograd.Function, given a custom op's setup_context and
    backward."""

    def run_forward(ctx, *inputs):
        output = forward(*inputs)
        setup_context(ctx, inputs, output)
        return output

    methods = {"forward": staticmethod(run_forward), "backward": staticmethod(backward)}
    return type(name, (torch.autograd.Function,), methods).apply
