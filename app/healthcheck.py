"""`python -m app.healthcheck`: exit 0 when the local gateway's `/health` answers 200.

Used by the Docker images' HEALTHCHECK. It reads the port and the API key from the same
`GATEWAY_*` variables as the server (`GATEWAY_PORT`, `GATEWAY_API_KEY`), and imports
nothing heavy, so it costs a few milliseconds.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path


def health_url(environ: Mapping[str, str]) -> str:
    port = environ.get("GATEWAY_PORT", "8000").strip() or "8000"
    return f"http://127.0.0.1:{port}/health"


def api_key(environ: Mapping[str, str]) -> str:
    """The first key of GATEWAY_API_KEY or GATEWAY_API_KEY_FILE ("" when none is set)."""
    for key in environ.get("GATEWAY_API_KEY", "").split(","):
        if key.strip():
            return key.strip()
    path = environ.get("GATEWAY_API_KEY_FILE", "")
    if path:
        try:
            lines = Path(path).expanduser().read_text(encoding="utf-8").splitlines()
        except OSError:
            return ""
        keys = [line.strip() for line in lines if line.strip()]
        return next((key for key in keys if not key.startswith("#")), "")
    return ""


def check(url: str, key: str = "", timeout: float = 5.0) -> bool:
    request = urllib.request.Request(url)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    argv = sys.argv[1:] if argv is None else argv
    url = argv[0] if argv else health_url(environ)
    if check(url, api_key(environ)):
        return 0
    sys.stderr.write(f"healthcheck: {url} is not healthy\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
