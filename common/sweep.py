"""`make bench`: run every example's benchmark over its SWEEP of sizes and dtypes on the GPU.

Prints one table per example and writes results/<example>.csv and results/<example>.png
(throughput per case, one line per variant and one for PyTorch). Each example defines
SWEEP, a list of keyword-argument dicts, and benchmark(**case), which returns result rows.
"""

import argparse
import csv
import sys

from common import INTERPRETED, REPO_ROOT, RESULT_COLUMNS, describe_run, example_paths, load_example, print_table


def plot(rows, title, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(row["case"] for row in rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(cases)), 4.5))
    for variant in dict.fromkeys(row["variant"] for row in rows):
        points = [(cases.index(r["case"]), r["throughput"]) for r in rows if r["variant"] == variant]
        xs, ys = zip(*points)
        style = "--" if variant.startswith("torch") else "-"
        ax.plot(xs, ys, style, marker="o", label=variant)
    ax.set_xticks(range(len(cases)), cases, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(rows[0]["unit"])
    ax.set_title(f"{title}\n{describe_run()}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", metavar="TEXT", help="run only examples whose folder name contains one of these")
    parser.add_argument("--out", default=str(REPO_ROOT / "results"), help="folder for CSV and PNG files")
    args = parser.parse_args(argv)
    if INTERPRETED:
        print("make bench measures GPU performance and this machine has no CUDA GPU (or TRITON_INTERPRET=1).")
        print("Nothing to do. `make all` runs every example under the interpreter.")
        return 0
    out = REPO_ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    print(describe_run())
    for path in example_paths():
        name = path.parent.name
        if args.only and not any(text in name for text in args.only):
            continue
        example = load_example(path)
        rows = []
        for case in example.SWEEP:
            rows += example.benchmark(**case)
        print(f"\n## {name}")
        print_table(rows, RESULT_COLUMNS)
        with open(out / f"{name}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=RESULT_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        plot(rows, name, out / f"{name}.png")
        print(f"wrote {out / (name + '.csv')} and {out / (name + '.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
