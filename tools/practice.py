"""The checker behind each lesson's exercises.py: `python NN_name/exercises.py` checks every
exercise and says, for each, "passed" or "not yet" and what is wrong.

How it finds out, with public Triton and torch only:
- every tensor the learner's launch gets lies inside a larger buffer, a guard band of
  guard(numel) elements before and after it (wide: a grid too large, or a wrong stride, lands
  in it rather than in memory the interpreter uses); the output starts as NaN, its band as
  SENTINEL;
- an output element still NaN afterwards: no program wrote it, or one wrote NaN (and so for
  a buffer that the launch is handed, such as a partial-sum buffer);
- every kernel[grid](...) is recorded while the launch runs (recording()): no launch, an output
  changed after the last kernel, or one written before kernels that left it: PyTorch wrote it;
  so too an output or a buffer the host wrote before or between kernels with anything but a
  fill (a_fill: 0, an infinity, one value); and where an exercise writes the launch's second
  pass, the buffers as a kernel left them must give the output through it;
- an output guard element no longer SENTINEL, or an input changed: a store left its tensor;
- the launch run again with an input's guard band changed, to 1000 and then to NaN (which a
  product with a masked-off 0 still passes on): if the output (bands included) changes, a load
  read outside that input; halving the changed part of the band finds the offsets read. A load
  outside whose value reaches no output (a masked-off column's) goes unseen: the checker sees
  values, never the loads themselves;
- which program stored outside: the launch's recorded kernel run again with 1, 2, 3, ...
  programs (a 1-D grid), until the guard band changes;
- a launch right so far runs again on inputs and an output whose elements lie apart in memory,
  each tensor's step and gap its own: a kernel that ignores a stride it was given, or takes
  another tensor's, gets wrong values there;
- a launch still running after LAUNCH_SECONDS is stopped (under the interpreter).
It always exits 0, so that a learner can run it again and again; --strict exits 1 on any
"not yet" (the tests use it), and --draw where it wrote no picture."""

import argparse
import contextlib
import dataclasses
import operator
import signal
import sysconfig
import threading
import traceback
import types
from pathlib import Path
from typing import Callable

import torch
import common
import triton  # after common, which may switch on the interpreter
from tools import load_example, picture_problem


def guard(numel):  # elements of guard band on each side of a tensor of numel elements
    return 4096 + 32 * numel


SENTINEL = -12345.0  # what an output's guard band holds; a store there changes it
SHOWN = 5  # wrong elements listed


@dataclasses.dataclass
class Exercise:
    title: str
    section: str  # the section of main.py it practises (its task: the comment above it)
    inputs: Callable[[], dict]  # name -> tensor, fresh random values
    reference: Callable[..., torch.Tensor]  # PyTorch: reference(**inputs)
    terms: int  # the longest sum in one output element (the rounding allowed grows with it)
    launch: Callable  # launch(**inputs, out=c): the learner's (or solution's) launch
    roundoff: float = 0.0  # each product's rounding: 2**-9 where tl.dot rounds to TF32
    # Buffers the launch writes and reads back, given it as its output is (NaN inside, its
    # guard band watched): name -> shape(**inputs).
    scratch: dict = dataclasses.field(default_factory=dict)
    # The launch's own second pass, written for the learner: the output it makes from the
    # buffers (second_pass(**buffers)). The checker checks the buffers through it, so that an
    # output PyTorch made from the inputs in its place does not pass.
    second_pass: Callable = None
    # Whether the kernel takes every tensor's strides: the launch then runs again on inputs and
    # an output whose elements lie apart in memory (apart()), as a slice's do; out_step: the
    # output's elements' step there (1 where its kernel takes only the output's row stride).
    strided: bool = True
    out_step: int = 2


def guarded(t, guard_value):
    """A copy of t inside a buffer with guard(t.numel()) elements of guard_value on each side:
    (the buffer, the view of t in it). The copy keeps the order of t's strides, so that a .T
    view stays one: a kernel that ignores a stride gets wrong values."""
    band = guard(t.numel())
    buffer = torch.full((t.numel() + 2 * band,), guard_value, dtype=t.dtype, device=t.device)
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))  # outermost dimension first
    dense = buffer[band : band + t.numel()].view([t.shape[d] for d in order])
    view = dense.permute([order.index(d) for d in range(t.dim())])
    view.copy_(t)
    return buffer, view


