"""How op.py launches a kernel on a GPU outside torch.compile: the kernel Triton compiled for this
kind of call, launched directly.

At every call, kernel[grid](*args) does work that depends only on the kind of its arguments. It
binds them to the kernel's parameters. It works out what Triton compiles for: each tensor's dtype
and whether its address is a multiple of 16, and whether each int is 1 or a multiple of 16. It
looks up the compiled kernel, and an autotuner looks up its tuned config. A Launcher does that
once per kind of call, through kernel[grid] itself, and keeps what it returns: the compiled
kernel, which Triton launches as compiled[grid](*every argument in the signature's order). On an
H200 an autotuned kernel's launch then costs the host a third to a half less; a @triton.jit
kernel's about the same (results/README.md's host table)."""

import operator

import torch
import triton

KINDS_KEPT = 1024  # kinds of call a Launcher keeps: past that, it forgets them and starts again
LAUNCHERS = {}  # id(kernel) -> its Launcher


def launcher(kernel):
    """kernel's Launcher, made at its first launch; kernel itself where it is neither a
    @triton.jit kernel nor a @triton.autotune of one (a @triton.heuristics kernel, for one)."""
    if (found := LAUNCHERS.get(id(kernel))) is not None:
        return found
    jit = kernel.fn if isinstance(kernel, triton.runtime.Autotuner) else kernel
    if not isinstance(jit, triton.runtime.JITFunction):
        return kernel
    LAUNCHERS[id(kernel)] = found = Launcher(kernel)
    return found


def forget():
    """Drops every Launcher and what it keeps: call it after changing an autotuner's configs,
    whose earlier pick a Launcher would otherwise launch again."""
    LAUNCHERS.clear()


class Launcher:
    """launcher[grid](*args, **kwargs) runs kernel[grid](*args, **kwargs), for a @triton.jit
    kernel or a @triton.autotune of one."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.jit = kernel.fn if isinstance(kernel, triton.runtime.Autotuner) else kernel
        parameters = self.jit.signature.parameters.values()
        self.defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
        self.kinds = {}  # kind of call -> (compiled kernel, arguments left out, their order)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launch(grid, args, kwargs)

    def launch(self, grid, args, kwargs):
        kind = call_kind(args, kwargs)
        known = self.kinds.get(kind)
        if known is None:  # Triton binds, compiles or tunes, and launches
            compiled = self.kernel[grid](*args, **kwargs)
            if len(self.kinds) >= KINDS_KEPT:
                self.kinds.clear()
            self.kinds[kind] = self.reusable(compiled, len(args), kwargs)
            return
        if known is False:  # a kind this Launcher leaves to Triton each call
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
        or False where a launch must go through Triton: a config's pre_hook runs each launch."""
        config = getattr(self.kernel, "best_config", None)  # an autotuner's pick for this kind
        if config is not None and config.pre_hook is not None:
            return False
        if hasattr(compiled, "result"):  # Triton may compile asynchronously
            compiled = compiled.result()
        names = self.jit.arg_names
        # its options too (num_warps), which are no arguments
        tuned = {} if config is None else config.all_kwargs()
        left_out = self.defaults | {k: v for k, v in tuned.items() if k in names}
        left_out = {k: v for k, v in left_out.items() if k not in names[:given] and k not in kwargs}
        # where each argument is in (*args, *kwargs.values(), *left_out.values())
        where = {name: i for i, name in enumerate((*names[:given], *kwargs, *left_out))}
        pick = operator.itemgetter(*[where[name] for name in names])
        in_order = pick if len(names) > 1 else lambda values: (pick(values),)
        return compiled, tuple(left_out.values()), in_order


def call_kind(args, kwargs):
    """What Triton compiles and tunes a kernel for, of a call with these arguments (a key): the
    current device; each tensor's dtype and whether its address is a multiple of 16; the type
    and value of every other argument (an int's decides whether it is 1 or a multiple of 16, and
    an autotuner's key reads ints); the names of those given by name."""
    values = (*args, *kwargs.values())
    kinds = [
        (v.dtype, v.data_ptr() % 16 == 0) if isinstance(v, torch.Tensor) else (type(v), v)
        for v in values
    ]
    return (torch.cuda.current_device(), *kinds, *kwargs)
