"""The public surface of kraft_testkit, listed from the code: classes, methods, properties,
fixtures, marker arguments and command-line flags, each with its signature.

``python tests/docs/api_surface.py > docs/api.md`` writes the reference; test_api_reference.py
fails when a public name or signature is missing from docs/api.md, so the page follows the code.
What the code cannot say (the errors a call raises, a line of example) is written here, by
qualified name, in ERRORS and EXAMPLES.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[2]
for extra in (str(ROOT), str(ROOT / "plugin")):
    if extra not in sys.path:
        sys.path.insert(0, extra)


@dataclass(frozen=True)
class Entry:
    """One line of the reference: ``signature`` (what the test looks for) and its summary."""

    section: str
    qualname: str
    signature: str
    summary: str


def _annotation(value: object) -> str:
    if value is inspect.Parameter.empty:
        return ""
    text = value if isinstance(value, str) else inspect.formatannotation(value)
    return text.replace("'", "").replace('"', "")  # forward references print unquoted


def signature_text(name: str, fn: Callable) -> str:
    """``name(a: int, *, b: str = 'x') -> None`` with string annotations unquoted."""
    sig = inspect.signature(fn)
    parts: list[str] = []
    star_done = False
    for p in sig.parameters.values():
        if p.name == "self" or p.name == "cls":
            continue
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        text = p.name
        if p.kind is p.VAR_POSITIONAL:
            text, star_done = "*" + p.name, True
        elif p.kind is p.VAR_KEYWORD:
            text = "**" + p.name
        ann = _annotation(p.annotation)
        if ann:
            text += f": {ann}"
        if p.default is not p.empty:
            text += (" = " if ann else "=") + repr(p.default)
        parts.append(text)
    out = f"{name}({', '.join(parts)})"
    ret = _annotation(sig.return_annotation)
    return out + (f" -> {ret}" if ret else "")


def _summary(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    first = doc.split("\n\n")[0].replace("\n", " ").strip()
    return first


def _members(cls: type, skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, object]]:
    """Public methods and properties of ``cls`` (inherited ones too), sorted by name."""
    seen = set()
    for klass in cls.__mro__:
        if klass is object or klass.__module__.startswith(("hypothesis", "collections", "typing",
                                                            "builtins")):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen or name in skip:
                continue
            seen.add(name)
            if isinstance(value, (property, staticmethod, classmethod)) or inspect.isfunction(
                    value):
                yield name, value
    return


def class_entries(section: str, cls: type, prefix: str, *,
                  skip: frozenset[str] = frozenset(), init: bool = True) -> list[Entry]:
    out = []
    if init:
        out.append(Entry(section, cls.__name__, signature_text(cls.__name__, cls.__init__),
                         _summary(cls)))
    for name, value in sorted(_members(cls, skip)):
        qual = f"{prefix}.{name}"
        if isinstance(value, property):
            ret = _annotation(inspect.signature(value.fget).return_annotation)
            out.append(Entry(section, qual, f"{qual}" + (f" -> {ret}" if ret else ""),
                             _summary(value.fget)))
        else:
            fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            out.append(Entry(section, qual, signature_text(qual, fn), _summary(fn)))
    return out


def function_entry(section: str, qual: str, fn: Callable) -> Entry:
    return Entry(section, qual, signature_text(qual, fn), _summary(fn))


def fixture_entries() -> list[Entry]:
    import pytest_kraft.faces as faces
    import pytest_kraft.gateway as gateway
    import pytest_kraft.plugin as plugin

    out = []
    for module in (plugin, faces, gateway):
        for name, value in sorted(vars(module).items()):
            definition = getattr(value, "_fixture_function_marker", None) or \
                getattr(value, "_pytestfixturefunction", None)
            if definition is None:
                continue
            fn = getattr(value, "_get_wrapped_function", lambda: None)() or \
                getattr(value, "__wrapped__", value)
            out.append(Entry("Fixtures", name, f"fixture {name}", _summary(fn)))
    return out


def marker_entries() -> list[Entry]:
    from pytest_kraft.markers import CLUSTER_KEYS

    from kraft_testkit.cluster import Cluster
    from kraft_testkit.cluster_args import _CHECKS

    params = inspect.signature(Cluster.__init__).parameters
    out = []
    for k in sorted(CLUSTER_KEYS):
        allowed = _CHECKS[k][1] if k in _CHECKS else _annotation(params[k].annotation)
        default = ("derived from --kraft-seed and the test id" if k == "seed" else
                   "--kraft-storage" if k == "storage" else repr(params[k].default))
        out.append(Entry("Marker", f"kraft.{k}", f"@pytest.mark.kraft({k}=...)",
                         f"{allowed}; default {default}"))
    return out


def _walk_parser(parser: argparse.ArgumentParser, prefix: str) -> Iterator[Entry]:
    for action in parser._actions:  # noqa: SLF001 - argparse keeps them here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                yield from _walk_parser(sub, f"{prefix} {name}")
        elif action.option_strings and "--help" not in action.option_strings:
            flags = ", ".join(action.option_strings)
            meta = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
            kind = getattr(action.type, "__name__", None) if action.type else None
            facts = [f for f in (kind, None if action.default in (None, False, "==SUPPRESS==")
                                 else f"default {action.default!r}") if f]
            facts += [f"one of {', '.join(map(str, action.choices))}"] if action.choices else []
            text = (action.help or "").replace("\n", " ")
            yield Entry("Command line", f"{prefix} {flags}", f"{prefix} {flags}{meta}",
                        " ".join(x for x in (text, f"({'; '.join(facts)})" if facts else "") if x))
        elif not action.option_strings and action.dest not in ("help", "command"):
            yield Entry("Command line", f"{prefix} {action.dest}",
                        f"{prefix} {action.metavar or action.dest.upper()}",
                        (action.help or "").replace("\n", " "))


def cli_entries() -> list[Entry]:
    from kraft_testkit.tools.cli import build_parser

    return list(_walk_parser(build_parser(), "kraft-testkit"))


def pytest_option_entries() -> list[Entry]:
    import pytest_kraft.faces as faces
    import pytest_kraft.plugin as plugin

    seen: list[Entry] = []

    class Group:
        def addoption(self, *names: str, **kwargs: object) -> None:
            meta = "" if kwargs.get("action") == "store_true" else \
                f" {kwargs.get('metavar') or 'VALUE'}"
            seen.append(Entry("pytest options", names[0], f"pytest {names[0]}{meta}",
                              str(kwargs.get("help", "")).replace("\n", " ")))

    class Parser:
        def getgroup(self, *args: object, **kwargs: object) -> Group:
            return Group()

    plugin.pytest_addoption(Parser())
    faces.pytest_addoption(Parser())
    return seen


def all_entries() -> list[Entry]:
    from kraft_testkit import errors as kit_errors
    from kraft_testkit import hypothesis as kh
    from kraft_testkit.cluster import Cluster, ClusterFaults, ClusterNetwork
    from kraft_testkit.committed import CommittedRecord
    from kraft_testkit.handles import BrokerStatus, NodeHandle
    from kraft_testkit.hypothesis.machine import ClusterMachine
    from kraft_testkit.quorum import Quorum
    from kraft_testkit.sim import LinkProfile
    from kraft_testkit.views import BrokerFleet, QuorumView

    out: list[Entry] = []
    out += class_entries("Cluster", Cluster, "Cluster")
    out += class_entries("Cluster", ClusterFaults, "cluster.faults", init=False)
    out += class_entries("Cluster", ClusterNetwork, "cluster.network", init=False)
    out += class_entries("Cluster", NodeHandle, "NodeHandle", init=False)
    out += [Entry("Cluster", "BrokerStatus", "BrokerStatus(" + ", ".join(
        BrokerStatus.__dataclass_fields__) + ")", _summary(BrokerStatus))]
    out += [Entry("Cluster", "CommittedRecord", "CommittedRecord(" + ", ".join(
        CommittedRecord.__dataclass_fields__) + ")", _summary(CommittedRecord))]
    out += class_entries("Cluster", CommittedRecord, "CommittedRecord", init=False)
    out += [Entry("Cluster", "LinkProfile", "LinkProfile(" + ", ".join(
        f"{k}={v.default!r}" for k, v in LinkProfile.__dataclass_fields__.items()) + ")",
        _summary(LinkProfile))]
    out += class_entries("Views", QuorumView, "QuorumView")
    out += class_entries("Views", BrokerFleet, "BrokerFleet",
                         skip=frozenset({"index", "count"}))
    out += class_entries("Quorum", Quorum, "Quorum")
    out += [function_entry("Hypothesis", f"kraft_testkit.hypothesis.{n}", getattr(kh, n))
            for n in ("fault_schedules", "fault_steps", "node_ids", "replay_note",
                      "run_schedule")]
    out += [Entry("Hypothesis", "FaultStep", "FaultStep(at_ms: int, kind: str, node: int, "
                  "duration_ms: int = 0)", _summary(kh.FaultStep)),
            Entry("Hypothesis", "Schedule", "Schedule(steps: tuple[FaultStep, ...], "
                  "cluster: dict[str, Any] = {})", _summary(kh.Schedule)),
            function_entry("Hypothesis", "Schedule.to_script", kh.Schedule.to_script),
            Entry("Hypothesis", "ClusterMachine", "class ClusterMachine(RuleBasedStateMachine)",
                  _summary(ClusterMachine))]
    out += [Entry("Errors", name, f"class {name}({cls.__mro__[1].__name__})", _summary(cls))
            for name, cls in sorted(vars(kit_errors).items())
            if isinstance(cls, type) and issubclass(cls, BaseException)
            and cls.__module__ == kit_errors.__name__]
    out += fixture_entries() + marker_entries() + pytest_option_entries() + cli_entries()
    return out


SECTIONS = {
    "Cluster": """`from kraft_testkit import Cluster`. Every call runs under virtual time. Errors:
`ConfigError` for a bad argument (naming it and what is allowed), `KafkaApiError` (with Kafka's
error name, e.g. `TOPIC_ALREADY_EXISTS`) when the controller refuses an admin call, `NoProgress`
(seed, virtual time, trace tail, replay line) when a wait or request times out in virtual time,
`InvariantViolation` as soon as a safety invariant breaks, `NodeStateError` for a call on a node
that is down, `StorageError` for damaged files.

```python
from kraft_testkit import Cluster
c = Cluster(3, 3, seed=7)
c.create_topic("orders", partitions=3, replication_factor=3)
assert c.records()[-1].type == "PARTITION_RECORD" and c.quorum.epoch >= 1
```""",
    "Views": """`cluster.quorum` / the `controller_quorum` fixture (`QuorumView`) and `cluster.fleet`
/ the `broker_fleet` fixture (`BrokerFleet`): views of one cluster, acting through its public
calls (so they raise what those raise).

```python
from kraft_testkit import Cluster
c = Cluster(3, 3, seed=2)
old = c.quorum.kill_leader()
assert c.quorum.wait_for_leader(other_than=old) != old and len(c.fleet) == 3
```""",
    "Quorum": """A bare Raft quorum (no controller, no brokers): `from kraft_testkit import Quorum`.
