"""`make bench`: every lesson's benchmark(**case) over its SWEEP on the GPU; a table, results/<lesson>.csv and .png
per lesson. Times are eager calls (what a user pays, Python included, L2 flushed), the CUDA-graph replay of the
same work beside them; throughput comes from the eager time. The plot draws the copy ceiling where it applies."""

import argparse
import csv
import sys

from common import (INTERPRETED, REPO_ROOT, RESULT_COLUMNS, copy_ceiling_gbps, describe_run, example_paths,
                    load_example, print_table)

def plot(rows, title, path):
    import matplotlib
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    cases = list(dict.fromkeys(row["case"] for row in rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(cases)), 4.5))
    for variant in dict.fromkeys(row["variant"] for row in rows):
        xs, ys = zip(*[(cases.index(r["case"]), r["throughput"]) for r in rows if r["variant"] == variant])
        ax.plot(xs, ys, "--" if variant.startswith("torch") else "-", marker="o", label=variant)
    if rows[0]["unit"] == "GB/s":
        ax.axhline(copy_ceiling_gbps(), color="black", linestyle=":", label="copy ceiling")
    ax.set_xticks(range(len(cases)), cases, rotation=20, ha="right", fontsize=8)
    ax.set(ylabel=f"{rows[0]['unit']}, eager call")
    ax.set_title(f"{title}\n{describe_run()}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="+", metavar="TEXT", help="run only lessons whose folder name contains one of these")
    parser.add_argument("--out", default=str(REPO_ROOT / "results"), help="folder for CSV and PNG files (default: results/)")
    args = parser.parse_args(argv)
    if INTERPRETED:
        print("make bench measures a GPU; there is none here (or TRITON_INTERPRET=1). `make all` runs the lessons.")
        return 0
    (out := REPO_ROOT / args.out).mkdir(parents=True, exist_ok=True)
    print(f"{describe_run()}\ncopy ceiling: {copy_ceiling_gbps():.0f} GB/s (bytes read plus written, 1 GiB copy)")
    for path in example_paths():
        name = path.parent.name
        if args.only and not any(text in name for text in args.only):
            continue
        example = load_example(path)
        rows = [row for case in example.SWEEP for row in example.benchmark(**case)]
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
