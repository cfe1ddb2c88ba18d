"""Model downloads: ModelScope first, Hugging Face as the fallback, fast failure offline.

`vllm-gateway download [MODEL] [--source modelscope|huggingface] [--dir DIR]` puts the
model in DIR, or by default in `<models_dir>/<org>/<name>` (`GATEWAY_MODELS_DIR`,
`~/.cache/vllm-gateway/models`), where `serve` finds it again by its hub id. A download
to another DIR is linked from there, so it is found by name too.

Before a hub is tried, one TCP connection to it (or to the HTTPS proxy) must open within
the timeout: offline, the command fails in about a second with what to do, instead of
hanging in a hub client's retries.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import shlex
import socket
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.model_source import default_download_dir, find_local, is_model_dir
from app.settings import DEFAULT_MODEL, Settings

logger = logging.getLogger(__name__)

Note = Callable[[str], None]


class DownloadError(RuntimeError):
    """No hub could deliver the model; the message says what to do."""


@dataclass(frozen=True)
class Hub:
    key: str  # what --source takes
    title: str
    package: str  # the import that does the download
    endpoint_env: str
    default_endpoint: str
    offline_env: str

    def endpoint(self, environ: Mapping[str, str]) -> str:
        value = environ.get(self.endpoint_env, "").strip() or self.default_endpoint
        return value if "://" in value else "https://" + value


MODELSCOPE = Hub(
    "modelscope", "ModelScope", "modelscope", "MODELSCOPE_DOMAIN", "https://www.modelscope.cn",
    "MODELSCOPE_OFFLINE",
)  # fmt: skip
HUGGINGFACE = Hub(
    "huggingface", "Hugging Face", "huggingface_hub", "HF_ENDPOINT", "https://huggingface.co",
    "HF_HUB_OFFLINE",
)  # fmt: skip
HUBS = {hub.key: hub for hub in (MODELSCOPE, HUGGINGFACE)}
_TRUE = {"1", "true", "yes", "on"}


def probe_address(url: str, environ: Mapping[str, str]) -> tuple[str, int]:
    """Where a connection to `url` really goes: the HTTPS proxy if one applies, else the host."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    proxies = {
        k.lower()[: -len("_proxy")]: v
        for k, v in environ.items()
        if k.lower().endswith("_proxy") and v
    }
    no_proxy = proxies.pop("no", "")
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and not _bypassed(host, no_proxy):
        proxy_parts = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
        default = 443 if proxy_parts.scheme == "https" else 80
        return proxy_parts.hostname or host, proxy_parts.port or default
    return host, port


def _bypassed(host: str, no_proxy: str) -> bool:
    for entry in (e.strip().lstrip(".").lower() for e in no_proxy.split(",")):
        if entry == "*" or (entry and (host == entry or host.endswith("." + entry))):
            return True
    return False


def reachable(url: str, timeout: float, environ: Mapping[str, str]) -> str | None:
    """None when a TCP connection to `url` (or its proxy) opens, else why not."""
    host, port = probe_address(url, environ)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except TimeoutError:
        return f"{host}:{port} did not answer within {timeout:g}s"
    except OSError as exc:
        return f"{host}:{port} cannot be reached ({exc.strerror or exc})"


def _fetch(hub: Hub, hub_id: str, target: Path) -> Path:
    if hub is MODELSCOPE:
        from modelscope import snapshot_download as ms_download

        return Path(ms_download(hub_id, local_dir=str(target)))
    from huggingface_hub import snapshot_download as hf_download

    return Path(hf_download(hub_id, local_dir=target))


def fetch_model(
    hub_id: str,
    target: Path,
    *,
    hubs: Sequence[str] = ("modelscope", "huggingface"),
    timeout: float = 5.0,
    environ: Mapping[str, str] | None = None,
    note: Note = logger.info,
) -> Path:
    """Download `hub_id` into `target` from the first hub that works; DownloadError if none."""
    environ = os.environ if environ is None else environ
    reasons = []
    for position, key in enumerate(hubs):
        hub = HUBS[key]
        reason = _unusable(hub, timeout, environ)
        if reason is None:
            note(f"downloading {hub_id} from {hub.title} into {target}")
            try:
                return _fetch(hub, hub_id, target)
            except Exception as exc:  # the hub's errors are many; say which and go on
                reason = f"the download failed: {type(exc).__name__}: {exc}"
        if position + 1 < len(hubs):
            note(f"{hub.title}: {reason}; trying {HUBS[hubs[position + 1]].title}")
        reasons.append(f"  - {hub.title}: {reason}")
    raise DownloadError(offline_message(hub_id, reasons))


