"""``kraft-testkit metadata-shell``: the metadata image of a directory as a browsable tree.

After Kafka's ``kafka-metadata-shell.sh``. The tree has Kafka's two layouts:

* ``/image/...`` as Kafka 3.7+ shows it (``provenance``, ``features/metadataVersion``,
  ``cluster/brokers/1``, ``cluster/controllers/1000``, ``topics/byName/foo/0``,
  ``topics/byId/<id>/...``, ``configs/TOPIC:foo/<key>``, ``clientQuotas``, ``producerIds``,
  ``acls``, ``scram``, ``delegationToken``), and ``/local/version``;
* the shorter paths of Kafka 3.0-3.6's shell, which most how-tos quote: ``/brokers/1/registration``,
  ``/brokers/1/isFenced``, ``/controllers/1000/registration``, ``/topics/foo/id``,
  ``/topics/foo/0/data``, ``/topicIds/<id>/...``, ``/features/metadata.version``,
  ``/configs/topic/foo/<key>``.

Commands: ``ls``, ``cd``, ``pwd``, ``cat``, ``find``, ``tree``, ``help``, ``exit``; paths may
be relative and may hold globs (``ls /brokers/*``). Leaves print JSON of the kit's image objects.
"""

from __future__ import annotations

import fnmatch
import json
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TextIO

from .. import __version__
from ..metadata import MetadataImage
from ..metadata import versions as V
from ..metadata.image import CONFIG_RESOURCE_TYPES, quota_entity_str
from .metadata_image_loader import LoadedImage, load_image


@dataclass(frozen=True)
class Leaf:
    text: str


class Dir:
    """A directory whose children are built when first listed."""

    def __init__(self, make: Callable[[], dict[str, Node]]) -> None:
        self._make = make
        self._children: dict[str, Node] | None = None

    def children(self) -> dict[str, Node]:
        if self._children is None:
            self._children = self._make()
        return self._children


Node = Leaf | Dir


def _json(obj: object) -> str:
    return json.dumps(obj, default=str)


def _fixed(children: dict[str, Node]) -> Dir:
    return Dir(lambda: children)


# ------------------------------------------------------------------ the tree


def image_tree(image: MetadataImage, source: str = "", snapshot: str | None = None) -> Dir:
    """The root of the shell's tree for ``image``."""
    local = {"version": Leaf(__version__), "source": Leaf(source)}
    if snapshot:
        local["snapshot"] = Leaf(snapshot)
    return _fixed({
        "image": Dir(lambda: _image_node(image)),
        "local": _fixed(local),
        "brokers": Dir(lambda: {str(i): _legacy_broker(b)
                                for i, b in image.cluster.brokers.items()}),
        "controllers": Dir(lambda: {str(i): _fixed({"registration": Leaf(_json(c.to_dict()))})
                                    for i, c in image.cluster.controllers.items()}),
        "topics": Dir(lambda: {t.name: _legacy_topic(t) for t in _topics(image)}),
        "topicIds": Dir(lambda: {str(t.id): _legacy_topic(t) for t in _topics(image)}),
        "features": Dir(lambda: _legacy_features(image)),
        "configs": Dir(lambda: _legacy_configs(image)),
    })


def _topics(image: MetadataImage):
    return image.topics.topics_by_id.values()


def _image_node(image: MetadataImage) -> dict[str, Node]:
    p = image.provenance
    return {
        "provenance": Leaf(f"offset {p.offset}, epoch {p.epoch}"),
        "features": Dir(lambda: _features_node(image)),
        "cluster": _fixed({
            "brokers": Dir(lambda: {str(i): Leaf(_json(b.to_dict()))
                                    for i, b in image.cluster.brokers.items()}),
            "controllers": Dir(lambda: {str(i): Leaf(_json(c.to_dict()))
                                        for i, c in image.cluster.controllers.items()}),
        }),
        "topics": _fixed({
            "byName": Dir(lambda: {t.name: _topic_node(t) for t in _topics(image)}),
            "byId": Dir(lambda: {str(t.id): _topic_node(t) for t in _topics(image)}),
        }),
        "configs": Dir(lambda: _configs_node(image)),
        "clientQuotas": Dir(lambda: {
            quota_entity_str(e): _fixed({k: Leaf(repr(v)) for k, v in q.items()})
            for e, q in image.client_quotas.entities.items()}),
        "producerIds": _fixed({"nextProducerId": Leaf(str(image.producer_ids.next_producer_id))}),
        "acls": Dir(lambda: {str(i): Leaf(_json(a.to_dict())) for i, a in image.acls.acls.items()}),
        "scram": Dir(lambda: _scram_node(image)),
        "delegationToken": Dir(lambda: {i: Leaf(_json(t.to_dict()))
                                        for i, t in image.delegation_tokens.tokens.items()}),
    }


