"""Secrets out of everything a run writes: reports, baselines, Hydra's `.hydra/` files, folder names, logs.

Three kinds of value are secret. One resolved from the environment (`${oc.env:OPENAI_API_KEY}`): the environment
is where people keep keys, and the unresolved interpolation says where the value came from without the value.
One under a key named like a credential (`api_key`, `token`, `password`, `secret`), whatever its source. And the
user information of any URL (`http://user:password@host/v1`), whatever key holds it.

`redact_text` is the one function every writer of free text goes through (a log line, an error message, a
server's error body, a folder name); `redact` and `redact_override` apply it to every string they keep.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "<redacted>"
# `api_key`, `auth_token`, flat `model.api_key`, `client_secret`, `db_password`, and HTTP headers that carry one
# (`Authorization`, `X-Api-Key`, `Cookie`, typed under an app's headers); not `max_tokens` or `num_tokens`.
_CREDENTIAL = r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|token|password|passwd|secret|authorization|cookie)"
SECRET_KEY = re.compile(rf"(?:^|[._-]){_CREDENTIAL}$", re.IGNORECASE)
ENV = "oc.env:"
# An environment value this long, found inside another interpolated value, is taken to be that value. Shorter
# ones ("1", "true") would match by chance; they are still redacted where they are interpolated directly.
MIN_CONTAINED = 8
# A known secret value shorter than this is not searched for in free text: it would match by chance.
MIN_KNOWN = 4
# `scheme://` then everything up to the last `@` before the path: a password may hold an unencoded `@` or `:`.
# A sweep's overrides escape `:` as `\:` (`http\://user\:pass@host`), so an escaped colon is matched too.
_USERINFO = re.compile(r"\b([a-z][a-z0-9+.-]*\\?://)[^/\s?#'\"<>]*@", re.IGNORECASE)
# `model.api_key=sk-...` inside a longer text (a list of overrides in a log line): the value, up to a space.
_ASSIGNED = re.compile(rf"((?:^|(?<=[\s'\"\[(,]))[+~]?(?:[\w.@/-]*[._-])?{_CREDENTIAL}=)(?!\$\{{)[^\s'\"]+",
                       re.IGNORECASE)
# A URL's query parameter named like a credential (`?token=`, `&api_key=`, `;sig=`, `&X-Amz-Signature=`), up to
# the next parameter: signed links and key-in-URL APIs carry the secret there. Not `?q=` or `&monkey=`.
QUERY_CREDENTIAL = (r"(?:[\w-]*[_-])?(?:api[_-]?key|apikey|access[_-]?token|token|key|sig|signature|secret|password|"
                    r"passwd|auth)")
_QUERY = re.compile(rf"([?&;]{QUERY_CREDENTIAL}(?:\\?=|%3D))(?!\$\{{)([^&;,#\s'\"<>]+)", re.IGNORECASE)
_BEARER = re.compile(r"(\bBearer\s+)[^\s'\"]+", re.IGNORECASE)
_UNKNOWN = object()  # no unresolved counterpart (inside a node that was one interpolation of a whole subtree)


def is_secret_key(key: object) -> bool:
    return isinstance(key, str) and SECRET_KEY.search(key) is not None


def redact_text(text: str, known: Iterable[str | None] = ()) -> str:
    """`text` with every secret in it replaced by "<redacted>": the user information of every URL
    (`http://<redacted>@host/v1`), the value of every query parameter named like a credential
    (`?token=<redacted>`), the value of a credential typed as an override (`model.api_key=<redacted>`),
    a bearer token, and every occurrence of a `known` secret value at least MIN_KNOWN characters long."""
    out = _USERINFO.sub(rf"\1{REDACTED}@", text)
    out = _QUERY.sub(rf"\1{REDACTED}", out)
    out = _ASSIGNED.sub(rf"\1{REDACTED}", out)
    out = _BEARER.sub(rf"\1{REDACTED}", out)
    for value in known:
        if value and len(value) >= MIN_KNOWN:
            out = out.replace(value, REDACTED)
    return out


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
        return redact_text(resolved) if isinstance(resolved, str) else resolved
    return unresolved if _is_interpolation(unresolved) else REDACTED


def _contains_env(text: str, env_values: set[str]) -> bool:
    return any(text == v or (len(v) >= MIN_CONTAINED and v in text) for v in env_values)


def redact_override(item: str) -> str:
    """`model.api_key=sk-...` -> `model.api_key=<redacted>`; an interpolation (`${oc.env:KEY}`) is kept as typed.
    A URL's user information is redacted under any key."""
    key, eq, value = item.partition("=")
    if not eq or not is_secret_key(key.lstrip("+~").split("@")[0]) or _is_interpolation(value) or value in ("", "null"):
        return redact_text(item)
    return f"{key}={REDACTED}"


