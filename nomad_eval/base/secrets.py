"""Secrets out of everything a run writes: a config is redacted before it goes into a report or a baseline.

Two kinds of value are secret. One resolved from the environment (`${oc.env:OPENAI_API_KEY}`): the environment
is where people keep keys, and the unresolved interpolation says where the value came from without the value.
And one under a key named like a credential (`api_key`, `token`, `password`, `secret`), whatever its source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "<redacted>"
# `api_key`, `auth_token`, flat `model.api_key`, `client_secret`, `db_password`; not `max_tokens` or `num_tokens`.
SECRET_KEY = re.compile(r"(?:^|[._-])(?:api_?key|access_?key|secret_?key|token|password|passwd|secret)$",
                        re.IGNORECASE)
ENV = "oc.env:"
# An environment value this long, found inside another interpolated value, is taken to be that value. Shorter
# ones ("1", "true") would match by chance; they are still redacted where they are interpolated directly.
MIN_CONTAINED = 8
_UNKNOWN = object()  # no unresolved counterpart (inside a node that was one interpolation of a whole subtree)


def is_secret_key(key: object) -> bool:
    return isinstance(key, str) and SECRET_KEY.search(key) is not None


def redact(unresolved: Any, resolved: Any) -> Any:
    """`resolved` with every secret replaced: environment values by their unresolved interpolation, values of
    credential-named keys by that interpolation when there is one, else by "<redacted>".

    `unresolved` and `resolved` are the same config as `OmegaConf.to_container(cfg, resolve=False)` and
    `resolve=True` give it. Pure: neither argument is changed.
    """
    env_values: set[str] = set()
    _collect_env(unresolved, resolved, env_values)
    return _redact(unresolved, resolved, False, env_values)


def _is_interpolation(value: Any) -> bool:
    return isinstance(value, str) and "${" in value


def _collect_env(unresolved: Any, resolved: Any, out: set[str]) -> None:
    """The resolved values of every `${oc.env:...}`, so a copy reached through another interpolation is found."""
    if isinstance(resolved, Mapping):
        u = unresolved if isinstance(unresolved, Mapping) else {}
        for k, v in resolved.items():
            _collect_env(u.get(k, _UNKNOWN), v, out)
    elif isinstance(resolved, list):
        u_list = unresolved if isinstance(unresolved, list) and len(unresolved) == len(resolved) else None
        for i, v in enumerate(resolved):
            _collect_env(u_list[i] if u_list is not None else _UNKNOWN, v, out)
    elif isinstance(unresolved, str) and ENV in unresolved and resolved is not None and str(resolved):
        out.add(str(resolved))


def _redact(unresolved: Any, resolved: Any, secret: bool, env_values: set[str]) -> Any:
    if isinstance(resolved, Mapping):
        u = unresolved if isinstance(unresolved, Mapping) else {}
        return {k: _redact(u.get(k, _UNKNOWN), v, secret or is_secret_key(k), env_values)
                for k, v in resolved.items()}
    if isinstance(resolved, list):
        u_list = unresolved if isinstance(unresolved, list) and len(unresolved) == len(resolved) else None
        return [_redact(u_list[i] if u_list is not None else _UNKNOWN, v, secret, env_values)
                for i, v in enumerate(resolved)]
    if resolved is None or resolved == "":
        return resolved  # an unset key holds nothing to hide
    interpolated = unresolved is _UNKNOWN or _is_interpolation(unresolved)
    from_env = isinstance(unresolved, str) and ENV in unresolved
    carries_env = interpolated and _contains_env(str(resolved), env_values)
    if not (secret or from_env or carries_env):
        return resolved
    return unresolved if _is_interpolation(unresolved) else REDACTED


def _contains_env(text: str, env_values: set[str]) -> bool:
    return any(text == v or (len(v) >= MIN_CONTAINED and v in text) for v in env_values)


def redact_override(item: str) -> str:
    """`model.api_key=sk-...` -> `model.api_key=<redacted>`; an interpolation (`${oc.env:KEY}`) is kept as typed."""
    key, eq, value = item.partition("=")
    if not eq or not is_secret_key(key.lstrip("+~").split("@")[0]) or _is_interpolation(value) or value in ("", "null"):
        return item
    return f"{key}={REDACTED}"
