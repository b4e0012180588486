"""The worker side of :mod:`.serving`: ask the loopback endpoint for its bounds and log bytes."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from .errors import EndpointError

TOKEN_HEADER = "X-Kraft-Token"
TIMEOUT_S = 10


class Endpoint:
    """``bounds()`` = (first offset served, high watermark); ``fetch(a, b)`` = the log bytes
    (whole batches, Kafka's segment layout) holding offsets ``[a, b)``."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self.token = token

    def _get(self, path: str) -> bytes:
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
            raise EndpointError(f"kraft-metadata: no answer from {self.url} ({reason}): the "
                                f"serve() endpoint was closed or its cluster stopped") from None

    def bounds(self) -> tuple[int, int]:
        answer = json.loads(self._get("/bounds"))
        return int(answer["start"]), int(answer["end"])

    def fetch(self, start: int, end: int) -> bytes:
        return self._get(f"/log?start={start}&end={end}")