def apart(t, guard_value, step=2, gap=3):
    """As guarded(), but with gaps, as a slice x[:, ::2] has: t's elements lie `step` apart
    along its innermost dimension in memory, its rows `gap` elements more, and each matrix of a
    batch a row more. A kernel that ignores a stride gets wrong values (prepare gives each
    tensor a step and a gap of its own: one tensor's stride used for another's, too). A 1-D t:
    as guarded()."""
    if t.dim() < 2:
        return guarded(t, guard_value)
    order = sorted(range(t.dim()), key=lambda d: -t.stride(d))  # outermost dimension first
    outermost, *middle, inner = [t.shape[d] for d in order]
    padded = (outermost, *(size + 1 for size in middle), step * inner + gap)
    wide = torch.full(padded, guard_value, dtype=t.dtype, device=t.device)
    buffer, dense = guarded(wide, guard_value)
    view = dense[(slice(None), *(slice(size) for size in middle), slice(0, step * inner, step))]
    view = view.permute([order.index(d) for d in range(t.dim())])
    view.copy_(t)
    return buffer, view


def outside(numel):  # the offsets of a tensor's guard band, from its first element
    return list(range(-guard(numel), 0)) + list(range(numel, numel + guard(numel)))


def a_grid(grid):  # whether Triton launches on grid here: a function, or a tuple of ints
    if callable(grid):
        return True
    # (a list too, on a GPU; Triton's interpreter takes tuples only)
    kinds = tuple if common.INTERPRETED else (tuple, list)
    if not isinstance(grid, kinds) or not grid:
        return False
    try:
        [operator.index(n) for n in grid]
    except TypeError:  # an element that is no int (a float, a tensor of floats)
        return False
    return True


@triton.jit
def a_kernel():  # its type: what @triton.jit makes (under the interpreter, one it runs)
    pass


@contextlib.contextmanager
def recording(run):
    """Inside, every kernel[grid](...) (the __getitem__ of triton.runtime.KernelInterface, which
    @triton.jit, @triton.autotune and @triton.heuristics kernels share) is recorded in
    run.launches, and the output kept as each launch leaves it: the checker can then launch the
    kernel again, and tell the output the kernels wrote from one changed after them. A kernel
    called outside a launch, without [grid], raises a TypeError that says so."""
    interface, jit = triton.runtime.KernelInterface, type(a_kernel)
    original, called = interface.__getitem__, jit.__call__
    launching = []  # the launches running (a kernel calls @triton.jit functions inside one)

    def recorded(kernel, grid):
        if not a_grid(grid):  # (Triton's own error names neither the grid nor what it should be)
            raise TypeError(
                f"the grid is a tuple of ints, such as (n,), or a function returning one;"
                f" got {grid!r}"
            )

        def launch(*args, **kwargs):
            if not callable(grid) and 0 in [operator.index(n) for n in grid]:
                return original(kernel, grid)(*args, **kwargs)  # no program: no kernel's work
            if not run.launches:  # the output and buffers as the launch left them before
                run.before_kernels = run.out_buffer.clone()
                run.buffers_before = {n: view.clone() for n, (_, view) in run.scratch.items()}
            else:  # and what the host wrote since the last kernel
                run.host_wrote |= host_writes(run)
            run.launches.append((kernel, grid, args, kwargs))
            launching.append(kernel)
            try:
                launched = original(kernel, grid)(*args, **kwargs)
            finally:
                launching.pop()
            run.after_kernels = run.out_buffer.clone()
            run.buffers_after_each.append({n: v.clone() for n, (_, v) in run.scratch.items()})
            return launched

        return launch

    def call(kernel, *args, **kwargs):
        if not launching:
            raise TypeError("a kernel is launched as kernel[grid](...), its grid in brackets")
        return called(kernel, *args, **kwargs)

    interface.__getitem__, jit.__call__ = recorded, call
    try:
        yield
    finally:
        interface.__getitem__, jit.__call__ = original, called


