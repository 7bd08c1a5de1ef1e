"""`make bench`: every lesson's benchmark(**case) over its SWEEP on the GPU, printed as a table
and written to results/<lesson>.csv and .png (the plot draws the copy ceiling for GB/s); then
lesson 02's matmul in four layouts on model and odd shapes (layouts.py) and a training step
against PyTorch's ops (train_step.py), written to results/layouts*.csv and train_step.csv."""

import argparse
import csv

import common
from tools import REPO_ROOT, example_paths, float32_matmul_precision, layouts, load_example
from tools import train_step


def plot(rows, title, path):  # throughput by case, a line per variant
    from matplotlib.figure import Figure  # not pyplot: no display needed, no figure to close

    x_of = {case: x for x, case in enumerate(dict.fromkeys(row["case"] for row in rows))}
    ax = Figure(figsize=(max(6, 1.6 * len(x_of)), 4.5)).subplots()
    for v in dict.fromkeys(row["variant"] for row in rows):
        xs, ys = zip(*[(x_of[r["case"]], r["throughput"]) for r in rows if r["variant"] == v])
        ax.plot(xs, ys, "--" if v.startswith("torch") else "-", marker="o", label=v)
    if rows[0]["unit"] == "GB/s":
        ax.axhline(common.copy_ceiling_gbps(), color="black", linestyle=":", label="copy ceiling")
    ax.set_xticks(range(len(x_of)), list(x_of), rotation=20, ha="right", fontsize=8)
    ax.set_title(f"{title}\n{common.describe_run()}", fontsize=9)
    ax.set(ylabel=rows[0]["unit"])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.figure.savefig(path, dpi=110, bbox_inches="tight")


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
        help="only lessons whose folder has a TEXT; 'layouts', 'train' for those tables",
    )
    parser.add_argument("--out", default="results", help="folder for the files (default: results)")
    args = parser.parse_args(argv)
    if common.INTERPRETED:
        print("make bench measures a GPU; there is none here (or TRITON_INTERPRET=1).")
        print("`make all` runs the lessons.")
        return
    out = REPO_ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    print(common.describe_run())
    print(f"copy ceiling: {common.copy_ceiling_gbps():.0f} GB/s (read plus written, 1 GiB copy)")
    for path in example_paths():
        name = path.parent.name
        if args.only and not any(text in name for text in args.only):
            continue
        example = load_example(path)
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
    if not args.only or "train" in args.only:
        rows = train_step.measure()
        print("\n## train: ms per step, ours (02's matmul, 04's weighted_sum) and PyTorch's ops")
        common.print_table(rows, list(rows[0]))
        write_csv(rows, out / "train_step.csv")
        print(f"wrote {out / 'train_step.csv'}")


if __name__ == "__main__":
    main()
