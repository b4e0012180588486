"""A self-contained HTML swim-lane timeline of a run: one lane per node, faults, committed records.

Built after the fact from what a cluster already keeps, so it costs nothing while a test runs:

* the event trace (the last ``trace_keep`` events): process starts, kills, stops, pauses and
  network changes (partitions, heals, link profiles, filters);
* the committed metadata log of the most advanced controller: LeaderChange control records give
  each controller's *leader* periods, broker registration records give each broker's *fenced* /
  *unfenced* / *controlled shutdown* periods as the controllers decided them;
* each running broker's own event log (registered, fenced itself, ...), as marks on its lane;
* optional drill steps (``kraft-testkit demo --html``).

One file: inline CSS and SVG, no scripts, no network (hover a bar or mark for details).
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from typing import Any

#: lane colours by state
COLOURS = {
    "up": "#90caf9", "active": "#3949ab", "standby": "#e8eaf6", "killed": "#e53935", "stopped": "#9e9e9e",
    "paused": "#fb8c00", "unfenced": "#43a047", "fenced": "#ef9a9a",
    "controlled shutdown": "#fdd835", "unregistered": "#eeeeee", "unknown": "#f5f5f5",
}
FAULT_KINDS = ("kill", "stop", "pause", "resume", "start", "wipe", "skew")


@dataclass
class Lane:
    """A node's row: ``(start ms, state)`` changes, and point marks ``(ms, kind, text)``."""

    label: str
    states: list[tuple[int, str]] = field(default_factory=list)
    marks: list[tuple[int, str, str]] = field(default_factory=list)

    def set(self, at_ms: int, state: str) -> None:
        if self.states and self.states[-1][1] == state:
            return
        if self.states and self.states[-1][0] == at_ms:
            self.states[-1] = (at_ms, state)
        else:
            self.states.append((at_ms, state))


@dataclass
class TimelineData:
    """Everything the page shows, in virtual ms."""

    seed: int
    end_ms: int
    first_ms: int
    lanes: list[Lane]
    network: list[tuple[int, str]]
    records: list[tuple[int, int, str]]  # (timestamp, offset, description)
    steps: list[tuple[int, str]]
    title: str = ""


def collect(cluster: Any, *, steps: list[tuple[int, str]] = (), title: str = "") -> TimelineData:
    """Read a cluster (after or during a run) into :class:`TimelineData`."""
    from ..committed import describe_record

    events = cluster.trace.events()
    first = events[0][0] if events else 0
    process: dict[int, Lane] = {}
    for h in cluster.nodes:
        roles = "+".join(h.roles)
        process[h.id] = Lane(f"{roles} {h.id}")
    network: list[tuple[int, str]] = []
    for at, kind, node, _peer, detail in events:
        lane = process.get(node) if node is not None else None
        if kind == "net":
            network.append((at, detail))
        elif lane is not None and kind in FAULT_KINDS:
            state = {"start": "up", "resume": "up", "kill": "killed", "stop": "stopped",
                     "pause": "paused"}.get(kind)
            if state is not None:
                lane.set(at, state)
            if kind != "start" or detail != "incarnation 1":
                lane.marks.append((at, kind, f"{kind} {detail}".strip()))
    for lane in process.values():  # before its first kept event: up, unless that event
        if not lane.states or lane.states[0][0] > first:  # (re)started it
            before = "unknown" if lane.states and lane.states[0][1] == "up" else "up"
            lane.states.insert(0, (first, before))

    records: list[tuple[int, int, str]] = []
    leader_lane: dict[int, list[tuple[int, int | None]]] = {}
    broker_reg: dict[int, list[tuple[int, str]]] = {b: [] for b in cluster.broker_ids}
    for at, offset, rec, epoch in _committed(cluster):
        name = rec.type_name
        m = rec.message
        if name == "LEADER_CHANGE":
            records.append((at, offset, f"LeaderChange: controller {m.leader_id} leads epoch "
                                        f"{epoch}"))
            for c in cluster.controller_ids:
                leader_lane.setdefault(c, []).append((at, m.leader_id))
            continue
        if name == "NO_OP_RECORD":
            continue
        records.append((at, offset, describe_record(rec.type_name, rec.message)))
        if name == "REGISTER_BROKER_RECORD" and m.broker_id in broker_reg:
            broker_reg[m.broker_id].append((at, "fenced" if m.fenced else "unfenced"))
        elif name == "BROKER_REGISTRATION_CHANGE_RECORD" and m.broker_id in broker_reg:
            if getattr(m, "in_controlled_shutdown", 0) == 1:
                broker_reg[m.broker_id].append((at, "controlled shutdown"))
            if m.fenced in (1, -1):
                broker_reg[m.broker_id].append((at, "fenced" if m.fenced == 1 else "unfenced"))
        elif name in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD") and m.id in broker_reg:
            broker_reg[m.id].append((at, "fenced" if name.startswith("FENCE") else "unfenced"))
        elif name == "UNREGISTER_BROKER_RECORD" and m.broker_id in broker_reg:
            broker_reg[m.broker_id].append((at, "unregistered"))

    lanes: list[Lane] = []
    for c in cluster.controller_ids:
        lanes.append(process[c])
        role = Lane(f"  active {c}")  # the Raft leader is the active controller
        role.set(first, "standby")
        for at, leader in leader_lane.get(c, []):
            role.set(at, "active" if leader == c else "standby")
        lanes.append(role)
    for b in cluster.broker_ids:
        if b not in cluster.controller_ids:
            lanes.append(process[b])
        reg = Lane(f"  registration {b}")
        reg.set(0, "unregistered")
        for at, state in broker_reg[b]:
            reg.set(at, state)
        node = cluster.broker(b)
        for at, text in (getattr(node.logic, "events", ()) if node is not None and
                         getattr(node, "logic", None) is not None else ()):
            if "fence" in text or "regist" in text or "shut" in text or "RUNNING" in text:
                reg.marks.append((at, "broker", text))
        lanes.append(reg)
    return TimelineData(cluster.seed, cluster.now_ms, first, lanes, network, records,
                        list(steps), title)