@dataclasses.dataclass
class Run:
    out: torch.Tensor  # the output, a view into out_buffer
    out_buffer: torch.Tensor
    views: dict  # input name -> its guarded view
    buffers: dict  # input name -> (its buffer, the buffer's values before the launch)
    scratch: dict = dataclasses.field(default_factory=dict)  # name -> (buffer, view)
    launches: list = dataclasses.field(default_factory=list)  # (kernel, grid, args, kwargs)
    error: str = None  # what the learner's code raised, in one line
    before_kernels: torch.Tensor = None  # out_buffer as it was at the first recorded launch
    after_kernels: torch.Tensor = None  # out_buffer as the last recorded launch left it
    buffers_before: dict = None  # scratch name -> its view as it was at the first launch
    # scratch name -> its view as a launch left it, for each launch in turn
    buffers_after_each: list = dataclasses.field(default_factory=list)
    host_wrote: set = dataclasses.field(default_factory=set)  # changed between kernels, no fill
    remark: str = None  # what a launch written for the learner saw wrong (a Remark it returns)


def prepare(inputs, out_shape, guard_values=None, scratch=None, spaced=False, out_step=2):
    """Guarded copies of the inputs and a guarded output of NaN; guard_values: input name ->
    the value of its whole guard band (default 0), or -> (offsets, value) to change only those.
    spaced: the inputs and the output laid out apart(), the output's elements out_step apart."""
    views, buffers = {}, {}
    for name, t in inputs.items():
        step = 2 + len(views)  # (each input its own layout)
        buffer, views[name] = apart(t, 0.0, step, step + 1) if spaced else guarded(t, 0.0)
        spec = (guard_values or {}).get(name)
        if isinstance(spec, tuple):  # (offsets, value): those guard elements only
            offsets, value = spec
            buffer[[guard(t.numel()) + o for o in offsets]] = value
        elif spec is not None:  # the whole band
            band = guard(t.numel())
            buffer[:band], buffer[band + t.numel() :] = spec, spec
        buffers[name] = (buffer, buffer.clone())
    dtype = next(iter(inputs.values())).dtype
    template = torch.full(out_shape, float("nan"), dtype=dtype, device=common.DEVICE)
    if spaced:  # the output's step and gap after the inputs' (but a step of 1, where asked)
        step = out_step if out_step == 1 else 2 + len(views)
        out_buffer, out = apart(template, SENTINEL, step, 2 + len(views))
    else:
        out_buffer, out = guarded(template, SENTINEL)
    run = Run(out, out_buffer, views, buffers)
    for name, shape in (scratch or {}).items():
        nan = torch.full(shape(**inputs), float("nan"), dtype=dtype, device=common.DEVICE)
        run.scratch[name] = guarded(nan, SENTINEL)
    return run


def run_once(exercise, inputs, out_shape, guard_values=None, spaced=False):
    """The learner's launch on prepare()'s tensors, each kernel launch recorded."""
    run = prepare(inputs, out_shape, guard_values, exercise.scratch, spaced, exercise.out_step)
    try:
        scratch = {name: view for name, (_, view) in run.scratch.items()}
        with recording(run), time_limit(LAUNCH_SECONDS):
            returned = exercise.launch(**run.views, **scratch, out=run.out)
        run.remark = returned if isinstance(returned, Remark) else None
        if common.DEVICE.type == "cuda":
            torch.cuda.synchronize()
    except Exception as error:  # the learner's code: report it in a line, no traceback
        where = learners_line(error)
        # (a kernel stopped by the time limit: the interpreter raises its own error from it)
        error = next((e for e in causes(error) if isinstance(e, RanTooLong)), error)
        place = f"line {where.lineno} of {Path(where.filename).name}, in {where.name}"
        said = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        run.error = f"{said} ({place}){failed_assert(error)}"
    return run


def failed_assert(error):
    """'; Triton's check that failed: <its line>' where error comes from an assert without a
    message (the interpreter's tl.dot asserts its accumulator's dtype so); else ''."""
    for cause in causes(error):
        if isinstance(cause, AssertionError) and not str(cause) and cause.__traceback__:
            frame = traceback.extract_tb(cause.__traceback__)[-1]
            triton_s = "triton" in Path(frame.filename).parts  # (not the learner's own assert)
            if triton_s and frame.line and "msg" not in frame.line:  # (static_assert's: no use)
                return f"; Triton's check that failed: {frame.line}"
    return ""


def causes(error):  # error, and the errors it was raised from
    while error is not None:
        yield error
        error = error.__cause__ or error.__context__


