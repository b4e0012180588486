"""Each face has its own extra, the kit's own [test] extra includes them, and the README names
them and what a hatchling project needs for a file:// reference."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_hypothesis_and_clients_have_extras_of_their_own():
    extras = _extras()
    assert [d.split(">")[0] for d in extras["hypothesis"]] == ["hypothesis"]
    assert sorted(d.split(">")[0] for d in extras["clients"]) == \
        ["aiokafka", "confluent-kafka", "kafka-python"]
    suite = next(d for d in extras["test"] if d.startswith("kraft-testkit["))
    faces = suite[len("kraft-testkit["):-1].split(",")
    assert {"hypothesis", "clients", "async", "timewarp", "names", "twin", "spark"} <= set(faces)


def test_the_readme_names_every_extra_and_the_hatchling_setting():
    readme = (ROOT / "README.md").read_text()
    for extra in _extras():
        if extra not in ("bench",):
            assert f"`{extra}`" in readme, extra
    assert "allow-direct-references = true" in readme and "[tool.hatch.metadata]" in readme


def test_missing_hypothesis_points_to_its_extra():
    text = (ROOT / "kraft_testkit" / "hypothesis" / "__init__.py").read_text()
    assert "kraft-testkit[hypothesis]" in text
