"""The memory disk: what a crash keeps, what it loses, what it tears."""

from __future__ import annotations

import random

import pytest

from kraft_testkit.sim import Append, Delete, DiskError, MemoryDisk, Replace, Truncate


def _disk(*ops, sync=True) -> MemoryDisk:
    disk = MemoryDisk()
    for op in ops:
        disk.apply(op)
    if sync:
        disk.sync()
    return disk


def test_writes_are_visible_at_once_and_durable_after_sync():
    disk = _disk(Append("log", b"ab"), Replace("meta", b"m1"))
    disk.apply(Append("log", b"cd"))
    assert disk.view() == {"log": b"abcd", "meta": b"m1"}
    assert disk.durable() == {"log": b"ab", "meta": b"m1"}
    disk.sync()
    assert disk.durable() == {"log": b"abcd", "meta": b"m1"}


def test_crash_loses_every_unsynced_change():
    disk = _disk(Append("log", b"abcdef"), Replace("meta", b"m1"), Append("gone", b"x"))
    disk.apply(Truncate("log", 2))
    disk.apply(Append("log", b"XY"))
    disk.apply(Replace("meta", b"m2"))
    disk.apply(Delete("gone"))
    disk.apply(Append("new", b"never synced"))
    disk.crash(random.Random(1), torn_tail_probability=1.0)  # rewritten files never tear
    assert disk.view() == {"gone": b"x", "log": b"abcdef", "meta": b"m1"}


def test_torn_tail_keeps_a_random_prefix_of_unsynced_appends():
    kept = set()
    for seed in range(200):
        disk = _disk(Append("log", b"synced|"))
        disk.apply(Append("log", b"0123456789"))
        disk.crash(random.Random(seed), torn_tail_probability=0.5)
        content = disk.view()["log"]
        assert content.startswith(b"synced|") and b"synced|0123456789".startswith(content)
        kept.add(len(content) - 7)
    assert 0 in kept and 10 in kept and len(kept) > 5  # lost, whole, and torn in between
    disk = _disk(Append("log", b"s"))
    disk.apply(Append("log", b"tail"))
    disk.crash(random.Random(0), torn_tail_probability=0.0)
    assert disk.view() == {"log": b"s"}


def test_after_a_crash_what_survived_is_durable():
    disk = _disk(Append("log", b"a"))
    disk.apply(Append("log", b"bcd"))
    disk.crash(random.Random(3), torn_tail_probability=1.0)
    survived = disk.view()
    assert disk.durable() == survived
    disk.crash(random.Random(4), torn_tail_probability=1.0)
    assert disk.view() == survived


def test_truncate_within_the_unsynced_tail_keeps_append_only_tracking():
    disk = _disk(Append("log", b"ab"))
    disk.apply(Append("log", b"cdef"))
    disk.apply(Truncate("log", 3))
    assert disk.durable() == {"log": b"ab"}
    disk.crash(random.Random(0), torn_tail_probability=0.0)
    assert disk.view() == {"log": b"ab"}


def test_wipe_and_delete_then_recreate():
    disk = _disk(Append("a", b"1"))
    disk.apply(Delete("a"))
    disk.apply(Append("a", b"2"))
    assert disk.view() == {"a": b"2"} and disk.durable() == {"a": b"1"}
    disk.sync()
    assert disk.durable() == {"a": b"2"}
    disk.wipe()
    assert disk.view() == {} and disk.durable() == {}


def test_view_is_a_read_only_sorted_snapshot():
    disk = _disk(Append("b", b"1"), Append("a", b"2"))
    view = disk.view()
    disk.apply(Append("a", b"3"))
    assert list(view) == ["a", "b"] and view["a"] == b"2"
    with pytest.raises(TypeError):
        view["a"] = b""  # type: ignore[index]


