"""pytest plugin for kraft_testkit: fixtures, markers and options (entry point ``pytest11``)."""
