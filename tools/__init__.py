"""What the drivers outside the lessons share: `make bench` (bench.py), tile_sweep.py and the
tests load each lesson by its path, since no import statement can name a folder like 01_..."""

import argparse
import contextlib
import os
from pathlib import Path

import lesson_loader
import torch

REPO_ROOT = Path(__file__).resolve().parent.parent


def load_example(path):
    """A file of a lesson's folder, by lesson_loader as op.py loads it: main.py as the module
    example_<folder> (one copy for all), another (op.py, persistent.py, exercises.py, ...) as
    <file>_<folder>; each imported once."""
    path = Path(path).resolve()
    return lesson_loader.load_lesson(path.parent, path.name)


def example_paths():  # every lesson's main.py, in reading order
    return sorted(REPO_ROOT.glob("[0-9][0-9]_*/main.py"))


@contextlib.contextmanager
def float32_matmul_precision(precision):  # "highest", "high", "medium", or None: unchanged
    """Inside, torch.set_float32_matmul_precision(precision); afterwards, the setting before."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision or before)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def lesson_parser(lesson):
    """The ArgumentParser of a lesson's main(): --help shows the defaults; --draw FILE.png and
    --asm draw or print, then exit (pictures.py, asm.py), once the whole command line parses."""
    formatter = argparse.ArgumentDefaultsHelpFormatter
    parser = LessonParser(
        description=lesson.__doc__.splitlines()[0],
        epilog=lesson_epilog(lesson),
        formatter_class=formatter,
    )
    view = dict(action=ShowAndExit, const=lesson, default=argparse.SUPPRESS)
    # stream_k.py has a picture of its own (pictures.DRAWINGS); the other files, main.py's
    whose = "" if Path(lesson.__file__).name in ("main.py", "stream_k.py") else " (main.py's)"
    about = f"draw which program computes which part of the output (.png, .svg), then exit{whose}"
    about += "; at the lesson's own small sizes: the other options do not apply"
    parser.add_argument("--draw", metavar="FILE.png", help=about, **view)
    about = "print the compiled kernels' lines that show what this lesson teaches, then exit;"
    about += " at the lesson's own sizes and dtypes: the other options do not apply"
    parser.add_argument("--asm", nargs=0, help=about, **view)
    return parser


NOT_PARTS = ("main.py", "op.py", "exercises.py", "solutions.py")  # a lesson's other files


def lesson_epilog(lesson):
    """--help's last lines: where the kernels run, and the files the lesson goes on in."""
    path = Path(lesson.__file__)
    text = (
        "Without CUDA, Triton's interpreter runs the kernels on the CPU, one program at a time: "
        "keep sizes near the defaults."
    )
    if path.name != "main.py":
        return f"{text} This file goes on from main.py beside it."
    parts = sorted(p.name for p in path.parent.glob("*.py") if p.name not in NOT_PARTS)
    if parts:
        each = "each a script" if len(parts) > 1 else "a script"
        text += f" The lesson goes on in {', '.join(parts)}, {each} (see its --help)."
    return f"{text} op.py wraps its kernels for a model; exercises.py is its practice."


class ShowAndExit(argparse.Action):  # const: the lesson's module
    def __call__(self, parser, namespace, values, option_string=None):
        namespace.view = (option_string, values, self.const)  # LessonParser acts on it


class LessonParser(argparse.ArgumentParser):
    """Acts on --draw or --asm after the whole command line parses: an unknown option or a bad
    value after either is an error, as before it, and -h anywhere shows the help."""

    def parse_args(self, args=None, namespace=None):
        parsed = super().parse_args(args, namespace)
        if (view := vars(parsed).pop("view", None)) is None:
            return parsed
        option, path, lesson = view
        if option == "--draw":
            from tools import pictures  # imports matplotlib: only when asked

            if problem := picture_problem(path):
                self.error(problem)
            self.exit(pictures.draw(lesson, path))
        from tools import asm

        self.exit(asm.show(lesson))


def picture_problem(path):
    """Why --draw cannot write a picture to path (no such folder, or a kind of file matplotlib
    does not write), or None."""
    from matplotlib.backend_bases import FigureCanvasBase  # only when asked

    path, kinds = Path(path), FigureCanvasBase.get_supported_filetypes()
    kinds.pop("pgf", None)  # needs a TeX installation
    if not path.parent.is_dir():
        return f"--draw {path}: there is no folder {path.parent}"
    if path.is_dir():
        return f"--draw {path}: a folder of that name is there; name a file"
    if not os.access(path.parent, os.W_OK):
        return f"--draw {path}: the folder {path.parent} cannot be written"
    if path.suffix[1:].lower() not in kinds:
        return f"--draw {path}: name a .png file (or another kind matplotlib writes, as .svg)"
    return None