`NotLeader` when there is no leader to append to; `NoProgress`, `InvariantViolation` as above.""",
    "Hypothesis": """`pip install 'kraft-testkit[hypothesis]'`; see [faces.md](faces.md) section 4.
`ConfigError` for a bad step, kind or node.""",
    "Errors": """Every error the kit raises on bad input or a failed expectation is a `KraftError`.
Others: `kraft_testkit.sim.NoProgress`, `kraft_testkit.sim.InvariantViolation`,
`kraft_testkit.protocol.error_codes.KafkaApiError`, `kraft_testkit.protocol.errors.DecodeError`,
`pytest_kraft.markers.MarkerError` (a bad `@pytest.mark.kraft` argument, a `ConfigError`).""",
    "Fixtures": """Registered by the plugin (entry point `pytest11`); see [pytest.md](pytest.md).
A bad marker argument fails the test at setup with one `MarkerError` line.""",
    "Marker": """`@pytest.mark.kraft(...)` takes `Cluster`'s keywords of the same names, keywords
only; the values are checked as `Cluster(...)` checks them.""",
    "pytest options": "",
    "Command line": """`kraft-testkit COMMAND ...` ([cli.md](cli.md)); `--help` on every command. An
expected failure is one line on stderr and exit code 1; a usage error exit code 2.""",
}


def render() -> str:
    entries = all_entries()
    lines = ["# API reference", "",
             "Every public class, method, property, fixture, marker argument and command-line "
             "flag, with its signature (generated from the code by "
             "`python tests/docs/api_surface.py > docs/api.md`; "
             "tests/docs/test_api_reference.py fails when one is missing). Each section says "
             "which errors its calls raise and shows a line of use. The guides: "
             "[cluster.md](cluster.md), [pytest.md](pytest.md), [faces.md](faces.md), "
             "[cli.md](cli.md).", ""]
    for section, intro in SECTIONS.items():
        lines += [f"## {section}", ""]
        if intro:
            lines += [intro, ""]
        for e in entries:
            if e.section == section:
                summary = f": {e.summary}" if e.summary else ""
                lines.append(f"* `{e.signature}`{summary}")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
