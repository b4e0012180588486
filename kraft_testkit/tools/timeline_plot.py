"""A picture of a run: each broker's state and the active controller over virtual time.

:class:`StateRecorder` hooks into the simulation (as an invariant check, so it sees every event)
and keeps a sample only when something a person would look at changed; :func:`plot_timeline`
draws the samples with matplotlib (an optional dependency: ``pip install kraft-testkit[plot]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: bar colours by broker state as the chart shows it
STATE_COLOURS = {
    "RUNNING": "#43a047",
    "FENCED": "#e53935",
    "SELF-FENCED": "#8e24aa",
    "STARTING": "#b3e5fc",
    "RECOVERY": "#26a69a",
    "SHUTTING DOWN": "#fdd835",
    "DOWN": "#bdbdbd",
}
CONTROLLER_COLOURS = ["#3949ab", "#fb8c00", "#6d4c41", "#00acc1", "#c0ca33"]


@dataclass
class StateRecorder:
    """Samples ``(virtual ms, broker states, active controller)`` whenever one changes."""

    cluster: Any
    samples: list[tuple[int, tuple[str, ...], int | None]] = field(default_factory=list)

    def __call__(self, sim: Any) -> None:
        c = self.cluster
        committed = c.metadata.cluster  # fencing as the controllers decided it
        states = tuple(self._state(b, committed) for b in c.broker_ids)
        active = c.active_controller
        sample = (states, None if active is None else active.id)
        if not self.samples or self.samples[-1][1:] != sample:
            self.samples.append((sim.now_ms, *sample))

    def _state(self, broker: int, committed: Any) -> str:
        c = self.cluster
        if not c.sim.process(broker).up:
            return "DOWN"
        node = c.broker(broker)
        if node is None or node.logic is None:
            return "DOWN"
        if node.self_fenced:
            return "SELF-FENCED"
        reg = committed.broker(broker)
        name = node.state_name
        if name == "RUNNING" and reg is not None and reg.fenced:
            return "FENCED"  # the broker may not know yet (it can be cut off)
        if name in ("PENDING_CONTROLLED_SHUTDOWN", "SHUTTING_DOWN"):
            return "SHUTTING DOWN"
        return "DOWN" if name == "NOT_RUNNING" else name


def controller_legend(recorder: StateRecorder) -> list[tuple[str, str]]:
    """``(label, colour)`` of each controller that was active at some point of the run: a
    controller that never led gets no legend entry."""
    ids = recorder.cluster.controller_ids
    active = {a for _, _, a in recorder.samples if a is not None}
    return [(f"controller {cid} active", CONTROLLER_COLOURS[i % len(CONTROLLER_COLOURS)])
            for i, cid in enumerate(ids) if cid in active]


def plot_timeline(recorder: StateRecorder, path: str, *, steps: list[tuple[int, str]] = (),
                  title: str = "") -> str:
    """Draw the recorded run to ``path`` (PNG); ``steps`` are (virtual ms, label) markers."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError as e:
        raise RuntimeError("plotting needs matplotlib: pip install 'kraft-testkit[plot]'") from e

    c = recorder.cluster
    samples = recorder.samples
    end = max(c.now_ms, samples[-1][0] + 1) if samples else c.now_ms
    brokers = list(c.broker_ids)
    rows = len(brokers) + 1
    steps = list(steps)
    chart_h, list_h = 1.2 + 0.6 * rows, 0.16 * len(steps) + 0.2
    fig, (ax, below) = plt.subplots(2, 1, figsize=(12, chart_h + list_h),
                                    gridspec_kw={"height_ratios": [chart_h, list_h]})
    below.axis("off")
    bounds = [s[0] for s in samples[1:]] + [end]
    for (start, states, active), stop in zip(samples, bounds):
        for row, state in enumerate(states):
            ax.broken_barh([(start / 1000, (stop - start) / 1000)], (row - 0.35, 0.7),
                           color=STATE_COLOURS.get(state, "#757575"))
        if active is not None:
            colour = CONTROLLER_COLOURS[c.controller_ids.index(active) % len(CONTROLLER_COLOURS)]
            ax.broken_barh([(start / 1000, (stop - start) / 1000)], (rows - 1 - 0.35, 0.7),
                           color=colour)
    placed: list[tuple[int, int]] = []  # (ms, level) of markers drawn so far
    for n, (at, _) in enumerate(steps, 1):  # numbered markers; the labels are listed below
        ax.axvline(at / 1000, color="#424242", linestyle="--", linewidth=0.7)
        level = 0  # stack markers that would overlap (closer than 2.5% of the time axis)
        while any(lv == level and abs(at - a) < end * 0.025 for a, lv in placed):
            level += 1
        placed.append((at, level))
        ax.text(at / 1000, rows - 0.45 + 0.35 * level, str(n), fontsize=7,
                ha="center", va="bottom",
                bbox={"boxstyle": "circle,pad=0.2", "fc": "white", "ec": "#424242", "lw": 0.6})
    ax.set_yticks(range(rows), [f"broker {b}" for b in brokers] + ["active controller"])
    ax.set_ylim(-0.6, rows + 0.2 + 0.35 * max((lv for _, lv in placed), default=0) + 0.5)
    ax.set_xlim(0, end / 1000)
    ax.set_xlabel("virtual time (s)")
    legend = [Patch(color=col, label=state.lower()) for state, col in STATE_COLOURS.items()]
    legend += [Patch(color=colour, label=label) for label, colour in controller_legend(recorder)]
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    listing = "\n".join(f"{n:>2}  {at / 1000:6.2f} s  {label}" for n, (at, label) in
                        enumerate(steps, 1))
    below.text(0.0, 1.0, listing, fontsize=7.5, family="monospace", va="top",
               transform=below.transAxes)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
