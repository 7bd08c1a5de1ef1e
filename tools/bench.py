"""`make bench`: every lesson's benchmark(**case) over its SWEEP on the GPU, printed as a table
and written to results/<lesson>.csv and .png (the plot draws the copy ceiling for GB/s); then
lesson 02's matmul in four layouts on model and odd shapes (layouts.py), the host cost of an
eager call of each op.py entry (host.py) and a training step against PyTorch's ops
(train_step.py), written to results/layouts*.csv, host.csv and train_step.csv."""

import argparse
import csv
import sys
from pathlib import Path

# The repository's root, so that `python tools/bench.py` finds common and tools as `-m` does
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402
from tools import REPO_ROOT, example_paths, float32_matmul_precision, layouts, load_example  # noqa: E402
from tools import host, train_step  # noqa: E402


# What each lesson's plot shows, at most five bars a case: its first kernel, its fastest form or
# entry function, that kernel launched bare, and PyTorch's op, a black line over each case.
PLOTTED = {
    "01_matmul_elementwise": ["scalar", "vector_k", "vector_k_kernel[grid]"],
    "02_matmul_tiled": ["simple", "tuned", "fused", "persistent", "matmul_kernel[grid] bare"],
    "03_blocked_sum": ["simple", "split", "tuned", "one_d", "column_sum_kernel[grid] bare"],
    "04_weighted_sum": ["simple", "tuned", "wide", "forward_wide_kernel[grid] bare"],
}


# The file whose benchmark() times every kernel of a lesson: main.py, but 02's persistent.py, 03's
# block_ptr.py and 04's wide.py (their last parts), whose tables add their kernels' rows.
BENCHED = {"02_matmul_tiled": "persistent.py", "03_blocked_sum": "block_ptr.py"}
BENCHED["04_weighted_sum"] = "wide.py"


def plot(rows, name, path):
    """Grouped bars of throughput, one group per case, torch as a line over each group; the copy
    ceiling where the unit is GB/s; 04's forward and backward in two panels (" fwd", " bwd")."""
    from matplotlib.figure import Figure  # not pyplot: no display needed, no figure to close

    passes = [p for p in (" fwd", " bwd") if any(r["variant"].endswith(p) for r in rows)] or [""]
    figure = Figure(figsize=(11, 4 * len(passes)), layout="constrained")
    for ax, step in zip(figure.subplots(len(passes), 1, squeeze=False)[:, 0], passes):
        mine = [r for r in rows if r["variant"].endswith(step)]
        cases = list(dict.fromkeys(r["case"] for r in mine))
        value = {(r["case"], r["variant"].removesuffix(step)): r["throughput"] for r in mine}
        shown = [v for v in PLOTTED[name] if any((c, v) in value for c in cases)]
        width = 0.8 / max(len(shown), 1)
        for i, variant in enumerate(shown):
            xs = [x for x, c in enumerate(cases) if (c, variant) in value]
            heights = [value[(cases[x], variant)] for x in xs]
            ax.bar([x - 0.4 + (i + 0.5) * width for x in xs], heights, width, label=variant)
        for x, case in enumerate(cases):
            label = "torch (PyTorch's op)" if x == 0 else None
            ax.hlines(value[(case, "torch")], x - 0.45, x + 0.45, color="black", label=label)
        ceiling = (common.copy_ceiling_gbps() or 0) if mine[0]["unit"] == "GB/s" else 0
        if ceiling:
            ax.axhline(ceiling, color="grey", linestyle=":", label="copy ceiling")
        top = max(*value.values(), ceiling)
        if max(value.values()) / max(min(value.values()), 1e-9) > 50:  # 01: scalar is 100x off
            ax.set_yscale("log")
            ax.set_ylim(top=top * 8)  # room for the legend
        else:
            ax.set_ylim(0, top * 1.25)
        ax.set_xticks(range(len(cases)), cases, rotation=15, ha="right", fontsize=8)
        ax.set(ylabel=mine[0]["unit"], title=name + step)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, ncol=len(shown) + 2)
    figure.suptitle(common.describe_run(), fontsize=9)
    figure.savefig(path, dpi=90)
    return figure


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="TEXT",
        help="only lessons whose folder has a TEXT; 'layouts', 'host', 'train' for those tables",
    )
    parser.add_argument("--out", default="results", help="folder for the files (default: results)")
    args = parser.parse_args(argv)
    folders, tables = [path.parent.name for path in example_paths()], ["layouts", "host", "train"]
    for text in args.only or []:  # a part of a folder's name, or a table's word
        if text not in tables and not any(text in folder for folder in folders):
            parser.error(f"--only {text}: in no folder's name ({', '.join(folders)}), no table "
                         f"({', '.join(tables)})")  # fmt: skip
    if common.INTERPRETED:
        print("make bench measures a GPU; there is none here (or TRITON_INTERPRET=1).")
        print("`make all` runs the lessons.")
        return 1  # nothing measured
    out = REPO_ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    print(common.describe_run())
    print(f"copy ceiling: {common.copy_ceiling_gbps():.0f} GB/s (read plus written, 1 GiB copy)")
    for path in example_paths():
        name = path.parent.name
        if args.only and not any(text in name for text in args.only):
            continue
        example = load_example(path.parent / BENCHED.get(name, "main.py"))
        rows = []
        for case in example.SWEEP:  # a case's "precision": torch's float32 matmul precision
            case = dict(case)
            with float32_matmul_precision(case.pop("precision", None)):
                rows += example.benchmark(**case)
        print(f"\n## {name}")
        common.print_table(rows, list(rows[0]))  # each lesson's rows name their own columns
        write_csv(rows, out / f"{name}.csv")
        plot(rows, name, out / f"{name}.png")
        print(f"wrote {out / name}.csv and .png")
    if not args.only or "layouts" in args.only:
        for name, shapes in (("layouts", None), ("layouts_odd", layouts.ODD_SHAPES)):
            rows = layouts.measure(shapes)
            print(f"\n## {name}: 02's matmul in four layouts (GPU ms; x torch: torch / ours)")
            common.print_table(rows, list(rows[0]))
            print()
            summary = layouts.summary(rows)
            common.print_table(summary, list(summary[0]))
            write_csv(rows, out / f"{name}.csv")
            print(f"wrote {out / name}.csv")
    # The tables that are not a lesson's: --only's word, what measures it, its title, its file.
    tables = (
        ("host", host.measure, "us of an eager call in a plain loop, beside its kernels' bare "
         "launches (kernel[grid]) and the same launches through common/launch.py", "host.csv"),
        ("train", train_step.measure, "ms per step, ours (02's matmul, 04's weighted_sum) and "
         "PyTorch's ops", "train_step.csv"),
    )  # fmt: skip
    for word, measure, title, file in tables:
        if not args.only or word in args.only:
            rows = measure()
            print(f"\n## {word}: {title}")
            common.print_table(rows, list(rows[0]))
            write_csv(rows, out / file)
            print(f"wrote {out / file}")


if __name__ == "__main__":
    sys.exit(main())
