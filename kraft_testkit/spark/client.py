"""The worker side of :mod:`.serving`: ask the loopback endpoint for its bounds and log bytes."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from .errors import EndpointError

TOKEN_HEADER = "X-Kraft-Token"
TIMEOUT_S = 30
ATTEMPTS = 3


class Endpoint:
    """``bounds()`` = (first offset served, high watermark); ``fetch(a, b)`` = the log bytes
    (whole batches, Kafka's segment layout) holding offsets ``[a, b)``."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self.token = token

    def _get(self, path: str) -> bytes:
        """GET ``path``; a timeout or a reset connection (a loaded machine: the endpoint's thread
        shares the test process) is retried a few times, as Spark's own sources retry a fetch."""
        for attempt in range(ATTEMPTS):
            try:
                return self._get_once(path)
            except (TimeoutError, ConnectionResetError):
                if attempt == ATTEMPTS - 1:
                    raise EndpointError(f"kraft-metadata: {self.url}{path}: no answer in "
                                        f"{ATTEMPTS} tries of {TIMEOUT_S} s each") from None
        raise AssertionError("unreachable")

    def _get_once(self, path: str) -> bytes:
        request = urllib.request.Request(self.url + path, headers={TOKEN_HEADER: self.token})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
                return answer.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace").strip()
            if e.code == 403:
                raise EndpointError(f"kraft-metadata: {self.url} refused the token (wrong "
                                    f"'token' option; use the one serve() returned)") from None
            raise EndpointError(f"kraft-metadata: {self.url}{path}: HTTP {e.code}: "
                                f"{detail}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, (TimeoutError, ConnectionResetError)):
                raise reason from None  # transient: _get tries again
            raise EndpointError(f"kraft-metadata: no answer from {self.url} ({reason}): the "
                                f"serve() endpoint was closed or its cluster stopped") from None

    def bounds(self) -> tuple[int, int]:
        answer = json.loads(self._get("/bounds"))
        return int(answer["start"]), int(answer["end"])

    def fetch(self, start: int, end: int) -> bytes:
        return self._get(f"/log?start={start}&end={end}")
