"""How each op.py loads the lesson beside it, main.py, without disturbing its caller.

A lesson imports this repository's `common` and `tools`. A script that uses an op may have
modules of those names too, and its own sys.path: load_lesson puts both back afterwards, so
that neither hides the other. op.py loads this file by its path, for the same reason.
"""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
# The repository's modules that a lesson imports, by their files
SHARED = {
    "common": ROOT / "common" / "__init__.py",
    "tools": ROOT / "tools" / "__init__.py",
    "lesson_loader": ROOT / "lesson_loader.py",
}


def load_lesson(folder, file="main.py"):
    """`file` in `folder`: main.py as the module example_<folder>, another file (02's
    persistent.py) as <stem>_<folder>; the names the tests and `make bench` load them by, so that
    all share one copy."""
    folder = Path(folder).resolve()
    stem = Path(file).stem
    name = ("example" if stem == "main" else stem) + "_" + folder.name
    if name in sys.modules:
        return sys.modules[name]
    path, saved = list(sys.path), {n: sys.modules.get(n) for n in SHARED}
    for module_name, module in saved.items():
        where = Path(getattr(module, "__file__", None) or "/").resolve()
        if module is not None and where != SHARED[module_name]:
            del sys.modules[module_name]  # the caller's: the lesson imports ours instead
    try:
        spec = importlib.util.spec_from_file_location(name, folder / file)
        lesson = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(lesson)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.path[:] = path
        for module_name, module in saved.items():
            if module is None:
                sys.modules.pop(module_name, None)
            else:
                sys.modules[module_name] = module
    return lesson
