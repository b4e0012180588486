"""XXH3-64 with seed 0 and the default secret (Yann Collet's xxHash, the hash hash4j's
``Hashing.xxh3_64()`` computes), for Kafka 4.2.1's consumer group metadata hash (KIP-1101).

Written from the algorithm's description for the kit (short inputs, 17-128, 129-240, and the
striped long path); ``tests/gateway/test_consumer_group_state.py`` checks it against LLVM's
published vectors (every length class). Pure Python: the hashed streams are a few hundred bytes.
"""

from __future__ import annotations

M64 = (1 << 64) - 1
P32_1, P32_2, P32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
P64_1, P64_2, P64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
P64_4, P64_5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
MX1, MX2 = 0x165667919E3779F9, 0x9FB21C651E98DF25
SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e")


def _r64(b: bytes, i: int) -> int:
    return int.from_bytes(b[i:i + 8], "little")


def _r32(b: bytes, i: int) -> int:
    return int.from_bytes(b[i:i + 4], "little")


def _fold(a: int, b: int) -> int:
    p = (a & M64) * (b & M64)
    return (p & M64) ^ (p >> 64)


def _avalanche64(h: int) -> int:
    h ^= h >> 33
    h = (h * P64_2) & M64
    h ^= h >> 29
    h = (h * P64_3) & M64
    return h ^ (h >> 32)


def _avalanche(h: int) -> int:
    h ^= h >> 37
    h = (h * MX1) & M64
    return h ^ (h >> 32)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & M64


def _rrmxmx(h: int, n: int) -> int:
    h ^= _rotl(h, 49) ^ _rotl(h, 24)
    h = (h * MX2) & M64
    h ^= (h >> 35) + n
    h = (h * MX2) & M64
    return h ^ (h >> 28)


def _mix16(d: bytes, i: int, s: int) -> int:
    return _fold(_r64(d, i) ^ _r64(SECRET, s), _r64(d, i + 8) ^ _r64(SECRET, s + 8))


def _short(d: bytes) -> int:
    n = len(d)
    if n > 8:
        lo = _r64(d, 0) ^ (_r64(SECRET, 24) ^ _r64(SECRET, 32))
        hi = _r64(d, n - 8) ^ (_r64(SECRET, 40) ^ _r64(SECRET, 48))
        swapped = int.from_bytes(lo.to_bytes(8, "little"), "big")
        return _avalanche((n + swapped + hi + _fold(lo, hi)) & M64)
    if n >= 4:
        keyed = ((_r32(d, n - 4) + (_r32(d, 0) << 32)) ^
                 (_r64(SECRET, 8) ^ _r64(SECRET, 16))) & M64
        return _rrmxmx(keyed, n)
    if n:
        combined = (d[0] << 16) | (d[n >> 1] << 24) | d[n - 1] | (n << 8)
        return _avalanche64(combined ^ (_r32(SECRET, 0) ^ _r32(SECRET, 4)))
    return _avalanche64(_r64(SECRET, 56) ^ _r64(SECRET, 64))


def _acc512(acc: list[int], d: bytes, i: int, s: int) -> None:
    for k in range(8):
        v = _r64(d, i + 8 * k)
        key = v ^ _r64(SECRET, s + 8 * k)
        acc[k ^ 1] = (acc[k ^ 1] + v) & M64
        acc[k] = (acc[k] + (key & 0xFFFFFFFF) * (key >> 32)) & M64


def _long(d: bytes) -> int:
    n = len(d)
    acc = [P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1]
    per_block = (len(SECRET) - 64) // 8
    block = 64 * per_block
    blocks = (n - 1) // block
    for b in range(blocks):
        for st in range(per_block):
            _acc512(acc, d, b * block + st * 64, st * 8)
        for k in range(8):  # scramble
            a = acc[k]
            a ^= a >> 47
            a ^= _r64(SECRET, len(SECRET) - 64 + 8 * k)
            acc[k] = (a * P32_1) & M64
    for st in range(((n - 1) - block * blocks) // 64):
        _acc512(acc, d, blocks * block + st * 64, st * 8)
    _acc512(acc, d, n - 64, len(SECRET) - 64 - 7)
    result = (n * P64_1) & M64
    for k in range(4):
        result += _fold(acc[2 * k] ^ _r64(SECRET, 11 + 16 * k),
                        acc[2 * k + 1] ^ _r64(SECRET, 11 + 16 * k + 8))
    return _avalanche(result & M64)


def xxh3_64(data: bytes) -> int:
    """XXH3_64bits(data) with seed 0, as an unsigned 64-bit int."""
    d = bytes(data)
    n = len(d)
    if n <= 16:
        return _short(d)
    if n <= 128:
        acc = (n * P64_1) & M64
        pairs = [(0, n - 16)]
        if n > 32:
            pairs.append((16, n - 32))
        if n > 64:
            pairs.append((32, n - 48))
        if n > 96:
            pairs.append((48, n - 64))
        for k, (a, b) in enumerate(pairs):
            acc += _mix16(d, a, 32 * k) + _mix16(d, b, 32 * k + 16)
        return _avalanche(acc & M64)
    if n <= 240:
        acc = (n * P64_1) & M64
        for k in range(8):
            acc += _mix16(d, 16 * k, 16 * k)
        acc = _avalanche(acc & M64)
        end = _mix16(d, n - 16, 136 - 17)
        for k in range(8, n // 16):
            end += _mix16(d, 16 * k, 16 * (k - 8) + 3)
        return _avalanche((acc + end) & M64)
    return _long(d)
