#!/usr/bin/env python3
"""Runs the benches/README.md workloads on goro, its Rust peers and Go, interleaved, and prints one
Markdown table of median ns/unit with ratios.

Each round runs every row once (goro, then each peer, then each Go found), so slow drifts of a
noisy machine hit all systems alike; the table shows the median over rounds (benches/README.md asks
for at least 5, the default). "goro / best peer" is over every other system measured on the row,
Rust peers and each Go alike; only the chart singles out the best *Rust* peer (beside each Go). Rust rows come from
criterion (`cargo bench -p goro-benches --bench <bench> -- --exact <group>/<system>`), Go rows
from the programs in benches/go. It installs nothing: Go is taken from $GO, `go` on PATH, and Go
1.19 from /usr/lib/go-1.19/bin/go (Debian's golang-1.19-go), whichever exist.

A Rust row listed below that the bench does not define (`cargo bench -p goro-benches --bench
<bench> -- --list` does not show `<group>/<system>`) is skipped with a note and left blank, so
rows that exist on one branch only (e.g. a `--base` checkout that lacks some of goro's rows) need no
edit here.

Usage: benches/compare.sh [--rounds N] [--only W1,W4] [--no-go] [--svg FILE] [--from-log FILE]
                          [--base DIR]

`--base DIR` measures a change: DIR is another checkout of goro (a `git worktree` of the commit
before the change; a commit from before the benches moved into the goro-benches member, when the
root Cargo.toml had the `[[bench]]` targets, works too); its goro rows run in every round right
after this checkout's, as the system `goro_base`, and the table gains a `goro / goro_base`
column, so before and after are measured in one run, interleaved with the peers.

The per-round lines go to stderr (`round 2/5 W4: goro=146.2  kanal=190.5 ...`); keep them
(`2> rounds.log`) and `--from-log rounds.log` prints the table (and `--svg` draws the chart)
again from them without running anything.

This 2-vCPU machine has two modes: a cache line moves between the CPUs in about 40 ns at times
and about 220 ns at others, and rows whose threads share lines (W1 most of all) follow it
(benches/floor/handoff_modes.rs). So each measurement is bracketed by one sample of that cost,
logged as `modes 2/5 W4: goro=fast kanal=slow ...` (`fast` under 100 ns before and after,
`slow` over, `mixed` otherwise), and the table's last column gives goro / best peer over the
rounds where both were measured in the same mode (with how many rounds that was). The samples
see the ends of a measurement only: the mode can change and change back in between (a W1 round
tagged `slow` at both ends ran at the fast mode's cost), so the column is a check on the
median's ratio, not a replacement for it; most rounds come out `mixed` when the mode flips often.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The rows of benches/chan.rs W4-W7 (tokio_mpsc and async_channel use cap 1 for cap 0, tokio_mpsc
# shares its receiver behind a tokio Mutex for W6/W7; see benches/chan.rs).
CHANNEL_SYSTEMS = ["goro", "tokio_mpsc", "flume", "kanal", "async_channel", "crossbeam"]
# The rows of benches/sync.rs W11-W14: goro::sync::Map, dashmap::DashMap and std's
# RwLock<HashMap>, the peers on tokio (see benches/sync.rs).
MAP_SYSTEMS = ["goro", "dashmap", "rwlock_hashmap"]
# id, criterion bench file, criterion group, Go program dir, units per run, Rust systems (goro
# first). Workloads may have different peers: the table has one column per system seen anywhere.
WORKLOADS = [
    ("W1", "runtime", "W1_spawn_many", "w1_spawn_many", 100_000, ["goro", "tokio"]),
    ("W2", "runtime", "W2_chained_spawn", "w2_chained_spawn", 100_000, ["goro", "tokio"]),
    ("W3", "runtime", "W3_yield_many", "w3_yield_many", 200 * 1_000, ["goro", "tokio", "may"]),
    ("W4", "chan", "W4_pingpong_unbuffered", "w4_pingpong_unbuffered", 200_000, CHANNEL_SYSTEMS),
    ("W5", "chan", "W5_spsc_buffered", "w5_spsc_buffered", 2_000_000, CHANNEL_SYSTEMS),
    ("W6", "chan", "W6_mpmc_buffered", "w6_mpmc_buffered", 2_000_000, CHANNEL_SYSTEMS),
    ("W7", "chan", "W7_mpmc_unbuffered", "w7_mpmc_unbuffered", 400_000, CHANNEL_SYSTEMS),
    ("W8", "chan", "W8_select_fanin", "w8_select_fanin", 1_000_000, ["goro", "tokio_select", "crossbeam"]),
    ("W9", "sync", "W9_waitgroup", "w9_waitgroup", 4 * 250_000, ["goro", "tokio_notify"]),
    ("W10", "sync", "W10_mutex_contended", "w10_mutex_contended", 4 * 250_000, ["goro", "tokio_mutex", "parking_lot"]),
    ("W11", "sync", "W11_map_load_hits", "w11_map_load_hits", 2 * 1_000_000, MAP_SYSTEMS),
    ("W12", "sync", "W12_map_load_misses", "w12_map_load_misses", 2 * 1_000_000, MAP_SYSTEMS),
    ("W13", "sync", "W13_map_load_or_store_balanced", "w13_map_load_or_store_balanced", 2 * 500_000, MAP_SYSTEMS),
    ("W14", "sync", "W14_map_mixed_90_10", "w14_map_mixed", 2 * 1_000_000, MAP_SYSTEMS),
    # W15's unit is (elapsed - 1 ms) / 100_000: benches/runtime.rs subtracts the 1 ms sleep from
    # each run before criterion sees it, benches/go/w15_timers from each run before the median.
    ("W15", "runtime", "W15_timers", "w15_timers", 100_000, ["goro", "tokio"]),
]


def find_gos():
    gos = {}
    candidates = [os.environ.get("GO"), shutil.which("go"), "/usr/lib/go-1.19/bin/go"]
    for c in candidates:
        if not c or not Path(c).exists():
            continue
        try:
            v = subprocess.run([c, "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            continue
        gos.setdefault(v, c)
    return gos


def env():
    e = dict(os.environ)
    e["GORO_MAXPROCS"] = "2"
    e["GOMAXPROCS"] = "2"
    return e


def bench_package(root=ROOT):
    """The cargo arguments that select the benches' package in the checkout `root`: the member
    goro-benches, or nothing in a checkout from before it existed, whose root package (then
    `goro`) had the benches as its own `[[bench]]` targets."""
    manifest = (root / "Cargo.toml").read_text()
    return [] if re.search(r"^\[\[bench\]\]", manifest, re.M) else ["-p", "goro-benches"]


def criterion_ids(bench, root=ROOT):
    """The `<group>/<system>` ids that a criterion bench defines."""
    out = subprocess.run(
        ["cargo", "bench", "-q"] + bench_package(root) + ["--bench", bench, "--", "--list"],
        cwd=root, env=env(), check=True, capture_output=True, text=True,
    ).stdout
    return {line[: -len(": benchmark")] for line in out.splitlines() if line.endswith(": benchmark")}


def run_rust(bench, group, system, units, root=ROOT):
    subprocess.run(
        ["cargo", "bench", "-q"] + bench_package(root) + ["--bench", bench, "--", "--exact", f"{group}/{system}"],
        cwd=root, env=env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    est = root / "target" / "criterion" / group / system / "new" / "estimates.json"
    median_ns = json.loads(est.read_text())["median"]["point_estimate"]
    return median_ns / units


HANDOFF_PROBE = ROOT / "target" / "handoff_modes"
# Between the machine's two modes (about 40 and 220 ns per hand-over).
FAST_MODE_NS = 100.0


def build_handoff_probe():
    src = ROOT / "benches" / "floor" / "handoff_modes.rs"
    subprocess.run(["rustc", "-O", str(src), "-o", str(HANDOFF_PROBE)], check=True)


def handoff_ns():
    """One sample of what a cache line costs to move between the two CPUs right now."""
    out = subprocess.run([str(HANDOFF_PROBE), "0"], capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


def measured_in_mode(measure):
    """Runs `measure()` between two samples of the machine's mode; returns (its result, mode)."""
    before = handoff_ns()
    result = measure()
    after = handoff_ns()
    fast = [ns < FAST_MODE_NS for ns in (before, after)]
    return result, "fast" if all(fast) else "slow" if not any(fast) else "mixed"


