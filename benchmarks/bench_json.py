"""JSON text of metadata records: the generated ``to_json_text`` against ``json.dumps`` of
``to_json`` (what ``payload_json`` did before), on the same decoded records.

Run ``python benchmarks/bench_json.py`` (``--quick``: a tenth of the records, 3 repeats;
``--repeat N``). Inputs: every metadata record value of golden logs B and C, repeated to
100,000, as ``bench_codec.py`` takes them. Figures are best-of-N process CPU time; the cases
compared run in turn inside every repeat, so their ratio holds up on a busy machine.

Rows: the JSON step alone (records already decoded), and decode + JSON (``decode_metadata``
then the text: per record, what the Spark source's ``value_json`` column costs).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from bench_codec import TARGET_RECORDS, best_of_each, golden_segment  # noqa: E402

from kraft_testkit.protocol import frames, records  # noqa: E402
from kraft_testkit.tools.dump_log import payload_json  # noqa: E402


def record_values(n: int) -> list[bytes]:
    values = []
    for folder in ("B_", "C_"):
        for _, batch in records.iter_batches(golden_segment(folder)):
            if not batch.is_control:
                values += [r.value for r in batch.records if r.value is not None]
    return (values * (n // len(values) + 1))[:n]


def generic_json(rec: frames.MetadataRecord) -> str:
    """What ``payload_json`` did before the generated text: a dict tree, then ``json.dumps``."""
    return json.dumps(rec.to_json(), separators=(",", ":"), ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the records, 3 repeats")
    parser.add_argument("--repeat", type=int, default=5, help="best-of repeats (default 5)")
    args = parser.parse_args(argv)
    n = TARGET_RECORDS // 10 if args.quick else TARGET_RECORDS
    repeat = 3 if args.quick else args.repeat
    values = record_values(n)
    decode = frames.decode_metadata
    decoded = [decode(v) for v in values]
    texts = [payload_json(r) for r in decoded]
    assert texts == [generic_json(r) for r in decoded], "generated text differs from json.dumps"

    t_generic, t_text, t_dec_generic, t_dec_text = best_of_each([
        lambda: [generic_json(r) for r in decoded],
        lambda: [payload_json(r) for r in decoded],
        lambda: [generic_json(decode(v)) for v in values],
        lambda: [payload_json(decode(v)) for v in values],
    ], repeat)
    print(f"{'case':44s} {'json.dumps(to_json)':>20s} {'to_json_text':>14s} {'ratio':>7s}")
    for label, before, after in (("JSON only (records/s)", t_generic, t_text),
                                 ("decode_metadata + JSON (records/s)", t_dec_generic,
                                  t_dec_text)):
        print(f"{label:44s} {n / before:>20,.0f} {n / after:>14,.0f} {before / after:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
