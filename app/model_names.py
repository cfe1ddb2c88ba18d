"""Resolve the OpenAI ``model`` request field to a served model.

Every accepted spelling of a model is reduced to a normalized *key*
(:func:`normalize_model_name`): whitespace-trimmed, ``~`` expanded to the home
directory, runs of ``/`` collapsed, ``.`` and ``..`` resolved in absolute paths,
trailing ``/`` dropped, case-folded.
Because ``~`` is expanded on both sides, ``~/x`` and ``/home/user/x`` match
each other whichever one was configured.

A model's keys (:func:`model_keys`) are its served name, its aliases, its root,
the hub id derived from the root, and the model directory's base name. A requested
hub cache path that matches none of them is looked up by the hub id it names.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ModelRegistry",
    "ServedModel",
    "check_alias_targets",
    "model_keys",
    "normalize_model_name",
    "parse_aliases",
]

_SLASHES = re.compile(r"/{2,}")


@dataclass(frozen=True)
class ServedModel:
    """A model served by the backend."""

    name: str  # the served model name (what /v1/models lists as id)
    root: str  # the path or hub id it was loaded from, as given by the user
    aliases: tuple[str, ...] = ()


def _default_home() -> str:
    return os.path.expanduser("~")


def _canonical_path(name: str, home: str) -> str:
    """Trim, expand a leading ``~``, collapse ``//``, resolve ``.`` and ``..`` in an
    absolute path and drop trailing ``/`` (case kept)."""
    name = name.strip()
    if name == "~" or name.startswith("~/"):
        name = home + "/" + name[1:]
    name = _SLASHES.sub("/", name)
    if name.startswith("/"):
        name = posixpath.normpath(name)  # `/m/./x`, `/m/x/.` and `/m/y/../x` are `/m/x`
    if len(name) > 1:
        name = name.rstrip("/") or "/"
    return name


def normalize_model_name(name: str, *, home: str | None = None) -> str:
    """Return the lookup key for ``name`` (see the module docstring)."""
    return _canonical_path(name, _default_home() if home is None else home).casefold()


def _hub_id(path: str) -> str | None:
    """Derive ``org/name`` from a hub cache path or a bare hub id, else None.

    Recognized (``path`` already canonical):

    * ModelScope: ``…/modelscope/hub/[models/]ORG/NAME``; ModelScope stores
      ``.`` in names as ``___`` on disk, which is undone here.
    * Hugging Face: ``…/models--ORG--NAME[/snapshots/SHA]``.
    * A bare ``ORG/NAME`` that is not an absolute, home or dot-relative path.
    """
    parts = [p for p in path.split("/") if p]
    for i, part in enumerate(parts):
        if not part.startswith("models--"):
            continue
        tail = parts[i + 1 :]
        if not tail or (len(tail) == 2 and tail[0] == "snapshots"):
            repo = part[len("models--") :].split("--", 1)
            if all(repo):
                return "/".join(repo)
    for i in range(len(parts) - 1):
        if parts[i].casefold() == "modelscope" and parts[i + 1].casefold() == "hub":
            tail = parts[i + 2 :]
            if len(tail) == 3 and tail[0].casefold() == "models":
                tail = tail[1:]
            if len(tail) == 2:
                return "/".join(t.replace("___", ".") for t in tail)
    if not path.startswith(("/", "~", ".")) and len(parts) == 2 and path.count("/") == 1:
        return path
    return None


def _short_names(root: str) -> list[str]:
    """The names a canonical root answers to besides itself, as spelled there: the hub id
    it names (`Qwen/Qwen3-0.6B`), then the model directory's base name (`Qwen3-0.6B`)."""
    hub = _hub_id(root)
    base = (hub if hub is not None else root).rsplit("/", 1)[-1]
    names = [hub] if hub is not None else []
    if base and base not in (".", ".."):
        names.append(base)
    return names


def _key_tiers(model: ServedModel, home: str) -> tuple[set[str], set[str], set[str]]:
    """Keys of ``model`` in precedence tiers: (served name, aliases, derived from root)."""
    names = {normalize_model_name(model.name, home=home)}
    aliases = {normalize_model_name(a, home=home) for a in model.aliases}
    root = _canonical_path(model.root, home)
    derived = {root.casefold(), *(name.casefold() for name in _short_names(root))}
    for tier in (names, aliases, derived):
        tier.discard("")
    return names, aliases, derived