@pytest.mark.parametrize(
    "op, message",
    [
        (Truncate("nope", 0), "no such file"),
        (Truncate("log", 99), "to 99 bytes"),
        (Delete("nope"), "no such file"),
        (Append("../escape", b""), "inside the data directory"),
        (Append("/abs", b""), "relative"),
        (Append("", b""), "non-empty"),
        (Append("log", "text"), "needs bytes"),
        ("not an op", "not a disk operation"),
    ],
)
def test_bad_operations_raise_disk_errors(op, message):
    disk = _disk(Append("log", b"abc"))
    with pytest.raises(DiskError, match=message):
        disk.apply(op)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(6))
def test_packed_files_read_byte_for_byte_as_unpacked_ones(monkeypatch, seed):
    """A file's synced prefix is kept packed (sim/disk.py PACK_BYTES): random appends,
    truncations (into the packed part too), replaces, deletes, syncs and crashes with torn
    tails leave the same current and durable bytes as a disk that never packs."""
    import kraft_testkit.sim.disk as disk_mod

    rng = random.Random(seed)
    ops = []
    for _ in range(400):
        name = rng.choice(["a.log", "b.index"])
        kind = rng.random()
        if kind < 0.6:
            ops.append(Append(name, bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))))
        elif kind < 0.68:
            ops.append(("truncate", name, rng.random()))
        elif kind < 0.72:
            ops.append(Replace(name, bytes(rng.randrange(4) for _ in range(rng.randint(0, 90)))))
        elif kind < 0.74:
            ops.append(("delete", name))
        elif kind < 0.95:
            ops.append("sync")
        else:
            ops.append(("crash", rng.randrange(1 << 30)))

    def play(pack_bytes, whole_bytes=1 << 40):
        monkeypatch.setattr(disk_mod, "PACK_BYTES", pack_bytes)
        monkeypatch.setattr(disk_mod, "PACK_WHOLE_BYTES", whole_bytes)
        disk = MemoryDisk()
        seen, packed = [], 0
        for op in ops:
            if op == "sync":
                disk.sync()
            elif isinstance(op, tuple) and op[0] == "crash":
                disk.crash(random.Random(op[1]), 0.5)
            elif isinstance(op, tuple):
                now = disk.view()
                if op[1] not in now:
                    continue
                if op[0] == "delete":
                    disk.apply(Delete(op[1]))
                else:
                    disk.apply(Truncate(op[1], int(len(now[op[1]]) * op[2])))
            else:
                disk.apply(op)
            packed = max([packed] + [f.packed_len for f in disk._files.values()])  # noqa: SLF001
            seen.append((dict(disk.view()), disk.durable()))
        return seen, packed

    plain, never = play(1 << 40)
    small, packed = play(16)
    assert never == 0 and packed > 0  # the second disk did pack
    assert small == plain
    # and with files written whole (Replace) packed whole at a sync, before their appends
    whole, packed = play(1 << 40, 8)
    assert packed > 0 and whole == plain
    both, packed = play(16, 8)
    assert both == plain


def test_disks_of_one_simulation_share_equal_packed_pieces(monkeypatch):
    """Replicas of one log hold the same bytes at the same positions: the disks of a
    simulation keep one copy of each packed piece (sim/disk.py PieceStore), and a piece no
    disk holds any more is forgotten when the store prunes."""
    import kraft_testkit.sim.disk as disk_mod

    monkeypatch.setattr(disk_mod, "PACK_BYTES", 64)
    store = disk_mod.PieceStore()
    disks = [MemoryDisk(store) for _ in range(3)]
    chunk = random.Random(5).randbytes(512)
    for disk in disks:
        disk.apply(Append("seg.log", chunk))
        disk.sync()
    files = [disk._files["seg.log"] for disk in disks]  # noqa: SLF001
    assert len(files[0].packed) == 8 and len(store) == 8
    assert all(a is b for f in files[1:] for a, b in zip(files[0].packed, f.packed))
    seen: set[int] = set()
    assert [d.held_bytes(seen) for d in disks][1:] == [0, 0]  # counted once
    assert all(d.view()["seg.log"] == chunk for d in disks)
    for disk in disks:
        disk.apply(Delete("seg.log"))
        disk.sync()
    store._prune()  # noqa: SLF001
    assert len(store) == 0