def run_go(go, prog):
    out = subprocess.run(
        [go, "run", f"./{prog}", "-runs", "9"], cwd=ROOT / "benches" / "go", env=env(),
        capture_output=True, text=True, check=True,
    ).stdout
    for tok in out.split():
        if tok.startswith("median_ns_per_unit="):
            return float(tok.split("=", 1)[1])
    raise RuntimeError(f"unexpected output from {prog}: {out!r}")


def parse_log(path):
    """The results of an earlier run from its per-round stderr lines: ((id, system) -> [ns],
    rounds, Go versions)."""
    results, modes, rounds, gos = {}, {}, 0, set()
    for line in Path(path).read_text().splitlines():
        kind = line.split(" ", 1)[0]
        if kind not in ("round", "modes"):
            continue
        head, _, rest = line.partition(": ")
        _, frac, wid = head.split()
        rounds = max(rounds, int(frac.split("/")[0]))
        for tok in rest.split():
            sys_, _, v = tok.partition("=")
            if kind == "modes":
                modes.setdefault((wid, sys_), []).append(v)
                continue
            results.setdefault((wid, sys_), []).append(float(v))
            if sys_.startswith("go1"):
                gos.add(sys_)
    return results, modes, rounds, sorted(gos)


def svg_chart(path, wls, med, gov, date):
    """A grouped bar chart: per row, goro, the best Rust peer and each Go, as time relative to
    the slowest of them (so rows of different scales share one axis), labelled with ns/unit."""
    colors = {"goro": "#00add8", "rust": "#dea584", "go": ["#5a5a5a", "#a0a0a0"]}
    bar_h, gap, left, width = 14, 12, 250, 420
    rows = []
    for (wid, bench, group, prog, units, systems) in wls:
        g = med.get((wid, "goro"))
        if g is None:
            continue
        bars = [("goro", g, colors["goro"])]
        rust = {s: med[(wid, s)] for s in systems[1:] if (wid, s) in med}
        if rust:
            best = min(rust, key=rust.get)
            bars.append((best, rust[best], colors["rust"]))
        for i, v in enumerate(gov):
            if (wid, v) in med:
                bars.append((v, med[(wid, v)], colors["go"][i % 2]))
        rows.append((f"{wid} {group.split('_', 1)[1]}", bars))
    height = 60 + sum(len(b) * bar_h + gap for _, b in rows) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 160}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="20" font-size="14" font-weight="bold">goro vs the best Rust peer vs Go '
           f'(ns per unit, lower is better; {date}, 2 cores)</text>',
           '<text x="10" y="38" fill="#555">Each row\'s bars are scaled to its slowest system; '
           'the label is the median ns per unit.</text>']
    y = 55
    for label, bars in rows:
        top = max(ns for _, ns, _ in bars)
        out.append(f'<text x="10" y="{y + len(bars) * bar_h / 2 + 4}" font-weight="bold">{label}</text>')
        for name, ns, color in bars:
            w = max(1.0, width * ns / top)
            out.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{color}"/>')
            out.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 4}">{name} {ns:.1f}</text>')
            y += bar_h
        y += gap
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-go", action="store_true")
    ap.add_argument("--svg", help="also write a bar chart of goro, the best Rust peer and Go per row")
    ap.add_argument("--from-log", help="re-render from the per-round lines of an earlier run's stderr")
    ap.add_argument("--date", default=None, help="the date shown on the chart (default: today)")
    ap.add_argument("--base", help="another goro checkout whose goro rows run beside this one's as goro_base")
    args = ap.parse_args()
    base = Path(args.base).resolve() if args.base else None
    only = set(filter(None, args.only.split(",")))
    wls = [w for w in WORKLOADS if not only or w[0] in only]
    if args.from_log:
        results, modes, args.rounds, gov = parse_log(args.from_log)
        wls = [w for w in wls if (w[0], "goro") in results or any((w[0], s) in results for s in w[5])]
        render(args, wls, results, gov, modes)
        return
    gos = {} if args.no_go else find_gos()
    subprocess.run(["cargo", "bench", "--no-run", "-q"] + bench_package(), cwd=ROOT, check=True)
    build_handoff_probe()
    ids = {b: criterion_ids(b) for b in sorted({w[1] for w in wls})}
    base_ids = {}
    if base:
        subprocess.run(["cargo", "bench", "--no-run", "-q"] + bench_package(base), cwd=base, check=True)
        base_ids = {b: criterion_ids(b, base) for b in sorted({w[1] for w in wls})}
    for (wid, bench, group, prog, units, systems) in wls:
        for s in systems:
            if f"{group}/{s}" not in ids[bench]:
                print(f"{wid}: benches/{bench}.rs has no row {group}/{s}; skipped", file=sys.stderr)
    results = {}  # (id, system) -> [ns]
    modes = {}  # (id, system) -> ["fast" | "slow" | "mixed"], one per round

    def record(wid, system, measure):
        ns, mode = measured_in_mode(measure)
        results.setdefault((wid, system), []).append(ns)
        modes.setdefault((wid, system), []).append(mode)

    for r in range(args.rounds):
        for (wid, bench, group, prog, units, systems) in wls:
            present = [s for s in systems if f"{group}/{s}" in ids[bench]]
            for s in present:
                record(wid, s, lambda: run_rust(bench, group, s, units))
                if s == "goro" and f"{group}/goro" in base_ids.get(bench, ()):
                    record(wid, "goro_base", lambda: run_rust(bench, group, s, units, base))
            for v, go in sorted(gos.items()):
                record(wid, v, lambda: run_go(go, prog))
            shown = present + (["goro_base"] if (wid, "goro_base") in results else []) + sorted(gos)
            line = "  ".join(f"{s}={results[(wid, s)][-1]:.1f}" for s in shown)
            print(f"round {r + 1}/{args.rounds} {wid}: {line}", file=sys.stderr)
            line = "  ".join(f"{s}={modes[(wid, s)][-1]}" for s in shown)
            print(f"modes {r + 1}/{args.rounds} {wid}: {line}", file=sys.stderr)
    render(args, wls, results, sorted(gos), modes)