def known_secrets(unresolved: Any, resolved: Any, overrides: Iterable[str] = ()) -> set[str]:
    """Every secret value a config holds, to be searched for in free text (`redact_text`'s `known`): values from
    the environment, values of credential-named keys, and the values of credential overrides (each of a sweep's
    comma-separated values too)."""
    out: set[str] = set()
    _collect_env(unresolved, resolved, out)
    _collect_keyed(resolved, False, out)
    for item in overrides:
        key, eq, value = item.partition("=")
        if eq and is_secret_key(key.lstrip("+~").split("@")[0]) and not _is_interpolation(value):
            out.update(v for v in {value, *value.split(",")} if v not in ("", "null"))
    # A URL's query credential, known by value: a folder name made of overrides has its `=` turned into `-`.
    for text in (*overrides, *_strings(resolved)):
        out.update(m.group(2) for m in _QUERY.finditer(text) if len(m.group(2)) >= MIN_KNOWN)
    return out


def _strings(tree: Any) -> list[str]:
    if isinstance(tree, Mapping):
        return [s for v in tree.values() for s in _strings(v)]
    if isinstance(tree, list):
        return [s for v in tree for s in _strings(v)]
    return [tree] if isinstance(tree, str) else []


def _collect_keyed(tree: Any, secret: bool, out: set[str]) -> None:
    if isinstance(tree, Mapping):
        for k, v in tree.items():
            _collect_keyed(v, secret or is_secret_key(k), out)
    elif isinstance(tree, list):
        for v in tree:
            _collect_keyed(v, secret, out)
    elif secret and isinstance(tree, str | int) and str(tree) and not _is_interpolation(tree):
        out.add(str(tree))


def redact_tree(tree: Any, known: Iterable[str] = ()) -> Any:
    """A config-like tree as written to a file (Hydra's `.hydra/*.yaml`): `redact` of it, then every string kept
    through `redact_override` (lists of overrides) and `redact_text` with the `known` secret values."""
    values = tuple(known)

    def walk(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return redact_text(redact_override(node), values) if isinstance(node, str) else node

    return walk(redact(tree, tree))


# Mappings whose values name environment variables (a header -> the variable holding its value): a credential's
# name there is what the documentation asks for, not a credential typed out.
ENV_NAMES = "headers_env"


def literal_secrets(unresolved: Any, prefix: str = "") -> list[str]:
    """The dotted keys of an unresolved config that hold a credential typed out rather than read from the
    environment: a credential-named key's literal value, or a URL with user information or a credential-named
    query parameter in it."""
    found: list[str] = []
    if isinstance(unresolved, Mapping):
        for k, v in unresolved.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if k == ENV_NAMES:
                continue
            if is_secret_key(k) and isinstance(v, str | int) and str(v) and not _is_interpolation(v):
                found.append(key)
            else:
                found.extend(literal_secrets(v, key))
    elif isinstance(unresolved, list):
        for i, v in enumerate(unresolved):
            found.extend(literal_secrets(v, f"{prefix}[{i}]"))
    elif isinstance(unresolved, str) and redact_text(unresolved) != unresolved:
        found.append(prefix)
    return found


class RedactingFormatter(logging.Formatter):
    """The log formatter of Hydra's console and log-file handlers (`hydra.job_logging` and `hydra.hydra_logging`
    in the shipped config.yaml): every line leaves through `redact_text`, so an HTTP library's request line or
    Hydra's list of a sweep job's overrides never shows a URL's password or a key typed as an override.

    A formatter rather than a filter because Hydra rebuilds its handlers from that config around every job."""

    def __init__(self, format: str | None = None, datefmt: str | None = None) -> None:  # noqa: A002 (dictConfig's key)
        super().__init__(format, datefmt)

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record))


def credential_advice(key: str, value: object) -> str:
    """What to do instead of typing out the credential `key` holds (`value`, as typed): the advice of the warning
    a literal credential gets. A credential in a URL's query string goes in a header read from the environment
    (a server reads it there as well, and a header is never part of a URL that is shown or written)."""
    text = str(value)
    if _QUERY.search(text):
        return ("send it in a header read from the environment instead of the URL's query string: for app.url, "
                "app.headers_env: {Authorization: NAME} (NAME: the environment variable holding the header's "
                f"value); for a model's base_url, model.api_key='${{{ENV}NAME}}'")
    if _USERINFO.search(text):
        return f"pass it through the environment instead, in place of the password: http://user:${{{ENV}NAME}}@host/"
    return f"pass it through the environment instead: {key}='${{{ENV}NAME}}'"
