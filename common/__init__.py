"""The little code the lessons share: device choice, tuning, timing, checks of outputs, a result table.
Import it before defining any Triton kernel: without CUDA it switches on Triton's CPU interpreter
(TRITON_INTERPRET=1, read when a kernel is decorated). Set that yourself to interpret on a GPU machine."""

import functools
import importlib.util
import os
import statistics
import sys
import time
import timeit
from pathlib import Path

import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = torch.device("cpu" if INTERPRETED else "cuda")

import triton  # noqa: E402  (imported after the interpreter switch on purpose)
import triton.language as tl  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent

# Every result table's columns. Throughput, "% of ceiling", "x torch": from the eager time; "graph ms": a CUDA graph.
RESULT_COLUMNS = ("case", "variant", "eager ms", "graph ms", "throughput", "unit", "% of ceiling", "x torch")

def describe_run():  # one line naming what the numbers were measured on
    where = "Triton interpreter on the CPU (times show Python, not a GPU)" if INTERPRETED else torch.cuda.get_device_name()
    return f"{where} | torch {torch.__version__} | triton {triton.__version__}"

def capture_graph(fn, setup=lambda: None):
    """Run setup(), fn() (compiling, tuning), then capture fn() in a torch.cuda.CUDAGraph, all on a side stream (the
    default one cannot capture; autograd runs a backward on its forward's stream)."""
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

def bench(fn, warmup_ms=25, rep_ms=100):
    """Median ms of a lone eager call of fn(), what a user pays: each timed call starts on an idle GPU, L2 flushed,
    CUDA events around it, so the host's work before the kernels counts (do_bench's flush would hide it); after
    warmup_ms of untimed calls, about rep_ms of timed ones. On the CPU: a wall clock, the median of three calls."""
    fn()
    if INTERPRETED:
        return statistics.median(timeit.repeat(fn, number=1, repeat=3)) * 1e3
    flush = torch.empty(256 << 20, dtype=torch.int8, device=DEVICE)  # more than any L2
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
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

def bench_graph(fn, setup=lambda: None, warmup_ms=25):
    """Median ms of fn()'s kernels replayed from a CUDA graph (None on the CPU): the floor for an eager call."""
    return None if INTERPRETED else triton.testing.do_bench(
        capture_graph(fn, setup).replay, warmup=warmup_ms, rep=100, return_mode="median")

@functools.cache
def multiprocessor_count(device):  # SMs of the CUDA device (a torch.device or an index), asked once
    return torch.cuda.get_device_properties(device).multi_processor_count

def gbps(nbytes, ms):  # GB/s (10^9 bytes) of moving nbytes in ms milliseconds
    return nbytes / (ms * 1e-3) / 1e9

def tflops(flops, ms):  # TFLOP/s of flops operations in ms milliseconds
    return flops / (ms * 1e-3) / 1e12

# ## Tuning a user's call can afford: triton.autotune times every config for each new key of exact sizes. TUNING times
# briefly and keeps results on disk (cache_results, Triton >= 3.4, not interpreted); launch_tuned tunes per bucket.
TUNING = dict(do_bench=functools.partial(triton.testing.do_bench, warmup=5, rep=20), cache_results=True)
TUNE_EVERY_SHAPE = os.environ.get("LESSONS_TUNE_EVERY_SHAPE") == "1"  # 1: the autotuner's own per-shape key
_tuned = {}  # (autotuned kernel, bucket) -> the launch arguments of the config chosen for that bucket
_compiled = {}  # (kernel, device, argument classes, named arguments) -> (compiled kernel, named arguments in order)

def launch_tuned(kernel, grid, bucket, *args, **kwargs):
    """kernel[grid](*args, **kwargs) for a triton.autotune'd kernel, tuned once per bucket (sizes rounded to powers
    of two, dtypes, whatever else picks the tile). The bucket's first call runs the autotuner; later ones launch
    its choice through `launch`: no tuning for a new shape in the bucket, and less host work than a bare launch."""
    config = None if TUNE_EVERY_SHAPE else _tuned.get((kernel, bucket))
    if config is None:
        kernel[grid](*args, **kwargs)
        _tuned[kernel, bucket] = kernel.best_config.all_kwargs()
    else:
        launch(kernel.fn, grid(config) if callable(grid) else grid, *args, **kwargs, **config)

def argument_class(arg):
    """What Triton compiles a kernel for, per argument, or finer: a tensor's dtype and 16-byte alignment; an int's
    being 1, a multiple of 16, more than 31 or 63 bits long; any other value itself."""
    if isinstance(arg, torch.Tensor):
        return arg.dtype, arg.data_ptr() % 16 == 0
    if type(arg) is int:
        return arg == 1, arg % 16 == 0, arg.bit_length() > 31, arg.bit_length() > 63
    return type(arg), arg