def _committed(cluster: Any):
    """``(virtual ms, offset, record, leader epoch)`` for every committed record of the most
    advanced running controller (metadata and control records); batch timestamps are a real
    instant plus virtual time (``log_time_base_ms``), taken back to virtual time here."""
    from ..protocol.log import iter_log

    replicas = [r for h in cluster.controllers if (r := cluster.replica(h)) is not None]
    if not replicas:
        return
    best = max(replicas, key=lambda r: r.hw)
    base = cluster.raft_config.log_time_base_ms
    data = best.log.raw_between(best.log.start_offset, best.hw)
    for lb in iter_log(data):
        for r in lb.records:
            if r.payload is not None:
                yield r.timestamp - base, r.offset, r.payload, lb.batch.partition_leader_epoch


# ------------------------------------------------------------------------------ rendering

_CSS = """
body{font:13px system-ui,sans-serif;margin:16px;color:#212121}
h1{font-size:18px} .legend span{display:inline-block;margin-right:10px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
table{border-collapse:collapse;margin-top:8px} td,th{padding:2px 8px;text-align:left;
border-bottom:1px solid #eee;font-family:ui-monospace,monospace;font-size:12px}
svg text{font:11px ui-monospace,monospace}
"""


def render_html(data: TimelineData) -> str:
    """The page as one string."""
    e = html.escape
    end = max(data.end_ms, data.first_ms + 1)
    left, width, row = 190, 1000, 20
    span = end - data.first_ms

    def x(ms: int) -> float:
        return left + (ms - data.first_ms) * width / span

    rows = len(data.lanes) + 2
    levels: list[int] = []  # step labels closer than 24 px stack on lower lines
    for n, (at, _) in enumerate(data.steps):
        level = 0
        while any(lv == level and abs(x(at) - x(data.steps[m][0])) < 24
                  for m, lv in enumerate(levels)):
            level += 1
        levels.append(level)
    height = rows * row + 40 + 12 * max(levels, default=0)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" '
           f'height="{height}">']
    for tick in range(0, 11):  # time axis
        ms = data.first_ms + span * tick // 10
        svg.append(f'<line x1="{x(ms):.1f}" y1="14" x2="{x(ms):.1f}" y2="{height - 10}" '
                   f'stroke="#eee"/><text x="{x(ms):.1f}" y="10" text-anchor="middle">'
                   f'{ms / 1000:.1f}s</text>')
    y = 20
    for lane in data.lanes:
        svg.append(f'<text x="4" y="{y + 13}">{e(lane.label)}</text>')
        bounds = [s[0] for s in lane.states[1:]] + [end]
        for (start, state), stop in zip(lane.states, bounds):
            w = max(x(stop) - x(start), 0.5)
            svg.append(f'<rect x="{x(start):.1f}" y="{y + 3}" width="{w:.1f}" height="{row - 6}"'
                       f' fill="{COLOURS.get(state, "#757575")}"><title>{e(lane.label.strip())}: '
                       f'{e(state)} from {start} ms to {stop} ms</title></rect>')
        for at, kind, text in lane.marks:
            colour = "#b71c1c" if kind in ("kill", "stop", "pause", "wipe") else "#212121"
            svg.append(f'<path d="M{x(at):.1f},{y + 1} l4,-5 h-8 z" fill="{colour}">'
                       f'<title>{at} ms: {e(text)}</title></path>')
        y += row
    svg.append(f'<text x="4" y="{y + 13}">network</text>')
    for at, text in data.network:
        svg.append(f'<line x1="{x(at):.1f}" y1="{y + 2}" x2="{x(at):.1f}" y2="{y + row - 2}" '
                   f'stroke="#6a1b9a" stroke-width="2"><title>{at} ms: {e(text)}</title></line>')
    y += row
    svg.append(f'<text x="4" y="{y + 13}">metadata log</text>')
    for at, offset, text in data.records:
        svg.append(f'<line x1="{x(at):.1f}" y1="{y + 2}" x2="{x(at):.1f}" y2="{y + row - 2}" '
                   f'stroke="#00838f"><title>@{offset} {at} ms: {e(text)}</title></line>')
    label_y = rows * row + 34
    for n, ((at, text), level) in enumerate(zip(data.steps, levels), 1):
        svg.append(f'<line x1="{x(at):.1f}" y1="14" x2="{x(at):.1f}" y2="{label_y - 10}" '
                   f'stroke="#424242" stroke-dasharray="3,3"><title>step {n}: {e(text)}</title>'
                   f'</line><text x="{x(at) + 2:.1f}" y="{label_y + 12 * level}">{n}'
                   f'<title>{e(text)}</title></text>')
    svg.append("</svg>")

    legend = "".join(f'<span><i style="background:{c}"></i>{e(s)}</span>'
                     for s, c in COLOURS.items())
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>"
             f"{e(data.title or 'kraft_testkit timeline')}</title><style>{_CSS}</style></head>"
             f"<body><h1>{e(data.title or 'kraft_testkit timeline')}</h1>",
             f"<p>seed {data.seed}; virtual time {data.first_ms} ms to {data.end_ms} ms"
             + (" (older trace events were not kept)" if data.first_ms > 0 else "") + "</p>",
             f"<div class='legend'>{legend}</div>", "".join(svg)]
    if data.steps:
        parts.append("<h2>Steps</h2><table><tr><th>#</th><th>ms</th><th>step</th></tr>" +
                     "".join(f"<tr><td>{n}</td><td>{at}</td><td>{e(t)}</td></tr>"
                             for n, (at, t) in enumerate(data.steps, 1)) + "</table>")
    faults = sorted([(at, lane.label.strip(), t) for lane in data.lanes
                     for at, _k, t in lane.marks] + [(at, "network", t) for at, t in data.network])
    parts.append("<h2>Faults and node events</h2><table><tr><th>ms</th><th>lane</th>"
                 "<th>event</th></tr>" + "".join(
                     f"<tr><td>{at}</td><td>{e(who)}</td><td>{e(t)}</td></tr>"
                     for at, who, t in faults) + "</table>")
    parts.append("<h2>Committed metadata records</h2><table><tr><th>offset</th><th>ms</th>"
                 "<th>record</th></tr>" + "".join(
                     f"<tr><td>{off}</td><td>{at}</td><td>{e(t)}</td></tr>"
                     for at, off, t in data.records) + "</table></body></html>")
    return "\n".join(parts)


def write_timeline(cluster: Any, path: str | os.PathLike, *, steps: list[tuple[int, str]] = (),
                   title: str = "") -> str:
    """Write the cluster's timeline page to ``path`` (directories are created); returns it."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    page = render_html(collect(cluster, steps=steps, title=title or
                               f"kraft_testkit timeline, seed {cluster.seed}"))
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path