def same_mode_ratio(results, modes, wid, a, b):
    """Median of a / b over the rounds where both were measured in the same (unmixed) mode, and
    how many rounds that was; None where the log has no modes or no such round."""
    ma, mb = modes.get((wid, a)), modes.get((wid, b))
    if not ma or not mb:
        return None
    pairs = zip(results[(wid, a)], ma, results[(wid, b)], mb)
    ratios = [x / y for x, m, y, n in pairs if m == n and m != "mixed"]
    return (statistics.median(ratios), len(ratios)) if ratios else None


def render(args, wls, results, gov, modes):
    """Prints the Markdown table of medians (and writes the chart if asked)."""
    med = {k: statistics.median(v) for k, v in results.items()}
    # One column per Rust peer seen in any selected workload, in order of first appearance; a
    # row without that peer leaves its cell blank, and its best peer is over what it has.
    rust_peers = []
    for w in wls:
        rust_peers += [s for s in w[5][1:] if s not in rust_peers]
    has_base = any(k[1] == "goro_base" for k in results)
    # The best peer is the fastest of every other system on the row: each Rust peer and each Go.
    head = ["row", "goro"] + (["goro_base"] if has_base else []) + rust_peers + gov + ["goro / best peer"]
    head += [f"goro / {v}" for v in gov] + (["goro / goro_base"] if has_base else [])
    head += ["goro / best peer, same mode (rounds)"] if modes else []
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (wid, bench, group, prog, units, systems) in wls:
        g = med.get((wid, "goro"))  # None: goro has no such row on this branch
        peers = {s: med[(wid, s)] for s in systems[1:] if (wid, s) in med}
        peers.update({v: med[(wid, v)] for v in gov})
        best = min(peers, key=peers.get) if peers else None
        b = med.get((wid, "goro_base"))
        cells = [f"{wid} {group.split('_', 1)[1]}", f"{g:.1f}" if g is not None else ""]
        cells += [f"{b:.1f}" if b is not None else ""] if has_base else []
        cells += [f"{peers[s]:.1f}" if s in peers else "" for s in rust_peers]
        cells += [f"{peers[v]:.1f}" for v in gov]
        cells += [f"{g / peers[best]:.2f}× ({best})" if g is not None and best else ""]
        cells += [f"{g / peers[v]:.2f}×" if g is not None else "" for v in gov]
        cells += [f"{g / b:.2f}×" if g is not None and b else ""] if has_base else []
        if modes:
            same = same_mode_ratio(results, modes, wid, "goro", best) if g is not None and best else None
            cells += [f"{same[0]:.2f}× ({same[1]})" if same else ""]
        print("| " + " | ".join(cells) + " |")
    print(f"\nns per unit, median of {args.rounds} interleaved rounds; GORO_MAXPROCS=GOMAXPROCS=2, tokio 2 workers.")
    if any(w[0] in ("W4", "W6", "W7") for w in wls):
        print("Cap-0 rows: tokio_mpsc and async_channel have no rendezvous channel and run at cap 1; "
              "tokio_mpsc's W6/W7 consumers share the receiver behind a tokio Mutex.")
    if any(w[0] == "W3" for w in wls):
        print("W3 may: the may crate's stackful coroutines (2 workers), may::coroutine::yield_now; main (a coroutine) "
              "joins the 200 coroutines.")
    if any(w[0] == "W10" for w in wls):
        print("W10 parking_lot: a blocking parking_lot::Mutex taken by tasks on the 2-worker tokio runtime.")
    if any(w[0] == "W15" for w in wls):
        print("W15: each run's elapsed time less the 1 ms sleep, / 100_000, on every system (subtracted per run).")
    if any(w[0] in ("W11", "W12", "W13", "W14") for w in wls):
        print("W11-W14: dashmap and rwlock_hashmap (std::sync::RwLock<HashMap>) run on tokio; their load_or_store "
              "looks under the read lock first; only the Gs' work is timed (preload untimed), on Go too.")
    if args.svg:
        import datetime
        svg_chart(args.svg, wls, med, gov, args.date or datetime.date.today().isoformat())
        print(f"\nchart: {args.svg}")


if __name__ == "__main__":
    main()
