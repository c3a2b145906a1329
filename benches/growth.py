#!/usr/bin/env python3
"""Growth: W1 and W4 cost per unit as the number of live Gs grows (1_000 to 1_000_000), on goro
(benches/growth.rs) and on every Go found (benches/go/growth), as a Markdown table and an SVG
line chart. Cost per unit should stay flat; the table shows where it does not.

Go is found as benches/compare.py finds it ($GO, `go` on PATH, Debian's Go 1.19); it installs
nothing. Each round runs every system over every point; the table shows the median of the
rounds' medians.

Usage: benches/growth.py [--rounds N] [--svg FILE] [--points 1000,1000000]
"""
import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import ROOT, bench_package, env, find_gos  # noqa: E402

DEFAULT_POINTS = [1_000, 10_000, 100_000, 1_000_000]


def parse(out, results):
    """Adds the `growth W1 live=1000 <system> median_ns_per_unit=...` lines of `out`."""
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0] == "growth":
            live = int(f[2].split("=")[1])
            ns = float(f[4].split("=")[1])
            system = "goro" if f[3] == "goro" else f[3]
            results.setdefault((f[1], system, live), []).append(ns)


def chart(path, med, systems, points):
    """Two panels (W1, W4): ns per unit against live Gs (log scale), one line per system."""
    colors = ["#00add8", "#5a5a5a", "#a0a0a0", "#dea584"]
    pw, ph, ml, mt = 360, 220, 60, 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * (pw + ml) + 40}" height="{ph + mt + 80}" '
           'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="20" font-size="14" font-weight="bold">Cost per unit as live Gs grow '
           '(ns, lower is better; flat is the goal)</text>']
    for k, wid in enumerate(["W1", "W4"]):
        x0 = ml + k * (pw + ml + 20)
        vals = [med[(wid, s, p)] for s in systems for p in points if (wid, s, p) in med]
        if not vals:
            continue
        top = max(vals) * 1.15
        out.append(f'<text x="{x0}" y="{mt - 8}" font-weight="bold">{wid} '
                   f'{"spawn_many (per G)" if wid == "W1" else "pingpong_unbuffered (per round trip)"}</text>')
        out.append(f'<rect x="{x0}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#ccc"/>')
        for t in range(0, 5):
            v = top * t / 4
            y = mt + ph - ph * t / 4
            out.append(f'<text x="{x0 - 6}" y="{y + 4:.0f}" text-anchor="end" fill="#555">{v:.0f}</text>')
        xs = {p: x0 + pw * (i + 0.5) / len(points) for i, p in enumerate(points)}
        for p, x in xs.items():
            out.append(f'<text x="{x:.0f}" y="{mt + ph + 16}" text-anchor="middle" fill="#555">{p:,}</text>')
        out.append(f'<text x="{x0 + pw / 2}" y="{mt + ph + 32}" text-anchor="middle">live Gs</text>')
        for j, s in enumerate(systems):
            pts = [(xs[p], mt + ph - ph * med[(wid, s, p)] / top) for p in points if (wid, s, p) in med]
            if not pts:
                continue
            c = colors[j % len(colors)]
            out.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
                c, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
            out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{c}"/>' for x, y in pts]
            out.append(f'<text x="{x0 + 8}" y="{mt + 14 + 13 * j}" fill="{c}">{s}</text>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--svg")
    ap.add_argument("--points", default=",".join(map(str, DEFAULT_POINTS)))
    args = ap.parse_args()
    points = [int(p) for p in args.points.split(",")]
    gos = find_gos()
    subprocess.run(["cargo", "bench", "--no-run", "-q"] + bench_package() + ["--bench", "growth"], cwd=ROOT, check=True)
    results = {}
    for r in range(args.rounds):
        out = subprocess.run(["cargo", "bench", "-q"] + bench_package() + ["--bench", "growth", "--"] + list(map(str, points)),
                             cwd=ROOT, env=env(), check=True, capture_output=True, text=True).stdout
        parse(out, results)
        for v, go in sorted(gos.items()):
            out = subprocess.run([go, "run", "./growth", "-runs", "7"] + list(map(str, points)), cwd=ROOT / "benches" / "go",
                                 env=env(), check=True, capture_output=True, text=True).stdout
            parse(out, results)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in results.items()}
    systems = ["goro"] + sorted(gos)
    print("| row | system | " + " | ".join(f"{p:,} live" for p in points) + " | last / first |")
    print("|---|---|" + "---|" * (len(points) + 1))
    for wid in ["W1", "W4"]:
        for s in systems:
            row = [med.get((wid, s, p)) for p in points]
            cells = [f"{v:.1f}" if v is not None else "" for v in row]
            growth = f"{row[-1] / row[0]:.2f}×" if row[0] and row[-1] else ""
            print(f"| {wid} | {s} | " + " | ".join(cells) + f" | {growth} |")
    print(f"\nns per unit, median of {args.rounds} round(s) of 7 runs each; GORO_MAXPROCS=GOMAXPROCS=2.")
    if args.svg:
        chart(args.svg, med, systems, points)
        print(f"chart: {args.svg}")


if __name__ == "__main__":
    main()