def model_keys(model: ServedModel, *, home: str | None = None) -> set[str]:
    """Every accepted spelling of ``model``, normalized."""
    names, aliases, derived = _key_tiers(model, _default_home() if home is None else home)
    return names | aliases | derived


class ModelRegistry:
    """O(1) lookup of served models by any accepted spelling.

    Conflicts are settled by precedence: served names beat aliases, which beat
    root-derived keys (path, hub id, base name); within a tier the earlier
    model wins.  So a model's own served name always resolves to it.
    """

    __slots__ = ("_home", "_keys", "_models")

    def __init__(self, models: Sequence[ServedModel], *, home: str | None = None) -> None:
        if not models:
            raise ValueError("ModelRegistry needs at least one served model")
        self._models: tuple[ServedModel, ...] = tuple(models)
        self._home: str = _default_home() if home is None else home
        tiers = [_key_tiers(m, self._home) for m in self._models]
        self._keys: dict[str, ServedModel] = {}
        for level in range(3):
            for model, model_tiers in zip(self._models, tiers, strict=True):
                for key in model_tiers[level]:
                    self._keys.setdefault(key, model)

    @property
    def default(self) -> ServedModel:
        """The first model, used when a request names none."""
        return self._models[0]

    @property
    def models(self) -> tuple[ServedModel, ...]:
        """All served models, in configuration order."""
        return self._models

    def resolve(self, requested: str | None) -> ServedModel | None:
        """The model ``requested`` names; the default for None/blank; None if unknown."""
        if requested is None:
            return self.default
        key = normalize_model_name(requested, home=self._home)
        if not key:
            return self.default
        found = self._keys.get(key)
        if found is None:
            # a hub cache path (ModelScope's or Hugging Face's) names its hub id: a client
            # configured with `~/.cache/modelscope/hub/models/Qwen/Qwen3-0.6B` reaches the
            # model served as `Qwen/Qwen3-0.6B`, wherever the server keeps its copy
            hub = _hub_id(_canonical_path(requested, self._home))
            if hub is not None:
                found = self._keys.get(hub.casefold())
        return found

    def valid_names(self) -> list[str]:
        """Names to suggest in a 404: served names, then aliases, then each root's short
        names (hub id, directory name) where they reach that model, without duplicates.
        A client told the served path alone would not learn that `Qwen3-0.6B` works."""
        seen: dict[str, str] = {}  # normalized key -> the name as first spelled
        for model in self._models:
            seen.setdefault(normalize_model_name(model.name, home=self._home), model.name)
        for model in self._models:
            for alias in model.aliases:
                seen.setdefault(normalize_model_name(alias, home=self._home), alias)
        for model in self._models:
            for short in _short_names(_canonical_path(model.root, self._home)):
                if self.resolve(short) is model:
                    seen.setdefault(normalize_model_name(short, home=self._home), short)
        return list(seen.values())


def parse_aliases(spec: str) -> dict[str, str]:
    """Parse ``"alias=target,alias2=target2"`` into ``{alias: target}``.

    Whitespace around items, names and ``=`` is ignored, as are empty items
    (e.g. a trailing comma).  The target is everything after the first ``=``.
    Raises ValueError for an item without ``=``, with an empty alias or target,
    or for an alias given twice with different targets.
    """
    result: dict[str, str] = {}
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        alias, sep, target = item.partition("=")
        alias, target = alias.strip(), target.strip()
        if not sep or not alias or not target:
            raise ValueError(f"bad model alias {item!r}: expected ALIAS=TARGET")
        previous = result.setdefault(alias, target)
        if previous != target:
            raise ValueError(f"model alias {alias!r} given twice: {previous!r} and {target!r}")
    return result


def check_alias_targets(aliases: dict[str, str], served: ModelRegistry) -> None:
    """Every `--model-aliases` target must name the served model (any accepted spelling):
    the gateway serves one model, and an alias pointing elsewhere would answer with it."""
    for alias, target in aliases.items():
        if served.resolve(target) is None:
            raise ValueError(
                f"model alias {alias!r} points to {target!r}, which is not the served model "
                f"({served.default.name}); aliases name the served model under another name"
            )