def launch(kernel, grid, *args, **named):
    """kernel[grid](*args, **named) for a @triton.jit kernel; grid: a tuple; named: constexprs, launch options such as
    num_warps, any other argument, each keyed by type and value. Triton's launch works out which compiled kernel fits
    on every call (NOTES item 46); here that happens once per class of arguments (with Triton's check of changed
    globals and its pre-run hooks): later calls launch the compiled kernel straight."""
    if INTERPRETED:
        kernel[grid](*args, **named)
        return
    key = (kernel, torch.cuda.current_device(), *map(argument_class, args), *named.items(), *map(type, named.values()))
    if (found := _compiled.get(key)) is None:
        if any(param.is_constexpr for param in kernel.params[:len(args)]):  # a class would not tell their values apart
            raise TypeError(f"common.launch: pass {kernel.__name__}'s constexpr arguments by name")
        ordered = [named[name] for name in kernel.arg_names[len(args):]]  # KeyError before a launch if one is missing
        _compiled[key] = kernel[grid](*args, **named), ordered  # compiles when Triton has no kernel for these arguments
    else:
        compiled, ordered = found
        compiled[(*grid, 1, 1)[:3]](*args, *ordered)  # every parameter in order, on the current stream; a 3-D grid

def cdiv(a, b):  # ceil(a / b); triton.cdiv is a constexpr_function, slow to call from host code (NOTES item 44)
    return -(-a // b)

def next_power_of_2(n):  # as triton.next_power_of_2 (a constexpr_function too), but 1 for n = 0
    return 1 << max(n - 1, 0).bit_length()

@functools.cache
def copy_ceiling_gbps():
    """Device-to-device copy bandwidth (bytes read plus written) of 1 GiB, far past L2 (16 MiB on the CPU), now."""
    src = torch.randn((1 << 22) if INTERPRETED else (1 << 28), device=DEVICE)
    dst = torch.empty_like(src)
    # do_bench times the kernel alone: at 1 GiB the host's share is noise; a graph would use the copy engines.
    copy = lambda: dst.copy_(src)  # noqa: E731
    ms = bench(copy) if INTERPRETED else triton.testing.do_bench(copy, return_mode="median")
    return gbps(2 * src.numel() * src.element_size(), ms)

def result_row(case, variant, eager_ms, graph_ms, throughput, unit, torch_ms, ceiling=None):
    """A row of RESULT_COLUMNS: throughput (the eager call's) and ceiling in `unit`; torch_ms, PyTorch's eager time."""
    percent = None if ceiling is None else 100 * throughput / ceiling
    return dict(zip(RESULT_COLUMNS, (case, variant, eager_ms, graph_ms, throughput, unit, percent, torch_ms / eager_ms)))

def assert_close(actual, expected, magnitude, reduction_length, what, product_roundoff=0.0):
    """Raise AssertionError unless `actual` matches the float64 `expected` within rounding error. magnitude: the
    same computation on absolute values (|x| @ |w|, ...); reduction_length: how many products each element sums;
    product_roundoff: relative error of one product (2**-9 for a TF32 dot). Bound per element: u_out * |expected|
    (rounding into the output dtype) + (4 * sqrt(n) * u_acc + product_roundoff) * magnitude (n additions in
    float32, or float64; sqrt(n): random rounding errors mostly cancel, and a tight bound still catches a dropped
    row). NaN always fails."""
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    if actual.numel() == 0:
        return
    u_out = torch.finfo(actual.dtype).eps / 2  # unit roundoff: 2^-11 in float16, 2^-8 in bfloat16, 2^-24 in float32
    if INTERPRETED and actual.dtype == torch.bfloat16:
        u_out *= 2  # Triton's interpreter (3.6 to 3.9) rounds float32 to bfloat16 by truncation: a whole ulp
    u_acc = torch.finfo(torch.float64 if actual.dtype == torch.float64 else torch.float32).eps / 2
    # Below the smallest normal number the output's spacing stops shrinking (subnormals): floor |expected| there.
    allowed = u_out * expected.abs().clamp_min(torch.finfo(actual.dtype).tiny) + (4 * max(reduction_length, 1) ** 0.5 * u_acc + product_roundoff) * magnitude
    error = (actual.double() - expected).abs()
    excess = torch.where(error <= allowed, 0.0, (error - allowed).nan_to_num(float("inf")) + 1.0)
    if excess.any():
        worst = int(excess.flatten().argmax())
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), actual.shape))
        bad = int((excess > 0).sum())
        raise AssertionError(f"{what}: {bad} of {actual.numel()} elements off; worst at {index}: got "
                             f"{actual.flatten()[worst].item():.6g}, expected {expected.flatten()[worst].item():.6g}, "
                             f"error {error.flatten()[worst].item():.3g} > allowed {allowed.flatten()[worst].item():.3g}")

