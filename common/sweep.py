"""`make bench`: every lesson's benchmark(**case) over its SWEEP on the GPU; a table, and
results/<lesson>.csv and .png, per lesson. The plot draws the copy ceiling where it applies."""

import argparse
import csv
import sys

from common import (
    INTERPRETED,
    REPO_ROOT,
    copy_ceiling_gbps,
    describe_run,
    example_paths,
    load_example,
    print_table,
)


def plot(rows, title, path):
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    cases = list(dict.fromkeys(row["case"] for row in rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(cases)), 4.5))
    for variant in dict.fromkeys(row["variant"] for row in rows):
        points = [
            (cases.index(r["case"]), r["throughput"]) for r in rows if r["variant"] == variant
        ]
        xs, ys = zip(*points)
        ax.plot(xs, ys, "--" if variant.startswith("torch") else "-", marker="o", label=variant)
    if rows[0]["unit"] == "GB/s":
        ax.axhline(copy_ceiling_gbps(), color="black", linestyle=":", label="copy ceiling")
    ax.set_xticks(range(len(cases)), cases, rotation=20, ha="right", fontsize=8)
    ax.set(ylabel=rows[0]["unit"])
    ax.set_title(f"{title}\n{describe_run()}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="TEXT",
        help="run only lessons whose folder name contains one of these",
    )
    parser.add_argument(
        "--out",
        default=str(REPO_ROOT / "results"),
        help="folder for CSV and PNG files (default: results/)",
    )
    args = parser.parse_args(argv)
    if INTERPRETED:
        print("make bench measures a GPU; there is none here (or TRITON_INTERPRET=1).")
        print("`make all` runs the lessons.")
        return 0
    (out := REPO_ROOT / args.out).mkdir(parents=True, exist_ok=True)
    print(describe_run())
    print(f"copy ceiling: {copy_ceiling_gbps():.0f} GB/s (bytes read plus written, 1 GiB copy)")
    for path in example_paths():
        name = path.parent.name
        if args.only and not any(text in name for text in args.only):
            continue
        example = load_example(path)
        rows = [row for case in example.SWEEP for row in example.benchmark(**case)]
        columns = list(rows[0])  # each lesson's rows name their own columns
        print(f"\n## {name}")
        print_table(rows, columns)
        with open(out / f"{name}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
        plot(rows, name, out / f"{name}.png")
        print(f"wrote {out / (name + '.csv')} and {out / (name + '.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
