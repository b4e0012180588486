"""docs/api.md names every public class, method, property, fixture, marker argument and
command-line flag with its current signature (regenerate it with
``python tests/docs/api_surface.py > docs/api.md``)."""

from pathlib import Path

import pytest

from api_surface import all_entries, render, signature_text

API_MD = Path(__file__).parents[2] / "docs" / "api.md"


def test_every_public_name_and_signature_is_in_the_reference():
    text = API_MD.read_text()
    missing = [e.signature for e in all_entries() if f"`{e.signature}`" not in text]
    assert not missing, (f"{len(missing)} public names or signatures are missing from docs/api.md "
                         f"(regenerate: python tests/docs/api_surface.py > docs/api.md): "
                         + "; ".join(missing[:10]))


def test_the_surface_covers_what_a_user_reaches():
    names = {e.qualname for e in all_entries()}
    for expected in ("Cluster.records", "Cluster.wait_brokers_caught_up", "QuorumView.kill_leader",
                     "BrokerFleet.roll", "cluster.network.set_profile", "controller_quorum",
                     "broker_fleet", "kraft.seed", "kraft-testkit demo --seed",
                     "kraft-testkit simulate --cluster", "--kraft-seed",
                     "kraft_testkit.hypothesis.run_schedule", "ConfigError"):
        assert expected in names, expected
    assert render().count("\n## ") == 9


def test_signature_text_reads_like_python():
    def f(a: "int", *, b: "list['X']" = None, **kw: "str") -> "None":
        pass

    assert signature_text("f", f) == "f(a: int, *, b: list[X] = None, **kw: str) -> None"


@pytest.mark.parametrize("name", ["kill_leader", "roll"])
def test_a_changed_signature_is_caught(name, monkeypatch):
    from kraft_testkit import views

    cls = views.QuorumView if name == "kill_leader" else views.BrokerFleet
    monkeypatch.setattr(cls, name, lambda self, *, extra=1: None)
    text = API_MD.read_text()
    assert any(f"`{e.signature}`" not in text for e in all_entries())