def shares_memory(a, b):
    """Whether tensors a and b may touch the same bytes (their spans in one storage overlap)."""
    if a.numel() == 0 or b.numel() == 0 or a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    def span(t):  # first and one-past-last byte address
        last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()) if stride > 0)
        return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1

def check_out(out, shape, dtype, device, inputs):
    """Raise TypeError/ValueError naming what is wrong with an out= tensor (not a tensor; shape, dtype, device;
    elements overlapping each other; inputs requiring grad). True when out shares memory with one of `inputs`:
    then compute into a fresh tensor and copy it into out, as torch.matmul does."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if (tuple(out.shape), out.dtype, out.device) != (tuple(shape), dtype, device):
        raise ValueError(f"out is {tuple(out.shape)} {out.dtype} on {out.device}, expected {tuple(shape)} {dtype} on {device}")
    if torch._debug_has_internal_overlap(out) == 1:
        raise ValueError(f"out has strides {out.stride()} for shape {tuple(out.shape)}: several of its elements share "
                         "one memory location (an expand()ed view?), so results would overwrite each other")
    if torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
        raise ValueError("out= is not differentiable: an input requires grad; call without out= to get gradients")
    return any(shares_memory(out, t) for t in inputs)

def eager_autograd(name, forward, setup_context, backward):
    """forward(*inputs) as a torch.autograd.Function, given a setup_context and backward of the form a custom op's
    register_autograd takes: eager gradients without the dispatcher's host cost. grad_fn reads "<name>Backward"."""
    def run_forward(ctx, *inputs):
        output = forward(*inputs)
        setup_context(ctx, inputs, output)
        return output
    methods = {"forward": staticmethod(run_forward), "backward": staticmethod(backward)}
    return type(name, (torch.autograd.Function,), methods).apply

def print_table(rows, columns):
    """Print rows (dicts) as an aligned table of the given columns; floats get 4 significant digits."""
    cells = [[("-" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)) for v in map(row.get, columns)]
             for row in rows]
    widths = [max(len(col), *(len(r[i]) for r in cells)) for i, col in enumerate(columns)]
    for line in [columns, ["-" * w for w in widths], *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)))

@functools.cache
def block_pointers_unavailable():
    """Why this Triton cannot run block pointers, or None. Detect the feature, not the version (3.8's interpreter
    fails on them, 3.9 removed them, main-branch builds report old versions): copy 16 numbers through one."""
    try:
        src = torch.arange(16, dtype=torch.float32, device=DEVICE)
        dst = torch.full_like(src, float("nan"))
        _block_ptr_probe_kernel[(1,)](src, dst)
        if not torch.equal(src, dst):
            return "a block-pointer copy returned wrong values"
    except Exception as exc:  # any failure means "do not use block pointers here"
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"tl.make_block_ptr does not run on triton {triton.__version__}: {first_line[:120]}"

@triton.jit
def _block_ptr_probe_kernel(src_ptr, dst_ptr):
    src = tl.make_block_ptr(src_ptr, shape=(16,), strides=(1,), offsets=(0,), block_shape=(16,), order=(0,))
    dst = tl.make_block_ptr(dst_ptr, shape=(16,), strides=(1,), offsets=(0,), block_shape=(16,), order=(0,))
    tl.store(dst, tl.load(src))

def descriptor_problem(tensor):
    """Why a tensor descriptor cannot describe this tensor, or None. Broken rules (16-byte aligned base, last
    stride 1, other strides multiples of 16 bytes, int32 sizes) can give wrong sums on a GPU without an error."""
    if tensor.numel() == 0:
        return "the tensor is empty"
    if max(tensor.shape) >= 2**31:
        return f"shape {tuple(tensor.shape)} has a dimension of 2^31 or more (descriptor shapes are int32)"
    if tensor.data_ptr() % 16:
        return f"its base address {tensor.data_ptr():#x} is not 16-byte aligned"
    if tensor.stride(-1) != 1:
        return f"its last stride is {tensor.stride(-1)}, not 1"
    for dim, stride in enumerate(tensor.stride()[:-1]):
        if stride * tensor.element_size() % 16:
            return f"stride {stride} of dim {dim} is {stride * tensor.element_size()} bytes, not a multiple of 16"

def set_descriptor_allocator():
    """Scratch memory for in-kernel tensor descriptors, in a context variable (per thread): set before each launch."""
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))

def load_example(path):
    """Import a lesson's main.py by path, once (folders start with digits; every file is main.py)."""
    name = "example_" + Path(path).resolve().parent.name
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(path).resolve())
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]

def example_paths():  # every example's main.py, in reading order
    return sorted(REPO_ROOT.glob("[0-9][0-9]_*/main.py"))