class Remark(str):
    """What a launch that an exercise writes for the learner saw wrong (02's exercise 4: a flag
    no wait set back), returned for the checker to report."""


LAUNCH_SECONDS = 60  # a launch that runs longer: stopped, and reported (a loop that never ends?)


class RanTooLong(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    """Raises RanTooLong in the block after `seconds`, by a signal: it stops Python, and so a
    kernel under the interpreter, not a kernel running on a GPU. Off the main thread, or
    without SIGALRM (Windows), or where another alarm is set, the block runs unlimited."""
    alone = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if not alone or signal.getitimer(signal.ITIMER_REAL)[0] > 0:  # or another's alarm is set
        yield
        return

    def stop(signum, frame):
        raise RanTooLong(f"your launch ran past {seconds} s: a loop that never ends?")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def learners_line(error):
    """The last line of the learner's code (no installed package's, nor Python's own, nor this
    file's) in error's traceback or in those of the errors it was raised from (the interpreter
    raises its own, from the kernel's); else the traceback's last line."""
    frames = []
    python_own = Path(sysconfig.get_paths()["stdlib"]).resolve()
    for cause in causes(error):
        for frame in traceback.extract_tb(cause.__traceback__):
            path = Path(frame.filename).resolve()
            installed = {"site-packages", "dist-packages"} & set(path.parts)
            theirs = installed or python_own in path.parents or frame.filename == __file__
            made = frame.filename.startswith("<")  # <frozen abc>, or code dataclasses writes
            frames += [] if theirs or made else [frame]
    return frames[-1] if frames else traceback.extract_tb(error.__traceback__)[-1]


def stores_outside(run):
    """[(tensor name, offsets from its first element)] where a store left its tensor."""
    found = []
    written = {"out": (run.out_buffer, run.out), **run.scratch}
    for name, (buffer, view) in written.items():
        numel, width = view.numel(), guard(view.numel())
        band = torch.cat([buffer[:width], buffer[width + numel :]])
        changed = (band != SENTINEL).nonzero().flatten().tolist()
        if changed:
            found.append((name, [outside(numel)[i] for i in changed]))
    for name, (buffer, before) in run.buffers.items():
        hit = (buffer != before).nonzero().flatten().tolist()
        if hit:
            found.append((name, [h - guard(run.views[name].numel()) for h in hit]))
    return found


def the_launch(run):
    """(the recorded kernel, its grid, args, kwargs), or a reason why there is not one."""
    if len(run.launches) != 1:
        return f"(the launch launched {len(run.launches)} kernels: the checker cannot tell which)"
    kernel, grid, args, kwargs = run.launches[0]
    if callable(grid):
        return "(the grid is a function: the checker tells programs apart on a tuple, (n,))"
    if not isinstance(grid, tuple) or len(grid) != 1:
        return "(the grid is not a tuple of one axis: the checker cannot tell which program)"
    return kernel, grid, args, kwargs


def remapped(run, fresh, args, kwargs):
    """(args, kwargs) of the launch, each tensor in a buffer of `run` replaced by the same view
    of the buffer of `fresh` (out[0] too, not out alone)."""
    old = [b for b, _ in run.buffers.values()] + [b for b, _ in run.scratch.values()]
    new = [b for b, _ in fresh.buffers.values()] + [b for b, _ in fresh.scratch.values()]
    old, new = [*old, run.out_buffer], [*new, fresh.out_buffer]

    def fresh_view(a):
        if not isinstance(a, torch.Tensor):
            return a
        for o, n in zip(old, new):
            if a.untyped_storage().data_ptr() == o.untyped_storage().data_ptr():
                return n.as_strided(a.shape, a.stride(), a.storage_offset())
        return a

    return [fresh_view(a) for a in args], {k: fresh_view(a) for k, a in kwargs.items()}


def relaunch(run, programs, inputs, out_shape, scratch):
    """The recorded launch again with its first `programs` programs only, on fresh tensors."""
    kernel, _, args, kwargs = the_launch(run)
    fresh = prepare(inputs, out_shape, scratch=scratch)
    args, kwargs = remapped(run, fresh, args, kwargs)
    kernel[(programs,)](*args, **kwargs)
    return fresh


def who_stored_outside(run, inputs, out_shape, scratch, most=64):
    """Which program (on a 1-D grid) first stored outside, or why that cannot be told."""
    launch = the_launch(run)
    if isinstance(launch, str):
        return launch
    total = launch[1][0]
    for programs in range(1, min(total, most) + 1):
        if stores_outside(relaunch(run, programs, inputs, out_shape, scratch)):
            return f"program {programs - 1} (of {total}) made it"
    return f"(none of the first {min(total, most)} programs alone did)"


def same_output(run, other):
    """Whether two runs left the same output buffer, guard bands included (a value read from
    outside an input may be stored outside the output too)."""
    return same_values(run.out_buffer, other.out_buffer)


def read_offsets(exercise, inputs, out_shape, name, base, value):
    """Where, outside input `name`, the launch reads: on each side of the tensor, the nearest
    and the farthest offset read, as (first, last) ranges. Each is found by a binary search on
    windows of the guard band that start at the tensor's edge (nearest) or end at the band's
    (farthest): changing a window to value changes the output iff the launch reads inside it."""
    numel, width = inputs[name].numel(), guard(inputs[name].numel())

    def reads(offsets):  # whether changing these guard elements changes the output
        probe = run_once(exercise, inputs, out_shape, {name: (offsets, value)})
        return not same_output(probe, base)

    found = []
    for side in (list(range(-1, -width - 1, -1)), list(range(numel, numel + width))):
        if not reads(side):  # side: offsets from the tensor's edge outward
            continue
        low, high = 1, len(side)  # the shortest window from the edge that is read
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if reads(side[:middle]) else (middle + 1, high)
        nearest = low - 1
        low, high = nearest, len(side) - 1  # the last start of a window to the band's end
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if reads(side[middle:]) else (low, middle - 1)
        found.append(tuple(sorted((side[nearest], side[low]))))
    return sorted(found)


def describe(offsets, numel, ends_only=False):
    """Where offsets (numbers, or (first, last) ranges) lie against a tensor of numel elements;
    ends_only: a range's ends are known to be read, not each offset between."""
    ranges = []
    for first, last in sorted(o if isinstance(o, tuple) else (o, o) for o in offsets):
        if ranges and first <= ranges[-1][1] + 1:  # neighbours joined: 3, 4 and 5 is 3 to 5
            ranges[-1] = (ranges[-1][0], max(last, ranges[-1][1]))
        else:
            ranges.append((first, last))
    before = [r for r in ranges if r[1] < 0]
    after = [r for r in ranges if r[0] >= numel]
    parts = [f"offsets {spans(before)}, before its first element"] if before else []
    parts += [f"offsets {spans(after)}, past its last"] if after else []
    inside = "" if parts else f"offsets {spans(ranges)}"
    note = (
        "; a range: its two ends were read" if ends_only and any(a < b for a, b in ranges) else ""
    )
    return " and ".join(parts) + inside + f" (its elements are at offsets 0 to {numel - 1}{note})"


def spans(ranges):  # "3, 5 to 9, 12"
    text = [str(a) if a == b else f"{a} to {b}" for a, b in ranges]
    return ", ".join(text[:6]) + (", ..." if len(text) > 6 else "")


def check(exercise):
    """The exercise's report: (passed, lines)."""
    inputs = exercise.inputs()
    expected = exercise.reference(**{n: t.double() for n, t in inputs.items()})
    magnitude = exercise.reference(**{n: t.double().abs() for n, t in inputs.items()})
    run = run_once(exercise, inputs, expected.shape)
    lines = []
    if run.error:
        return False, [f"your code raised {run.error}"]
    if not run.launches:
        lines.append("your launch launched no kernel (kernel[grid](...)): the exercise asks for")
        lines[-1] += " a Triton kernel to compute the output, not PyTorch"
    elif not exercise.scratch and not same_values(run.after_kernels, run.out_buffer):
        lines.append("your launch changed the output after its kernel ran: the exercise asks")
        lines[-1] += " the kernel to compute it"
    elif written(run, run.before_kernels) and same_values(run.before_kernels, run.after_kernels):
        lines.append("your launch wrote the output before its kernel ran, which left it as it")
        lines[-1] += " was: the exercise asks the kernel to compute it"
    elif not a_fill(out_in(run, run.before_kernels)):
        lines.append("your launch wrote the output before its kernel ran (PyTorch computed a")
        lines[-1] += " part of it?): the exercise asks the kernel to compute it"
    for name, before in (run.buffers_before or {}).items():
        if not a_fill(before, lines=False):
            lines.append(f"your launch wrote the buffer {name} before its kernel ran (PyTorch")
            lines[-1] += " computed a part of it?): the exercise asks the kernel to compute it"
    for name in sorted(run.host_wrote):
        lines.append(f"your launch changed {name} between its kernels (PyTorch computed a part")
        lines[-1] += " of it?): the exercise asks the kernels to compute it"
    stored = stores_outside(run)
    if stored:  # the first program to store outside, wherever it stored
        whom = who_stored_outside(run, inputs, expected.shape, exercise.scratch)
    sizes = {"out": run.out, **{n: v for n, (_, v) in run.scratch.items()}, **inputs}
    for name, offsets in stored:
        where = describe(offsets, sizes[name].numel())
        if name == "out":
            lines.append(f"a store left the output: {where}; {whom}")
        elif name in run.scratch:
            lines.append(f"a store left the buffer {name}: {where}; {whom}")
        else:
            lines.append(f"a store wrote into input {name}: {where}; {whom}")
    for name, (_, view) in run.scratch.items():  # a buffer handed to the launch, NaN inside
        missed = view.isnan().nonzero().tolist()
        if missed:
            shown = ", ".join(str(tuple(i)) for i in missed[:SHOWN])
            lines.append(
                f"{len(missed)} of {view.numel()} elements of the buffer {name} are NaN (no "
                f"program wrote them, or one wrote NaN): {shown}"
            )
    unwritten = run.out.isnan().nonzero().tolist()
    if unwritten:
        shown = ", ".join(str(tuple(i)) for i in unwritten[:SHOWN])
        lines.append(
            f"{len(unwritten)} of {run.out.numel()} elements are NaN (no program wrote them, or "
            f"one wrote NaN): {shown}"
        )
    bound = common.allowed_error(
        run.out.dtype, expected, magnitude, exercise.terms, exercise.roundoff
    )
    wrong = ((run.out.double() - expected).abs() > bound) & ~run.out.isnan()
    if wrong.any():
        count = int(wrong.sum())
        lines.append(f"{count} element{'s' if count > 1 else ''} wrong, the first: ")
        lines[-1] += shown_elements(wrong, expected, run.out)
    if exercise.second_pass and not lines:  # the output right: and made from the buffers?
        # (as a kernel left them: a second pass of the learner's own may change them after)
        made = [exercise.second_pass(**left) for left in run.buffers_after_each]
        off = [~((m.double() - expected).abs() <= bound) for m in made]  # (NaN: off)
        if all(o.any() for o in off):
            off, made = off[-1], made[-1]
            lines.append(f"the output is right, but not made from {', '.join(run.scratch)}: the")
            lines[-1] += " launch's second pass, as written, gives from what your kernel"
            lines[-1] += f" stored there {int(off.sum())} wrong, the first: "
            lines[-1] += shown_elements(off, expected, made)
    if run.remark:
        lines.append(run.remark)
    if not same_output(run_once(exercise, inputs, expected.shape), run):
        lines.append("the output differs from one run to the next on the same inputs: a read of")
        lines[-1] += " memory nothing wrote, or programs racing to write one element"
        return False, lines  # the loads outside cannot be told apart from that
    for name, t in inputs.items():
        for value in (1000.0, float("nan")) if t.is_floating_point() else (1000.0,):
            changed = run_once(exercise, inputs, expected.shape, {name: value})
            if not same_output(changed, run):
                offsets = read_offsets(exercise, inputs, expected.shape, name, run, value)
                where = describe(offsets, t.numel(), ends_only=True)
                lines.append(f"a load read outside input {name}: {where}")
                break
    if exercise.strided and not lines:  # right where rows lie end to end: and apart?
        lines += apart_report(exercise, inputs, expected, bound)
    return not lines, lines


def out_in(run, buffer):  # the output's elements in buffer, a copy of run.out_buffer
    return buffer.as_strided(run.out.shape, run.out.stride(), run.out.storage_offset())


def written(run, buffer):  # whether a copy of run.out_buffer holds any output element not NaN
    return not out_in(run, buffer).isnan().all()


def a_fill(t, lines=True):
    """Whether the host's writes into t (NaN where none) are a fill, not a result: 0 or an
    infinity (a sum's or a max's start) into some elements; one value into all; or, with lines,
    one value a row or one a column of a matrix (0 beside -inf, a bias). A row or an element
    PyTorch computed, the others NaN, is no fill."""
    values = t[~t.isnan()]
    if not values.numel():
        return True
    one = bool((values == values[0]).all())
    if values.numel() < t.numel():
        return one and (values[0] == 0 or values[0].isinf()).item()
    if one or not lines or t.dim() != 2:
        return one
    return all(one_value(row) for row in t) or all(one_value(column) for column in t.T)


def host_writes(run):
    """{"the output", "the buffer <name>"}: where the host wrote since the last kernel (a launch
    is starting) anything but a fill."""
    found = set()
    if not same_values(run.out_buffer, run.after_kernels) and not a_fill(run.out):
        found.add("the output")
    for name, (_, view) in run.scratch.items():
        last = run.buffers_after_each[-1][name]
        if not same_values(view, last) and not a_fill(view, lines=False):
            found.add(f"the buffer {name}")
    return found


def one_value(t):  # whether t's elements that are not NaN (if any) all hold one value
    values = t[~t.isnan()]
    return not values.numel() or bool((values == values[0]).all())


def same_values(a, b):  # whether two tensors hold the same values, NaN where the other has NaN
    return torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))


