"""Reports of an idle sweep: the table of Jet's "Idle Green Threads" blog post (2019) beside
jetbench's, and matplotlib figures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .bounds import idle_costs

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

#: Jet 3.0 on an m5.large, CPU % at each rate with the default 25 us floor (the table of Jet's
#: "Idle Green Threads" blog post, 2019) and with a 1000 us floor (only the two rates its text gives).
JET_BLOG_CPU = {
    25: {1_000: 18, 10_000: 23, 50_000: 29, 250_000: 75, 500_000: 96, 1_000_000: 100},
    1000: {1_000: 1, 250_000: 19},
}


_POINT = ["rate", "min_idle_us", "strategy"]


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per point (rate, floor, strategy): the median of its repeats' measurements, with
    ``runs`` and the spread of CPU over them (``cpu_min``, ``cpu_max``); ``kept_up`` only if every
    run kept up. A sweep without repeats comes back with ``runs`` = 1.
    """
    numeric = [c for c in frame.columns if c not in _POINT and c not in ("kept_up", "repeat")
               and frame[c].dtype.kind in "if"]
    groups = frame.groupby(_POINT, sort=False)
    summary = groups[numeric].median()
    summary["cpu_min"] = groups["cpu_percent"].min()
    summary["cpu_max"] = groups["cpu_percent"].max()
    summary["kept_up"] = groups["kept_up"].all()
    summary["runs"] = groups.size()
    if "source" in frame.columns:
        summary["source"] = groups["source"].first()
    return summary.reset_index()


def targets(frame: pd.DataFrame) -> pd.DataFrame:
    """The idle issue's targets checked on a sweep (medians over repeats): one row per target
    and rate, with what was measured, the limit, and whether it is met.

    - the timer strategy, at each floor: CPU <= the backoff 1000 us floor's, and p99 latency <=
      the backoff 25 us floor's, at every rate;
    - the 1000 us floor against Jet's blog: at 1k items/s CPU <= 1 % or, where a wake-up costs
      more than in Java, <= 1.5 x the bare-sleep row at 1000 us; at 250k items/s <= 19 %
      (the lower CPU of the two strategies at that floor counts).

    ``bound`` is what `bounds.IdleCosts` works out from the sweep's own rows: on a CPU row, the
    least CPU any strategy that sleeps needs to meet the p99 limit at that rate (the backoff
    25 us floor's p99); on a p99 row, the lowest p99 it can reach within the CPU limit there
    (the backoff 1000 us floor's CPU). A limit beyond its bound cannot be met by sleeping. On
    a blog row, the bound prices each strategy's own wake-ups and rounds per second at the
    bare wake-up's and the hot round's cost (`IdleCosts.cpu_percent_at`), and takes the lower:
    a limit beyond it needs fewer wake-ups or a cheaper round than this engine's.
    """
    import pandas as pd

    points = summarize(frame)
    jobs = points[points["strategy"] != "bare-sleep"].set_index(_POINT)
    bare = points[points["strategy"] == "bare-sleep"].set_index("min_idle_us")
    costs = idle_costs(points)
    rows = []

    def check(target: str, rate: float, measured: float | None, limit: float | None,
              bound: float | None = None) -> None:
        met = None if measured is None or limit is None or pd.isna(measured) or pd.isna(limit) else measured <= limit
        rows.append({"target": target, "rate": rate, "measured": measured, "limit": limit, "met": met,
                     "bound": bound})

    def bound(method: str, rate: float, limit: float | None) -> float | None:
        if costs is None or limit is None or pd.isna(limit):
            return None
        return getattr(costs, method)(rate, limit)

    def known(rate: float, floor: float, strategy: str, column: str) -> float:
        """A column of a point the sweep has."""
        return jobs.loc[(rate, floor, strategy), column]

    def value(rate: float, floor: float, strategy: str, column: str) -> float | None:
        return known(rate, floor, strategy, column) if (rate, floor, strategy) in jobs.index else None

    rates = sorted({r for r, _, _ in jobs.index})
    timer_floors = sorted({f for _, f, s in jobs.index if s == "timer"})
    for floor in timer_floors:
        for rate in rates:
            cpu_limit = value(rate, 1000, "backoff", "cpu_percent")
            p99_limit = value(rate, 25, "backoff", "latency_p99_ms")
            check(f"timer {floor:g}us CPU % <= backoff 1000us", rate, value(rate, floor, "timer", "cpu_percent"),
                  cpu_limit, bound("cpu_bound_percent", rate, p99_limit))
            check(f"timer {floor:g}us p99 ms <= backoff 25us", rate, value(rate, floor, "timer", "latency_p99_ms"),
                  p99_limit, bound("p99_bound_ms", rate, cpu_limit))
    at_1000 = [(r, s) for r, f, s in jobs.index if f == 1000]
    bare_1000 = bare["cpu_percent"].get(1000, float("nan"))
    for rate, limit in ((1_000, max(1.0, 1.5 * bare_1000)), (250_000, 19.0)):
        strategies = [s for r, s in at_1000 if r == rate]
        if not strategies:
            continue
        measured = min(known(rate, 1000, s, "cpu_percent") for s in strategies)
        hot = None if costs is None else min(
            costs.cpu_percent_at(rate, known(rate, 1000, s, "wakeups_per_s"), known(rate, 1000, s, "iterations_per_s"))
            for s in strategies)
        check("1000us floor CPU % vs Jet's blog", rate, measured, limit, hot)
    return pd.DataFrame(rows, columns=["target", "rate", "measured", "limit", "met", "bound"])