def _features_node(image: MetadataImage) -> dict[str, Node]:
    from ..controller.features import ZkMigrationState

    f = image.features
    mv = f.metadata_version
    state = f.zk_migration_state
    out: dict[str, Node] = {
        "metadataVersion": Leaf("none" if mv is None else
                                (V.get(mv).name if V.is_known(mv) else str(mv))),
        "zkMigrationState": Leaf(ZkMigrationState(state).name
                                 if state in ZkMigrationState._value2member_map_ else str(state)),
    }
    out.update({f"finalized_{k}": Leaf(str(v)) for k, v in f.finalized.items()})
    return out


def _topic_node(topic) -> Dir:
    def make() -> dict[str, Node]:
        out: dict[str, Node] = {"name": Leaf(topic.name), "id": Leaf(str(topic.id))}
        out.update({str(p): Leaf(_json(r.to_dict())) for p, r in topic.partitions.items()})
        return out
    return Dir(make)


def _resource_name(resource) -> str:
    kind = CONFIG_RESOURCE_TYPES.get(resource.type, str(resource.type))
    return kind if resource.name == "" else f"{kind}:{resource.name}"


def _configs_node(image: MetadataImage) -> dict[str, Node]:
    return {_resource_name(r): _fixed({k: Leaf(v) for k, v in c.items()})
            for r, c in image.configs.resources.items()}


def _scram_node(image: MetadataImage) -> dict[str, Node]:
    from ..metadata.image import SCRAM_MECHANISMS

    by_mech: dict[str, dict[str, Node]] = {}
    for (user, mech), cred in image.scram.credentials.items():
        by_mech.setdefault(str(SCRAM_MECHANISMS.get(mech, mech)), {})[user] = \
            Leaf(_json(cred.to_dict()))
    return {m: _fixed(users) for m, users in by_mech.items()}


def _legacy_broker(b) -> Dir:
    return _fixed({"registration": Leaf(_json(b.to_dict())),
                   "isFenced": Leaf(str(b.fenced).lower()),
                   "inControlledShutdown": Leaf(str(b.in_controlled_shutdown).lower())})


def _legacy_topic(topic) -> Dir:
    def make() -> dict[str, Node]:
        out: dict[str, Node] = {"name": Leaf(topic.name), "id": Leaf(str(topic.id))}
        out.update({str(p): _fixed({"data": Leaf(_json(r.to_dict()))})
                    for p, r in topic.partitions.items()})
        return out
    return Dir(make)


def _legacy_features(image: MetadataImage) -> dict[str, Node]:
    f = image.features
    out: dict[str, Node] = {} if f.metadata_version is None else {
        V.FEATURE_NAME: Leaf(str(f.metadata_version))}
    out.update({k: Leaf(str(v)) for k, v in f.finalized.items()})
    return out


def _legacy_configs(image: MetadataImage) -> dict[str, Node]:
    out: dict[str, dict[str, Node]] = {}
    for r, c in image.configs.resources.items():
        kind = CONFIG_RESOURCE_TYPES.get(r.type, str(r.type)).lower()
        out.setdefault(kind, {})[r.name or "<default>"] = _fixed({k: Leaf(v) for k, v in c.items()})
    return {k: _fixed(v) for k, v in out.items()}


# ------------------------------------------------------------------ the shell

HELP = """Commands:
  ls [PATH...]      list a directory (or name a file)
  cd [PATH]         change the current directory (/ without PATH)
  pwd               print the current directory
  cat PATH...       print files
  find [PATH...]    print every path under PATH (the current directory by default)
  tree [PATH...]    print the tree under PATH with the files' contents
  help              this list
  exit              leave the shell
Paths may be relative and may hold globs (*, ?, [..]). The tree: /image (Kafka 3.7+ layout),
/local, and Kafka 3.0-3.6's short paths: /brokers, /controllers, /topics, /topicIds, /features,
/configs."""


def _join(base: str, name: str) -> str:
    return "/" + name if base == "/" else f"{base}/{name}"