def shown_elements(chosen, expected, got):  # "(i, j): expected x, got y; ..." for the first few
    return "; ".join(
        f"{tuple(i)}: expected {expected[tuple(i)].item():.5g}, got {got[tuple(i)].item():.5g}"
        for i in chosen.nonzero().tolist()[:SHOWN]
    )


def apart_report(exercise, inputs, expected, bound):
    """The launch run again on inputs and an output whose rows lie apart in memory (apart()):
    [a line saying what went wrong there], or [] where it computed the same."""
    run = run_once(exercise, inputs, expected.shape, spaced=True)
    layout = "with gaps in memory between the elements of the inputs and the output (as x[:, ::2]"
    layout += " has)"
    if run.error:
        return [f"{layout}, your code raised {run.error}"]
    lines = []
    wrong = ((run.out.double() - expected).abs() > bound) | run.out.isnan()
    if run.out.isnan().all():  # no store reached out: a copy of it took them?
        lines.append(f"{layout}, no element of the output was written: did the launch write a")
        lines[-1] += " copy (.reshape and .contiguous copy a tensor with gaps), or ignore a stride?"
    elif wrong.any():
        lines.append(f"{layout}, {int(wrong.sum())} of {wrong.numel()} elements are wrong or")
        lines[-1] += f" unwritten, the first: {shown_elements(wrong, expected, run.out)}: a"
        lines[-1] += " stride your kernel was given goes unused"
    gaps = run.out_buffer.clone()  # the output's buffer, its elements set to SENTINEL as its gaps
    out_in(run, gaps).fill_(SENTINEL)
    if (gaps != SENTINEL).any():
        lines.append(f"{layout}, a store left the output, into a gap or past its end")
    for name, (buffer, before) in run.buffers.items():
        if not same_values(buffer, before):
            lines.append(f"{layout}, a store wrote into input {name}")
    return lines