def _unusable(hub: Hub, timeout: float, environ: Mapping[str, str]) -> str | None:
    if importlib.util.find_spec(hub.package) is None:
        return f"the {hub.package} package is not installed (pip install {hub.package})"
    if environ.get(hub.offline_env, "").strip().lower() in _TRUE:
        return f"{hub.offline_env} is set"
    return reachable(hub.endpoint(environ), timeout, environ)


def offline_message(hub_id: str, reasons: Sequence[str]) -> str:
    return "\n".join(
        [
            f"Could not download {hub_id}:",
            *reasons,
            "What to do: connect this machine to the internet, or point it at a proxy "
            "(HTTPS_PROXY) or a mirror (HF_ENDPOINT, MODELSCOPE_DOMAIN); or download the "
            f"model on a machine that is online (vllm-gateway download {hub_id} --dir DIR), "
            "copy DIR here and serve it by path: vllm-gateway serve DIR",
        ]
    )


def link_by_name(hub_id: str, target: Path, models_dir: str | None) -> Path | None:
    """Make `<models_dir>/<org>/<name>` point at `target` so serve finds it by name."""
    default = default_download_dir(hub_id, models_dir)
    if default.resolve() == target.resolve():
        return None
    if default.exists() and not default.is_symlink():
        return None  # a real download is already there: leave it
    try:
        default.parent.mkdir(parents=True, exist_ok=True)
        if default.is_symlink():
            default.unlink()
        default.symlink_to(target.resolve(), target_is_directory=True)
    except OSError as exc:
        logger.info("could not link %s to %s: %s", default, target, exc)
        return None
    return default


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vllm-gateway download",
        description="Download a model (ModelScope first, then Hugging Face) where "
        "`vllm-gateway serve MODEL` finds it by name.",
    )
    parser.add_argument("model", nargs="?", default=DEFAULT_MODEL, help="hub id, org/name")
    parser.add_argument(
        "--source",
        choices=sorted(HUBS),
        default=None,
        help="only this hub (default: ModelScope, then Hugging Face)",
    )
    parser.add_argument(
        "--dir",
        default=None,
        help="download into DIR (default: <models_dir>/<org>/<name>, "
        "models_dir from GATEWAY_MODELS_DIR or ~/.cache/vllm-gateway/models)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds to wait for a hub to answer (default GATEWAY_DOWNLOAD_TIMEOUT, 5)",
    )
    return parser


def serve_command(path: Path) -> str:
    return "vllm-gateway serve " + shlex.quote(str(path))


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _note(text: str) -> None:
    sys.stderr.write(f"download: {text}\n")
    sys.stderr.flush()


def main(argv: Sequence[str], settings: Settings | None = None) -> int:
    args = build_parser().parse_args(list(argv))
    hub_id: str = args.model
    org, _, name = hub_id.partition("/")
    if not org or not name or "/" in name or hub_id.startswith((".", "~")):
        _note(f"{hub_id!r} is not a hub id like {DEFAULT_MODEL}")
        return 2
    settings = settings or Settings()
    timeout = args.timeout or settings.download_timeout
    hubs = [args.source] if args.source else ["modelscope", "huggingface"]
    if args.dir is None:
        found = find_local(hub_id, models_dir=settings.models_dir)
        if found is not None:
            _say(f"{hub_id} is already downloaded: {found}")
            _say(f"serve it: vllm-gateway serve {hub_id}   (or {serve_command(found)})")
            return 0
    target = (
        Path(args.dir).expanduser()
        if args.dir
        else default_download_dir(hub_id, settings.models_dir)
    )
    try:
        path = fetch_model(hub_id, target, hubs=hubs, timeout=timeout, note=_note)
    except DownloadError as exc:
        if is_model_dir(target):
            _note(f"{exc}\nkeeping the copy already in {target}")
            path = target
        else:
            _note(str(exc))
            return 1
    if args.dir is not None:
        link_by_name(hub_id, path, settings.models_dir)
    _say(f"{hub_id} is in {path}")
    found = find_local(hub_id, models_dir=settings.models_dir)
    by_name = found is not None and found.resolve() == path.resolve()
    _say(
        f"serve it: {serve_command(path)}"
        + (f"   (or vllm-gateway serve {hub_id})" if by_name else "")
    )
    return 0
