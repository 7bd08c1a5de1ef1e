"""How op.py launches a kernel on a GPU outside torch.compile: the kernel Triton compiled for this
kind of call, launched directly.

At every call, kernel[grid](*args) does work that depends only on the kind of its arguments. It
binds them to the kernel's parameters. It works out what Triton compiles for: each tensor's dtype
and whether its address is a multiple of 16, and whether each int is 1 or a multiple of 16. It
looks up the compiled kernel, and an autotuner looks up its tuned config. A Launcher does that
once per kind of call, through kernel[grid] itself, and keeps what it returns: the compiled
kernel, which Triton launches as compiled[grid](*every argument in the signature's order). On an
H200 an autotuned kernel's launch then costs the host 0.42 to 0.88 of kernel[grid]'s time, in
our runs; a @triton.jit kernel's about the same, or 0.65 where the caller names the kind itself
(a Named launcher: results/README.md's host table)."""

import inspect
import operator
import threading

import torch
import triton

KINDS_KEPT = 1024  # kinds of call a Launcher keeps: past that, it forgets them and starts again
LAUNCHERS = {}  # id(kernel) -> its Launcher
# Triton's autotuner keeps the call it runs on itself (its arguments, then its pick): two threads
# in one autotuner at once failed ("'NoneType' object is not a mapping") or could read each
# other's pick. So op.py's calls that go through Triton's own launch (kernel[grid]) take turns;
# a Launcher's later launches, of the kernel Triton compiled, need no turn.
THROUGH_TRITON = threading.RLock()
# The arguments whose kind call_kind knows (besides tensors); a call with another, such as a
# tuple or a host-side tensor descriptor, goes through Triton each time.
SCALARS = (bool, int, float, str, type(None))


def launcher(kernel, kind=None):
    """kernel's Launcher, made at its first launch; kernel itself where it is neither a
    @triton.jit kernel nor a @triton.autotune of one (a @triton.heuristics kernel, for one), or
    takes *args or **kwargs. kind: the caller's name for the kind of the calls it makes through
    what this returns, in place of call_kind's (a Named launcher)."""
    if (found := LAUNCHERS.get(id(kernel))) is None:
        jit = jit_function(kernel)
        if not isinstance(jit, triton.runtime.JITFunction):
            return kernel
        parameter_kinds = {p.kind for p in jit.signature.parameters.values()}
        if parameter_kinds & {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
            return kernel
        LAUNCHERS[id(kernel)] = found = Launcher(kernel)
    return found if kind is None else Named(kernel, kind)


def jit_function(kernel):  # the @triton.jit kernel that kernel launches: an autotuner's, or itself
    return kernel.fn if isinstance(kernel, triton.runtime.Autotuner) else kernel


def forget():
    """Drops every Launcher and what it keeps: call it after changing an autotuner's configs,
    whose earlier pick a Launcher would otherwise launch again, or Triton's knobs (debug), or a
    global that a kernel reads (Triton raises; a Launcher would launch what it compiled before).
    A Named launcher that a caller keeps launches through the kernel's new Launcher."""
    LAUNCHERS.clear()


class Launcher:
    """launcher[grid](*args, **kwargs) runs kernel[grid](*args, **kwargs), for a @triton.jit
    kernel or a @triton.autotune of one."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.jit = jit_function(kernel)
        parameters = self.jit.signature.parameters.values()
        self.defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
        self.kinds = {}  # kind of call -> (compiled kernel, arguments left out, their order)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launch(grid, args, kwargs)

    def launch(self, grid, args, kwargs, named=None):
        if named is None:
            kind = call_kind(args, kwargs)
        else:  # the caller's kind (a Named launcher's), on the current device
            kind = (torch.cuda.current_device(), "named", named)
        known = False if kind is None else self.kinds.get(kind)
        if known is None:  # Triton binds, compiles or tunes, and launches
            with THROUGH_TRITON:  # (reusable() reads the autotuner's pick of this call)
                compiled = self.kernel[grid](*args, **kwargs)
                if len(self.kinds) >= KINDS_KEPT:
                    self.kinds.clear()
                self.kinds[kind] = self.reusable(compiled, len(args), kwargs)
            return
        if known is False:  # no kind, or one this Launcher leaves to Triton: Triton each call
            with THROUGH_TRITON:
                self.kernel[grid](*args, **kwargs)
            return
        compiled, left_out, in_order = known
        arguments = in_order((*args, *kwargs.values(), *left_out))
        if callable(grid):
            grid = grid(dict(zip(self.jit.arg_names, arguments)))
        compiled[(*grid, 1, 1)[:3]](*arguments)

    def reusable(self, compiled, given, kwargs):
        """(compiled, the values of the arguments a call of this kind leaves out: defaults and
        the tuned config's, a function that puts the call's and those in the signature's order),
        or False where a launch must go through Triton each time: a config's pre_hook, the
        kernel's pre-run hooks, or a compiled kernel that Triton did not return."""
        config = getattr(self.kernel, "best_config", None)  # an autotuner's pick for this kind
        names = self.jit.arg_names
        hooks = (config is not None and config.pre_hook is not None) or self.jit.pre_run_hooks
        if hooks or compiled is None or not names:
            return False
        if hasattr(compiled, "result"):  # Triton may compile asynchronously
            compiled = compiled.result()
        # its options too (num_warps), which are no arguments
        tuned = {} if config is None else config.all_kwargs()
        left_out = self.defaults | {k: v for k, v in tuned.items() if k in names}
        left_out = {k: v for k, v in left_out.items() if k not in names[:given] and k not in kwargs}
        # where each argument is in (*args, *kwargs.values(), *left_out.values())
        where = {name: i for i, name in enumerate((*names[:given], *kwargs, *left_out))}
        pick = operator.itemgetter(*[where[name] for name in names])
        in_order = pick if len(names) > 1 else lambda values: (pick(values),)
        return compiled, tuple(left_out.values()), in_order


class Named:
    """named[grid](*args, **kwargs) launches as launcher[grid](*args, **kwargs), but keys the
    launch by the caller's kind instead of call_kind's: computing call_kind costs the host about
    4 us for 18 arguments, and a caller may know the kind already (op.py's plans do). The kind
    must tell apart every two calls that call_kind() tells apart, but for the current device,
    and every call made with one kind must give the same arguments by position and by name."""

    def __init__(self, kernel, kind):
        self.kernel, self.kind = kernel, kind

    def __getitem__(self, grid):
        found = launcher(self.kernel)  # the kernel's Launcher now (forget() makes a new one)
        return lambda *args, **kwargs: found.launch(grid, args, kwargs, self.kind)


def call_kind(args, kwargs):
    """What Triton compiles and tunes a kernel for, of a call with these arguments (a key), or
    None for an argument of a type not in SCALARS: the current device; each tensor's dtype and
    whether its address is a multiple of 16; the type and value of every other argument (an
    int's decides whether it is 1 or a multiple of 16, and an autotuner's key reads ints); the
    names of those given by name."""
    kinds = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            kinds.append((value.dtype, value.data_ptr() % 16 == 0))
        elif type(value) in SCALARS:
            kinds.append((type(value), value))
        else:
            return None
    return (torch.cuda.current_device(), *kinds, *kwargs)