def draw(exercise, path):
    """A picture of which program wrote which output element, from the learner's kernel, at
    path: whether it was drawn (if not, it says why)."""
    from matplotlib.figure import Figure

    from tools import pictures

    inputs = exercise.inputs()
    shape = exercise.reference(**inputs).shape
    run = run_once(exercise, inputs, shape)
    launch = run.error or the_launch(run)
    if isinstance(launch, str):
        print(f"--draw cannot draw this launch: {launch}")
        return False
    fresh = prepare(inputs, shape, scratch=exercise.scratch)

    kernel, grid, args, kwargs = launch
    args, kwargs = remapped(run, fresh, args, kwargs)

    def launch_first(programs):  # the recorded launch, its first `programs` programs
        kernel[(programs,)](*args, **kwargs)

    owner = pictures.programs_along_axis(launch_first, grid[0], fresh.out)
    if (owner < 0).all():  # 04's exercise 3: its kernel writes partial sums, the host the output
        print("--draw cannot draw this launch: its kernel wrote no element of the output")
        return False
    owner = owner if owner.dim() == 2 else owner.reshape(1, -1)
    # Neighbouring rows (columns) that the same programs wrote are drawn as one: a tile a cell.
    rows, row_names = runs(owner)
    cols, col_names = runs(owner.T)
    owner = owner[rows][:, cols]
    figure = Figure(figsize=(8, 4), layout="constrained")
    labels = [[f"p{int(p)}" if p >= 0 else "none" for p in row] for row in owner]
    title = f"{exercise.title}: the program that wrote each output element (none: no program)"
    if len(cols) < fresh.out.shape[-1]:
        title += "\ncolumns, left to right: " + ", ".join(col_names)
    pictures.cells(figure.subplots(), owner, labels, title, row_names if len(rows) > 1 else [])
    figure.savefig(path, dpi=90)
    print(f"wrote {path}")
    return True


def with_kernels(launch, **kernels):
    """A copy of the function launch that finds these kernels under their names (a solution
    reuses an exercise's written launch with its own kernel)."""
    names = {**launch.__globals__, **kernels}
    copy = types.FunctionType(launch.__code__, names, launch.__name__, launch.__defaults__)
    # Triton reads a kernel's tl.constexpr parameters from its annotations: keep them.
    copy.__annotations__ = dict(launch.__annotations__)
    copy.__kwdefaults__, copy.__doc__ = launch.__kwdefaults__, launch.__doc__
    copy.__qualname__, copy.__module__ = launch.__qualname__, launch.__module__
    return copy


def runs(owner):
    """(the first row of each run of equal rows of owner, the runs as "first-last" names)."""
    firsts = [0] + [i for i in range(1, len(owner)) if not torch.equal(owner[i], owner[i - 1])]
    ends = [*firsts[1:], len(owner)]
    names = [f"{a}" if b - a == 1 else f"{a}-{b - 1}" for a, b in zip(firsts, ends)]
    return firsts, names


def sibling(module_file, name):
    """The module `name`.py beside module_file (tools.load_example: loaded by its path, once)."""
    return load_example(Path(module_file).resolve().parent / f"{name}.py")


def main(exercises_module, argv=None):
    """The command line of an exercises.py: check every exercise, or one (-e N). Of a
    solutions.py run by its path, too: its answers must pass, so it exits 1 on any "not yet"."""
    answers = Path(exercises_module.__file__).name == "solutions.py"
    parser = argparse.ArgumentParser(description=exercises_module.__doc__.splitlines()[0])
    parser.add_argument("-e", type=int, metavar="N", help="check exercise N only")
    if not answers:
        parser.add_argument("--solutions", action="store_true", help="check solutions.py instead")
        parser.add_argument("--strict", action="store_true", help="exit 1 on any 'not yet'")
    parser.add_argument("--draw", metavar="FILE.png", help="with -e N: draw who wrote what")
    args = parser.parse_args(argv)
    strict = answers or args.strict
    module = exercises_module
    if not answers and args.solutions:
        if not (Path(exercises_module.__file__).parent / "solutions.py").exists():
            parser.error("--solutions: there is no solutions.py beside this file")
        module = sibling(exercises_module.__file__, "solutions")
    chosen = range(1, len(module.EXERCISES) + 1) if args.e is None else [args.e]
    if args.e is not None and not 1 <= args.e <= len(module.EXERCISES):
        parser.error(f"-e takes 1 to {len(module.EXERCISES)}")
    if args.draw:
        if args.e is None:
            parser.error("--draw needs -e N")
        if problem := picture_problem(args.draw):
            parser.error(problem)
        return 0 if draw(module.EXERCISES[args.e - 1], args.draw) else 1  # 1: no picture
    print(common.describe_run())
    missed = 0
    for number in chosen:
        exercise = module.EXERCISES[number - 1]
        passed, lines = check(exercise)
        missed += not passed
        print(f"\nexercise {number}, {exercise.title}: {'passed' if passed else 'not yet'}")
        for line in lines:
            print(f"  - {line}")
    print(f"\n{len(chosen) - missed} of {len(chosen)} passed")
    return 1 if strict and missed else 0
