"""Shared pytest setup: the pytester fixture for plugin tests."""

pytest_plugins = ["pytester"]