class MetadataShell:
    """A shell over one image: ``run("cat /brokers/1/registration")`` returns what it prints."""

    def __init__(self, root: Dir, *, loaded: LoadedImage | None = None) -> None:
        self.root = root
        self.cwd = "/"
        self.loaded = loaded
        self.errors = 0
        self.done = False

    @classmethod
    def open(cls, path: str, *, prerelease: bool = False) -> MetadataShell:
        """A shell on the image of a directory or a ``.log`` / ``.checkpoint`` file."""
        loaded = load_image(path, prerelease=prerelease)
        return cls(image_tree(loaded.image, str(loaded.source), loaded.snapshot), loaded=loaded)

    @classmethod
    def of_image(cls, image: MetadataImage) -> MetadataShell:
        """A shell on an image in memory (``cluster.metadata``)."""
        return cls(image_tree(image, "memory"))

    # ---------------------------------------------------------------- paths

    def _absolute(self, path: str) -> list[str]:
        parts = [] if path.startswith("/") else [p for p in self.cwd.split("/") if p]
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
            else:
                parts.append(part)
        return parts

    def resolve(self, path: str) -> list[tuple[str, Node]]:
        """Every (absolute path, node) that ``path`` names; globs may match several, or none."""
        found: list[tuple[str, Node]] = [("/", self.root)]
        for part in self._absolute(path):
            nxt = []
            for base, node in found:
                if not isinstance(node, Dir):
                    continue
                children = node.children()
                if any(c in part for c in "*?["):
                    nxt += [(_join(base, n), children[n]) for n in sorted(children)
                            if fnmatch.fnmatchcase(n, part)]
                elif part in children:
                    nxt.append((_join(base, part), children[part]))
            found = nxt
        return found

    # ---------------------------------------------------------------- commands

    def run(self, line: str) -> str:
        """Run one command line; returns its output (errors included, as the shell prints)."""
        out: list[str] = []
        try:
            words = shlex.split(line)
        except ValueError as e:
            self.errors += 1
            return f"error: {e}\n"
        if not words:
            return ""
        command, args = words[0], words[1:]
        handler = getattr(self, f"_cmd_{command}", None)
        if handler is None:
            self.errors += 1
            return f"{command}: unknown command; type help for the commands\n"
        handler(args, out)
        return "".join(s + "\n" for s in out)

    def _error(self, out: list[str], text: str) -> None:
        self.errors += 1
        out.append(text)

    def _cmd_help(self, args: list[str], out: list[str]) -> None:
        out.append(HELP)

    def _cmd_exit(self, args: list[str], out: list[str]) -> None:
        self.done = True

    _cmd_quit = _cmd_exit

    def _cmd_pwd(self, args: list[str], out: list[str]) -> None:
        out.append(self.cwd)

    def _cmd_cd(self, args: list[str], out: list[str]) -> None:
        if len(args) > 1:
            return self._error(out, "cd: too many arguments")
        target = args[0] if args else "/"
        found = self.resolve(target)
        if not found:
            return self._error(out, f"cd: {target}: no such directory")
        path, node = found[0]
        if not isinstance(node, Dir):
            return self._error(out, f"cd: {target}: not a directory")
        self.cwd = path

    def _cmd_ls(self, args: list[str], out: list[str]) -> None:
        files, dirs = [], []
        for target in args or ["."]:
            found = self.resolve(target)
            if not found:
                self._error(out, f"ls: {target}: no such file or directory.")
            for path, node in found:
                name = path.rsplit("/", 1)[-1] or "/"
                if isinstance(node, Dir):
                    dirs.append((name, sorted(node.children())))
                else:
                    files.append(name)
        out.extend(files)
        need_intro = bool(files) or len(dirs) > 1
        first = not files
        for name, children in dirs:
            if need_intro:
                if not first:
                    out.append("")
                out.append(f"{name}:")
                first = False
            out.extend(children)

    def _cmd_cat(self, args: list[str], out: list[str]) -> None:
        if not args:
            return self._error(out, "cat: give a path")
        for target in args:
            found = self.resolve(target)
            if not found:
                self._error(out, f"cat: {target}: No such file or directory.")
            for path, node in found:
                if isinstance(node, Dir):
                    self._error(out, f"cat: {target}: Is a directory")
                else:
                    out.append(node.text)

    def _cmd_find(self, args: list[str], out: list[str]) -> None:
        for target in args or ["."]:
            found = self.resolve(target)
            if not found:
                self._error(out, f"find: {target}: no such file or directory.")
            for path, node in found:
                self._find(path, node, out)

    def _find(self, path: str, node: Node, out: list[str]) -> None:
        out.append(path)
        if isinstance(node, Dir):
            children = node.children()
            for name in sorted(children):
                self._find(_join(path, name), children[name], out)

    def _cmd_tree(self, args: list[str], out: list[str]) -> None:
        for target in args or ["."]:
            found = self.resolve(target)
            if not found:
                self._error(out, f"tree: {target}: No such file or directory.")
            for _, node in found:
                self._tree(node, 0, out)

    def _tree(self, node: Node, depth: int, out: list[str]) -> None:
        pad = "  " * depth
        if isinstance(node, Leaf):
            out.append(pad + node.text)
            return
        children = node.children()
        for name in sorted(children):
            out.append(f"{pad}{name}:")
            self._tree(children[name], depth + 1, out)

    # ---------------------------------------------------------------- driving

    def run_all(self, commands: Iterable[str], out: TextIO) -> int:
        """Run commands in order (non-interactive ``-c``); 1 if any of them failed."""
        for line in commands:
            out.write(self.run(line))
            if self.done:
                break
        return 1 if self.errors else 0

    def interact(self, stdin: TextIO = sys.stdin, out: TextIO = sys.stdout) -> int:
        """Read commands line by line (with a prompt on a terminal) until ``exit`` or EOF."""
        tty = stdin.isatty()
        if tty:
            where = "" if self.loaded is None else \
                f" on {self.loaded.source} (offset {self.loaded.image.provenance.offset})"
            out.write(f"[ kraft-testkit metadata shell{where} ] type help for the commands\n")
        if tty:
            try:
                import readline  # noqa: F401  (line editing and history for input())
            except ImportError:
                pass
        while not self.done:
            if tty:
                try:
                    line = input(">> ") + "\n"
                except EOFError:
                    break
            else:
                line = stdin.readline()
            if not line:
                break
            out.write(self.run(line.strip()))
        return 1 if self.errors and not tty else 0