def blog_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per rate: Jet's CPU % from the blog beside jetbench's for each floor/strategy
    (medians over repeats)."""
    import pandas as pd

    frame = summarize(frame)
    jobs = frame[frame["strategy"] != "bare-sleep"]
    table = pd.DataFrame(index=sorted(jobs["rate"].unique()))
    table.index.name = "rate"
    for floor, by_rate in JET_BLOG_CPU.items():
        table[f"jet {floor}us"] = [by_rate.get(r) for r in table.index]
    for (strategy, floor), group in jobs.groupby(["strategy", "min_idle_us"]):
        cpu = group.set_index("rate")["cpu_percent"]
        table[f"jetbench {strategy} {floor:g}us"] = [round(cpu.get(r), 1) if r in cpu else None for r in table.index]
    bare = frame[frame["strategy"] == "bare-sleep"]
    for _, row in bare.iterrows():
        table[f"bare-sleep {row['min_idle_us']:g}us"] = round(row["cpu_percent"], 1)
    return table


def _series(frame: pd.DataFrame):
    jobs = frame[frame["strategy"] != "bare-sleep"]
    for (strategy, floor), group in jobs.groupby(["strategy", "min_idle_us"]):
        yield f"{strategy}, floor {floor:g} us", group.sort_values("rate")


def plot_cpu_vs_rate(frame: pd.DataFrame) -> Figure:
    """CPU % against rate (log x), one line per floor/strategy (with the min-max spread over
    repeats as error bars), bare-sleep floors dashed."""
    from ..figures import new_figure

    frame = summarize(frame)
    fig = new_figure(figsize=(7, 4.2))
    ax = fig.subplots()
    for label, group in _series(frame):
        cpu = group["cpu_percent"]
        spread = [cpu - group["cpu_min"], group["cpu_max"] - cpu]
        ax.errorbar(group["rate"], cpu, yerr=spread, marker="o", capsize=3, label=label)
    for floor, cpu in JET_BLOG_CPU.items():
        rates = sorted(cpu)
        ax.plot(rates, [cpu[r] for r in rates], linestyle=":", marker="x", color="grey" if floor == 25 else "black",
                label=f"Jet 3.0 blog, floor {floor} us")
    for _, row in frame[frame["strategy"] == "bare-sleep"].iterrows():
        ax.axhline(row["cpu_percent"], linestyle="--", linewidth=0.8, color="tab:gray")
        # say what the reference line is, at its right end
        ax.text(0.99, row["cpu_percent"], f"a thread only sleeping {row['min_idle_us']:g} us at a time",
                transform=ax.get_yaxis_transform(), ha="right", va="bottom", fontsize=7, color="tab:gray")
    return _log_x_figure(fig, ax, "items per second", "process CPU % (of one core)",
                         "Idle CPU: the job of Jet's \"Idle Green Threads\" post")


def plot_latency_vs_floor(frame: pd.DataFrame) -> Figure:
    """p99 (solid) and p50 (dashed) latency against the idle floor, a panel per strategy and
    a colour per rate."""
    from ..figures import new_figure

    frame = summarize(frame)
    jobs = frame[frame["strategy"] != "bare-sleep"]
    strategies = sorted(jobs["strategy"].unique())
    colours = _rate_colours(jobs["rate"])
    fig = new_figure(figsize=(4.6 * max(1, len(strategies)), 4.2))
    axes = fig.subplots(1, max(1, len(strategies)), squeeze=False, sharey=True)[0]
    for ax, strategy in zip(axes, strategies, strict=False):
        for rate, group in jobs[jobs["strategy"] == strategy].groupby("rate"):
            group = group.sort_values("min_idle_us")
            colour = colours[rate]
            ax.plot(group["min_idle_us"], group["latency_p99_ms"], marker="o", color=colour, label=f"{rate:,}/s p99")
            ax.plot(group["min_idle_us"], group["latency_p50_ms"], marker=".", linestyle="--", color=colour,
                    label=f"{rate:,}/s p50")
        _log_x_figure(fig, ax, "minimum idle (us)", "latency (ms)", f"Latency against the idle floor: {strategy}")
    return fig


def _rate_colours(rates: Any) -> dict[float, Any]:
    """One distinct colour per rate, low rates dark and high rates light."""
    from matplotlib import colormaps

    ordered = sorted(set(rates))
    cmap = colormaps["viridis"]
    return {rate: cmap(i / max(1, len(ordered) - 1) * 0.9) for i, rate in enumerate(ordered)}


def _log_x_figure(fig: Figure, ax: Any, xlabel: str, ylabel: str, title: str) -> Figure:
    """Finish a one-panel figure with a log x axis: labels, title, legend and grid."""
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)  # beside the data
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_tradeoff(frame: pd.DataFrame) -> Figure:
    """CPU against p99 latency, one panel per rate, a marker per floor/strategy (one legend)."""
    from ..figures import new_figure

    frame = summarize(frame)
    series = list(_series(frame))
    rates = sorted(frame[frame["strategy"] != "bare-sleep"]["rate"].unique())
    fig = new_figure(figsize=(3.2 * max(1, len(rates)), 3.6))
    axes = fig.subplots(1, max(1, len(rates)), squeeze=False)[0]
    for ax, rate in zip(axes, rates, strict=False):
        for k, (label, group) in enumerate(series):
            row = group[group["rate"] == rate]
            ax.scatter(row["latency_p99_ms"], row["cpu_percent"], color=f"C{k}", marker="os^D"[k % 4], label=label)
        ax.set_title(f"{rate:,} items/s", fontsize=9)
        ax.set_xlabel("p99 latency (ms)")
        ax.set_ylabel("CPU %")
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=max(1, len(labels)), fontsize=8)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig
